# import_progress: `parleyd import telegram-export` reports progress at
# least every interval through every phase, the database's included, and
# writes its closing line once. The interval is PARLEY_IMPORT_PROGRESS_MS
# (100 ms here, so that a small export shows it): re-importing a chat of
# 10,000 messages spends its end merging the staged rows into the store
# (one statement, parley_tg_import_chat), and lines saying so come while it
# runs. No timing is asserted beyond a line having appeared.
source "$(dirname "$0")/lib.sh"
: "${PARLEY_TEST_PG_DIR:?}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DB=it_progress_$$
psql_t() { psql -X -q -At -h "$PARLEY_TEST_PG_DIR" -U parley -d "${2:-$DB}" -c "$1"; }
psql_t "CREATE DATABASE $DB" postgres
URL="host=$PARLEY_TEST_PG_DIR port=5432 user=parley dbname=$DB"
node "$ROOT/tests/harness/gen_tg_export.mjs" big "$TMP/big.json" 10000
imp() { PARLEY_IMPORT_PROGRESS_MS=100 "$PARLEYD" import telegram-export "$TMP/big.json" --db "$URL" --data-dir "$TMP/d"; }

# A first import (rows straight into messages), then the same export again
# (every row staged and merged at the chat's end).
imp 2>"$TMP/first.log" </dev/null || { cat "$TMP/first.log"; fail "first import"; }
imp 2>"$TMP/again.log" </dev/null || { cat "$TMP/again.log"; fail "re-import"; }
grep -q "(0 new or changed)" "$TMP/again.log" || { cat "$TMP/again.log"; fail "re-import summary"; }

for log in "$TMP/first.log" "$TMP/again.log"; do
  # The closing line, once, and no other line says 100 %.
  [ "$(grep -c ' 100\.0% ' "$log")" = 1 ] || { cat "$log"; fail "$(basename "$log"): 100 % not said once"; }
  [ "$(grep -c 'done in [0-9]* s$' "$log")" = 1 ] || { cat "$log"; fail "$(basename "$log"): no single closing line"; }
  grep -q '100\.0% (.*), 10000 messages, .* done in' "$log" || { cat "$log"; fail "$(basename "$log"): closing line"; }
  # The closing line comes after every other progress line.
  last=$(grep -n '\[import\] [0-9.]*% ' "$log" | tail -1)
  case $last in *"done in"*) ;; *) cat "$log"; fail "$(basename "$log"): a progress line after the closing one" ;; esac
done

# While the database merges the staged rows, lines say that it waits on it.
grep -q 'waiting [0-9.]* s on the database: merging the messages of chat "Big Chat" into the store' "$TMP/again.log" ||
  { cat "$TMP/again.log"; fail "no progress line during the database phase"; }

# A value out of range is refused with a warning, and the default is used.
PARLEY_IMPORT_PROGRESS_MS=1 "$PARLEYD" import telegram-export "$TMP/big.json" --db "$URL" --data-dir "$TMP/d" \
  2>"$TMP/bad.log" </dev/null || { cat "$TMP/bad.log"; fail "import with a bad interval"; }
grep -q "PARLEY_IMPORT_PROGRESS_MS: '1' is not 10..3600000 ms; using 5000" "$TMP/bad.log" ||
  { cat "$TMP/bad.log"; fail "bad interval not named"; }
echo "import_progress: ok"
