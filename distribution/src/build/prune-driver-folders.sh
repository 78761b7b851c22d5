#!/usr/bin/env bash
# A build step of distribution/pom.xml, not a command: removes from every drivers/NAME/ folder of the assembled
# distribution ($1) the jars that lib/ already holds, so that each driver folder keeps only what the gateway lacks.
set -euo pipefail
home="$1"
[ -d "$home/lib" ] || { echo "prune-driver-folders: $home/lib does not exist" >&2; exit 1; }
for jar in "$home"/drivers/*/*.jar; do
  [ -e "$jar" ] || continue
  if [ -e "$home/lib/$(basename "$jar")" ]; then
    rm -- "$jar"
  fi
done
