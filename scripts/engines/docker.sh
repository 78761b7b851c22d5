# Docker Engine for the driver-docker tests. Sourced by scripts/test (uses scripts/lib/common.sh); do not run it.
# Installs Debian's docker.io, starts dockerd unless its socket already answers (a running engine is reused and left
# running), imports the busybox test image, and exports for the tests:
#   SANDGATE_DOCKER_HOST  the engine's socket, e.g. unix:///run/docker.sock
#   SANDGATE_TEST_IMAGE   the test image reference
# shellcheck shell=bash

# shellcheck source=../images/test-image.sh
source "$SANDGATE_ROOT/scripts/images/test-image.sh"

sandgate_docker_socket="${SANDGATE_DOCKER_SOCKET:-/run/docker.sock}"
SANDGATE_DOCKER_HOST="unix://$sandgate_docker_socket"
export SANDGATE_DOCKER_HOST

# curl answers whether the socket serves the Docker API (works for dockerd and Podman alike).

apt_install docker.io containerd runc tini iptables busybox-static curl

if engine_answers "$sandgate_docker_socket"; then
  log "dockerd already answers on $sandgate_docker_socket: reusing it"
else
  start_daemon dockerd dockerd --host="$SANDGATE_DOCKER_HOST"
  if ! wait_for "engine_answers '$sandgate_docker_socket'" 60; then
    tail -30 "$SANDGATE_RUN_DIR/logs/dockerd.log" >&2 || true
    die "dockerd did not answer on $sandgate_docker_socket within 60 s (log: $SANDGATE_RUN_DIR/logs/dockerd.log)"
  fi
fi

if [ "$(docker -H "$SANDGATE_DOCKER_HOST" image inspect \
        --format "{{index .Config.Labels \"$SANDGATE_TEST_IMAGE_LABEL\"}}" "$SANDGATE_TEST_IMAGE" 2>/dev/null)" \
      = "$SANDGATE_TEST_IMAGE_VERSION" ]; then
  log "docker: test image $SANDGATE_TEST_IMAGE present"
else
  sandgate_old_image="$(docker -H "$SANDGATE_DOCKER_HOST" image inspect --format '{{.Id}}' "$SANDGATE_TEST_IMAGE" \
    2>/dev/null || true)"
  sandgate_test_image_tar_path="$(sandgate_test_image_tar)"
  docker -H "$SANDGATE_DOCKER_HOST" import "${SANDGATE_TEST_IMAGE_CHANGES[@]}" \
    "$sandgate_test_image_tar_path" "$SANDGATE_TEST_IMAGE" >/dev/null \
    || die "docker import of the test image failed"
  # An older version of the test image, now untagged, goes unless a container still uses it.
  [ -z "$sandgate_old_image" ] || docker -H "$SANDGATE_DOCKER_HOST" rmi "$sandgate_old_image" >/dev/null 2>&1 || true
  log "docker: imported test image $SANDGATE_TEST_IMAGE"
fi
