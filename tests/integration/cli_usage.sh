# cli_usage: --help, --version, usage errors exit 2 with a clear message,
# bad config files and values name what is wrong.
source "$(dirname "$0")/lib.sh"

out=$("$PARLEYD" --help)
grep -q "Usage: parleyd" <<<"$out" || fail "--help lacks usage"
grep -q -- "--data-dir" <<<"$out" || fail "--help lacks --data-dir"
"$PARLEYD" --version | grep -qE '^parleyd [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version"
"$PARLEYD" help >/dev/null || fail "help command"

expect_usage() { # expect_usage PATTERN ARGS...
  local pat=$1; shift
  local rc=0 err
  err=$("$PARLEYD" "$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" = 2 ] || fail "'$*' exited $rc, expected 2"
  grep -q -- "$pat" <<<"$err" || fail "'$*' said '$err', expected '$pat'"
  # Nothing on stdout, ever, for errors (stdout belongs to MCP).
  [ -z "$("$PARLEYD" "$@" 2>/dev/null)" ] || fail "'$*' wrote to stdout"
}
expect_usage "unknown option '--bogus'" --bogus
expect_usage "unknown command 'frobnicate'" frobnicate
expect_usage "needs a value" serve --data-dir
expect_usage "not an integer between 1 and 256" serve --db-pool-size 0
expect_usage "not one of debug" --log-level loud serve
echo "nonsense line" >"$TMP/bad.conf"
expect_usage "bad.conf:1: expected 'key = value'" --config "$TMP/bad.conf"
expect_usage "No such file" --config "$TMP/missing.conf"
# Settings and secret files are opened without blocking and must be
# regular files: a FIFO is refused at once, never waited on. A file that
# holds a secret follows one mode rule: 0600 (or 0640 owned by root).
mkfifo "$TMP/fifo.conf" "$TMP/fifo.tokens"
err=$(timeout 10 "$PARLEYD" --config "$TMP/fifo.conf" serve 2>&1 >/dev/null) && fail "a FIFO config was accepted"
grep -q "config file $TMP/fifo.conf: a FIFO, not a regular file" <<<"$err" || fail "FIFO config: '$err'"
printf 'log_level = debug\n' >"$TMP/plain.conf"
chmod 644 "$TMP/plain.conf"
printf 'telegram_api_hash = 0123456789abcdef0123456789abcdef\n' >"$TMP/secret.conf"
chmod 644 "$TMP/secret.conf"
expect_usage "config file (telegram_api_hash) $TMP/secret.conf: holds a secret and others can read it (mode 0644); chmod 600 it" \
  --config "$TMP/secret.conf" serve
printf 'db = postgres://parley:hunter2@db.invalid/parley\n' >"$TMP/dbpass.conf"
chmod 604 "$TMP/dbpass.conf"
expect_usage "config file (db) $TMP/dbpass.conf: holds a secret and others can read it (mode 0604)" \
  --config "$TMP/dbpass.conf" serve
chmod 600 "$TMP/secret.conf" "$TMP/dbpass.conf"
for ok in plain secret dbpass; do # read, then the next setting is what is refused
  expect_usage "unknown endpoint" --config "$TMP/$ok.conf" serve --data-dir "$TMP/never" --listen ftp://x
done
PARLEY_DB_POOL_SIZE=x expect_usage "PARLEY_DB_POOL_SIZE" serve
# login: what signs in, and the phone, before any work (no data directory made).
expect_usage "usage: parleyd login telegram --phone" login
expect_usage "usage: parleyd login telegram --phone" login bluesky
expect_usage "login telegram needs --phone" login telegram --data-dir "$TMP/never-login"
[ ! -e "$TMP/never-login" ] || fail "login created $TMP/never-login"
# A command whose files or settings cannot work fails before the database
# starts: at once (well under 2 s, even on a fresh data directory), with
# no data directory made, no cluster created.
expect_early() { # expect_early PATTERN ARGS...: exit 1 saying PATTERN, nothing made
  local pat=$1; shift
  local rc=0 err t0 ms
  t0=$(date +%s%N)
  err=$("$PARLEYD" "$@" --data-dir "$TMP/never-early" 2>&1 >/dev/null) || rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  [ "$rc" = 1 ] || fail "'$*' exited $rc, expected 1: $err"
  grep -q -- "$pat" <<<"$err" || fail "'$*' said '$err', expected '$pat'"
  [ "$ms" -lt 2000 ] || fail "'$*' took $ms ms to fail"
  [ ! -e "$TMP/never-early" ] || fail "'$*' made the data directory"
}
expect_early "import: /no/such/path: No such file or directory" import telegram-export /no/such/path
mkdir -p "$TMP/no-app-db"
expect_early "no-app-db/app.db: No such file or directory" import chatwise "$TMP/no-app-db"
mkdir -p "$TMP/no-result"
expect_early "no-result: the folder has no result.json (.*no-result/result.json: No such file or directory; see parleyd import telegram-export --help)" import telegram-export "$TMP/no-result"
expect_early "import: $TMP/no-sessions: No such file" import codex "$TMP/no-sessions"
HOME=$TMP/nohome expect_early "$TMP/nohome/.claude/projects: No such file" import claude-code
expect_early "needs --telegram-api-id and --telegram-api-hash" login telegram --phone +15550001
TELEGRAM_API_ID=1 expect_early "needs --telegram-api-id and --telegram-api-hash" login telegram --phone +15550001
expect_early "account: 'a/b' is not a name" login telegram --phone +15550001 --account a/b \
  --telegram-api-id 1 --telegram-api-hash x
expect_usage "unknown import source 'foo'; usage: parleyd import SOURCE" import foo /x
# A bad listen value is named by its flag wherever it came from.
expect_usage "^parleyd: --listen: ftp://x: unknown endpoint" serve --listen ftp://x
PARLEY_LISTEN=ftp://x expect_usage "^parleyd: --listen: ftp://x: unknown endpoint" serve
printf 'listen = ftp://x\n' >"$TMP/listen.conf"
expect_usage "^parleyd: --listen: ftp://x: unknown endpoint" serve --config "$TMP/listen.conf"
# backup and restore: one directory; the embedded cluster's only (an
# external database has its own tools), refused before any work.
expect_usage "usage: parleyd backup DIR" backup
expect_usage "usage: parleyd restore DIR" restore "$TMP/a" "$TMP/b"
expect_usage "use its own tools (pg_dump, pg_basebackup" backup "$TMP/never-bk" --db "host=/nonexistent dbname=x"
expect_usage "docs/deployment.md" restore "$TMP/never-bk" --db "host=/nonexistent dbname=x" --data-dir "$TMP/never-rs"
[ ! -e "$TMP/never-bk" ] && [ ! -e "$TMP/never-rs" ] || fail "backup/restore with --db made a directory"
"$PARLEYD" --help | grep -q "^  backup DIR" || fail "--help lacks backup"
"$PARLEYD" --help | grep -q "^  restore DIR" || fail "--help lacks restore"
expect_usage "bad database URL" migrate --db "host='unterminated" && true
# parleyd import --help and parleyd import SOURCE --help: their own help.
out=$("$PARLEYD" import --help) || fail "import --help exited non-zero"
grep -q "Usage: parleyd import SOURCE" <<<"$out" || fail "import --help: $out"
for s in telegram-export claude-code chatwise; do
  grep -q "^  $s " <<<"$out" || fail "import --help does not list $s"
  "$PARLEYD" import "$s" --help | grep -q "^Usage: parleyd import $s " || fail "import $s --help"
done
expect_usage "where SOURCE is telegram-export, claude-code, codex, chatwise" import
expect_usage "usage: parleyd import chatwise PATH" import chatwise
# Flags are named as typed, not by their key.
expect_usage "^parleyd: --log-level: 'loud'" serve --log-level loud
expect_usage "^parleyd: --log_level: 'loud'" serve --log_level loud
# With bearer tokens, a tcp:// endpoint (which cannot carry one) is refused
# unless allow_anonymous names it; a name that is no endpoint, or one
# beyond loopback, is refused too.
printf 'some-long-token-0123456789\n' >"$TMP/tokens"
chmod 600 "$TMP/tokens"
printf 'some-long-token-0123456789\n' >"$TMP/tokens644"
chmod 644 "$TMP/tokens644"
# A bad setting of any kind is a usage error before any work: nothing is
# created in the data directory (no cluster initialised, started or
# joined), nothing listens.
for bad in "unknown endpoint::--listen ftp://x" \
  "unknown toolset 'nope'::--toolsets nope" \
  "refusing to listen beyond loopback::--listen http://0.0.0.0:0/mcp" \
  "TLS needs --tls-cert::--listen https://127.0.0.1:0/mcp" \
  "bluesky-service: 'ftp://x' is not an http:// or https:// URL::--bluesky-service ftp://x" \
  "telegram-api-url: 'api.telegram.org' is not::--telegram-api-url api.telegram.org" \
  "url-allow-addresses: 'example.com' is not an IP address::--url-allow-addresses example.com" \
  "token file .*no-such-tokens: No such file::--token-file $TMP/no-such-tokens" \
  "token file $TMP/tokens644: holds a secret and others can read it (mode 0644); chmod 600 it::--token-file $TMP/tokens644" \
  "token file $TMP/fifo.tokens: a FIFO, not a regular file::--token-file $TMP/fifo.tokens" \
  "tcp://127.0.0.1:0: with --token-file every endpoint but a unix: socket needs a bearer token::--listen tcp://127.0.0.1:0 --token-file $TMP/tokens" \
  "tcp://127.0.0.1:0: with --token-file::--listen tcp://127.0.0.1:0,http://127.0.0.1:0/mcp --token-file $TMP/tokens --allow-anonymous http://127.0.0.1:0/mcp" \
  "allow-anonymous: 'tcp://127.0.0.1:1' is not one of the listen endpoints::--listen tcp://127.0.0.1:0 --token-file $TMP/tokens --allow-anonymous tcp://127.0.0.1:1" \
  "allow-anonymous: http://0.0.0.0:0/mcp is not a loopback endpoint::--listen http://0.0.0.0:0/mcp --token-file $TMP/tokens --allow-anonymous http://0.0.0.0:0/mcp"; do
  pat=${bad%%::*}
  read -r -a args <<<"${bad##*::}"
  expect_usage "$pat" serve --data-dir "$TMP/never" "${args[@]}"
  [ ! -e "$TMP/never" ] || fail "serve ${args[*]} created $TMP/never"
done
expect_usage "bluesky-service" import chatwise "$TMP" --data-dir "$TMP/never" --bluesky-service x
[ ! -e "$TMP/never" ] || fail "import created $TMP/never"

# The configuration reference documents every option --help lists.
REF=$(dirname "$0")/../../docs/configuration.md
for flag in $(grep -oE -- '--[a-z][a-z-]+' <<<"$out" | sort -u); do
  grep -q -- "$flag" "$REF" || fail "docs/configuration.md does not document $flag"
done

echo "cli_usage: ok"
