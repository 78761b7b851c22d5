#!/usr/bin/env bash
# Builds the gateway image's base without any registry and imports it into the given engines:
#   - a root filesystem assembled from the host's Debian packages (libc6, libgcc-s1, bash, libtinfo6, busybox-static:
#     the dynamic loader and C library the JVM needs, bash for bin/sandgate-gateway, busybox for its few tools),
#     with /etc/passwd naming user 10001 (sandgate) and an empty /tmp;
#   - a Java runtime made by jlink from the build JDK, in /opt/java/openjdk (where eclipse-temurin images keep theirs,
#     so that the Containerfile works on both bases).
#
#   scripts/images/gateway-base.sh ENGINE...      ENGINE: docker or podman
#
# Prints the base image's reference. Idempotent: the root filesystem tar is cached in $SANDGATE_RUN_DIR/images and an
# engine that holds the same base (by label) is left alone. Docker is reached at $SANDGATE_DOCKER_HOST (default
# unix:///run/docker.sock), Podman through its command line.
set -euo pipefail
source "$(dirname "$0")/../lib/common.sh"

# Bump when the contents below change: engines holding an older base get the new one.
GATEWAY_BASE_VERSION=1
GATEWAY_BASE_LABEL=dev.sandgate.gateway-base
# What the gateway's JVM and libraries use (checked by GatewayImageTest, which runs the gateway on this base).
JLINK_MODULES=java.base,java.logging,java.management,java.naming,java.net.http,java.sql,java.xml,jdk.crypto.ec,jdk.httpserver,jdk.management,jdk.naming.dns,jdk.unsupported,jdk.zipfs,java.security.jgss,java.desktop
PACKAGES=(libc6 libgcc-s1 bash libtinfo6 busybox-static)

pick_jdk
java_version="$("$JAVA_HOME/bin/java" -XshowSettings:properties -version 2>&1 \
  | awk -F'= ' '/java.runtime.version/ {print $2; exit}')"
tag="$(jdk_major "$JAVA_HOME")-$GATEWAY_BASE_VERSION"
image="${SANDGATE_GATEWAY_BASE_IMAGE:-localhost/sandgate-gateway-base:$tag}"
label_value="$GATEWAY_BASE_VERSION-$java_version"
tar_file="$SANDGATE_RUN_DIR/images/gateway-base-$label_value.tar"

build_rootfs_tar() {
  local work root pkg
  work="$(mktemp -d)"
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" RETURN
  root="$work/rootfs"
  mkdir -p "$root"/usr/{bin,sbin,lib,lib64} "$root"/{etc,tmp,proc,sys,dev,opt/java,var/lib} "$root/home/sandgate"
  chmod 1777 "$root/tmp"
  # Debian 12 merges /bin, /lib... into /usr: keep the same links, so that the packages' paths resolve.
  for dir in bin sbin lib lib64; do ln -s "usr/$dir" "$root/$dir"; done
  for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
      || die "Debian package $pkg is not installed (apt-get install $pkg)"
  done
  # Every file and link of the packages but documentation, translations and iconv modules (the JVM uses none).
  dpkg -L "${PACKAGES[@]}" | sort -u | while read -r path; do
    case "$path" in
      /usr/share/doc/*|/usr/share/man/*|/usr/share/info/*|/usr/share/locale/*|/usr/share/lintian/*) continue ;;
      /usr/lib/x86_64-linux-gnu/gconv/*|/usr/share/bash-completion/*|/usr/share/menu/*) continue ;;
    esac
    if [ -L "$path" ] || [ -f "$path" ]; then printf '%s\n' "${path#/}"; fi
  done >"$work/files"
  tar -C / --no-recursion -cf - -T "$work/files" | tar -C "$root" --keep-directory-symlink -xf -
  # One link per busybox applet where the packages put nothing (sh, readlink, dirname, id...).
  "$root/bin/busybox" --list-full | while read -r applet; do
    [ -e "$root/$applet" ] || [ -L "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
  done
  cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
sandgate:x:10001:10001:Sandgate gateway:/home/sandgate:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
  cat >"$root/etc/group" <<'GROUP'
root:x:0:
sandgate:x:10001:
nogroup:x:65534:
GROUP
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
  chown 10001:10001 "$root/home/sandgate"
  ldconfig -r "$root" 2>/dev/null || true
  log "gateway base: jlink $JLINK_MODULES"
  "$JAVA_HOME/bin/jlink" --add-modules "$JLINK_MODULES" --strip-debug --no-man-pages --no-header-files \
    --compress=zip-6 --output "$root/opt/java/openjdk"
  mkdir -p "$(dirname "$tar_file")"
  tar --numeric-owner -C "$root" -cf "$work/base.tar" .
  mv "$work/base.tar" "$tar_file"
}

changes=(
  --change 'ENV JAVA_HOME=/opt/java/openjdk'
  --change 'ENV PATH=/opt/java/openjdk/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  --change 'CMD ["/bin/sh"]'
  --change "LABEL $GATEWAY_BASE_LABEL=$label_value"
)

for engine in "$@"; do
  case "$engine" in
    docker) cli=(docker -H "${SANDGATE_DOCKER_HOST:-unix:///run/docker.sock}"); labels=.Config.Labels; quiet=() ;;
    podman) cli=(podman); labels=.Labels; quiet=(-q) ;;
    *) die "unknown engine '$engine' (docker or podman)" ;;
  esac
  present="$("${cli[@]}" image inspect --format "{{index $labels \"$GATEWAY_BASE_LABEL\"}}" "$image" \
    2>/dev/null || true)"
  if [ "$present" = "$label_value" ]; then
    log "$engine: gateway base $image present"
    continue
  fi
  [ -s "$tar_file" ] || build_rootfs_tar
  "${cli[@]}" import "${quiet[@]}" "${changes[@]}" "$tar_file" "$image" >/dev/null || die "$engine import of the gateway base failed"
  log "$engine: imported gateway base $image ($(du -h "$tar_file" | cut -f1) uncompressed)"
done
printf '%s\n' "$image"
