#!/usr/bin/env bash
# bench/sync.sh [UPDATES] [SAMPLES] [MEDIA_FILES] [MEDIA_MB]: live-sync
# benchmark. A release parleyd syncs from the Bot API emulator
# (tests/harness/botapi_emulator.mjs) into a throw-away cluster: the ingest
# rate of UPDATES generated updates (default 100000: at 5,000-8,000 a second
# the start, a second or so, stays out of the rate), the update-to-stored
# latency over SAMPLES single updates (default 200), the download
# throughput of MEDIA_FILES files of MEDIA_MB each (default 40 of 8; 0: none) beside
# curl --parallel on the same files, and parleyd's peak RSS. Then the
# floor, in the same run: the rows the ingest stored (its columns) COPYed
# into a twin of messages with the same indexes, foreign keys and triggers,
# and into a twin with the primary key only (bench/floor_twin.sh), durable,
# with nothing else running. Prints key=value lines, among them
# floor_copy_rows_per_s, pk_only_copy_rows_per_s and ingest_vs_floor (the
# ingest rate over the floor's); PARLEY_BENCH_LOG_LEVEL=debug adds the mean
# time of each phase of a stored file (getFile, download, store, row).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
samples=${2:-200}
media_files=${3:-40}
media_mb=${4:-8}
# PARLEY_BENCH_PARLEYD: another parleyd to measure (an earlier build, for
# a before/after in one run); by default the release build of this tree.
parleyd=${PARLEY_BENCH_PARLEYD:-build-bench/parleyd}
if [ -z "${PARLEY_BENCH_PARLEYD:-}" ]; then
  cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPARLEY_TESTS=OFF >/dev/null
  cmake --build build-bench -j "$(nproc)" >/dev/null
fi
work=$(mktemp -d /tmp/parley-bench-sync.XXXXXX)
chmod 755 "$work"
pg="$work/pg"
PARLEY_PG_EMBEDDED="$parleyd" tests/harness/pg_cluster.sh start "$pg" >/dev/null
emu= pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  [ -n "$emu" ] && kill "$emu" 2>/dev/null || true
  tests/harness/pg_cluster.sh destroy "$pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
node tests/harness/botapi_emulator.mjs >"$work/emu.out" &
emu=$!
for _ in $(seq 50); do [ -s "$work/emu.out" ] && break; sleep 0.1; done
port=$(sed -E 's/.*"port":([0-9]+).*/\1/' "$work/emu.out")
"$parleyd" serve --db "host=$pg port=5432 user=parley dbname=postgres" \
  --data-dir "$work/data" --log-level "${PARLEY_BENCH_LOG_LEVEL:-warn}" --telegram-bot-token 123456:BENCH \
  --telegram-api-url "http://127.0.0.1:$port" --telegram-poll-timeout-s 5 2>"$work/parleyd.log" &
pid=$!
sleep 1
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
. bench/floor_twin.sh
export FLOOR_ROWS_FILE="$work/rows.copy" FLOOR_COLS="$(floor_twin_cols)"
node bench/sync_bench.mjs "http://127.0.0.1:$port" "$pg" "$pid" "$n" "$samples" "$media_files" "$media_mb" |
  tee "$work/bench.out"
# With PARLEY_BENCH_LOG_LEVEL=debug, parleyd logs each stored file's
# phases: their means, to see where a download's time goes.
{ grep -o 'getFile [0-9.]* ms, download [0-9.]* ms, store [0-9.]* ms, row [0-9.]* ms' \
  "$work/parleyd.log" || true; } | awk '{g += $2; d += $5; s += $8; r += $11; n++}
  END {if (n) printf "media_phase_mean_ms files=%d getfile=%.1f download=%.1f store=%.1f row=%.1f\n", n, g/n, d/n, s/n, r/n}'
# The floor: the ingested rows COPYed into the twins, parleyd and the
# emulator stopped.
kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
pid=
kill "$emu" 2>/dev/null || true
emu=
psql_t() { psql -X -q -At -h "$pg" -U parley -d postgres -c "$1"; }
rows=$(wc -l <"$work/rows.copy")
floor_twin_make psql_t messages_floor all
floor_twin_make psql_t messages_pk pk
FLOOR_TWIN_PGPID=$(head -1 "$pg/pg/data/postmaster.pid")
export FLOOR_TWIN_PGPID
read -r floor floor_cpu < <(floor_twin_copy psql_t messages_floor "$FLOOR_COLS" "$work/rows.copy" "$rows")
read -r pk pk_cpu < <(floor_twin_copy psql_t messages_pk "$FLOOR_COLS" "$work/rows.copy" "$rows")
ingest=$(sed -n 's/.*ingest_updates_per_s=\([0-9]*\).*/\1/p' "$work/bench.out")
ingest_cpu=$(sed -n 's/.*ingest_db_cpu_us_per_update=\([0-9]*\).*/\1/p' "$work/bench.out")
echo "floor_rows=$rows floor_copy_rows_per_s=$floor pk_only_copy_rows_per_s=$pk floor_vs_pk_only=$(awk -v a="$floor" -v b="$pk" 'BEGIN{printf "%.2f", b/a}')"
echo "floor_db_cpu_us_per_row=$floor_cpu pk_only_db_cpu_us_per_row=$pk_cpu"
# The rate against the floor's (wall time: swayed by other work on a shared
# machine), and the floor's database CPU per row against the ingest's.
echo "ingest_vs_floor=$(awk -v a="$ingest" -v b="$floor" 'BEGIN{printf "%.2f", a/b}') ingest_vs_floor_db_cpu=$(awk -v a="$ingest_cpu" -v b="$floor_cpu" 'BEGIN{printf "%.2f", b/a}')"
