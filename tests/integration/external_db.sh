# external_db: parleyd on an existing server (--db, DATABASE_URL, PG*):
# migrate creates the schema once; a second run and serve change nothing;
# a bad URL and an unreachable server give clear errors.
source "$(dirname "$0")/lib.sh"
: "${PARLEY_TEST_PG_DIR:?}"
DB=it_ext_$$
psql_t() { psql -X -q -At -h "$PARLEY_TEST_PG_DIR" -U parley -d "${2:-postgres}" -c "$1"; }
psql_t "CREATE DATABASE $DB"
URL="host=$PARLEY_TEST_PG_DIR port=5432 user=parley dbname=$DB"

"$PARLEYD" migrate --db "$URL" 2>"$TMP/m1.log" || { cat "$TMP/m1.log"; fail "migrate"; }
grep -q "applied migration 001_" "$TMP/m1.log" || fail "first migrate applied nothing"
v1=$(psql_t "SELECT count(*) FROM schema_version" "$DB")
DATABASE_URL="$URL" "$PARLEYD" migrate 2>"$TMP/m2.log" || fail "second migrate"
grep -q "applied migration" "$TMP/m2.log" && fail "second migrate applied again"
grep -q "0 migrations applied" "$TMP/m2.log" || fail "second migrate did not report 0"
[ "$(psql_t "SELECT count(*) FROM schema_version" "$DB")" = "$v1" ] || fail "schema_version changed"

# The functions are repeatable: every run applies them again, so one that
# went missing is back.
psql_t "DROP FUNCTION parley_tg_channels_list(jsonb, jsonb)" "$DB"
"$PARLEYD" migrate --db "$URL" 2>"$TMP/m2b.log" || { cat "$TMP/m2b.log"; fail "migrate again"; }
[ "$(psql_t "SELECT count(*) FROM pg_proc WHERE proname = 'parley_tg_channels_list'" "$DB")" = 1 ] ||
  fail "a repeatable function was not applied again"

# libpq's own variables select the server too.
PGHOST=$PARLEY_TEST_PG_DIR PGUSER=parley PGDATABASE=$DB "$PARLEYD" migrate 2>"$TMP/m3.log" ||
  { cat "$TMP/m3.log"; fail "migrate via PG* variables"; }

# serve on the external server, then SIGTERM: exit 0 quickly.
start_daemon "$TMP/serve.log" serve --db "$URL"
wait_log "$TMP/serve.log" "ready (schema version"
kill -TERM "$DPID"
wait_exit "$DPID" 10
[ "$EXIT_RC" = 0 ] || { cat "$TMP/serve.log"; fail "serve exited $EXIT_RC"; }
grep -q "stopped" "$TMP/serve.log" || fail "no 'stopped' line"

# The password never reaches the log.
rc=0
"$PARLEYD" migrate --db "postgres://parley:hunter2@127.0.0.1:1/x" \
  --db-query-timeout-ms 1500 --db-connect-timeout-ms 500 2>"$TMP/bad.log" || rc=$?
[ "$rc" = 1 ] || fail "unreachable server: exit $rc"
grep -q "hunter2" "$TMP/bad.log" && fail "password in log"
grep -qi "database" "$TMP/bad.log" || fail "no database error in log"

psql_t "DROP DATABASE $DB"
echo "external_db: ok"
