# rolling_upgrade: two daemons on one database, one upgraded while both
# serve (docs/deployment.md, Upgrades). The previous release is the commit
# in tests/integration/data/previous_release, built from this repository's
# history (cached in the build tree; skipped only without history). With
# it: a store (migrate, import), daemons A and B serving on Unix sockets
# with a bot on the Bot API emulator, both called in a loop; B replaced by
# this build's parleyd; A never stops answering, B answers again; A
# restarted on the previous release after the upgrade serves; jobs queued
# before, during and after run once each. Then the release rule with this
# build as the older parleyd: on a newer release that admits it, it serves
# on the newer functions and leaves them as they are; on one that does
# not, it refuses to start and says what to do.
source "$(dirname "$0")/lib.sh"
: "${PARLEY_TEST_PG_DIR:?}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PREV=$(tr -d '[:space:]' <"$ROOT/tests/integration/data/previous_release")

# --- the previous release's parleyd ------------------------------------------
if ! git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
  echo "rolling_upgrade: SKIP: $ROOT is no git checkout; the previous release is built from its history"
  exit 77
fi
if ! git -C "$ROOT" cat-file -e "$PREV^{commit}" 2>/dev/null; then
  if [ "$(git -C "$ROOT" rev-parse --is-shallow-repository)" = true ]; then
    echo "rolling_upgrade: SKIP: a shallow clone lacks $PREV (the previous release); clone with history"
    exit 77
  fi
  fail "$PREV (tests/integration/data/previous_release) is not in this repository"
fi
git -C "$ROOT" merge-base --is-ancestor "$PREV" HEAD ||
  fail "$PREV (tests/integration/data/previous_release) is not an ancestor of HEAD"
CACHE=${PARLEY_PREVIOUS_BUILD:-$TMP/previous}
mkdir -p "$CACHE"
OLD=$CACHE/build-$PREV/parleyd
(
  flock 9
  if [ ! -x "$OLD" ]; then
    echo "rolling_upgrade: building the previous release $PREV in $CACHE (once)"
    rm -rf "$CACHE/src-$PREV" "$CACHE/build-$PREV"
    mkdir -p "$CACHE/src-$PREV"
    git -C "$ROOT" archive "$PREV" | tar -x -C "$CACHE/src-$PREV"
    { cmake -S "$CACHE/src-$PREV" -B "$CACHE/build-$PREV" -DCMAKE_BUILD_TYPE=Release \
        -DPARLEY_TESTS=OFF && cmake --build "$CACHE/build-$PREV" -j2 --target parleyd; } \
      >"$CACHE/build-$PREV.log" 2>&1 || { tail -40 "$CACHE/build-$PREV.log" >&2; exit 1; }
  fi
) 9>"$CACHE/lock" || fail "building the previous release $PREV (log: $CACHE/build-$PREV.log)"
# The previous release's schema version: its newest migration.
OLD_SCHEMA=$(git -C "$ROOT" ls-tree --name-only "$PREV" src/db/migrations/ |
  sed -n 's|.*/0*\([0-9][0-9]*\)_.*\.sql$|\1|p' | sort -n | tail -1)
[ -n "$OLD_SCHEMA" ] || fail "no migrations in $PREV"

# --- the store, made by the previous release ---------------------------------
DB=it_upgrade_$$
psql_t() { psql -X -q -At -h "$PARLEY_TEST_PG_DIR" -U parley -d "${2:-$DB}" -c "$1"; }
psql_t "CREATE DATABASE $DB" postgres
URL="host=$PARLEY_TEST_PG_DIR port=5432 user=parley dbname=$DB"
"$OLD" migrate --db "$URL" 2>"$TMP/old_migrate.log" || { cat "$TMP/old_migrate.log"; fail "old migrate"; }
grep -q "schema is at version $OLD_SCHEMA " "$TMP/old_migrate.log" ||
  { cat "$TMP/old_migrate.log"; fail "the previous release should migrate to $OLD_SCHEMA"; }
node "$ROOT/tests/harness/gen_tg_export.mjs" groups "$TMP/groups"
"$OLD" import telegram-export "$TMP/groups/small.json" --db "$URL" --data-dir "$TMP/import" \
  2>"$TMP/old_import.log" || { cat "$TMP/old_import.log"; fail "old import"; }

node "$ROOT/tests/harness/botapi_emulator.mjs" >"$TMP/emu.out" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$TMP/emu.out" ] && break; sleep 0.1; done
API="http://127.0.0.1:$(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1])).port' "$TMP/emu.out")"
TOKEN="123456:UPGRADE-never-in-logs"

# serve BIN NAME LOG: daemon NAME (its data dir and socket under $TMP) on
# the store; sets DPID.
serve() {
  local bin=$1 name=$2 log=$3
  "$bin" serve --db "$URL" --data-dir "$TMP/$name" --listen "unix:$TMP/$name.sock" \
    --toolsets telegram --telegram-bot-token "$TOKEN" --telegram-api-url "$API" \
    --telegram-poll-timeout-s 1 2>"$log" &
  DPID=$!
  PIDS+=("$DPID")
  wait_log "$log" "ready (schema version" 180
}
stop() { # stop PID LOG: SIGTERM, exit 0
  kill -TERM "$1"
  wait_exit "$1" 30
  [ "$EXIT_RC" = 0 ] || { cat "$2" >&2; fail "exit status $EXIT_RC after SIGTERM"; }
}
# probe NAME: calls messagesSearch on NAME's socket every 50 ms into
# $TMP/NAME.probe; sets PPID_.
probe() {
  node "$ROOT/tests/harness/mcp_probe.mjs" "$TMP/$1.sock" "$TMP/$1.probe" messagesSearch \
    '{"query":"release"}' "release notes" 50 &
  PPID_=$!
  PIDS+=("$PPID_")
}
oks_after() { # oks_after FILE MS: answers after MS
  awk -v t="$2" '$1 > t && $2 == "ok"' "$1" | wc -l
}
now_ms() { date +%s%3N; }
# jobs FROM TO: queues jobs FROM..TO of both classes the bot runs without
# history: telegram.metadata (getChat, counted by the emulator per chat)
# and telegram.sync (a bot's: ends at once).
jobs() {
  psql_t "INSERT INTO sync_jobs (class, channel, chat_id, realtime)
          SELECT 'telegram.metadata', 'upgrade_m' || i, 7000000 + i, false
          FROM generate_series($1, $2) i;
          INSERT INTO sync_jobs (class, channel, realtime)
          SELECT 'telegram.sync', 'upgrade_s' || i, false FROM generate_series($1, $2) i"
}

serve "$OLD" a "$TMP/a1.log"
A=$DPID
serve "$OLD" b "$TMP/b1.log"
B=$DPID
probe a
PA=$PPID_
probe b
PB=$PPID_
jobs 1 20
sleep 2
[ "$(oks_after "$TMP/a.probe" 0)" -gt 0 ] || { cat "$TMP/a.probe"; fail "A does not answer"; }
[ "$(oks_after "$TMP/b.probe" 0)" -gt 0 ] || { cat "$TMP/b.probe"; fail "B does not answer"; }

# --- B upgraded while A serves -----------------------------------------------
t_stop_b=$(now_ms)
stop "$B" "$TMP/b1.log"
jobs 21 40
t_up=$(now_ms)
serve "$PARLEYD" b "$TMP/b2.log"
B=$DPID
t_ready=$(now_ms)
grep -q "migrate.*database schema version .* is newer" "$TMP/b2.log" &&
  fail "this build should know the previous release's schema"
jobs 41 60
for _ in $(seq 100); do [ "$(oks_after "$TMP/b.probe" "$t_ready")" -gt 5 ] && break; sleep 0.1; done
[ "$(oks_after "$TMP/b.probe" "$t_ready")" -gt 5 ] || { tail "$TMP/b.probe"; fail "B does not answer after its upgrade"; }
[ "$(oks_after "$TMP/a.probe" "$t_ready")" -gt 5 ] || { tail "$TMP/a.probe"; fail "A stopped answering"; }
oks_b_down=$(awk -v s="$t_stop_b" -v e="$t_ready" '$1 > s && $1 < e && $2 == "ok"' "$TMP/a.probe" | wc -l)
[ "$oks_b_down" -gt 0 ] || fail "A answered nothing while B was replaced"
# (The probe sees a daemon that does not answer: B's, meanwhile.)
fails_b_down=$(awk -v s="$t_stop_b" -v e="$t_ready" '$1 > s && $1 < e && $2 == "fail"' "$TMP/b.probe" | wc -l)
[ "$fails_b_down" -gt 0 ] || fail "B's probe saw no failure while B was down"
echo "rolling_upgrade: B upgraded in $((t_ready - t_up)) ms (start to ready, ASan build)"
# The new release records which parleyd may share the store: the previous
# release (MIGRATE_COMPATIBLE_FROM follows tests/integration/data/previous_release).
NEW_SCHEMA=$(sed -n 's/.*ready (schema version \([0-9]*\)).*/\1/p' "$TMP/b2.log" | head -1)
[ "$(psql_t "SELECT compatible_from FROM schema_release WHERE latest = $NEW_SCHEMA")" = "$OLD_SCHEMA" ] ||
  fail "schema_release: $(psql_t "TABLE schema_release") (want $NEW_SCHEMA admitting $OLD_SCHEMA:" \
    "MIGRATE_COMPATIBLE_FROM must be the previous release's newest migration)"

# --- A restarted on the previous release after the upgrade -------------------
# (Releases from this one on leave the newer functions alone, checked below
# with this build as the older one; the previous release may predate that
# and apply its own again: docs/deployment.md, "Upgrades", says what that
# costs and that restarting the upgraded daemons undoes it.)
fns() { psql_t "SELECT md5(string_agg(p.oid::regprocedure::text || p.prosrc, ',' ORDER BY 1))
                FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace"; }
# Each function with its body's md5, one a line: what changed when fns
# differs (said by fns_changed).
fns_each() { psql_t "SELECT p.oid::regprocedure::text || ' ' || md5(p.prosrc)
                     FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace ORDER BY 1"; }
fns_changed() { diff <(printf '%s\n' "$1") <(fns_each) | grep '^[<>]' | head -20 >&2 || true; }
f_new=$(fns)
t_stop_a=$(now_ms)
stop "$A" "$TMP/a1.log"
serve "$OLD" a "$TMP/a2.log"
A=$DPID
t_a=$(now_ms)
if git -C "$ROOT" show "$PREV:src/db/migrate.h" | grep -q MIGRATE_COMPATIBLE_FROM; then
  [ "$(fns)" = "$f_new" ] || fail "the previous release's restart replaced this release's functions"
elif [ "$(fns)" != "$f_new" ]; then
  echo "rolling_upgrade: note: the previous release predates the release rule and put its own functions back"
fi
for _ in $(seq 100); do [ "$(oks_after "$TMP/a.probe" "$t_a")" -gt 5 ] && break; sleep 0.1; done
[ "$(oks_after "$TMP/a.probe" "$t_a")" -gt 5 ] || { tail "$TMP/a.probe"; fail "A does not answer after its restart"; }
[ "$(oks_after "$TMP/b.probe" "$t_a")" -gt 5 ] || { tail "$TMP/b.probe"; fail "B stopped answering"; }
jobs 61 80

# --- every job ran once ----------------------------------------------------------
for _ in $(seq 300); do
  [ "$(psql_t "SELECT count(*) FROM sync_jobs WHERE channel LIKE 'upgrade_%' AND status = 'idle'")" = 160 ] && break
  sleep 0.1
done
left=$(psql_t "SELECT string_agg(channel || ' ' || status || ' ' || coalesce(error, ''), '; ')
               FROM sync_jobs WHERE channel LIKE 'upgrade_%' AND status <> 'idle'")
[ -z "$left" ] || fail "jobs not done: $left"
twice=$(psql_t "SELECT string_agg(channel || ' ' || attempts, ', ') FROM sync_jobs
                WHERE channel LIKE 'upgrade_%' AND attempts <> 1")
[ -z "$twice" ] || fail "jobs claimed more than once: $twice"
# The emulator's count of getChat calls for the jobs' chats: "CHATS TWICE".
calls=$(node -e '
  const s = await (await fetch(process.argv[1] + "/control/stats")).json();
  const c = Object.entries(s.getChat).filter(([k]) => Number(k) > 7000000);
  console.log(c.length, JSON.stringify(c.filter(([, n]) => n !== 1)));' --input-type=module "$API")
[ "${calls%% *}" = 80 ] || fail "getChat for ${calls%% *} of 80 metadata jobs"
[ "${calls#* }" = "[]" ] || fail "metadata jobs run more than once (chat, getChat calls): ${calls#* }"

# --- A never stopped answering ----------------------------------------------------
kill -TERM "$PA" "$PB"
wait "$PA" "$PB" 2>/dev/null || true
# A was stopped once on purpose (its restart, from t_stop_a until it was
# ready at t_a); every other call it got answered, B's upgrade included.
a_fail=$(awk -v s="$t_stop_a" -v e="$t_a" '$2 != "ok" && ($1 < s || $1 > e + 1000)' "$TMP/a.probe" | wc -l)
[ "$a_fail" = 0 ] || { grep -v " ok$" "$TMP/a.probe" | head >&2; fail "A failed $a_fail calls outside its own restart"; }
[ "$(awk '$2 == "ok"' "$TMP/a.probe" | wc -l)" -gt 20 ] || fail "too few calls answered by A"
stop "$A" "$TMP/a2.log"
stop "$B" "$TMP/b2.log"

# --- the rule, with this build as the older parleyd ---------------------------------
# A newer release (one migration past this build, a function of its own)
# that admits this build: this build serves on the newer functions.
NEXT=$((NEW_SCHEMA + 1))
psql_t "INSERT INTO schema_version (version, name) VALUES ($NEXT, 'next_release');
        INSERT INTO schema_release (latest, compatible_from) VALUES ($NEXT, $NEW_SCHEMA);
        CREATE OR REPLACE FUNCTION parley_daemon_alive(p_owner text) RETURNS boolean
          LANGUAGE sql STABLE AS \$\$ SELECT p_owner IS NOT NULL /* next release */ \$\$"
f_next=$(fns)
e_next=$(fns_each)
serve "$PARLEYD" a "$TMP/a3.log"
A=$DPID
grep -q "database schema version $NEXT is newer than this parleyd knows ($NEW_SCHEMA): it runs on the newer release's functions" "$TMP/a3.log" ||
  { cat "$TMP/a3.log"; fail "no warning about the newer schema"; }
[ "$(fns)" = "$f_next" ] || { fns_changed "$e_next"; fail "an older parleyd replaced the newer release's functions"; }
t=$(now_ms)
probe a
PA=$PPID_
for _ in $(seq 100); do [ "$(oks_after "$TMP/a.probe" "$t")" -gt 3 ] && break; sleep 0.1; done
[ "$(oks_after "$TMP/a.probe" "$t")" -gt 3 ] || { tail "$TMP/a.probe"; fail "the older parleyd does not serve"; }
kill -TERM "$PA"
stop "$A" "$TMP/a3.log"

# One that admits only its own release: this build refuses, saying what to do.
psql_t "UPDATE schema_release SET compatible_from = $NEXT WHERE latest = $NEXT"
rc=0
"$PARLEYD" serve --db "$URL" --data-dir "$TMP/a" --listen "unix:$TMP/a.sock" 2>"$TMP/a4.log" || rc=$?
[ "$rc" = 1 ] || { cat "$TMP/a4.log"; fail "a parleyd two releases behind: exit $rc"; }
grep -q "the database is at schema version $NEXT and takes parleyd of schema version $NEXT or later; this parleyd knows version $NEW_SCHEMA: upgrade it" "$TMP/a4.log" ||
  { cat "$TMP/a4.log"; fail "the refusal does not say what to do"; }
[ "$(fns)" = "$f_next" ] || { fns_changed "$e_next"; fail "the refused parleyd changed functions"; }
grep -q "$TOKEN" "$TMP"/*.log && fail "the bot token in a log"

[ -n "${KEEP:-}" ] && cp "$TMP"/*.probe "$TMP"/*.log "$KEEP"/
psql_t "DROP DATABASE $DB" postgres
echo "rolling_upgrade: ok"
