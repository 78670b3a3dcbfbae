# stdio_tty: parleyd --stdio with a terminal on stdin and stdout (script(1)
# gives it a pseudo-terminal): it answers, and exits 0 when the terminal
# reports end of input.
source "$(dirname "$0")/lib.sh"
: "${PARLEY_TEST_PG:?}"
log="$TMP/tty.log"
timeout 60 script -qec "$PARLEYD serve --stdio --db '$PARLEY_TEST_PG' --log-level warn --toolsets conformance" \
  "$log" <<<'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test_simple_text"}}' \
  >/dev/null 2>&1 || fail "parleyd on a terminal did not exit 0"
grep -q '"id":7,"result":{"content":\[{"type":"text","text":"This is a simple text response for testing."}\]}' "$log" ||
  { cat "$log" >&2; fail "no answer on the terminal"; }
grep -q 'COMMAND_EXIT_CODE="0"' "$log" || { cat "$log" >&2; fail "exit status was not 0"; }
echo "stdio_tty: ok"
