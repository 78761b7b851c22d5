#!/bin/sh
# Generates the Python stubs of sandgate.driver.v1 (and of google.rpc's Status and ErrorInfo) into $1, with Debian's
# python3-grpc-tools. Nothing generated is checked in.
#   $1  the output directory (pass it to the driver's --stubs)
#   $2  a directory holding google/rpc/status.proto and google/rpc/error_details.proto (they ship inside Maven's
#       com.google.api.grpc:proto-google-common-protos jar; the tests unpack them from the class path)
# PYTHON: the interpreter that has python3-grpc-tools (default /usr/bin/python3, Debian's).
set -eu
out=$1
google=$2
python=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/google-rpc-protos/google/rpc"
# Debian's grpc-tools (1.14) predates proto3's explicit 'optional'; without it a field has the same wire format.
sed 's/^\([[:space:]]*\)optional /\1/' "$google/google/rpc/error_details.proto" \
  >"$out/google-rpc-protos/google/rpc/error_details.proto"
cp "$google/google/rpc/status.proto" "$out/google-rpc-protos/google/rpc/status.proto"
well_known=$("$python" -c 'import grpc_tools, os; print(os.path.join(os.path.dirname(grpc_tools.__file__), "_proto"))')
"$python" -m grpc_tools.protoc -I "$here/../proto/src/main/proto" -I "$out/google-rpc-protos" -I "$well_known" \
  --python_out="$out" --grpc_python_out="$out" \
  sandgate/driver/v1/driver.proto google/rpc/status.proto google/rpc/error_details.proto
