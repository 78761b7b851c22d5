#!/usr/bin/env bash
# Builds the root filesystem of the test image as a tar file, from Debian's busybox-static (no registry needed):
# bin/busybox with one symlink per applet, etc/passwd, etc/group and empty tmp, proc, sys, dev and workspace.
#
#   scripts/images/busybox-rootfs.sh OUTPUT.tar
#
# Idempotent: an existing OUTPUT.tar is kept. Import it with `docker import` / `podman import` (see scripts/engines).
set -euo pipefail

out="${1:?usage: busybox-rootfs.sh OUTPUT.tar}"
if [ -s "$out" ]; then
  exit 0
fi
busybox=/bin/busybox
[ -x "$busybox" ] || { echo "busybox-rootfs.sh: $busybox is missing (apt-get install busybox-static)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
mkdir -p "$root/bin" "$root/etc" "$root/root" "$root/tmp" "$root/proc" "$root/sys" "$root/dev" "$root/workspace"
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"

# --list-full prints each applet with its usual directory (bin/sh, usr/bin/env, sbin/...).
"$busybox" --list-full | while read -r applet; do
  [ "$applet" = bin/busybox ] && continue
  mkdir -p "$root/$(dirname "$applet")"
  ln -sf /bin/busybox "$root/$applet"
done

cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat >"$root/etc/group" <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP

mkdir -p "$(dirname "$out")"
tar --numeric-owner --owner=0 --group=0 -C "$root" -cf "$work/rootfs.tar" .
mv "$work/rootfs.tar" "$out"
