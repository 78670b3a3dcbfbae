# import_telegram: `parleyd import telegram-export` on generated exports
# covering every field (and on the samples in ../shared when present): both export
# shapes, forum topics through reply chains, every media type, files present
# and missing, the 2020 format with --tz, contacts, left chats; re-importing
# changes nothing; a later export applies edits and adds messages without
# deleting, and the older export after it takes back no edit; truncated,
# malformed and missing inputs fail clearly, exit 1 and leave the store
# unchanged; SIGTERM mid-import (while rows are COPYed into
# messages in the chat's transaction) leaves no half chat and no staged
# rows, and a rerun completes it; an embedded-cluster import works while a
# daemon serves the same data directory.
source "$(dirname "$0")/lib.sh"
: "${PARLEY_TEST_PG_DIR:?}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
FIX=${PARLEY_TEST_FIXTURES:-$ROOT/../shared/fixtures}/telegram-export
DB=it_imp_$$
psql_t() { psql -X -q -At -h "$PARLEY_TEST_PG_DIR" -U parley -d "${2:-$DB}" -c "$1"; }
psql_t "CREATE DATABASE $DB" postgres
URL="host=$PARLEY_TEST_PG_DIR port=5432 user=parley dbname=$DB"
MEDIA=$TMP/d/media
imp() { "$PARLEYD" import telegram-export "$@" --db "$URL" --data-dir "$TMP/d"; }
# Everything a tool could read, without the bookkeeping times.
snapshot() {
  psql_t "SELECT md5(string_agg(x, '|' ORDER BY x)) FROM (
    SELECT row(chat_id, id, topic_id, sender_id, sender_name, date, edit_date, text, entities,
               reply_to_id, reply_to_chat_id, forward_from_name, media_kind, has_link, kind,
               action, extra)::text AS x FROM messages
    UNION ALL SELECT row(id, kind, title, active, last_message_id, extra)::text FROM chats
    UNION ALL SELECT row(id, first_name, last_name, phone, is_contact)::text FROM users
    UNION ALL SELECT row(chat_id, message_id, kind, export_path, state, file_size, extra)::text
              FROM media
    UNION ALL SELECT row(chat_id, id, title)::text FROM topics) s"
}

# --- single-chat exports (generated), twice -----------------------------------
node "$ROOT/tests/harness/gen_tg_export.mjs" groups "$TMP/groups"
SMALL=$TMP/groups/small.json
imp "$SMALL" 2>"$TMP/a.log" || { cat "$TMP/a.log"; fail "import small"; }
grep -q "imported 1 chat, 5 messages (5 new or changed)" "$TMP/a.log" || { cat "$TMP/a.log"; fail "summary"; }
imp "$TMP/groups/services.json" 2>"$TMP/b.log" || { cat "$TMP/b.log"; fail "import services"; }
[ "$(psql_t "SELECT count(*) FROM messages WHERE chat_id = -5550001")" = 5 ] || fail "5 messages"
[ "$(psql_t "SELECT text FROM messages WHERE chat_id = -5550001 AND id = 603443")" = "Привет, это сообщение на русском." ] ||
  fail "Cyrillic text"
# The words of the rows imported are in the fuzzy search's vocabulary.
grep -q "new words merged into the fuzzy search's vocabulary" "$TMP/b.log" || { cat "$TMP/b.log"; fail "merge logged"; }
[ "$(psql_t "SELECT count(*) FROM search_words_new")" = 0 ] || fail "words left unmerged"
[ "$(psql_t "SELECT count(*) FROM search_words WHERE word IN ('привет', 'русском')")" = 2 ] ||
  fail "words in the vocabulary"
[ "$(psql_t "SELECT kind FROM chats WHERE id = -5550001")" = group ] || fail "private_group -> group"
[ "$(psql_t "SELECT count(*) FROM messages WHERE chat_id = -20002 AND kind = 'unsupported'")" = 1 ] ||
  fail "unsupported messages kept"
[ "$(psql_t "SELECT action->>'action' FROM messages WHERE chat_id = -20002 AND id = 4")" = invite_members ] ||
  fail "service action"
[ "$(psql_t "SELECT title FROM chats WHERE id = -20002")" = "Release Crew" ] || fail "renamed group title"
before=$(snapshot)
imp "$SMALL" 2>"$TMP/c.log" || fail "re-import"
grep -q "(0 new or changed)" "$TMP/c.log" || { cat "$TMP/c.log"; fail "re-import wrote rows"; }
imp "$TMP/groups/services.json" 2>/dev/null || fail "re-import services"
[ "$(snapshot)" = "$before" ] || fail "re-import changed the store"

# --- the samples of real exports in ../shared, when present -----------------------
if [ -f "$FIX/private_group_small.json" ]; then
  for f in private_group_small private_group_services; do
    imp "$FIX/$f.json" 2>"$TMP/s.log" || { cat "$TMP/s.log"; fail "import $f"; }
  done
  [ "$(psql_t "SELECT count(*) FROM messages WHERE chat_id = -4696915167")" = 5 ] || fail "shared: 5 messages"
  [ "$(psql_t "SELECT action->>'action' FROM messages WHERE chat_id = -20001 AND id = 4")" = invite_members ] ||
    fail "shared: service action"
  shared=$(snapshot)
  imp "$FIX/private_group_services.json" 2>/dev/null || fail "shared: re-import"
  [ "$(snapshot)" = "$shared" ] || fail "shared: re-import changed the store"
fi

# --- generated edge cases ----------------------------------------------------
node "$ROOT/tests/harness/gen_tg_export.mjs" edge "$TMP/edge"
imp "$TMP/edge/forum" 2>"$TMP/f.log" || { cat "$TMP/f.log"; fail "import forum folder"; }
F=-1000001234567
[ "$(psql_t "SELECT kind FROM chats WHERE id = $F")" = forum ] || fail "forum kind"
[ "$(psql_t "SELECT string_agg(id || ':' || title, ',' ORDER BY id) FROM topics WHERE chat_id = $F")" = \
  "10:Hardware,20:Software and tools" ] || fail "topics and topic_edit"
[ "$(psql_t "SELECT string_agg(id::text, ',' ORDER BY id) FROM messages WHERE chat_id = $F AND topic_id = 10")" = \
  "10,11,12,45" ] || fail "topic through reply chains"
[ "$(psql_t "SELECT has_link FROM messages WHERE chat_id = $F AND id = 21")" = t ] || fail "link entity"
# Files in the export folder are stored; markers and absent files are not.
[ "$(psql_t "SELECT string_agg(message_id || ':' || kind || ':' || state, ',' ORDER BY message_id) FROM media WHERE chat_id = $F")" = \
  "31:photo:done,32:video:done,33:voice:unavailable,34:sticker:unavailable,35:video_note:unavailable,36:animation:unavailable,37:audio:unavailable,38:document:done,39:document:unavailable" ] ||
  fail "media kinds, stored files, missing-file markers: $(psql_t "SELECT string_agg(message_id || ':' || kind || ':' || state, ',' ORDER BY message_id) FROM media WHERE chat_id = $F")"
grep -q "3 files stored" "$TMP/f.log" || { cat "$TMP/f.log"; fail "files stored count"; }
sha=$(sha256sum "$TMP/edge/forum/files/report.pdf" | cut -d' ' -f1)
[ "$(psql_t "SELECT sha256 || ' ' || local_path FROM media WHERE chat_id = $F AND message_id = 38")" = "$sha ${sha:0:2}/$sha" ] ||
  fail "sha256 and local_path"
cmp -s "$MEDIA/${sha:0:2}/$sha" "$TMP/edge/forum/files/report.pdf" || fail "stored file differs"
[ "$(find "$MEDIA" -type f | wc -l)" = 1 ] || fail "identical files stored once (content-addressed)"
[ "$(psql_t "SELECT extra->>'sticker_emoji' FROM media WHERE chat_id = $F AND message_id = 34")" = "👍" ] ||
  fail "sticker emoji"
[ "$(psql_t "SELECT string_agg(coalesce(media_kind, '-'), ',' ORDER BY id) FROM messages WHERE chat_id = $F AND id BETWEEN 40 AND 42")" = \
  "location,contact,poll" ] || fail "location, contact, poll"
[ "$(psql_t "SELECT sender_id FROM messages WHERE chat_id = $F AND id = 43")" = -1000000000777 ] ||
  fail "channel sender"
[ "$(psql_t "SELECT (extra->>'via_bot') || (extra->>'author') || forward_from_name FROM messages WHERE chat_id = $F AND id = 43")" = \
  "@helperEdNews" ] || fail "via_bot, author, forwarded_from"
[ "$(psql_t "SELECT extra->'reactions'->0->>'emoji' FROM messages WHERE chat_id = $F AND id = 44")" = "🔥" ] ||
  fail "reactions"
[ "$(psql_t "SELECT edit_date = to_timestamp(1767225920) FROM messages WHERE chat_id = $F AND id = 49")" = t ] ||
  fail "edited date"

imp "$TMP/edge/old.json" --tz +03:00 2>"$TMP/o.log" || { cat "$TMP/o.log"; fail "import 2020 format"; }
[ "$(psql_t "SELECT date = '2020-01-01 09:00:00+00' FROM messages WHERE chat_id = 55501 AND id = 1")" = t ] ||
  fail "--tz offset applied to local dates"
[ "$(psql_t "SELECT text FROM messages WHERE chat_id = 55501 AND id = 2")" = "look here: http://old.example" ] ||
  fail "array text"
[ "$(psql_t "SELECT entities->1->>'type' FROM messages WHERE chat_id = 55501 AND id = 2")" = bold ] ||
  fail "entities from an array text"
[ "$(psql_t "SELECT sender_id FROM messages WHERE chat_id = 55501 AND id = 2")" = 42 ] || fail "integer from_id"

imp "$TMP/edge/account/result.json" 2>"$TMP/acc.log" || { cat "$TMP/acc.log"; fail "whole-account import"; }
grep -q "imported 5 chats, 5 messages" "$TMP/acc.log" || { cat "$TMP/acc.log"; fail "account summary"; }
grep -q "2 contacts" "$TMP/acc.log" || fail "contacts"
[ "$(psql_t "SELECT is_contact AND phone = '+1 111' AND last_name = 'Lee' FROM users WHERE id = 1001")" = t ] ||
  fail "contact fields"
[ "$(psql_t "SELECT active FROM chats WHERE id = -321")" = f ] || fail "left chat inactive"
[ "$(psql_t "SELECT username || ':' || phone || ':' || (extra->>'is_self') FROM users WHERE id = 42")" = "me:+1 555:true" ] ||
  fail "personal_information"
[ "$(psql_t "SELECT kind || ':' || title FROM chats WHERE id = 42")" = "private:Saved Messages" ] || fail "saved messages"
[ "$(psql_t "SELECT kind FROM chats WHERE id = -1000000000888")" = channel ] || fail "channel"

# --- a later export: edits and new messages, nothing deleted -----------------
n_before=$(psql_t "SELECT count(*) FROM messages WHERE chat_id = $F")
imp "$TMP/edge/forum_v2.json" 2>"$TMP/v2.log" || { cat "$TMP/v2.log"; fail "second export"; }
grep -q "(2 new or changed)" "$TMP/v2.log" || { cat "$TMP/v2.log"; fail "second export wrote other than 2"; }
[ "$(psql_t "SELECT text FROM messages WHERE chat_id = $F AND id = 49")" = "edited twice" ] || fail "edit applied"
[ "$(psql_t "SELECT topic_id FROM messages WHERE chat_id = $F AND id = 50")" = 20 ] || fail "new message's topic"
[ "$(psql_t "SELECT count(*) FROM messages WHERE chat_id = $F")" = $((n_before + 1)) ] || fail "count after update"
# The older export again, after the newer one: the newer edit stays.
imp "$TMP/edge/forum" 2>"$TMP/v1.log" || { cat "$TMP/v1.log"; fail "older export after the newer"; }
grep -q "(0 new or changed)" "$TMP/v1.log" || { cat "$TMP/v1.log"; fail "older export wrote rows"; }
[ "$(psql_t "SELECT text || '|' || (edit_date = to_timestamp(1767226000)) FROM messages WHERE chat_id = $F AND id = 49")" = \
  "edited twice|true" ] || fail "older export took back the newer edit"

# --- compact JSON with thousands of tiny chats (many chats per chunk) ------------
node -e '
const chats = Array.from({ length: 3000 }, (_, i) => ({ name: "c" + i, type: "personal_chat", id: 700000 + i,
  messages: i % 3 ? [{ id: 1, type: "message", date: "2024-01-01T00:00:00", date_unixtime: "1704067200", from: "A", from_id: "user7", text: "hi " + i }] : [] }));
process.stdout.write(JSON.stringify({ chats: { list: chats } }));' >"$TMP/many.json"
imp "$TMP/many.json" 2>"$TMP/many.log" || { cat "$TMP/many.log"; fail "many tiny chats"; }
grep -q "imported 3000 chats, 2000 messages" "$TMP/many.log" || { cat "$TMP/many.log"; fail "many tiny chats summary"; }
[ "$(psql_t "SELECT count(*) FROM chats WHERE id BETWEEN 700000 AND 702999")" = 3000 ] || fail "3000 chats"

# --- one bad message: left out, named, the rest imported -----------------------
# A message whose field cannot be stored is left out and named; the rest of
# the chat is imported and the import ends 0 (skip, name and go on).
printf '{"name":"Skips","type":"private_group","id":77,"messages":[{"id":1,"type":"message","date":"2020-01-01T00:00:00","text":"kept one"},{"id":2,"type":"message","date":"2020-13-45T00:00:00","text":"bad date"},{"id":3,"type":"message","date":"2020-01-02T00:00:00","date_unixtime":"99999999999999999999","text":"out of range"},{"id":4,"type":"message","date":"2020-01-03T00:00:00","text":"kept two"}]}' >"$TMP/skips.json"
imp "$TMP/skips.json" 2>"$TMP/s.log" || { cat "$TMP/s.log"; fail "an export with two bad messages failed"; }
grep -q 'skips.json: message 2: "date" is not a valid date at byte [0-9]*; the message was left out' "$TMP/s.log" ||
  { cat "$TMP/s.log"; fail "the bad date is not named"; }
grep -q 'skips.json: message 3: "date" is out of range at byte [0-9]*; the message was left out' "$TMP/s.log" ||
  { cat "$TMP/s.log"; fail "the out-of-range time is not named"; }
grep -q "2 messages left out" "$TMP/s.log" || { cat "$TMP/s.log"; fail "the summary does not count them"; }
got=$(psql_t "SELECT string_agg(text, ',' ORDER BY id) FROM messages WHERE chat_id = -77")
[ "$got" = "kept one,kept two" ] || fail "the good messages of the chat were not imported: $got"

# --- bad input: clear errors, exit 1, store unchanged --------------------------
before=$(snapshot)
size=$(stat -c %s "$TMP/edge/forum_v2.json")
head -c $((size / 2)) "$TMP/edge/forum_v2.json" >"$TMP/truncated.json"
if imp "$TMP/truncated.json" 2>"$TMP/t.log"; then fail "a truncated export was accepted"; fi
grep -q "truncated.json: truncated JSON" "$TMP/t.log" || { cat "$TMP/t.log"; fail "truncation not named"; }
grep -q "at byte [0-9]* (after message id [0-9]*)" "$TMP/t.log" || { cat "$TMP/t.log"; fail "no byte offset"; }
grep -q "the store is unchanged" "$TMP/t.log" || fail "no 'unchanged'"
printf 'this is not JSON' >"$TMP/text.json"
if imp "$TMP/text.json" 2>"$TMP/x.log"; then fail "text accepted"; fi
grep -q "text.json: malformed JSON" "$TMP/x.log" || { cat "$TMP/x.log"; fail "malformed not said"; }
printf '[1,2]' >"$TMP/array.json"
if imp "$TMP/array.json" 2>"$TMP/y.log"; then fail "array accepted"; fi
grep -q "not a Telegram export" "$TMP/y.log" || { cat "$TMP/y.log"; fail "array not refused"; }
printf '{"name":"x","type":"private_group","id":5,"messages":[{"id":1,"type":"message","date":"2020-01-01T00:00:00","text":"a"},7]}' >"$TMP/entry.json"
if imp "$TMP/entry.json" 2>"$TMP/z.log"; then fail "bad entry accepted"; fi
grep -q 'an entry of "messages" is not an object at byte [0-9]* (after message id 1)' "$TMP/z.log" ||
  { cat "$TMP/z.log"; fail "bad entry not located"; }
mkdir -p "$TMP/empty"
if imp "$TMP/empty" 2>"$TMP/e.log"; then fail "empty folder accepted"; fi
grep -q "empty: the folder has no result.json" "$TMP/e.log" || { cat "$TMP/e.log"; fail "folder error"; }
if imp "$TMP/nope.json" 2>"$TMP/n.log"; then fail "missing file accepted"; fi
grep -q "nope.json: No such file or directory" "$TMP/n.log" || { cat "$TMP/n.log"; fail "missing file error"; }
[ "$(snapshot)" = "$before" ] || fail "a failed import changed the store"
[ "$(psql_t "SELECT count(*) FROM import_rows")$(psql_t "SELECT count(*) FROM import_media")" = 00 ] ||
  fail "staged rows left behind"
rc=0
"$PARLEYD" import telegram-export x --tz 25:00 --db "$URL" --data-dir "$TMP/d" 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "bad --tz exit $rc, want 2"
rc=0
"$PARLEYD" import json x --db "$URL" --data-dir "$TMP/d" 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "unknown import kind exit $rc, want 2"

# --- SIGTERM in the middle of an import: the chat being read is not left half
# there, nothing stays staged, and running it again completes it -------------
node "$ROOT/tests/harness/gen_tg_export.mjs" big "$TMP/big.json" 60000
"$PARLEYD" import telegram-export "$TMP/big.json" --db "$URL" --data-dir "$TMP/d" 2>"$TMP/big1.log" &
BPID=$!
for _ in $(seq 1 600); do # until the chat's rows are being COPYed (in its transaction)
  [ "$(psql_t "SELECT count(*) > 0 FROM pg_stat_activity WHERE datname = current_database()
               AND xact_start IS NOT NULL AND query LIKE 'COPY messages%'")" = t ] && break
  kill -0 "$BPID" 2>/dev/null || break
  sleep 0.05
done
kill -TERM "$BPID" 2>/dev/null || true
rc=0
wait "$BPID" || rc=$?
n=$(psql_t "SELECT count(*) FROM messages m JOIN chats c ON c.id = m.chat_id WHERE c.title = 'Big Chat'")
if [ "$rc" = 0 ]; then
  [ "$n" = 60000 ] || fail "finished before SIGTERM but holds $n of 60000 messages"
else
  grep -qi "stop\|cancel\|interrupt" "$TMP/big1.log" || { cat "$TMP/big1.log"; fail "SIGTERM not said"; }
  [ "$n" = 0 ] || [ "$n" = 60000 ] || fail "SIGTERM left the chat half imported ($n of 60000)"
fi
[ "$(psql_t "SELECT count(*) FROM import_rows")" = 0 ] || fail "staged rows left after SIGTERM"
imp "$TMP/big.json" 2>"$TMP/big2.log" || { cat "$TMP/big2.log"; fail "rerun after SIGTERM"; }
[ "$(psql_t "SELECT count(*) FROM messages m JOIN chats c ON c.id = m.chat_id WHERE c.title = 'Big Chat'")" = 60000 ] ||
  fail "the rerun did not complete the chat"

# --- the embedded cluster, with a daemon serving the same data directory --------
D="$TMP/data"
start_daemon "$TMP/serve.log" serve --data-dir "$D"
wait_log "$TMP/serve.log" "ready (schema version" 120
"$PARLEYD" import telegram-export "$SMALL" --data-dir "$D" 2>"$TMP/emb.log" ||
  { cat "$TMP/emb.log"; fail "import beside a running daemon"; }
grep -q "imported 1 chat, 5 messages" "$TMP/emb.log" || fail "embedded import summary"
cluster_running "$D" || fail "the import stopped the daemon's cluster"
kill -TERM "$DPID"
wait_exit "$DPID" 20
[ "$EXIT_RC" = 0 ] || { cat "$TMP/serve.log"; fail "daemon exit $EXIT_RC"; }

psql_t "DROP DATABASE $DB" postgres
echo "import_telegram: ok"
