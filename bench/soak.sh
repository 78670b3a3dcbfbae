#!/usr/bin/env bash
# bench/soak.sh [SECONDS]: soak test (default 3600 s). A release parleyd on
# a cluster configured like the embedded default (durability on, the
# embedded tuning) syncs a steady stream of Bot API updates with photos
# from the emulator while MCP clients (the TypeScript SDK over Streamable
# HTTP and a Unix socket; SOAK_CLIENTS, default 8) call a mix of tools.
# Every 10 s a line: RSS, open descriptors, pool connections, sync-job and
# media queues, calls/s, errors, p99 latency. Exits 1 if RSS or
# descriptors grow beyond a bound after the warm-up, or any call fails,
# parleyd logs a warning or an error, or a message is missing (see
# bench/soak.mjs, which also starts and removes the cluster).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-3600}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPARLEY_TESTS=OFF >/dev/null
cmake --build build-bench -j "$(nproc)" >/dev/null
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); ${seconds} s"
exec node bench/soak.mjs "$seconds" "$PWD/build-bench/parleyd"
