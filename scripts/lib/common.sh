# Shared helpers for the project's scripts. Source it; do not run it.
# shellcheck shell=bash

SANDGATE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export SANDGATE_ROOT

log() { printf '[sandgate %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Prints the major version of the JDK at $1 (a JAVA_HOME), or nothing.
jdk_major() {
  local home="$1"
  [ -x "$home/bin/java" ] || return 0
  "$home/bin/java" -XshowSettings:properties -version 2>&1 \
    | awk -F'= ' '/java.specification.version/ {print $2; exit}' | cut -d. -f1
}

# Exports JAVA_HOME pointing at a JDK >= 21: JAVA_HOME if it qualifies, else the newest under /usr/lib/jvm.
pick_jdk() {
  if [ -n "${JAVA_HOME:-}" ] && [ "$(jdk_major "$JAVA_HOME")" -ge 21 ] 2>/dev/null; then
    export JAVA_HOME; quiet_maven_on_new_jdks; return 0
  fi
  local best="" best_major=0 dir major
  for dir in /usr/lib/jvm/*; do
    [ -x "$dir/bin/javac" ] || continue
    major="$(jdk_major "$dir")"
    if [ -n "$major" ] && [ "$major" -ge 21 ] && [ "$major" -gt "$best_major" ]; then
      best="$dir"; best_major="$major"
    fi
  done
  [ -n "$best" ] || die "no JDK 21 or newer found: set JAVA_HOME to one, or install one under /usr/lib/jvm (e.g. apt-get install openjdk-21-jdk-headless where available, or a Temurin JDK)"
  export JAVA_HOME="$best"
  log "using JDK $best_major at $JAVA_HOME"
  quiet_maven_on_new_jdks
}

# Maven 3.9's Guice calls sun.misc.Unsafe, which JDK 24+ warns about on every run; allow it for Maven's own JVM only.
quiet_maven_on_new_jdks() {
  if [ "$(jdk_major "$JAVA_HOME")" -ge 24 ] 2>/dev/null; then
    case " ${MAVEN_OPTS:-} " in
      *sun-misc-unsafe-memory-access*) ;;
      *) export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow" ;;
    esac
  fi
}

# JVM options for a JVM that logs through the ring buffer of conf/logback.xml (or the benchmarks' copy of it): the
# buffer uses sun.misc.Unsafe, which JDK 23 and newer allow but warn about at start-up. bin/sandgate-gateway does the
# same. Prints one option per line, or nothing.
logging_jvm_opts() {
  if [ "$(jdk_major "$JAVA_HOME")" -ge 23 ] 2>/dev/null; then
    printf '%s\n' --sun-misc-unsafe-memory-access=allow
  fi
}

# Run directory for daemons this command starts: pid files, logs, sockets.
SANDGATE_RUN_DIR="${SANDGATE_RUN_DIR:-$SANDGATE_ROOT/target/run}"
export SANDGATE_RUN_DIR

# Starts a daemon in the background with its output in a log file (never the inherited stdout), records its pid so
# that stop_started_daemons stops it (and only it) when the calling command ends.
start_daemon() {
  local name="$1"; shift
  mkdir -p "$SANDGATE_RUN_DIR/logs" "$SANDGATE_RUN_DIR/pids"
  # From /, not the checkout: a daemon left running (and reused by a later run) must not depend on a directory that
  # may be removed under it; Podman's service then fails every container start with "write child: broken pipe".
  (cd / && exec setsid "$@" >"$SANDGATE_RUN_DIR/logs/$name.log" 2>&1 </dev/null) &
  echo $! >"$SANDGATE_RUN_DIR/pids/$name.pid"
  log "started $name (pid $!, log $SANDGATE_RUN_DIR/logs/$name.log)"
}

stop_started_daemons() {
  local file pid
  for file in "$SANDGATE_RUN_DIR"/pids/*.pid; do
    [ -e "$file" ] || continue
    pid="$(cat "$file")"
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
      log "stopped $(basename "$file" .pid) (pid $pid)"
    fi
    rm -f "$file"
  done
}

# Waits up to $2 seconds for command $1 (a string) to succeed.
wait_for() {
  local check="$1" seconds="$2" i
  for i in $(seq 1 $((seconds * 10))); do
    if eval "$check" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  return 1
}

is_debian_root() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }

# Installs Debian packages that are missing (one apt-get call for all of them).
apt_install() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  apt-get update -qq >"$SANDGATE_RUN_DIR/logs/apt-update.log" 2>&1 || { cat "$SANDGATE_RUN_DIR/logs/apt-update.log" >&2; die "apt-get update failed"; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >"$SANDGATE_RUN_DIR/logs/apt-install.log" 2>&1 || { tail -50 "$SANDGATE_RUN_DIR/logs/apt-install.log" >&2; die "apt-get install failed"; }
}

# Whether a Docker-compatible engine answers its ping on unix socket $1.
engine_answers() { curl -sf --max-time 2 --unix-socket "$1" http://engine/_ping >/dev/null 2>&1; }
