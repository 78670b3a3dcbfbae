#!/usr/bin/env bash
# bench/run.sh: the MCP engine's load benchmark. Builds parleyd and
# parley-loadgen (release build in build-bench/), starts a throw-away
# PostgreSQL cluster and one parleyd serving the conformance toolset on a
# Unix socket, TCP and Streamable HTTP, then drives N concurrent sessions
# (ping, and tools/call of a trivial tool) over each. Prints one line per
# run; bench/README.md quotes a run.
#
#   bench/run.sh [SECONDS] [SESSIONS...]     defaults: 5 s; 1 100 1000
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
shift || true
sessions=("${@:-1 100 1000}")
[ $# -eq 0 ] && sessions=(1 100 1000)
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPARLEY_TESTS=OFF >/dev/null
cmake --build build-bench -j "$(nproc)" >/dev/null
work=$(mktemp -d /tmp/parley-bench.XXXXXX)
chmod 755 "$work"
pg="$work/pg"
PARLEY_PG_EMBEDDED=build-bench/parleyd tests/harness/pg_cluster.sh start "$pg" >/dev/null
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  tests/harness/pg_cluster.sh destroy "$pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
port_tcp=$((20000 + RANDOM % 20000))
port_http=$((port_tcp + 1))
build-bench/parleyd serve --db "host=$pg port=5432 user=parley dbname=postgres" \
  --toolsets conformance --log-level warn --max-sessions 100000 \
  --listen "unix:$work/mcp.sock,tcp://127.0.0.1:$port_tcp,http://127.0.0.1:$port_http/mcp" \
  2>"$work/parleyd.log" &
pid=$!
for _ in $(seq 100); do [ -S "$work/mcp.sock" ] && break; sleep 0.1; done
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for url in "unix:$work/mcp.sock" "tcp://127.0.0.1:$port_tcp" "http://127.0.0.1:$port_http/mcp"; do
  for n in "${sessions[@]}"; do
    build-bench/parley-loadgen --url "$url" --sessions "$n" --seconds "$secs" --label ping
    build-bench/parley-loadgen --url "$url" --sessions "$n" --seconds "$secs" \
      --tool test_simple_text --label tool
  done
done
echo "# parleyd peak RSS: $(grep VmHWM /proc/$pid/status | awk '{print $2, $3}')"
