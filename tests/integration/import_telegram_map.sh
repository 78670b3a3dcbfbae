# import_telegram_map: the importer's own mapping of export messages
# (src/import/tg_map.c) stores exactly what the SQL mapping it replaced
# stored. Every export is imported twice: by parleyd into one database, and
# into another through the old SQL functions (tests/harness/
# tg_import_reference.sql, fed the messages as the old reader staged them,
# tests/harness/tg_stage.mjs); then every column of messages, media, users,
# chats and topics is compared. The exports: the generated ones (groups,
# edge cases, the 2020 format with --tz), the samples in ../shared when
# present, and data/tg_map_edge.json (text as string, entity arrays and odd
# values, local dates at an offset, leap seconds, 24:00, BC and year-10000
# times, every peer form, service messages with nested nulls, forwards,
# replies to other chats, every media kind and file marker, polls,
# locations, contacts, stickers, numbers jansson prints as reals, messages
# without ids or with ids out of order, a message without a date (the
# epoch on both sides; one whose date is given but unreadable is left out
# and named, tests/unit/test_tg_map.c), a chat whose id follows its
# messages). Each export is then imported again (the upsert path) and a
# changed copy on top, with the same comparison each time.
source "$(dirname "$0")/lib.sh"
: "${PARLEY_TEST_PG_DIR:?}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FIX=$ROOT/../shared/fixtures/telegram-export
NEW=it_map_new_$$
REF=it_map_ref_$$
psql_d() { psql -X -q -At -v ON_ERROR_STOP=1 -h "$PARLEY_TEST_PG_DIR" -U parley -d "$1" "${@:2}"; }
for d in $NEW $REF; do
  psql_d postgres -c "CREATE DATABASE $d"
  "$PARLEYD" migrate --db "host=$PARLEY_TEST_PG_DIR port=5432 user=parley dbname=$d" 2>/dev/null
done
psql_d $REF -f "$ROOT/tests/harness/tg_import_reference.sql" >/dev/null

# Both ways: FILE [TZ].
both() {
  local f=$1 tz=${2:-+00:00}
  "$PARLEYD" import telegram-export "$f" --tz "$tz" --data-dir "$TMP/d" \
    --db "host=$PARLEY_TEST_PG_DIR port=5432 user=parley dbname=$NEW" 2>"$TMP/imp.log" ||
    { cat "$TMP/imp.log"; fail "import $f"; }
  node "$ROOT/tests/harness/tg_stage.mjs" "$f" "$tz" >"$TMP/ref.sql"
  psql_d $REF -f "$TMP/ref.sql" >/dev/null 2>"$TMP/ref.log" || { cat "$TMP/ref.log"; fail "reference $f"; }
}

# Every stored column (files: what the mapping gives; the copy into the
# media store is the importer's alone, and it sets the size of the files it
# stored: $2 lists their paths).
dump() {
  psql_d "$1" -v stored="$2" <<<"
    SELECT 'm', row(chat_id, id, external_id, topic_id, sender_id, sender_name, date, edit_date, text,
               entities, reply_to_id, reply_to_chat_id, forward_from_id, forward_from_name,
               forward_from_message_id, forward_date, media_kind, has_link, kind, role, outgoing,
               action, extra, tsv)::text FROM messages
    UNION ALL SELECT 'f', row(chat_id, message_id, ordinal, kind, export_path, mime_type,
               CASE WHEN export_path <> ALL (:'stored'::text[]) THEN file_size END, width, height,
               duration, file_name,
               CASE WHEN state = 'done' OR error IS NOT NULL THEN 'remote' ELSE state END,
               extra)::text FROM media
    UNION ALL SELECT 'u', row(id, first_name, last_name, username, phone, about, is_contact,
               extra)::text FROM users
    UNION ALL SELECT 'c', row(id, kind, external_id, title, username, active, extra,
               last_message_id, last_message_date, read_inbox_max_id)::text FROM chats
    UNION ALL SELECT 't', row(chat_id, id, title, creator_id, created_date)::text FROM topics
    ORDER BY 1, 2"
}

compare() {
  local stored
  stored=$(psql_d $NEW -c "SELECT coalesce(array_agg(DISTINCT export_path), '{}') FROM media
                           WHERE local_path IS NOT NULL")
  dump $NEW "$stored" >"$TMP/new.txt"
  dump $REF "$stored" >"$TMP/ref.txt"
  [ -s "$TMP/new.txt" ] || fail "nothing imported ($1)"
  diff -u "$TMP/ref.txt" "$TMP/new.txt" >&2 || fail "the importer's mapping differs from the SQL mapping ($1)"
}

node "$ROOT/tests/harness/gen_tg_export.mjs" groups "$TMP/groups"
node "$ROOT/tests/harness/gen_tg_export.mjs" edge "$TMP/edge"
EDGE=$ROOT/tests/integration/data/tg_map_edge.json
exports=("$TMP/groups/small.json" "$TMP/groups/services.json" "$TMP/edge/forum/result.json"
  "$TMP/edge/account/result.json" "$EDGE")
if [ -f "$FIX/private_group_small.json" ]; then
  exports+=("$FIX/private_group_small.json" "$FIX/private_group_services.json")
fi
for f in "${exports[@]}"; do both "$f"; done
both "$TMP/edge/old.json" +03:00
both "$EDGE" -05:30 # the same chats again, at another offset: local dates move
compare "first imports"

# Again: nothing changes, on either side.
for f in "${exports[@]}"; do both "$f"; done
compare "re-imports"

# A later export on top: edits, new messages, ids out of order.
both "$TMP/edge/forum_v2.json"
sed -e 's/"plain\\ttab/"edited plain\\ttab/' -e 's/"after the repeat"/"after the repeat, edited"/' \
  "$EDGE" >"$TMP/edge_v2.json"
both "$TMP/edge_v2.json" +03:00
compare "later exports"

# What PostgreSQL could not read (the SQL mapping failed on it too) is
# named, and that message is left out; the import goes on.
printf '{"name":"x","type":"private_group","id":5,"messages":[{"id":1,"type":"message","date_unixtime":"1","text":"a","reply_to_message_id":"x1"}]}' >"$TMP/bad.json"
"$PARLEYD" import telegram-export "$TMP/bad.json" --data-dir "$TMP/d" \
  --db "host=$PARLEY_TEST_PG_DIR port=5432 user=parley dbname=$NEW" 2>"$TMP/bad.log" ||
  { cat "$TMP/bad.log"; fail "one bad message failed the import"; }
grep -q 'message 1: "reply_to_message_id" is not an integer at byte [0-9]*; the message was left out' "$TMP/bad.log" ||
  { cat "$TMP/bad.log"; fail "the mapping error is not said"; }
[ "$(psql_d $NEW -Atc "SELECT count(*) FROM messages WHERE chat_id = -5")" = 0 ] || fail "the bad message was stored"

for d in $NEW $REF; do psql_d postgres -c "DROP DATABASE $d"; done
echo "import_telegram_map: ok"
