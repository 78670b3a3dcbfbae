# install: `cmake --install BUILD --prefix DIR` and `DESTDIR=DIR cmake
# --install BUILD`, as a packager stages a build (BUILD: the build of the
# parleyd under test), write every file under DIR and nothing anywhere
# else: the unit, the sysusers file and the config file included
# (install_manifest.txt lists only paths under DIR; no parley file outside
# it changed). Under DIR: the binaries, both man pages with every command
# of parleyd --help as an entry of its own, the docs in the repository's
# tree with every relative link and anchor resolving where they are
# installed, the license, the config file 0640.
source "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "$(dirname "$PARLEYD")" && pwd)
NODE=${PARLEY_NODE:-node}
CONFIGURED=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$BUILD/CMakeCache.txt")

# Every parley file a stray install would write outside DIR, by path.
outside() {
  find /usr/local /etc /lib/systemd /usr/lib/systemd /usr/lib/sysusers.d /usr/share/doc \
    /usr/share/man -xdev \( -name 'parley*' -o -path '*/doc/parley/*' \) -newer "$TMP/stamp" \
    2>/dev/null || true
}

# check_tree DIR PREFIX: the files of an install to PREFIX, staged in DIR.
check_tree() {
  local d=$1$2 f
  for f in bin/parleyd bin/parley-loadgen share/man/man8/parleyd.8.gz \
    share/man/man1/parley-loadgen.1.gz lib/systemd/system/parleyd.service \
    lib/sysusers.d/parley.conf share/doc/parley/README.md share/doc/parley/docs/deployment.md \
    share/doc/parley/bench/README.md share/doc/parley/copyright \
    share/doc/parley/changelog.Debian.gz share/lintian/overrides/parley; do
    [ -f "$d/$f" ] || fail "no $2/$f in $1"
  done
  for f in "$SRC"/docs/*.md; do
    [ -f "$d/share/doc/parley/docs/$(basename "$f")" ] || fail "docs/$(basename "$f") not installed"
  done
  "$NODE" "$SRC/tests/harness/doc_check.mjs" links "$d/share/doc/parley/README.md" \
    "$d"/share/doc/parley/docs/*.md "$d/share/doc/parley/bench/README.md" ||
    fail "a link of the installed docs does not resolve"
  grep -q "^License: Expat" "$d/share/doc/parley/copyright" || fail "copyright: no license"
  # The unit's Documentation= names an installed page (the configured
  # prefix's path).
  local page
  page=$(sed -n 's/^Documentation=.* file:\(.*\)$/\1/p' "$d/lib/systemd/system/parleyd.service")
  [ -n "$page" ] && [ -f "$d${page#"$CONFIGURED"}" ] || fail "the unit's Documentation= names '$page', which is not installed"
  zcat "$d/share/doc/parley/changelog.Debian.gz" | head -1 | grep -q "^parley (" ||
    fail "changelog.Debian.gz is no Debian changelog"
}

# ---- --prefix DIR -----------------------------------------------------------------
touch "$TMP/stamp"
sleep 1 # -newer compares whole seconds on some file systems
P=$TMP/prefix
cmake --install "$BUILD" --prefix "$P" >"$TMP/install.log" 2>&1 || { cat "$TMP/install.log"; fail "cmake --install --prefix"; }
grep -v "^$P/" "$BUILD/install_manifest.txt" >"$TMP/stray" && { cat "$TMP/stray"; fail "cmake --install --prefix $P wrote outside it"; }
[ -n "$(outside)" ] && { outside; fail "a parley file outside $P changed"; }
check_tree "" "$P"
[ -f "$P/etc/parley.conf" ] || fail "no $P/etc/parley.conf"
[ "$(stat -c %a "$P/etc/parley.conf")" = 640 ] || fail "the config file is $(stat -c %a "$P/etc/parley.conf"), not 640"
# The man page: each command an entry (.TP) of its own, its words the tag.
tags=$(zcat "$P/share/man/man8/parleyd.8.gz" | grep -A1 -x '^\.TP')
for c in serve migrate "import SOURCE ..." "login telegram \\\\fB\\\\-\\\\-phone\\\\fR" "bootstrap" "backup DIR" \
  "restore DIR"; do
  grep -q "^$c" <<<"$tags" || fail "the man page has no entry for '$c'"
done
zcat "$P/share/man/man1/parley-loadgen.1.gz" | grep -q '^\\fB\\-\\-sessions\\fR' ||
  fail "parley-loadgen(1) lacks --sessions"

# ---- DESTDIR ------------------------------------------------------------------------
D=$TMP/destdir
DESTDIR=$D cmake --install "$BUILD" >"$TMP/install2.log" 2>&1 || { cat "$TMP/install2.log"; fail "DESTDIR install"; }
# (the manifest names the files as installed, without DESTDIR)
while read -r f; do
  [ -e "$D$f" ] || fail "DESTDIR=$D: $f is not under it"
done <"$BUILD/install_manifest.txt"
[ -n "$(outside)" ] && { outside; fail "a parley file outside $D changed"; }
check_tree "$D" "$CONFIGURED"
echo "install: ok (--prefix and DESTDIR, $(wc -l <"$BUILD/install_manifest.txt") files each)"
