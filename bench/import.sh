#!/usr/bin/env bash
# bench/import.sh [MESSAGES]: the Telegram import benchmark. Generates an
# export of one chat with MESSAGES messages (default 1,000,000), imports it
# into a fresh database of a throw-away cluster with a release parleyd, and
# reports the import rate and the importer's peak RSS; then measures a raw
# COPY of the very rows the import produced into an empty copy of messages
# (same columns, indexes and foreign keys: the database's own floor for
# loading them). Prints key=value lines.
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
# The floor: COPY the same rows into an empty messages table.
psql_t "COPY (SELECT chat_id, id, sender_id, sender_name, date, edit_date, text, entities, reply_to_id,
               media_kind, has_link, kind, extra FROM messages) TO '$work/rows.copy'" 2>/dev/null ||
  psql_t "\\copy (SELECT chat_id, id, sender_id, sender_name, date, edit_date, text, entities, reply_to_id, media_kind, has_link, kind, extra FROM messages) TO '$work/rows.copy'"
psql_t "CREATE TABLE messages_copy (LIKE messages INCLUDING ALL)"
# LIKE copies no foreign keys: add messages' own (to chats, ...), so the
# floor checks what every row loaded into messages is checked for.
psql_t "SELECT 'ALTER TABLE messages_copy ADD ' || pg_get_constraintdef(oid) FROM pg_constraint
        WHERE conrelid = 'messages'::regclass AND contype = 'f'" | while read -r fk; do psql_t "$fk"; done
# and its triggers: each row's word forms (messages.forms) are computed as
# it loads, and the statement's words appended to the fuzzy search's
# vocabulary, as they are for messages.
psql_t "CREATE TRIGGER messages_copy_forms BEFORE INSERT OR UPDATE OF text ON messages_copy
        FOR EACH ROW EXECUTE FUNCTION parley_messages_forms()"
psql_t "CREATE TRIGGER messages_copy_words AFTER INSERT ON messages_copy
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION parley_messages_words()"
start=$(date +%s.%N)
psql_t "\\copy messages_copy (chat_id, id, sender_id, sender_name, date, edit_date, text, entities, reply_to_id, media_kind, has_link, kind, extra) FROM '$work/rows.copy'"
end=$(date +%s.%N)
copy=$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.2f", b-a}')
echo "raw_copy_seconds=$copy raw_copy_rows_per_s=$(awk -v n="$n" -v s="$copy" 'BEGIN{printf "%.0f", n/s}')"
