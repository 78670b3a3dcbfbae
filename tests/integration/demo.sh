# demo: tools/demo on a new data directory imports the demo archive, serves
# it (channelsList answers the demo chats in English, Russian, Chinese and
# Japanese), prints the client snippets, and stops cleanly on SIGTERM; a
# second run finds the store filled and imports nothing. The archive's
# newest message is yesterday (its dates are relative to today); nothing
# is left in TMPDIR, also when parleyd exits before it is ready; as root,
# the demo's cluster runs as Debian's postgres user (no user created).
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$TMP/demo
PORT=$((20000 + RANDOM % 20000))
export TMPDIR=$TMP/tmpdir
mkdir -m 1777 "$TMPDIR"
tmp_empty() { # tmp_empty WHEN
  [ -z "$(ls -A "$TMPDIR")" ] || { ls -la "$TMPDIR"; fail "tools/demo left files in TMPDIR $1"; }
}

# The archive's dates: the newest message yesterday at 18:00 local time,
# nothing after it.
"${PARLEY_NODE:-node}" "$ROOT/tools/demo_archive.mjs" "$TMP/archive" >/dev/null
newest=$("${PARLEY_NODE:-node}" -e '
  const a = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  let max = 0;
  for (const c of a.chats.list) for (const m of c.messages) max = Math.max(max, Number(m.date_unixtime));
  console.log(max);' "$TMP/archive/result.json")
[ "$(date -d "@$newest" +%F\ %H:%M)" = "$(date -d yesterday +%F) 18:00" ] ||
  fail "the demo archive's newest message is $(date -d "@$newest"), not yesterday 18:00"
last_cw=$(sqlite3 "$TMP/archive/chatwise/app.db" "SELECT max(updatedAt) / 1000 FROM chat")
[ "$last_cw" -lt "$(date +%s)" ] || fail "a ChatWise chat of the demo is in the future"

# parleyd exits before it is ready (a bad --listen): the demo fails with
# its status and leaves nothing behind.
rc=0
PARLEYD=$PARLEYD "$ROOT/tools/demo" --data-dir "$TMP/never" --listen ftp://x >/dev/null 2>"$TMP/early.err" || rc=$?
[ "$rc" = 2 ] || { cat "$TMP/early.err"; fail "tools/demo with a bad --listen exited $rc, not 2"; }
tmp_empty "after parleyd exited early"
run_demo() { # run_demo OUT: starts tools/demo in the background; sets DPID
  PARLEYD=$PARLEYD "$ROOT/tools/demo" --data-dir "$D" --listen "http://127.0.0.1:$PORT/mcp" \
    >"$1" 2>"$1.err" &
  DPID=$!
  PIDS+=("$DPID")
}
stop_demo() { # stop_demo OUT
  kill -TERM "$DPID"
  wait_exit "$DPID" 30
  [ "$EXIT_RC" = 0 ] || { cat "$1.err" >&2; fail "tools/demo exit $EXIT_RC after SIGTERM"; }
  no_postgres_for "$D" || fail "postgres left running"
}

run_demo "$TMP/1.out"
wait_log "$TMP/1.out" "parley serves" 180
grep -q "demo archive imported" "$TMP/1.out" || fail "no demo import on an empty store"
grep -q "parley serves 12 chats at http://127.0.0.1:$PORT/mcp" "$TMP/1.out" || { cat "$TMP/1.out"; fail "channelsList"; }
for chat in "Platform Team" "Release Forum" "Книжный клуб" "数据团队" "東京オフィス"; do
  grep -q "$chat" "$TMP/1.out" || fail "channelsList lacks $chat"
done
grep -q '"mcpServers"' "$TMP/1.out" || fail "no Claude Desktop snippet"
grep -q "inspector --cli http://127.0.0.1:$PORT/mcp" "$TMP/1.out" || fail "no Inspector command"
grep -q "http://127.0.0.1:$PORT/mcp/telegram serves the telegram toolset whole" "$TMP/1.out" || fail "no word of the toolsets by URL"
grep -q '\*\*検索\*\*' "$TMP/1.out" || fail "no CJK search example"
stop_demo "$TMP/1.out"
tmp_empty "after a run"
if [ "$(id -u)" = 0 ]; then
  [ "$(stat -c %U "$D/pg/data")" = postgres ] ||
    fail "as root, the demo's cluster runs as $(stat -c %U "$D/pg/data"), not Debian's postgres user"
fi

run_demo "$TMP/2.out"
wait_log "$TMP/2.out" "parley serves" 120
grep -q "demo archive imported" "$TMP/2.out" && fail "imported again into a filled store"
grep -q "parley serves 12 chats" "$TMP/2.out" || fail "second run"
stop_demo "$TMP/2.out"
tmp_empty "after the second run"
echo "demo: ok"
