#!/usr/bin/env bash
# Builds Sandgate's VM test image from Debian packages: a kernel (from the linux-image package, downloaded and
# unpacked, never installed) and a busybox initramfs whose /init (scripts/images/vm/init) loads the virtio and ext4
# modules and implements the guest side of the VM driver (docs/drivers/vm.md), with the guest agent
# (scripts/images/vm/agent, installed as /bin/sandgate-agent).
#
# Usage: scripts/images/vm/build.sh [OUTPUT_DIR]
#   OUTPUT_DIR defaults to $SANDGATE_VM_IMAGE_DIR, else ~/.cache/sandgate/vm/image. It receives
#     vmlinux         the kernel, uncompressed (an ELF that QEMU boots through its PVH entry point), or vmlinuz (the
#                     compressed bzImage) if it cannot be unpacked;
#     initramfs.cpio  the initramfs, uncompressed.
#   Both are uncompressed because decompressing them dominates a boot under TCG emulation: measured here, QEMU spent
#   7.5 s of CPU booting bzImage + gzip initramfs and 3.8 s booting these.
#   Idempotent: nothing is rebuilt while the kernel package, busybox and this directory are unchanged.
# Needs: apt-get (with package lists), busybox-static, xz-utils, sha256sum. No root needed but for apt-get update.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-${SANDGATE_VM_IMAGE_DIR:-$HOME/.cache/sandgate/vm/image}}"
cache="$(dirname "$out")/cache"
mkdir -p "$out" "$cache"

# Modules the guest needs (their dependencies are added below): virtio over PCI (q35) and MMIO (microvm with
# ACPI), the workspace disk (virtio_blk, ext4, which needs crc32c for metadata checksums), user-mode network and the
# virtio-serial ports of the guest agent and the workload's output (virtio_console).
wanted=(virtio_pci virtio_mmio virtio_blk virtio_net virtio_console crc32c_generic ext4)

say() { printf '[vm-image] %s\n' "$*" >&2; }

busybox=/bin/busybox
command -v xz >/dev/null || { say "xz is not installed (apt-get install xz-utils)"; exit 1; }
[ -x "$busybox" ] && dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'install ok installed' \
  || { say "busybox-static is not installed (apt-get install busybox-static)"; exit 1; }

kernel_package="$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')"
[ -n "$kernel_package" ] || { say "apt-cache knows no linux-image-amd64: run apt-get update"; exit 1; }
kernel_version="${kernel_package#linux-image-}"

stamp="$(
  {
    echo "$kernel_package $(apt-cache show --no-all-versions "$kernel_package" | awk '/^Version:/ {print $2; exit}')"
    sha256sum "$busybox" "$here/init" "$here/agent" "$here/build.sh"
    printf '%s\n' "${wanted[@]}"
  } | sha256sum | cut -d ' ' -f 1
)"
if [ -f "$out/kernel" ] && [ -f "$out/initramfs.cpio" ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp" ]; then
  say "up to date: $out"
  exit 0
fi

work="$(mktemp -d "$cache/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

deb="$(ls "$cache/${kernel_package}"_*.deb 2>/dev/null | head -n 1 || true)"
if [ -z "$deb" ]; then
  say "downloading $kernel_package"
  (cd "$work" && apt-get download -q "$kernel_package" >/dev/null 2>&1) \
    || { say "apt-get download $kernel_package failed"; exit 1; }
  rm -f "$cache"/linux-image-*.deb
  mv "$work"/*.deb "$cache/"
  deb="$(ls "$cache/${kernel_package}"_*.deb | head -n 1)"
fi
say "unpacking $(basename "$deb")"
dpkg-deb -x "$deb" "$work/kernel"
modules="$work/kernel/lib/modules/$kernel_version"
[ -d "$modules" ] || { say "no modules for $kernel_version in $deb"; exit 1; }

module_file() { find "$modules/kernel" -name "$1.ko" -print -quit; }
module_depends() { tr '\0' '\n' <"$1" | sed -n 's/^depends=//p' | tr ',' ' '; }

# Load order: every module after the modules it depends on (a depth-first walk; Debian ships them uncompressed).
order=()
visit() {
  local name="$1" file dependency
  case " ${order[*]:-} " in *" $name "*) return 0 ;; esac
  file="$(module_file "$name")"
  [ -n "$file" ] || { say "module $name is not in $kernel_package"; exit 1; }
  for dependency in $(module_depends "$file"); do visit "$dependency"; done
  order+=("$name")
}
for name in "${wanted[@]}"; do visit "$name"; done

root="$work/initramfs"
mkdir -p "$root"/{bin,dev,proc,sys,run,tmp,workspace,root,etc/sandgate,lib/modules}
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
  [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
for name in "${order[@]}"; do cp "$(module_file "$name")" "$root/lib/modules/$name.ko"; done
printf '%s\n' "${order[@]}" >"$root/etc/sandgate/modules"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
install -m 0755 "$here/init" "$root/init"
install -m 0755 "$here/agent" "$root/bin/sandgate-agent"

(cd "$root" && find . | sort | "$busybox" cpio -o -H newc 2>/dev/null) >"$work/initramfs.cpio"

# The bzImage holds the kernel compressed (xz in Debian 12); unpack it into the ELF vmlinux when we can.
bzimage="$work/kernel/boot/vmlinuz-$kernel_version"
kernel_file=vmlinuz
offset="$(LC_ALL=C grep -abo $'\xfd7zXZ\x00' "$bzimage" | head -n 1 | cut -d : -f 1 || true)"
if [ -n "$offset" ] && tail -c +"$((offset + 1))" "$bzimage" >"$work/vmlinux.xz" \
  && xz -dc --single-stream "$work/vmlinux.xz" >"$work/vmlinux" 2>/dev/null \
  && [ "$(head -c 4 "$work/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ]; then
  kernel_file=vmlinux
  mv "$work/vmlinux" "$work/kernel-file"
else
  say "cannot unpack the kernel from $bzimage; using the bzImage (slower boots under TCG)"
  cp "$bzimage" "$work/kernel-file"
fi

rm -f "$out/vmlinuz" "$out/vmlinux" "$out/initramfs.gz"
mv -f "$work/kernel-file" "$out/$kernel_file"
ln -sfn "$kernel_file" "$out/kernel"
mv -f "$work/initramfs.cpio" "$out/initramfs.cpio"
echo "$stamp" >"$out/.stamp"
say "built $out: kernel $kernel_version as $kernel_file, initramfs.cpio with modules ${order[*]}"
