#!/usr/bin/env bash
# bench/import.sh [MESSAGES]: the Telegram import benchmark. Generates an
# export of one chat with MESSAGES messages (default 1,000,000), imports it
# into a fresh database of a throw-away cluster with a release parleyd, and
# reports the import rate and the importer's peak RSS; then, in the same
# run, the raw COPY floor of the very rows the import produced (a twin of
# messages with its indexes, foreign keys and triggers) and a twin with the
# primary key only (bench/floor_twin.sh), and the ratios. Prints key=value
# lines.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPARLEY_TESTS=OFF >/dev/null
cmake --build build-bench -j "$(nproc)" >/dev/null
work=$(mktemp -d /tmp/parley-bench-import.XXXXXX)
chmod 755 "$work"
pg="$work/pg"
PARLEY_PG_EMBEDDED=build-bench/parleyd tests/harness/pg_cluster.sh start "$pg" >/dev/null
trap 'tests/harness/pg_cluster.sh destroy "$pg" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
psql_t() { psql -X -q -At -h "$pg" -U parley -d "${2:-bench}" -c "$1"; }
psql_t "CREATE DATABASE bench" postgres
url="host=$pg port=5432 user=parley dbname=bench"
build-bench/parleyd migrate --db "$url" 2>/dev/null
node tests/harness/gen_tg_export.mjs big "$work/result.json" "$n"
bytes=$(stat -c %s "$work/result.json")
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "export_messages=$n export_bytes=$bytes"
/usr/bin/time -f "%e %M" -o "$work/time" \
  build-bench/parleyd import telegram-export "$work/result.json" --db "$url" 2>"$work/import.log"
read -r secs rss <"$work/time"
grep "imported" "$work/import.log" | sed 's/.*\[main\] //'
echo "import_seconds=$secs import_msgs_per_s=$(awk -v n="$n" -v s="$secs" 'BEGIN{printf "%.0f", n/s}') importer_peak_rss_kib=$rss"
# The floor, in the same run: the rows the import stored COPYed (one
# durable transaction) into a twin of messages with every index, foreign
# key and trigger, and into a twin with the primary key only
# (bench/floor_twin.sh: twins read from the live catalog). The import's
# rate over the floor's, and the floor's cost over a bare row's.
cols="chat_id,id,sender_id,sender_name,date,edit_date,text,entities,reply_to_id,media_kind,has_link,kind,extra"
psql_t "\\copy (SELECT $cols FROM messages) TO '$work/rows.copy'"
rm -f "$work/result.json"
rows=$(wc -l <"$work/rows.copy")
. bench/floor_twin.sh
FLOOR_TWIN_PGPID=$(head -1 "$pg/pg/data/postmaster.pid")
export FLOOR_TWIN_PGPID
floor_twin_make psql_t messages_floor all
floor_twin_make psql_t messages_pk pk
read -r floor floor_cpu < <(floor_twin_copy psql_t messages_floor "$cols" "$work/rows.copy" "$rows")
read -r pk pk_cpu < <(floor_twin_copy psql_t messages_pk "$cols" "$work/rows.copy" "$rows")
echo "floor_copy_rows_per_s=$floor floor_cpu_us_per_row=$floor_cpu pk_only_copy_rows_per_s=$pk pk_only_cpu_us_per_row=$pk_cpu"
awk -v i="$n" -v s="$secs" -v f="$floor" -v p="$pk" -v fc="$floor_cpu" -v pc="$pk_cpu" \
  'BEGIN{printf "import_vs_floor=%.2f floor_vs_pk_only=%.2f floor_vs_pk_only_cpu=%.2f\n", (i/s)/f, p/f, (pc > 0 ? fc/pc : 0)}'
