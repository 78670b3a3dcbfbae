# lib.sh: helpers for the integration tests (sourced). They drive the real
# parleyd binary ($PARLEYD) as a user would.
set -euo pipefail
: "${PARLEYD:?run through ctest}"
PG_BIN=${PARLEY_PG_BINDIR:-/usr/lib/postgresql/15/bin}
TMP=$(mktemp -d /tmp/parley-it.XXXXXX)
chmod 755 "$TMP" # the embedded cluster may run as another user
PIDS=()

cleanup() {
  local rc=$?
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  # Stop any cluster a failed test left behind.
  for d in "$TMP"/*/pg/data; do
    [ -f "$d/postmaster.pid" ] || continue
    if [ "$(id -u)" = 0 ]; then
      runuser -u "$(stat -c %U "$d")" -- "$PG_BIN/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1 || true
    else
      "$PG_BIN/pg_ctl" -D "$d" -m immediate stop >/dev/null 2>&1 || true
    fi
  done
  rm -rf "$TMP"
  exit $rc
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# start_daemon LOG ARGS...: starts parleyd in the background; sets DPID.
start_daemon() {
  local log=$1; shift
  "$PARLEYD" "$@" 2>"$log" &
  DPID=$!
  PIDS+=("$DPID")
}

# wait_log LOG PATTERN [SECONDS]: waits until LOG holds PATTERN.
wait_log() {
  local log=$1 pat=$2 secs=${3:-60} i
  for ((i = 0; i < secs * 10; i++)); do
    grep -q -- "$pat" "$log" 2>/dev/null && return 0
    if [ -n "${DPID:-}" ] && ! kill -0 "$DPID" 2>/dev/null; then
      grep -q -- "$pat" "$log" 2>/dev/null && return 0
      cat "$log" >&2; fail "parleyd exited before logging '$pat'"
    fi
    sleep 0.1
  done
  cat "$log" >&2
  fail "timed out waiting for '$pat' in $log"
}

# wait_exit PID SECONDS: waits for PID (a child of this shell) to exit and
# sets EXIT_RC to its status. Not for use inside $(...).
wait_exit() {
  local pid=$1 secs=$2 i
  for ((i = 0; i < secs * 10; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      EXIT_RC=0
      wait "$pid" || EXIT_RC=$?
      return 0
    fi
    sleep 0.1
  done
  fail "process $pid did not exit within $secs s"
}

# cluster_running DIR: is the embedded cluster of data dir DIR up?
cluster_running() {
  local f=$1/pg/data/postmaster.pid
  [ -f "$f" ] && kill -0 "$(head -1 "$f")" 2>/dev/null
}

# no_postgres_for DIR: no postgres process serves DIR.
no_postgres_for() {
  ! pgrep -f "postgres -D $1/pg/data" >/dev/null
}
