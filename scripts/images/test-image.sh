# The test image both engine scripts import: one definition of its name, contents and configuration.
# Sourced by scripts/engines/docker.sh and podman.sh; do not run it.
# shellcheck shell=bash

SANDGATE_TEST_IMAGE="${SANDGATE_TEST_IMAGE:-localhost/sandgate-test:busybox}"
export SANDGATE_TEST_IMAGE

# Bump when the image's contents or configuration change: an engine holding an older one gets it re-imported.
SANDGATE_TEST_IMAGE_VERSION=2
SANDGATE_TEST_IMAGE_LABEL=dev.sandgate.test-image

# Image configuration for `docker import` / `podman import` (an imported tar has none of its own).
SANDGATE_TEST_IMAGE_CHANGES=(
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  --change 'CMD ["/bin/sh"]'
  --change "LABEL $SANDGATE_TEST_IMAGE_LABEL=$SANDGATE_TEST_IMAGE_VERSION"
)

# Prints the path of the test image's root filesystem tar, building it once (scripts/images/busybox-rootfs.sh).
sandgate_test_image_tar() {
  local tar="$SANDGATE_RUN_DIR/images/busybox-rootfs.tar"
  "$SANDGATE_ROOT/scripts/images/busybox-rootfs.sh" "$tar" || die "building the test image's root filesystem failed"
  printf '%s\n' "$tar"
}
