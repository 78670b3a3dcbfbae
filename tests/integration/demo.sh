# demo: tools/demo on a new data directory imports the demo archive, serves
# it (channelsList answers the demo chats in English, Russian, Chinese and
# Japanese), prints the client snippets, and stops cleanly on SIGTERM; a
# second run finds the store filled and imports nothing.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$TMP/demo
PORT=$((20000 + RANDOM % 20000))
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

run_demo "$TMP/2.out"
wait_log "$TMP/2.out" "parley serves" 120
grep -q "demo archive imported" "$TMP/2.out" && fail "imported again into a filled store"
grep -q "parley serves 12 chats" "$TMP/2.out" || fail "second run"
stop_demo "$TMP/2.out"
echo "demo: ok"
