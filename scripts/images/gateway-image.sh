#!/usr/bin/env bash
# Builds the gateway image from deploy/kubernetes/Containerfile without any registry: its base is the one
# scripts/images/gateway-base.sh assembles from Debian packages and a jlink runtime. Needs the distribution folder
# (./mvnw -B -DskipTests package -pl distribution -am).
#
#   scripts/images/gateway-image.sh ENGINE...      ENGINE: docker or podman
#
# The image is $SANDGATE_GATEWAY_IMAGE (default localhost/sandgate-gateway:dev). Docker is reached at
# $SANDGATE_DOCKER_HOST (default unix:///run/docker.sock), Podman through its command line.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"
cd "$SANDGATE_ROOT"

[ $# -gt 0 ] || die "usage: scripts/images/gateway-image.sh docker|podman..."
[ -x distribution/target/sandgate/bin/sandgate-gateway ] \
  || die "no distribution folder: build it first with ./mvnw -B -DskipTests package -pl distribution -am"
image="${SANDGATE_GATEWAY_IMAGE:-localhost/sandgate-gateway:dev}"

for engine in "$@"; do
  started=$(date +%s%N)
  mkdir -p "$SANDGATE_RUN_DIR/logs"
  base="$(scripts/images/gateway-base.sh "$engine")"
  case "$engine" in
    # The legacy builder: Debian's docker.io has no buildx, and the legacy builder reads .dockerignore.
    docker) build=(env DOCKER_BUILDKIT=0 docker -H "${SANDGATE_DOCKER_HOST:-unix:///run/docker.sock}" build -q) ;;
    podman) build=(podman build -q --pull=never) ;;
    *) die "unknown engine '$engine' (docker or podman)" ;;
  esac
  "${build[@]}" --network none -f deploy/kubernetes/Containerfile --build-arg "BASE_IMAGE=$base" -t "$image" . \
    >"$SANDGATE_RUN_DIR/logs/gateway-image-$engine.log" 2>&1 \
    || { tail -30 "$SANDGATE_RUN_DIR/logs/gateway-image-$engine.log" >&2; die "$engine build of $image failed"; }
  log "$engine: built $image on $base in $(( ($(date +%s%N) - started) / 1000000 )) ms"
done
