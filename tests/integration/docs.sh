# docs: the generated parts of the docs are what the daemon says now (the
# settings table of docs/configuration.md is `parleyd --help-config`; run
# tools/gen-docs after changing an option; each toolset page's tool
# reference is `parleyd --help-tools NAME`), README and docs/ point nowhere
# outside the repository, every relative link and anchor of README.md,
# docs/ and bench/README.md resolves (tests/harness/doc_check.mjs; the
# installed tree: install.sh, package.sh), and every default they or
# packaging/parley.conf state for a setting is the one parleyd --help
# gives.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
doc=$ROOT/docs/configuration.md
[ -f "$doc" ] || fail "docs/configuration.md is missing"
awk '/<!-- config:end -->/ { skip = 0 } skip { print } /<!-- config:begin -->/ { skip = 1 }' "$doc" >"$TMP/in-doc"
[ -s "$TMP/in-doc" ] || fail "docs/configuration.md has no settings table between its config markers"
"$PARLEYD" --help-config >"$TMP/now"
diff -u "$TMP/in-doc" "$TMP/now" >"$TMP/diff" ||
  { cat "$TMP/diff" >&2; fail "docs/configuration.md is out of date: run tools/gen-docs"; }
# Every option the daemon has is in the table once.
for key in data_dir db listen toolsets telegram_bot_token; do
  [ "$(grep -c "^| \`$key\` |" "$TMP/in-doc")" = 1 ] || fail "setting $key not in the table"
done
# Each toolset page's tool reference is what the binary serves.
for page in "$ROOT"/docs/*.md; do
  name=$(sed -n 's/^<!-- tools:begin \([a-z_]*\) -->$/\1/p' "$page")
  [ -n "$name" ] || continue
  awk '/^<!-- tools:end -->/ { skip = 0 } skip { print } /^<!-- tools:begin / { skip = 1 }' "$page" >"$TMP/tools-doc"
  "$PARLEYD" --help-tools "$name" >"$TMP/tools-now"
  diff -u "$TMP/tools-doc" "$TMP/tools-now" >"$TMP/diff" ||
    { cat "$TMP/diff" >&2; fail "$(basename "$page")'s tool reference is out of date: run tools/gen-docs"; }
done
for t in telegram inline memory chatwise bluesky; do
  grep -lq "^<!-- tools:begin $t -->\$" "$ROOT"/docs/*.md || fail "no docs page holds the $t toolset's reference"
done
# README and docs stand alone: a user's clone has nothing beside it.
if grep -n '\.\./shared' "$ROOT/README.md" "$ROOT"/docs/*.md >"$TMP/shared"; then
  cat "$TMP/shared" >&2
  fail "README.md or docs/ point outside the repository (../shared)"
fi
# The README's links into docs/ lead somewhere.
grep -o '](docs/[^)#]*' "$ROOT/README.md" | sed 's/^](//' | sort -u >"$TMP/links"
[ -s "$TMP/links" ] || fail "the README links to no docs/ page"
while read -r l; do
  [ -f "$ROOT/$l" ] || fail "README links to $l, which does not exist"
done <"$TMP/links"
NODE=${PARLEY_NODE:-node}
"$NODE" "$ROOT/tests/harness/doc_check.mjs" links "$ROOT/README.md" "$ROOT"/docs/*.md "$ROOT/bench/README.md" ||
  fail "a relative link or anchor of the docs does not resolve"
"$NODE" "$ROOT/tests/harness/doc_check.mjs" defaults "$PARLEYD" "$ROOT/README.md" "$ROOT"/docs/*.md \
  "$ROOT/packaging/parley.conf" || fail "a default stated in the docs is not parleyd --help's"
echo "docs: ok"
