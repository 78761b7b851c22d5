# Sourced by scripts/test (do not run it): sets up what driver-vm's tests need on a Debian machine as root.
#   - QEMU (qemu-system-x86, which brings SeaBIOS), busybox-static and e2fsprogs (mkfs.ext4 for workspace disks),
#     util-linux (setsid, which the driver starts QEMU with) and xz-utils (build.sh unpacks the kernel with xz);
#   - the VM test image (a Debian kernel and a busybox initramfs), built by scripts/images/vm/build.sh into
#     $SANDGATE_VM_IMAGE_DIR (default ~/.cache/sandgate/vm/image), which the tests read.
# The tests start and stop their own VMs; nothing here keeps running.
# shellcheck shell=bash

apt_install qemu-system-x86 busybox-static e2fsprogs util-linux xz-utils
# The image build asks apt for the kernel package: make sure package lists exist even if nothing was installed.
if ! apt-cache show linux-image-amd64 >/dev/null 2>&1; then
  apt-get update -qq >"$SANDGATE_RUN_DIR/logs/apt-update.log" 2>&1 || die "apt-get update failed (see $SANDGATE_RUN_DIR/logs/apt-update.log)"
fi

export SANDGATE_VM_IMAGE_DIR="${SANDGATE_VM_IMAGE_DIR:-$HOME/.cache/sandgate/vm/image}"
"$SANDGATE_ROOT/scripts/images/vm/build.sh" "$SANDGATE_VM_IMAGE_DIR" || die "building the VM test image failed"
# Whether a KVM guest boots here: /dev/kvm may be present while guests under it never start (nested KVM on some
# hosts: seen on 2026-12-03, where the guest's console stayed empty). The probe boots the test image's kernel and
# waits for its first line; if none comes, the tests run their VMs under TCG (SANDGATE_VM_ACCEL, read by VmTestImage).
kvm_boots() {
  local console="$SANDGATE_RUN_DIR/logs/kvm-probe-console.log"
  rm -f "$console"
  # In a subshell whose errors go to the log too: QEMU may abort, and bash reports that on its own stderr.
  (timeout 20 qemu-system-x86_64 -machine q35,acpi=off -accel kvm -cpu host -m 128 -nodefaults -no-user-config \
    -display none -no-reboot -kernel "$SANDGATE_VM_IMAGE_DIR/kernel" -initrd "$SANDGATE_VM_IMAGE_DIR/initramfs.cpio" \
    -append "console=ttyS0 panic=-1" -serial "file:$console"; exit 0) >"$SANDGATE_RUN_DIR/logs/kvm-probe.log" 2>&1
  grep -q 'Linux version' "$console" 2>/dev/null
}
if [ -r /dev/kvm ] && [ -w /dev/kvm ] && kvm_boots; then
  export SANDGATE_VM_ACCEL=kvm
  log "VM test image in $SANDGATE_VM_IMAGE_DIR; VMs use KVM"
elif [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
  export SANDGATE_VM_ACCEL=tcg
  log "VM test image in $SANDGATE_VM_IMAGE_DIR; /dev/kvm is there but a KVM guest printed nothing within 20 s (QEMU's output: $SANDGATE_RUN_DIR/logs/kvm-probe.log), VMs use TCG emulation (about 6 s per boot)"
else
  export SANDGATE_VM_ACCEL=tcg
  log "VM test image in $SANDGATE_VM_IMAGE_DIR; no usable /dev/kvm, VMs use TCG emulation (about 6 s per boot)"
fi
