# PostgreSQL for the store tests (gateway-server's PostgresStoreContractTest). Sourced by scripts/test (uses
# scripts/lib/common.sh); do not run it. Installs Debian's postgresql, initializes a cluster under /var/lib/sandgate
# (or SANDGATE_POSTGRES_DIR), starts it on loopback as the postgres user unless it already answers (a running server is reused and left running),
# makes a database and a user with a generated password kept in an owner-only file, and exports for the tests:
#   SANDGATE_POSTGRES_URL            e.g. jdbc:postgresql://127.0.0.1:15432/sandgate
#   SANDGATE_POSTGRES_USER           the user the tests connect as
#   SANDGATE_POSTGRES_PASSWORD_FILE  the file holding its password (mode 600)
# shellcheck shell=bash

apt_install postgresql

sandgate_postgres_port="${SANDGATE_POSTGRES_PORT:-15432}"
# The server runs as the postgres user, which may not reach the checkout (a clone under /root, say): its cluster lives
# under /var/lib/sandgate, one per run directory, unless SANDGATE_POSTGRES_DIR says where.
sandgate_postgres_dir="${SANDGATE_POSTGRES_DIR:-/var/lib/sandgate/postgres-$(printf '%s' "$SANDGATE_RUN_DIR" | sha256sum | cut -c1-12)}"
sandgate_postgres_socket="$sandgate_postgres_dir/socket"
sandgate_postgres_bin="$(find /usr/lib/postgresql -maxdepth 3 -name postgres -path '*/bin/*' | sort -V | tail -1)"
[ -n "$sandgate_postgres_bin" ] || die "no PostgreSQL server under /usr/lib/postgresql after installing postgresql"
sandgate_postgres_bin="$(dirname "$sandgate_postgres_bin")"
SANDGATE_POSTGRES_URL="jdbc:postgresql://127.0.0.1:$sandgate_postgres_port/sandgate"
SANDGATE_POSTGRES_USER=sandgate
SANDGATE_POSTGRES_PASSWORD_FILE="$sandgate_postgres_dir/password"
export SANDGATE_POSTGRES_URL SANDGATE_POSTGRES_USER SANDGATE_POSTGRES_PASSWORD_FILE

# Runs a command as the postgres user (setpriv execs it: the pid start_daemon records is the server's own).
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; }

postgres_answers() { pg_isready -q -h 127.0.0.1 -p "$sandgate_postgres_port" >/dev/null 2>&1; }

# Runs SQL from stdin as the superuser, over the cluster's socket (peer authentication).
postgres_sql() {
  as_postgres "$sandgate_postgres_bin/psql" -q -X -v ON_ERROR_STOP=1 -h "$sandgate_postgres_socket" \
    -p "$sandgate_postgres_port" -d postgres "$@"
}

if postgres_answers; then
  log "PostgreSQL already answers on 127.0.0.1:$sandgate_postgres_port: reusing it"
  [ -S "$sandgate_postgres_socket/.s.PGSQL.$sandgate_postgres_port" ] || [ -s "$SANDGATE_POSTGRES_PASSWORD_FILE" ] \
    || die "a PostgreSQL on 127.0.0.1:$sandgate_postgres_port is not this run directory's: stop it or set SANDGATE_POSTGRES_PORT"
else
  mkdir -p "$sandgate_postgres_dir"
  chmod 711 "$(dirname "$sandgate_postgres_dir")" "$sandgate_postgres_dir"
  if [ ! -s "$sandgate_postgres_dir/data/PG_VERSION" ]; then
    rm -rf "$sandgate_postgres_dir/data"
    install -d -o postgres -g postgres -m 700 "$sandgate_postgres_dir/data"
    as_postgres test -w "$sandgate_postgres_dir/data" \
      || die "the postgres user cannot reach $sandgate_postgres_dir (a parent directory is closed to it): set SANDGATE_POSTGRES_DIR to a directory it can reach"
    as_postgres "$sandgate_postgres_bin/initdb" -D "$sandgate_postgres_dir/data" -U postgres \
      --auth-local=peer --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 \
      >"$SANDGATE_RUN_DIR/logs/postgres-initdb.log" 2>&1 \
      || { tail -30 "$SANDGATE_RUN_DIR/logs/postgres-initdb.log" >&2; die "initdb failed"; }
  fi
  install -d -o postgres -g postgres -m 700 "$sandgate_postgres_socket"
  as_postgres test -w "$sandgate_postgres_socket" \
    || die "the postgres user cannot reach $sandgate_postgres_dir (a parent directory is closed to it): set SANDGATE_POSTGRES_DIR to a directory it can reach"
  start_daemon postgres setpriv --reuid=postgres --regid=postgres --init-groups -- \
    "$sandgate_postgres_bin/postgres" -D "$sandgate_postgres_dir/data" \
    -c listen_addresses=127.0.0.1 -c port="$sandgate_postgres_port" \
    -c unix_socket_directories="$sandgate_postgres_socket" -c max_connections=200 -c fsync=off
  if ! wait_for postgres_answers 60; then
    tail -30 "$SANDGATE_RUN_DIR/logs/postgres.log" >&2 || true
    die "PostgreSQL did not answer on 127.0.0.1:$sandgate_postgres_port within 60 s (log: $SANDGATE_RUN_DIR/logs/postgres.log)"
  fi
fi

if [ -S "$sandgate_postgres_socket/.s.PGSQL.$sandgate_postgres_port" ]; then
  if [ ! -s "$SANDGATE_POSTGRES_PASSWORD_FILE" ]; then
    (umask 077 && head -c 24 /dev/urandom | base64 | tr -d '/+=\n' >"$SANDGATE_POSTGRES_PASSWORD_FILE")
  fi
  chmod 600 "$SANDGATE_POSTGRES_PASSWORD_FILE"
  # The password goes in on stdin, never in a command line.
  {
    printf "SELECT 'CREATE ROLE %s LOGIN' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%s')\\\\gexec\n" \
      "$SANDGATE_POSTGRES_USER" "$SANDGATE_POSTGRES_USER"
    printf "ALTER ROLE %s PASSWORD '%s';\n" "$SANDGATE_POSTGRES_USER" "$(cat "$SANDGATE_POSTGRES_PASSWORD_FILE")"
    printf "SELECT 'CREATE DATABASE sandgate OWNER %s' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'sandgate')\\\\gexec\n" \
      "$SANDGATE_POSTGRES_USER"
  } | postgres_sql -f - >/dev/null || die "cannot create the PostgreSQL user and database (log: $SANDGATE_RUN_DIR/logs/postgres.log)"
fi
log "PostgreSQL ready: $SANDGATE_POSTGRES_URL as $SANDGATE_POSTGRES_USER (password in $SANDGATE_POSTGRES_PASSWORD_FILE)"
