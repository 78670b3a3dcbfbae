# backup_restore: `parleyd backup DIR` while a daemon serves on its
# embedded data directory (it joins the running cluster, copies it with
# pg_basebackup, the media store and the keys, writes a manifest and
# leaves the cluster up), then `parleyd restore DIR` into a new data
# directory, which `parleyd serve` starts on with every message, media
# row and media file (sha256) of the moment of the backup, and the same
# keys; what was written after the backup is not in it. Refused: a DIR
# that is not empty, a DIR inside the data directory, a data directory
# without a cluster, a restore onto a data directory with a cluster or
# that a daemon uses, a DIR that is no backup, damaged backups (a media
# file missing, a cluster file changed: pg_verifybackup), and --db
# (usage error pointing to the docs). The media store is a symbolic link
# to other storage: the backup holds its files.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$TMP/d
R=$TMP/r
B=$TMP/backup

psql_in() { psql -X -q -At -h "$1/pg/run" -U parley -d parley -c "$2"; }
# What a restore must bring back: every chat's message count, every media
# row's file, and the files of the media store with their sha256.
snapshot() {
  psql_in "$1" "SELECT string_agg(chat_id || ':' || n, ',' ORDER BY chat_id)
                FROM (SELECT chat_id, count(*) AS n FROM messages GROUP BY chat_id) s"
  psql_in "$1" "SELECT count(*), string_agg(local_path, ',' ORDER BY local_path)
                FROM media WHERE local_path IS NOT NULL"
  (cd "$1/media" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
}
stop_ok() { # stop_ok PID LOG
  kill -TERM "$1"
  wait_exit "$1" 30
  [ "$EXIT_RC" = 0 ] || { cat "$2" >&2; fail "exit status $EXIT_RC after SIGTERM"; }
}
expect_fail() { # expect_fail RC PATTERN ARGS...: exits RC, says PATTERN on stderr
  local want=$1 pat=$2 rc=0 err; shift 2
  err=$("$PARLEYD" "$@" 2>&1 </dev/null >/dev/null) || rc=$?
  [ "$rc" = "$want" ] || { echo "$err" >&2; fail "'$*' exited $rc, expected $want"; }
  grep -q -- "$pat" <<<"$err" || fail "'$*' said '$err', expected '$pat'"
}

# Fixtures: a forum with three distinct media files, a chat of 3,000
# messages, and a small group written only after the backup.
node "$ROOT/tests/harness/gen_tg_export.mjs" edge "$TMP/edge"
head -c 70000 /dev/urandom >"$TMP/edge/forum/photos/photo_1.jpg"
head -c 300000 /dev/urandom >"$TMP/edge/forum/video_files/v.mp4"
head -c 5000 /dev/urandom >"$TMP/edge/forum/files/report.pdf"
node "$ROOT/tests/harness/gen_tg_export.mjs" big "$TMP/big.json" 3000
node "$ROOT/tests/harness/gen_tg_export.mjs" groups "$TMP/groups"

expect_fail 1 "no embedded cluster in $D/pg/data" --data-dir "$D" backup "$B"
[ ! -e "$B" ] || fail "a refused backup made $B"

# The media store on other storage, the data directory naming it by a
# symbolic link: the backup copies the files, not the link.
mkdir -p "$D" "$TMP/elsewhere/media"
ln -s "$TMP/elsewhere/media" "$D/media"
# A daemon serves the data directory; the fixtures are imported beside it.
start_daemon "$TMP/serve.log" --data-dir "$D" serve
SERVE=$DPID
wait_log "$TMP/serve.log" "ready (schema version" 120
for f in "$TMP/edge/forum" "$TMP/big.json"; do
  "$PARLEYD" --data-dir "$D" import telegram-export "$f" 2>"$TMP/import.log" </dev/null ||
    { cat "$TMP/import.log"; fail "import $f"; }
done
[ -f "$D/mcp-state.key" ] || fail "serve made no state key"
before=$(snapshot "$D")
[ "$(sed -n 2p <<<"$before" | cut -d"|" -f1)" = 3 ] || { echo "$before"; fail "expected 3 media files stored"; }
grep -q ":3000" <<<"$before" || { echo "$before"; fail "expected the chat of 3000 messages"; }

# The backup, while the daemon serves.
"$PARLEYD" --data-dir "$D" backup "$B" 2>"$TMP/backup.log" </dev/null ||
  { cat "$TMP/backup.log"; fail "backup"; }
grep -q "joining the embedded cluster already running" "$TMP/backup.log" || fail "backup did not join the cluster"
grep -q "another parleyd still uses the embedded cluster; leaving it up" "$TMP/backup.log" ||
  fail "backup should leave the daemon's cluster up"
grep -q "kB ([0-9]*%), [0-9]/1 tablespace" "$TMP/backup.log" || { cat "$TMP/backup.log"; fail "no pg_basebackup progress"; }
grep -q "backup complete in $B: the cluster (PostgreSQL 15, .* 3 media files (.*), mcp-state.key" "$TMP/backup.log" ||
  { cat "$TMP/backup.log"; fail "backup summary"; }
kill -0 "$SERVE" 2>/dev/null || fail "the daemon died during the backup"
[ "$(pgrep -c -f "postgres -D $D/pg/data" || true)" = 1 ] || fail "expected one postmaster"
node -e 'const m = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  if (m.format !== "parley-backup" || m.version !== 1 || m.media.files !== 3 || m.pg.files < 100 ||
      !m.items.includes("media") || !m.items.includes("mcp-state.key")) process.exit(1);' \
  "$B/parley-backup.json" || { cat "$B/parley-backup.json"; fail "manifest"; }
[ "$(stat -c %a "$B/mcp-state.key")" = 600 ] || fail "the key's copy is not 0600"
[ -d "$B/media" ] && [ ! -L "$B/media" ] || fail "the backup holds a link to the media store, not its files"

# Written after the backup: not in it.
"$PARLEYD" --data-dir "$D" import telegram-export "$TMP/groups/small.json" 2>"$TMP/import.log" </dev/null ||
  { cat "$TMP/import.log"; fail "import after the backup"; }
[ "$(psql_in "$D" "SELECT count(*) FROM messages WHERE chat_id = -5550001")" = 5 ] || fail "later import"

# Refusals while the daemon serves.
expect_fail 1 "$B is not empty" --data-dir "$D" backup "$B"
expect_fail 1 "inside the data directory" --data-dir "$D" backup "$D/bk"
[ ! -e "$D/bk" ] || fail "a refused backup left $D/bk"
expect_fail 1 "$D/pg/data already holds a cluster" --data-dir "$D" restore "$B"
expect_fail 1 "not a backup of parleyd backup" --data-dir "$TMP/x" restore "$TMP/edge"
expect_fail 2 "docs/deployment.md" --db "host=$D/pg/run dbname=parley user=parley" backup "$TMP/b2"
expect_fail 2 "use its own tools" --db "host=$D/pg/run dbname=parley user=parley" --data-dir "$TMP/x" restore "$B"
stop_ok "$SERVE" "$TMP/serve.log"
no_postgres_for "$D" || fail "postgres left running"

# Damaged backups are refused before the data directory gets a cluster.
cp -a "$B" "$TMP/bad1"
rm "$(find "$TMP/bad1/media" -type f | head -1)"
expect_fail 1 "media store $TMP/bad1/media is damaged" --data-dir "$TMP/x1" restore "$TMP/bad1"
cp -a "$B" "$TMP/bad2"
printf 'X' | dd of="$TMP/bad2/pg/PG_VERSION" bs=1 seek=0 conv=notrunc 2>/dev/null
expect_fail 1 "pg_verifybackup" --data-dir "$TMP/x2" restore "$TMP/bad2"
[ ! -e "$TMP/x1/pg/data" ] && [ ! -e "$TMP/x2/pg/data" ] || fail "a damaged backup was restored"
# A data directory without a cluster that a parleyd uses (its lock held,
# as a starting daemon holds it) is refused.
mkdir -p "$TMP/x3"
flock "$TMP/x3/embedded.lock" sleep 60 &
HOLDER=$!
for _ in $(seq 50); do flock -n "$TMP/x3/embedded.lock" true 2>/dev/null || break; sleep 0.1; done
expect_fail 1 "a parleyd uses this data directory" --data-dir "$TMP/x3" restore "$B"
kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null || true
[ ! -e "$TMP/x3/pg/data" ] || fail "a restore went on beside a daemon"

# The restore, into a new data directory; then serve on it.
"$PARLEYD" --data-dir "$R" restore "$B" 2>"$TMP/restore.log" </dev/null ||
  { cat "$TMP/restore.log"; fail "restore"; }
grep -q "restore complete: $R holds the cluster" "$TMP/restore.log" || { cat "$TMP/restore.log"; fail "restore summary"; }
expect_fail 1 "$R/pg/data already holds a cluster" --data-dir "$R" restore "$B"
cmp -s "$D/mcp-state.key" "$R/mcp-state.key" || fail "the state key differs"
[ "$(stat -c %a "$R/mcp-state.key")" = 600 ] || fail "the restored key is not 0600"
start_daemon "$TMP/serve2.log" --data-dir "$R" serve
SERVE2=$DPID
wait_log "$TMP/serve2.log" "ready (schema version" 120
# Refused while a daemon serves it (and it has a cluster anyway).
expect_fail 1 "already holds a cluster" --data-dir "$R" restore "$B"
after=$(snapshot "$R")
[ "$after" = "$before" ] || { diff <(echo "$before") <(echo "$after") >&2; fail "restored store differs"; }
[ "$(psql_in "$R" "SELECT count(*) FROM messages WHERE chat_id = -5550001")" = 0 ] ||
  fail "a message written after the backup is in it"
stop_ok "$SERVE2" "$TMP/serve2.log"
no_postgres_for "$R" || fail "postgres left running"
echo "backup_restore: ok"
