# Sourced by scripts/test (do not run it): sets up what driver-vm's tests need on a Debian machine as root.
#   - QEMU (qemu-system-x86, which brings SeaBIOS), busybox-static and e2fsprogs (mkfs.ext4 for workspace disks);
#   - the VM test image (a Debian kernel and a busybox initramfs), built by scripts/images/vm/build.sh into
#     $SANDGATE_VM_IMAGE_DIR (default ~/.cache/sandgate/vm/image), which the tests read.
# The tests start and stop their own VMs; nothing here keeps running.
# shellcheck shell=bash

apt_install qemu-system-x86 busybox-static e2fsprogs util-linux
# The image build asks apt for the kernel package: make sure package lists exist even if nothing was installed.
if ! apt-cache show linux-image-amd64 >/dev/null 2>&1; then
  apt-get update -qq >"$SANDGATE_RUN_DIR/logs/apt-update.log" 2>&1 || die "apt-get update failed (see $SANDGATE_RUN_DIR/logs/apt-update.log)"
fi

export SANDGATE_VM_IMAGE_DIR="${SANDGATE_VM_IMAGE_DIR:-$HOME/.cache/sandgate/vm/image}"
"$SANDGATE_ROOT/scripts/images/vm/build.sh" "$SANDGATE_VM_IMAGE_DIR" || die "building the VM test image failed"
if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
  log "VM test image in $SANDGATE_VM_IMAGE_DIR; VMs use KVM"
else
  log "VM test image in $SANDGATE_VM_IMAGE_DIR; no usable /dev/kvm, VMs use TCG emulation (about 6 s per boot)"
fi
