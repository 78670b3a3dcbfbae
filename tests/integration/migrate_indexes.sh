# migrate_indexes: parleyd migrate builds the indexes the migrations asked
# for (parley_index_build, migration 034) before it exits, and logs it; a
# build that fails ends migrate with status 1 and the reason, and leaves
# the build pending for serve; once the data is fixed the next migrate
# drops the failed build's invalid index and builds it.
source "$(dirname "$0")/lib.sh"
: "${PARLEY_TEST_PG_DIR:?}"
DB=it_idx_$$
psql_t() { psql -X -q -At -v ON_ERROR_STOP=1 -h "$PARLEY_TEST_PG_DIR" -U parley -d "${2:-postgres}" -c "$1"; }
psql_t "CREATE DATABASE $DB"
URL="host=$PARLEY_TEST_PG_DIR port=5432 user=parley dbname=$DB"

"$PARLEYD" migrate --db "$URL" 2>"$TMP/m1.log" || { cat "$TMP/m1.log"; fail "migrate"; }
# A fresh store (empty tables) makes the schema's own (migration 035's) in
# the migration itself: nothing is built in the background.
grep -q "\[index\]" "$TMP/m1.log" && { cat "$TMP/m1.log"; fail "a fresh store built an index in the background"; }
[ "$(psql_t "SELECT state || ':' || (to_regclass('messages_topic_idx') IS NOT NULL) || ':' ||
             (to_regclass('messages_chat_topic_idx') IS NULL) FROM schema_index_builds
             WHERE name = 'messages_topic_idx'" "$DB")" = "done:true:true" ] ||
  fail "a fresh store's migration 035 did not make its index at once"

psql_t "CREATE TABLE it_t (a integer)" "$DB"
psql_t "INSERT INTO it_t SELECT i % 100 FROM generate_series(1, 5000) i" "$DB"
psql_t "SELECT parley_index_build('it_t_a_idx', 'CREATE INDEX CONCURRENTLY IF NOT EXISTS it_t_a_idx ON it_t (a)')" "$DB"
psql_t "SELECT parley_index_build('it_t_a_key', 'CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS it_t_a_key ON it_t (a)')" "$DB"

rc=0
"$PARLEYD" migrate --db "$URL" 2>"$TMP/m2.log" || rc=$?
[ "$rc" = 1 ] || { cat "$TMP/m2.log"; fail "a failed build: migrate exited $rc"; }
grep -q "index it_t_a_idx on it_t built (" "$TMP/m2.log" || { cat "$TMP/m2.log"; fail "no 'built' line"; }
grep -q 'index build: index it_t_a_key: building the index failed: could not create unique index "it_t_a_key" (the schema is applied; serve builds' "$TMP/m2.log" ||
  { cat "$TMP/m2.log"; fail "the failure's reason is not in the log"; }
[ "$(psql_t "SELECT string_agg(name || ':' || state, ' ' ORDER BY seq) FROM schema_index_builds WHERE table_name <> 'messages'" "$DB")" = \
  "it_t_a_idx:done it_t_a_key:pending" ] || fail "builds' states"
[ "$(psql_t "SELECT indisvalid FROM pg_index WHERE indexrelid = 'it_t_a_key'::regclass" "$DB")" = f ] ||
  fail "the failed build left no invalid index"

# The data fixed, the next migrate drops the leftover and builds it.
psql_t "DELETE FROM it_t WHERE ctid NOT IN (SELECT min(ctid) FROM it_t GROUP BY a)" "$DB"
"$PARLEYD" migrate --db "$URL" 2>"$TMP/m3.log" || { cat "$TMP/m3.log"; fail "migrate after the fix"; }
grep -q "index it_t_a_key on it_t: dropping what an unfinished build left" "$TMP/m3.log" || { cat "$TMP/m3.log"; fail "no drop"; }
grep -q "index it_t_a_key on it_t built (" "$TMP/m3.log" || { cat "$TMP/m3.log"; fail "not built"; }
[ "$(psql_t "SELECT string_agg(state, ' ') FROM schema_index_builds WHERE table_name <> 'messages'" "$DB")" = "done done" ] || fail "not done"
[ "$(psql_t "SELECT indisvalid FROM pg_index WHERE indexrelid = 'it_t_a_key'::regclass" "$DB")" = t ] || fail "not valid"

# Nothing left: a further migrate builds nothing.
"$PARLEYD" migrate --db "$URL" 2>"$TMP/m4.log" || { cat "$TMP/m4.log"; fail "migrate again"; }
grep -q "\[index\]" "$TMP/m4.log" && { cat "$TMP/m4.log"; fail "built again"; }
psql_t "DROP DATABASE $DB"
echo "migrate_indexes: ok"
