# bootstrap: `parleyd bootstrap` as a session-start hook runs it, beside a
# serving daemon on the same data directory (it joins the embedded
# cluster; no second postmaster): generated Claude Code transcripts
# (gen_transcripts.mjs long: a long session compacted halfway) imported,
# then a project's memory as plain text within the budget, the latest
# continuation first; --hook answering a SessionStart hook's JSON with
# hookSpecificOutput.additionalContext; only the project's own sessions; a
# project with nothing (an empty context, said on stderr, exit 0); the
# current and a relative directory as the project; bad arguments (usage
# errors, exit 2); and alone on the data directory (starts the cluster,
# answers, stops it).
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$TMP/d
node "$ROOT/tests/harness/gen_transcripts.mjs" "$TMP/tr" long

stop_ok() { # stop_ok PID LOG: SIGTERM, exit 0 within 10 s
  kill -TERM "$1"
  wait_exit "$1" 10
  [ "$EXIT_RC" = 0 ] || { cat "$2" >&2; fail "exit status $EXIT_RC after SIGTERM"; }
}
boot() { "$PARLEYD" --data-dir "$D" bootstrap "$@"; }
postmasters() { pgrep -c -f "postgres -D $D/pg/data" || true; }
json_get() { # json_get FILE: hookSpecificOutput's event and context, one a line
  node -e 'const o = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const h = o.hookSpecificOutput; if (!h || Object.keys(o).length !== 1) process.exit(3);
    process.stdout.write(h.hookEventName + "\n" + h.additionalContext);' "$1"
}

# A serving daemon on its embedded cluster; the transcripts imported beside it.
start_daemon "$TMP/serve.log" --data-dir "$D" serve
SERVE=$DPID
wait_log "$TMP/serve.log" "ready (schema version" 120
"$PARLEYD" --data-dir "$D" import claude-code "$TMP/tr" 2>"$TMP/import.log" </dev/null ||
  { cat "$TMP/import.log"; fail "import"; }
[ "$(postmasters)" = 1 ] || fail "expected one postmaster"

# 1. Plain text within 2,000 tokens (about 8,000 characters), the latest
#    continuation first and whole; joined the running cluster.
boot --project /home/dev/long --token-budget 2000 --log-level info >"$TMP/long.txt" 2>"$TMP/long.log" </dev/null ||
  { cat "$TMP/long.log"; fail "bootstrap --project"; }
grep -q "joining the embedded cluster already running" "$TMP/long.log" || { cat "$TMP/long.log"; fail "did not join"; }
grep -q "still uses the embedded cluster; leaving it up" "$TMP/long.log" || fail "should leave the cluster up"
n=$(wc -c <"$TMP/long.txt")
[ "$n" -gt 4000 ] && [ "$n" -le 8000 ] || fail "2000 tokens: $n characters"
[ "$(head -1 "$TMP/long.txt")" = "Memory of earlier sessions in /home/dev/long (the latest continuation first)." ] ||
  { head -3 "$TMP/long.txt"; fail "heading"; }
sed -n 3p "$TMP/long.txt" | grep -q '^## Continuation: where the last session left off' || fail "continuation not first"
sed -n 4p "$TMP/long.txt" | grep -q '^LONG-CONTINUATION: this session is being continued.*END-OF-SUMMARY$' ||
  fail "the continuation, whole, first"
grep -q '^## The work before it (newest first)$' "$TMP/long.txt" || fail "no work before it"
grep -q '^- \[2026-01-10T14:19:00.000Z\] assistant: Step 119: ' "$TMP/long.txt" || fail "newest work first"
grep -q '^## Left out' "$TMP/long.txt" || fail "what was left out"
! grep -q 'Step 1000' "$TMP/long.txt" || fail "work after the continuation is not before it"
! grep -q '^{' "$TMP/long.txt" || fail "plain text, not JSON"
kill -0 "$SERVE" 2>/dev/null || fail "serving daemon died"
[ "$(postmasters)" = 1 ] || fail "a second postmaster"

# A smaller budget, a shorter answer; the same answer twice.
boot --project /home/dev/long --token-budget 1000 >"$TMP/small.txt" </dev/null || fail "1000 tokens"
[ "$(wc -c <"$TMP/small.txt")" -le 4000 ] || fail "1000 tokens: $(wc -c <"$TMP/small.txt") characters"
sed -n 4p "$TMP/small.txt" | grep -q '^LONG-CONTINUATION' || fail "1000 tokens: continuation first"
boot --project /home/dev/long --token-budget 2000 >"$TMP/again.txt" </dev/null || fail "again"
cmp -s "$TMP/long.txt" "$TMP/again.txt" || fail "not the same answer twice"

# 2. --hook: Claude Code's SessionStart JSON in, the hook's JSON out, the
#    same text as additionalContext (the default budget is 2,000 tokens).
hook_in() { printf '{"session_id":"s-1","transcript_path":"/tmp/none.jsonl","cwd":"%s","hook_event_name":"SessionStart","source":"%s"}' "$1" "${2:-startup}"; }
hook_in /home/dev/long | boot --hook >"$TMP/hook.json" 2>"$TMP/hook.log" || { cat "$TMP/hook.log"; fail "--hook"; }
[ -s "$TMP/hook.log" ] && { cat "$TMP/hook.log"; fail "--hook: nothing on stderr expected"; }
json_get "$TMP/hook.json" >"$TMP/hook.txt" || fail "--hook: not the hook's JSON: $(head -c 300 "$TMP/hook.json")"
[ "$(head -1 "$TMP/hook.txt")" = SessionStart ] || fail "hookEventName"
tail -n +2 "$TMP/hook.txt" | cmp -s - "$TMP/long.txt" || fail "additionalContext is not the plain answer"
hook_in /home/dev/long compact | boot --hook --token-budget 1000 >"$TMP/hook2.json" || fail "--hook, compact"
json_get "$TMP/hook2.json" | tail -n +2 | cmp -s - "$TMP/small.txt" || fail "--hook --token-budget"
# --project wins over the hook's cwd.
hook_in /home/dev/nowhere | boot --hook --project /home/dev/long >"$TMP/hook3.json" || fail "--hook --project"
json_get "$TMP/hook3.json" | grep -q '^LONG-CONTINUATION' || fail "--hook --project: not that project's"

# 3. Only the project's own sessions.
boot --project /home/dev/my-website/ >"$TMP/web.txt" </dev/null || fail "my-website"
grep -q 'Footer fixed\.' "$TMP/web.txt" || fail "my-website's work"
grep -q '^## No continuation yet' "$TMP/web.txt" || fail "my-website has no continuation"
! grep -q 'LONG-CONTINUATION\|deploy the archive\|Step ' "$TMP/web.txt" || fail "another project's memory"
boot --project /home/dev/parley >"$TMP/parley.txt" </dev/null || fail "parley"
sed -n 4p "$TMP/parley.txt" | grep -q '^This session is being continued from a previous conversation. Summary: search ranks' ||
  fail "parley's own continuation"
! grep -q 'LONG-CONTINUATION\|Footer' "$TMP/parley.txt" || fail "parley: another project's memory"

# 4. A project with nothing: an empty context, said on stderr, exit 0.
boot --project /home/dev/none >"$TMP/none.txt" 2>"$TMP/none.log" </dev/null || fail "no project: exit $?"
[ -s "$TMP/none.txt" ] && fail "no project: something printed: $(head -c 200 "$TMP/none.txt")"
grep -q "no earlier session is stored for the project /home/dev/none" "$TMP/none.log" || { cat "$TMP/none.log"; fail "no project: message"; }
hook_in /home/dev/none | boot --hook >"$TMP/none.json" 2>/dev/null || fail "no project, --hook"
[ "$(json_get "$TMP/none.json")" = SessionStart ] || fail "no project, --hook: additionalContext not empty"
# The current directory by default; a relative directory from it.
mkdir -p "$TMP/here/sub"
(cd "$TMP/here" && "$PARLEYD" --data-dir "$D" bootstrap 2>"$TMP/cwd.log" </dev/null) || fail "default project"
grep -q "for the project $TMP/here " "$TMP/cwd.log" || { cat "$TMP/cwd.log"; fail "default: the current directory"; }
(cd "$TMP/here" && "$PARLEYD" --data-dir "$D" bootstrap --project sub 2>"$TMP/rel.log" </dev/null) || fail "relative project"
grep -q "for the project $TMP/here/sub " "$TMP/rel.log" || { cat "$TMP/rel.log"; fail "relative: from the current directory"; }

# 5. Bad arguments: usage errors (exit 2) that say what to change.
usage() { # usage PATTERN ARGS... (stdin: the hook input, if any)
  local pat=$1 rc=0; shift
  "$PARLEYD" --data-dir "$D" "$@" >"$TMP/u.out" 2>"$TMP/u.err" || rc=$?
  [ "$rc" = 2 ] || { cat "$TMP/u.err"; fail "$*: exit $rc, expected 2"; }
  grep -q -- "$pat" "$TMP/u.err" || { cat "$TMP/u.err"; fail "$*: message"; }
  [ -s "$TMP/u.out" ] && fail "$*: something on stdout"
  return 0
}
usage "--token-budget: 'abc' is not a number of tokens 1000..1000000" bootstrap --token-budget abc </dev/null
usage "--token-budget: '10' is not a number of tokens" bootstrap --token-budget=10 </dev/null
usage "--token-budget needs a value" bootstrap --token-budget </dev/null
usage "unexpected argument 'extra' (usage: parleyd bootstrap" bootstrap extra </dev/null
usage "--hook takes no value" bootstrap --hook=yes </dev/null
usage "unknown option '--project'" --project /x bootstrap </dev/null
usage "--project: missing: No such file or directory" bootstrap --project missing </dev/null
echo 'not json' | usage "--hook: stdin is not a hook's JSON object" bootstrap --hook
echo '{"hook_event_name":"Stop","cwd":"/x"}' | usage "--hook answers SessionStart hooks, not Stop" bootstrap --hook
echo '{"hook_event_name":"SessionStart"}' | usage "--hook: the hook's JSON has no absolute \"cwd\"" bootstrap --hook
: | usage "--hook: stdin is not a hook's JSON object" bootstrap --hook
kill -0 "$SERVE" 2>/dev/null || fail "serving daemon died"
stop_ok "$SERVE" "$TMP/serve.log"

# 6. Alone on the data directory: starts the cluster, answers, stops it.
no_postgres_for "$D" || fail "postgres left after serve stopped"
boot --project /home/dev/long --token-budget 2000 >"$TMP/alone.txt" 2>"$TMP/alone.log" </dev/null ||
  { cat "$TMP/alone.log"; fail "bootstrap alone"; }
cmp -s "$TMP/long.txt" "$TMP/alone.txt" || fail "alone: not the same answer"
no_postgres_for "$D" || fail "bootstrap alone left postgres running"
echo "bootstrap: ok"
