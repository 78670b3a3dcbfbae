# docs: the generated parts of the docs are what the daemon says now (the
# settings table of docs/configuration.md is `parleyd --help-config`; run
# tools/gen-docs after changing an option), and every docs/ page the README
# links to exists.
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
# The README's links into docs/ lead somewhere.
grep -o '](docs/[^)#]*' "$ROOT/README.md" | sed 's/^](//' | sort -u >"$TMP/links"
[ -s "$TMP/links" ] || fail "the README links to no docs/ page"
while read -r l; do
  [ -f "$ROOT/$l" ] || fail "README links to $l, which does not exist"
done <"$TMP/links"
echo "docs: ok"
