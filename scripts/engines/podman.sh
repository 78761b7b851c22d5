# Podman (rootful) for the driver-podman tests. Sourced by scripts/test (uses scripts/lib/common.sh); do not run it.
# Installs Debian's podman, writes /etc/containers/containers.conf for this kind of machine (see docs/drivers/podman.md),
# starts the Docker-compatible API service unless its socket already answers (a running service is reused and left
# running), imports the busybox test image, and exports for the tests:
#   SANDGATE_PODMAN_HOST  the API socket, e.g. unix:///run/podman/podman.sock
#   SANDGATE_TEST_IMAGE   the test image reference
# shellcheck shell=bash

# shellcheck source=../images/test-image.sh
source "$SANDGATE_ROOT/scripts/images/test-image.sh"

sandgate_podman_socket="${SANDGATE_PODMAN_SOCKET:-/run/podman/podman.sock}"
SANDGATE_PODMAN_HOST="unix://$sandgate_podman_socket"
export SANDGATE_PODMAN_HOST


apt_install podman conmon runc catatonit netavark aardvark-dns containernetworking-plugins iptables \
  busybox-static curl

# crun refuses cgroup v1 hybrid hosts, and Podman's default ulimits (nofile=1048576, nproc=4194304) exceed what root
# may set where it lacks CAP_SYS_RESOURCE: pin runc, cgroupfs, file events and ulimits within the hard limits.
write_podman_containers_conf() {
  local conf=/etc/containers/containers.conf marker='# Written by sandgate scripts/engines/podman.sh' hard nofile
  if [ -e "$conf" ] && ! grep -qF "$marker" "$conf"; then
    log "podman: keeping the existing $conf (not written by sandgate)"
    return 0
  fi
  hard="$(ulimit -Hn)"
  if [ "$hard" = unlimited ] || [ "$hard" -gt 65536 ]; then nofile=65536; else nofile="$hard"; fi
  mkdir -p /etc/containers
  cat >"$conf.sandgate-tmp" <<CONF
$marker
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=32768:32768"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  if cmp -s "$conf.sandgate-tmp" "$conf"; then
    rm -f "$conf.sandgate-tmp"
  else
    mv "$conf.sandgate-tmp" "$conf"
    log "podman: wrote $conf (runc, cgroupfs, file events, nofile=$nofile)"
  fi
}
write_podman_containers_conf

if engine_answers "$sandgate_podman_socket"; then
  log "podman API already answers on $sandgate_podman_socket: reusing it"
else
  mkdir -p "$(dirname "$sandgate_podman_socket")"
  rm -f "$sandgate_podman_socket"
  start_daemon podman-service podman system service --time=0 "$SANDGATE_PODMAN_HOST"
  if ! wait_for "engine_answers '$sandgate_podman_socket'" 30; then
    tail -30 "$SANDGATE_RUN_DIR/logs/podman-service.log" >&2 || true
    die "the Podman API did not answer on $sandgate_podman_socket within 30 s (log: $SANDGATE_RUN_DIR/logs/podman-service.log)"
  fi
fi

if [ "$(podman image inspect --format "{{index .Labels \"$SANDGATE_TEST_IMAGE_LABEL\"}}" "$SANDGATE_TEST_IMAGE" \
        2>/dev/null)" = "$SANDGATE_TEST_IMAGE_VERSION" ]; then
  log "podman: test image $SANDGATE_TEST_IMAGE present"
else
  sandgate_old_image="$(podman image inspect --format '{{.Id}}' "$SANDGATE_TEST_IMAGE" 2>/dev/null || true)"
  sandgate_test_image_tar_path="$(sandgate_test_image_tar)"
  podman import -q "${SANDGATE_TEST_IMAGE_CHANGES[@]}" "$sandgate_test_image_tar_path" "$SANDGATE_TEST_IMAGE" \
    >/dev/null || die "podman import of the test image failed"
  # An older version of the test image, now untagged, goes unless a container still uses it.
  [ -z "$sandgate_old_image" ] || podman rmi "$sandgate_old_image" >/dev/null 2>&1 || true
  log "podman: imported test image $SANDGATE_TEST_IMAGE"
fi
