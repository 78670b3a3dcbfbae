# import_forms_wait: `parleyd import` asking for another word forms' list
# while another session is in the middle of writing messages. The step
# that changes the list waits for that writer (parley_search_forms_step
# holds messages' writers off, polling for 5 s then queued for 2 s); the import
# tries it again, saying so, instead of failing, and once the writer commits the list changes
# and every row, the writer's included, gets its forms.
source "$(dirname "$0")/lib.sh"
: "${PARLEY_TEST_PG_DIR:?}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DB=it_forms_wait_$$
psql_t() { psql -X -q -At -v ON_ERROR_STOP=1 -h "$PARLEY_TEST_PG_DIR" -U parley -d "${2:-$DB}" -c "$1"; }
psql_t "CREATE DATABASE $DB" postgres
URL="host=$PARLEY_TEST_PG_DIR port=5432 user=parley dbname=$DB"
node "$ROOT/tests/harness/gen_tg_export.mjs" big "$TMP/small.json" 20
imp() { "$PARLEYD" import telegram-export "$TMP/small.json" --db "$URL" --data-dir "$TMP/d" "$@" </dev/null; }

imp --search-languages english 2>"$TMP/first.log" || { cat "$TMP/first.log"; fail "first import"; }

# A writer holds messages for 10 s: a row of its own, not yet committed.
psql_t "INSERT INTO chats (id, kind, title) VALUES (-42, 'group', 'Writer')"
psql -X -q -h "$PARLEY_TEST_PG_DIR" -U parley -d "$DB" -v ON_ERROR_STOP=1 \
  -c "BEGIN; INSERT INTO messages (chat_id, id, date, text) VALUES (-42, 1, now(), 'встречи прошли'); SELECT pg_sleep(10); COMMIT;" \
  >"$TMP/writer.log" 2>&1 &
writer=$!
for _ in $(seq 1 50); do
  [ "$(psql_t "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'messages' AND l.mode = 'RowExclusiveLock' AND l.pid <> pg_backend_pid()")" != 0 ] && break
  sleep 0.1
done

imp --search-languages english,russian 2>"$TMP/again.log" || { cat "$TMP/again.log"; fail "import during a write"; }
wait "$writer" || { cat "$TMP/writer.log"; fail "the writer"; }
grep -q "search_languages: waiting for the other writers of messages (another daemon or import, or an index being built) to end (try 1)" "$TMP/again.log" ||
  { cat "$TMP/again.log"; fail "the import did not say it waited"; }
grep -q "word forms (english,russian) in use" "$TMP/again.log" || { cat "$TMP/again.log"; fail "forms not in use"; }
[ "$(psql_t "SELECT languages FROM search_forms WHERE active")" = "english,russian" ] || fail "the list in use"
[ "$(psql_t "SELECT forms @@ to_tsquery('russian', 'встреча') FROM messages WHERE chat_id = -42")" = t ] ||
  fail "the writer's row has no Russian forms"
[ "$(psql_t "SELECT count(*) FROM messages WHERE forms IS NULL AND text IS NOT NULL")" = 0 ] || fail "rows without forms"
echo "import_forms_wait: ok"
