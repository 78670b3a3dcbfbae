#!/usr/bin/env bash
# bench/follow.sh [PROBES] [RATE]: how soon a line an agent appends to its
# transcript is searchable, while another agent writes RATE lines a second
# (default 100). A release parleyd serves with --claude-code-dir over a
# throw-away folder (never the machine's own) into a throw-away cluster
# with durability on (as users run it); bench/follow_bench.mjs appends
# PROBES probe lines (default 100, one every 300 ms) to one session while
# the writer appends to another, and for each polls the memory toolset's
# search_messages through the MCP SDK client (stdio) until it answers the
# probe's word. Beside it, in the same run, the floor: the same probe line
# appended, then `parleyd import claude-code` of the folder run at once,
# the time until that import ends (what a follower cannot beat: the import
# of one line, without the process start measured separately). Prints
# key=value lines: latency p50/p90/p99/max in ms, the follower's share of
# its debounce (FOLLOW_DIR_DEBOUNCE_MS, 100 ms), and the floor.
set -euo pipefail
cd "$(dirname "$0")/.."
probes=${1:-100}
rate=${2:-100}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPARLEY_TESTS=OFF >/dev/null
cmake --build build-bench -j "$(nproc)" >/dev/null
work=$(mktemp -d /tmp/parley-bench-follow.XXXXXX)
chmod 755 "$work"
pg="$work/pg"
PARLEY_PG_EMBEDDED=build-bench/parleyd tests/harness/pg_cluster.sh start "$pg" >/dev/null
trap 'tests/harness/pg_cluster.sh destroy "$pg" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
psql -X -q -At -h "$pg" -U parley -d postgres -c "CREATE DATABASE bench"
url="host=$pg port=5432 user=parley dbname=bench"
build-bench/parleyd migrate --db "$url" 2>/dev/null
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
PARLEYD=$PWD/build-bench/parleyd PARLEY_BENCH_DB="$url" PARLEY_BENCH_WORK="$work" \
  node bench/follow_bench.mjs "$probes" "$rate"
