#!/usr/bin/env bash
# sql_test.sh NAME: runs tests/sql/NAME.sql against a new database of the
# test cluster whose schema parleyd itself created (migrations and the
# repeatable functions), after tests/sql/lib.sql (the assertion helpers).
# The test fails on the first error or failed assertion; the database is
# dropped afterwards.
set -euo pipefail
: "${PARLEYD:?run through ctest}" "${PARLEY_TEST_PG_DIR:?run through ctest}"
name=${1:?usage: sql_test.sh NAME}
dir=$(cd "$(dirname "$0")/../sql" && pwd)
db="sql_${name}_$$"
psql_on() { psql -X -q -v ON_ERROR_STOP=1 -h "$PARLEY_TEST_PG_DIR" -U parley -d "$1" "${@:2}"; }
psql_on postgres -c "CREATE DATABASE $db"
trap 'psql_on postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true' EXIT
log=$(mktemp)
if ! "$PARLEYD" migrate --db "host=$PARLEY_TEST_PG_DIR port=5432 user=parley dbname=$db" 2>"$log"; then
  cat "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
psql_on "$db" -o /dev/null -f "$dir/lib.sql" -f "$dir/$name.sql"
echo "sql $name: ok"
