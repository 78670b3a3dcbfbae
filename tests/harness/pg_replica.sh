#!/usr/bin/env bash
# pg_replica.sh: a streaming replica of a test cluster (pg_cluster.sh).
#   pg_replica.sh start PRIMARY_DIR DIR   pg_basebackup -R from the cluster
#                                         whose socket is in PRIMARY_DIR, then
#                                         start it as a hot standby with its
#                                         socket in DIR (no TCP); prints its
#                                         conninfo
#   pg_replica.sh destroy DIR             stop it and remove DIR
# As root it runs as the 'postgres' user, as pg_cluster.sh does.
set -euo pipefail
BIN=${PARLEY_PG_BINDIR:-/usr/lib/postgresql/15/bin}
cmd=${1:?usage: pg_replica.sh start PRIMARY_DIR DIR | destroy DIR}

as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
  start)
    primary=${2:?usage: pg_replica.sh start PRIMARY_DIR DIR}
    dir=${3:?usage: pg_replica.sh start PRIMARY_DIR DIR}
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir" && chmod 755 "$dir"
    as_pg "$BIN/pg_basebackup" -h "$primary" -p 5432 -U parley -D "$dir/data" -R -X stream \
      -c fast >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; exit 1; }
    as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 -s \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=300 -c fsync=off -c hot_standby=on" \
      start || { tail -20 "$dir/postgres.log" >&2; exit 1; }
    echo "host=$dir port=5432 user=parley dbname=postgres"
    ;;
  destroy)
    dir=${2:?usage: pg_replica.sh destroy DIR}
    if [ -d "$dir/data" ]; then as_pg "$BIN/pg_ctl" -D "$dir/data" -m immediate -w -s stop 2>/dev/null || true; fi
    rm -rf "$dir"
    ;;
  *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
