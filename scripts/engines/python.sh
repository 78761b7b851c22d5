# Sourced by scripts/test (do not run it): Debian's Python gRPC for the example driver written in Python
# (driver-python-example), whose conformance kit runs over the wire in driver-host's tests. The test generates the
# stubs itself (generate-stubs.sh, with python3-grpc-tools) and runs the driver with /usr/bin/python3.
# shellcheck shell=bash

apt_install python3 python3-grpcio python3-protobuf python3-grpc-tools
