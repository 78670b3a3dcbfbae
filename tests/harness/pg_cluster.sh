#!/usr/bin/env bash
# pg_cluster.sh: a throw-away PostgreSQL cluster for the tests.
#   pg_cluster.sh start DIR   initdb (if needed) and start a cluster in DIR
#                             (socket in DIR, no TCP); prints its conninfo
#   pg_cluster.sh stop DIR    stop it (fast) and keep the files
#   pg_cluster.sh destroy DIR stop it and remove DIR
#   pg_cluster.sh conninfo DIR
# As root the cluster runs as the 'postgres' user (PostgreSQL refuses root).
#
# Tests run with fsync off. PARLEY_PG_EMBEDDED=PARLEYD (the benchmarks)
# makes the cluster the one users get by default instead: `PARLEYD migrate
# --data-dir DIR` creates and configures it (DIR/pg/data, parley.conf with
# durability on and the embedded tuning, as the cluster's own user), and
# this script starts it with two changes only: the socket in DIR, so the
# conninfo stays the same, and max_connections 300 (room for pgbench).
set -euo pipefail
BIN=${PARLEY_PG_BINDIR:-/usr/lib/postgresql/15/bin}
cmd=${1:?usage: pg_cluster.sh start|stop|destroy|conninfo DIR}
dir=${2:?usage: pg_cluster.sh start|stop|destroy|conninfo DIR}

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

data="$dir/data"
[ -n "${PARLEY_PG_EMBEDDED:-}" ] || [ -f "$dir/pg/data/PG_VERSION" ] && data="$dir/pg/data"
# Runs a command as the cluster's owner (root cannot run PostgreSQL).
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u "$(stat -c %U "$data")" -- "$@"; else "$@"; fi
}

case "$cmd" in
  start)
    if [ -n "${PARLEY_PG_EMBEDDED:-}" ]; then
      mkdir -p "$dir"
      chmod 755 "$dir"
      if [ ! -f "$data/PG_VERSION" ]; then
        "$PARLEY_PG_EMBEDDED" migrate --data-dir "$dir" --log-level warn ||
          { echo "pg_cluster.sh: $PARLEY_PG_EMBEDDED could not create its cluster in $dir" >&2; exit 1; }
      fi
      [ "$(id -u)" = 0 ] && chown "$(stat -c %U:%G "$data")" "$dir"
      as_owner "$BIN/pg_ctl" -D "$data" -l "$dir/pg/postgres.log" -w -t 60 -s \
        -o "-c unix_socket_directories='$dir' -c max_connections=300" start ||
        { tail -20 "$dir/pg/postgres.log" >&2; exit 1; }
      echo "host=$dir port=5432 user=parley dbname=postgres"
      exit 0
    fi
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir" && chmod 755 "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_pg "$BIN/initdb" -D "$dir/data" -U parley --auth=trust -E UTF8 \
        --locale=C.UTF-8 --no-instructions >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 -s \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=300 -c fsync=off" \
      start || { tail -20 "$dir/postgres.log" >&2; exit 1; }
    echo "host=$dir port=5432 user=parley dbname=postgres"
    ;;
  stop)
    as_owner "$BIN/pg_ctl" -D "$data" -m fast -w -s stop || true
    ;;
  destroy)
    if [ -d "$data" ]; then as_owner "$BIN/pg_ctl" -D "$data" -m immediate -w -s stop 2>/dev/null || true; fi
    rm -rf "$dir"
    ;;
  conninfo)
    echo "host=$dir port=5432 user=parley dbname=postgres"
    ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
