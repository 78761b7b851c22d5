# Sourced by the launchers in bin/; not a command. Finds the installation and a Java 21 or newer.
# shellcheck shell=bash

SANDGATE_HOME="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd -P)"

# Prints the major version of the Java runtime in the JDK or JRE folder $1, or nothing. Reads the folder's release
# file when there is one (fast); otherwise asks the runtime.
java_home_major() {
  local home="$1" version=""
  [ -x "$home/bin/java" ] || return 0
  if [ -r "$home/release" ]; then
    version="$(sed -n 's/^JAVA_VERSION="\([^"]*\)".*/\1/p' "$home/release")"
  fi
  if [ -z "$version" ]; then
    version="$("$home/bin/java" -XshowSettings:properties -version 2>&1 \
      | awk -F'= ' '/java.specification.version/ {print $2; exit}')"
  fi
  version="${version#1.}"
  printf '%s\n' "${version%%[.+-]*}"
}

# Sets JAVA to a java of version 21 or newer: JAVA_HOME's if it qualifies, else the newest under /usr/lib/jvm; and
# JAVA_MAJOR to its major version.
find_java() {
  local major
  if [ -n "${JAVA_HOME:-}" ]; then
    major="$(java_home_major "$JAVA_HOME")"
    if [ -n "$major" ] && [ "$major" -ge 21 ]; then
      JAVA="$JAVA_HOME/bin/java"
      JAVA_MAJOR="$major"
      return 0
    fi
  fi
  local best="" best_major=0 dir
  for dir in /usr/lib/jvm/*; do
    major="$(java_home_major "$dir")"
    if [ -n "$major" ] && [ "$major" -ge 21 ] && [ "$major" -gt "$best_major" ]; then
      best="$dir"
      best_major="$major"
    fi
  done
  if [ -z "$best" ]; then
    echo "sandgate: no Java 21 or newer found: set JAVA_HOME to one, or install one under /usr/lib/jvm" \
      "(JAVA_HOME is ${JAVA_HOME:-unset})" >&2
    exit 1
  fi
  JAVA="$best/bin/java"
  JAVA_MAJOR="$best_major"
}

# Prints a class path: every jar in lib/, then every jar of every driver folder (drivers/NAME/*.jar). A jar that an
# earlier folder already holds under the same file name is left out (drivers may share one, e.g. docker and podman).
sandgate_classpath() {
  local with_drivers="$1" classpath="" jar name
  local -A seen=()
  local jars=("$SANDGATE_HOME"/lib/*.jar)
  if [ "$with_drivers" = true ]; then
    jars+=("$SANDGATE_HOME"/drivers/*/*.jar)
  fi
  for jar in "${jars[@]}"; do
    [ -e "$jar" ] || continue
    name="$(basename "$jar")"
    [ -z "${seen[$name]:-}" ] || continue
    seen[$name]=1
    classpath="${classpath:+$classpath:}$jar"
  done
  printf '%s\n' "$classpath"
}
