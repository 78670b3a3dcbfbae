#!/usr/bin/env bash
# pg_cluster.sh: a throw-away PostgreSQL cluster for the tests.
#   pg_cluster.sh start DIR   initdb (if needed) and start a cluster in DIR
#                             (socket in DIR, no TCP); prints its conninfo
#   pg_cluster.sh stop DIR    stop it (fast) and keep the files
#   pg_cluster.sh destroy DIR stop it and remove DIR
#   pg_cluster.sh conninfo DIR
# As root the cluster runs as the 'postgres' user (PostgreSQL refuses root).
set -euo pipefail
BIN=${PARLEY_PG_BINDIR:-/usr/lib/postgresql/15/bin}
cmd=${1:?usage: pg_cluster.sh start|stop|destroy|conninfo DIR}
dir=${2:?usage: pg_cluster.sh start|stop|destroy|conninfo DIR}

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Tests run with fsync off; PARLEY_PG_DURABLE=1 keeps PostgreSQL's default
# (fsync on), as users run it: for the benchmarks.
fsync="-c fsync=off"
[ "${PARLEY_PG_DURABLE:-0}" = 1 ] && fsync=""

case "$cmd" in
  start)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir" && chmod 755 "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_pg "$BIN/initdb" -D "$dir/data" -U parley --auth=trust -E UTF8 \
        --locale=C.UTF-8 --no-instructions >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 -s \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=300 $fsync" \
      start || { tail -20 "$dir/postgres.log" >&2; exit 1; }
    echo "host=$dir port=5432 user=parley dbname=postgres"
    ;;
  stop)
    as_pg "$BIN/pg_ctl" -D "$dir/data" -m fast -w -s stop || true
    ;;
  destroy)
    if [ -d "$dir/data" ]; then as_pg "$BIN/pg_ctl" -D "$dir/data" -m immediate -w -s stop 2>/dev/null || true; fi
    rm -rf "$dir"
    ;;
  conninfo)
    echo "host=$dir port=5432 user=parley dbname=postgres"
    ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
