# package: the Debian package as a user installs it. Builds the .deb from
# a RelWithDebInfo build of its own (prefix /usr; cpack -G DEB), checks its
# control data and contents (dpkg-deb), that lintian finds no error and no
# warning in it or in its debug symbols' package (parley-dbgsym, .ddeb;
# what packaging/debian/lintian-overrides overrides is meant, with its
# reason), that its binaries are stripped with their symbols in the
# .ddeb, that every relative link of its docs resolves where they are
# installed, installs it with apt into a fresh
# Debian 12 root made from Debian's archive (mmdebstrap --variant=minbase
# with systemd, then `apt-get install ./parley_*.deb`, which resolves
# every Depends from the archive and runs the postinst), and in that root
# (chroot): parleyd --version, the parley system user, and a parleyd serve
# --stdio session (initialize, tools/list) on the embedded default, which
# runs initdb and PostgreSQL 15 from the root's own postgresql-15: once as
# the unit runs it (user parley, /etc/parley.conf, /var/lib/parley), once
# as root. The unit is checked with systemd-analyze verify and its
# exposure with systemd-analyze security --offline; then the root boots
# with systemd (systemd-nspawn --boot) and runs parleyd.service as
# installed, hardening and all: READY, the watchdog, the HTTP endpoint, a
# clean stop of parleyd and its cluster; last, dpkg --purge runs its
# prerm and postrm (the archive and the user stay).
# In a mount namespace of its own: the root's mounts never reach the
# host's, whatever happens to the test.
if [ -z "${PARLEY_PKG_NS:-}" ]; then
  # CI runs as root; elsewhere the test says it did not run (ctest: skipped).
  [ "$(id -u)" = 0 ] || { echo "package: skipped: needs root (mmdebstrap --mode=root, chroot)"; exit 77; }
  PARLEY_PKG_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
source "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
# The package's own build directory beside the test's build (kept between
# runs: a second run builds only what changed).
B=${PARLEY_PKG_BUILD:-$(cd "$(dirname "$PARLEYD")" && pwd)/package}

t0=$(date +%s)
cmake -S "$SRC" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
  -DPARLEY_TESTS=OFF >"$TMP/cmake.log" || { cat "$TMP/cmake.log"; fail "configure"; }
cmake --build "$B" -j "$(nproc)" >"$TMP/build.log" 2>&1 || { tail -50 "$TMP/build.log"; fail "build"; }
rm -f "$B"/parley_*.deb "$B"/parley-dbgsym_*.ddeb
(cd "$B" && cpack -G DEB) >"$TMP/cpack.log" 2>&1 || { cat "$TMP/cpack.log"; fail "cpack"; }
DEB=$(ls "$B"/parley_*_*.deb)
DDEB=$(ls "$B"/parley-dbgsym_*_*.ddeb)
t1=$(date +%s)
echo "package: built $(basename "$DEB") in $((t1 - t0)) s"

# ---- what the package says and holds ----------------------------------------
dpkg-deb --field "$DEB" Package | grep -qx parley || fail "package name"
deps=$(dpkg-deb --field "$DEB" Depends)
for d in postgresql-15 adduser libuv1 libpq5 libcurl4 libssl3 libjansson4 libh2o0.13 libyajl2 libsimdjson14 \
  libsqlite3-0 libsystemd0; do
  grep -qE "(^|, )$d( |,|$)" <<<"$deps" || fail "Depends lacks $d: $deps"
done
grep -q "asan\|ubsan" <<<"$deps" && fail "a sanitizer's library in Depends: $deps"
dpkg-deb --contents "$DEB" | awk '{print $NF}' >"$TMP/contents"
# The config file may hold secrets: never readable by others, even before
# the postinst makes it root:parley.
conf_mode=$(dpkg-deb --contents "$DEB" | awk '$NF == "./etc/parley.conf" {print $1}')
[ "$conf_mode" = "-rw-r-----" ] || fail "/etc/parley.conf is packaged $conf_mode, not -rw-r-----"
for f in ./usr/bin/parleyd ./usr/bin/parley-loadgen ./usr/share/man/man8/parleyd.8.gz \
  ./usr/share/man/man1/parley-loadgen.1.gz ./usr/lib/systemd/system/parleyd.service \
  ./usr/lib/sysusers.d/parley.conf ./etc/parley.conf ./usr/share/doc/parley/README.md \
  ./usr/share/doc/parley/copyright ./usr/share/doc/parley/changelog.Debian.gz \
  ./usr/share/doc/parley/bench/README.md ./usr/share/lintian/overrides/parley; do
  grep -qx -- "$f" "$TMP/contents" || fail "package lacks $f"
done
for f in "$SRC"/docs/*.md; do
  grep -qx -- "./usr/share/doc/parley/docs/$(basename "$f")" "$TMP/contents" || fail "package lacks docs/$(basename "$f")"
done
# lintian (Debian 12's): no error, no warning, in either package.
# (--show-overrides would make --fail-on count the overridden ones too.)
lintian --fail-on error,warning --info --display-info "$DEB" "$DDEB" >"$TMP/lintian.log" 2>&1 ||
  { cat "$TMP/lintian.log"; fail "lintian: errors or warnings"; }
grep -E "^[EW]: " "$TMP/lintian.log" && fail "lintian: errors or warnings"
echo "package: lintian: no error, no warning ($(grep -c "^I: " "$TMP/lintian.log") notes of information)"
mkdir "$TMP/ctl"
dpkg-deb --control "$DEB" "$TMP/ctl"
grep -qx /etc/parley.conf "$TMP/ctl/conffiles" || fail "/etc/parley.conf is not a conffile"
# The man page is the options of this parleyd, not a pointer elsewhere.
mkdir "$TMP/x"
dpkg-deb -x "$DEB" "$TMP/x"
man=$(zcat "$TMP/x/usr/share/man/man8/parleyd.8.gz")
for o in --data-dir --listen --toolsets --token-file --config; do
  grep -qF -- "\\fB${o//-/\\-}\\fR" <<<"$man" || fail "the man page lacks $o"
done
grep -q "^.SH FILES" <<<"$man" || fail "the man page has no FILES"
# Stripped binaries; their debug symbols in the .ddeb, by build id.
mkdir "$TMP/dbg"
dpkg-deb -x "$DDEB" "$TMP/dbg"
for b in parleyd parley-loadgen; do
  readelf -S "$TMP/x/usr/bin/$b" | grep -q "\.debug_info" && fail "$b is not stripped"
  id=$(readelf -n "$TMP/x/usr/bin/$b" | sed -n 's/.*Build ID: *//p')
  dbg="$TMP/dbg/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
  readelf -S "$dbg" 2>/dev/null | grep -q "\.debug_info" || fail "$b: no debug symbols in the .ddeb ($dbg)"
done
[ "$(dpkg-deb --field "$DDEB" Depends)" = "parley (= $(dpkg-deb --field "$DEB" Version))" ] ||
  fail "parley-dbgsym does not depend on its parley"
# The docs where they are installed: every relative link and anchor resolves.
"${PARLEY_NODE:-node}" "$SRC/tests/harness/doc_check.mjs" links "$TMP/x/usr/share/doc/parley/README.md" \
  "$TMP"/x/usr/share/doc/parley/docs/*.md "$TMP/x/usr/share/doc/parley/bench/README.md" ||
  fail "a link of the installed docs does not resolve"
unit="$TMP/x/usr/lib/systemd/system/parleyd.service"
for l in "Type=notify" "WatchdogSec=" "User=parley" "StateDirectory=parley" "NoNewPrivileges=yes" \
  "ProtectSystem=strict" "ProtectHome=yes" "PrivateTmp=yes" "PrivateDevices=yes" \
  "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6" "SystemCallFilter=@system-service" \
  "ExecStart=/usr/bin/parleyd serve --config /etc/parley.conf --data-dir /var/lib/parley"; do
  grep -qF -- "$l" "$unit" || fail "unit lacks $l"
done

# ---- installed on a fresh Debian 12 root ---------------------------------------
ROOT="$TMP/root"
# Make sure the root's mounts go when the test ends, however it ends.
# Make sure nothing of the root outlives the test: a cluster a failed run
# left, then every mount beneath it (ours; mmdebstrap's, were it
# interrupted), deepest first, before lib.sh's cleanup removes $TMP.
umount_root() {
  local d m
  for d in /var/lib/parley /var/lib/parley-root; do
    [ -f "$ROOT$d/pg/data/postmaster.pid" ] && mountpoint -q "$ROOT/proc" &&
      chroot "$ROOT" runuser -u parley -- /usr/lib/postgresql/15/bin/pg_ctl \
        -D "$d/pg/data" -m immediate stop >/dev/null 2>&1 || true
  done
  awk -v r="$ROOT/" 'index($2, r) == 1 { print $2 }' /proc/self/mounts | sort -r |
    while read -r m; do umount -l "$m" || true; done
  return 0
}
trap 'rc=$?; umount_root; (exit $rc); cleanup' EXIT
chmod 644 "$DEB"
# (eatmydata: dpkg without fsync while the root is made, then removed.)
mmdebstrap --quiet --variant=minbase --mode=root --include="$DEB" --include=systemd,systemd-sysv,dbus \
  --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
  --hook-dir=/usr/share/mmdebstrap/hooks/eatmydata \
  bookworm "$ROOT" >"$TMP/mmdebstrap.log" 2>&1 || { tail -40 "$TMP/mmdebstrap.log"; fail "mmdebstrap"; }
t2=$(date +%s)
echo "package: installed into a fresh Debian 12 root in $((t2 - t1)) s"
in_root() { chroot "$ROOT" "$@"; }
in_root dpkg-query -W -f='${Status}\n' parley | grep -qx "install ok installed" ||
  fail "parley is not installed in the root"
in_root dpkg-query -W -f='${Status}\n' postgresql-15 | grep -qx "install ok installed" ||
  fail "postgresql-15 came not with parley"
# The postinst's system user, and nothing enabled.
pw=$(in_root getent passwd parley) || fail "no parley user"
uid=$(cut -d: -f3 <<<"$pw")
[ "$uid" -lt 1000 ] || fail "parley is not a system user: $pw"
[ -e "$ROOT/etc/systemd/system/multi-user.target.wants/parleyd.service" ] &&
  fail "the package enabled parleyd.service"

v=$(in_root /usr/bin/parleyd --version) || fail "parleyd --version"
[ "$v" = "parleyd $(sed -n 's/^project(parley VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")" ] ||
  fail "parleyd --version said '$v'"
[ -f "$ROOT/usr/share/man/man8/parleyd.8.gz" ] || fail "no man page in the root"

gid=$(cut -d: -f4 <<<"$pw")
[ "$(stat -c '%a %u:%g' "$ROOT/etc/parley.conf")" = "640 0:$gid" ] ||
  fail "/etc/parley.conf is $(stat -c '%a %u:%g' "$ROOT/etc/parley.conf"), not 640 root:parley ($gid)"

# stdio_session NAME CMD...: an MCP session through a pipe (initialize,
# tools/list) with CMD in the root; its answers in $TMP/NAME.jsonl, its log
# in $TMP/NAME.log. stdin stays open until tools/list is answered (the end
# of stdin stops parleyd), then parleyd must exit 0.
stdio_session() {
  local name=$1 out="$TMP/$1.jsonl" i
  shift
  {
    printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"package-test","version":"1"}}}'
    printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    printf '%s\n' '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
    for ((i = 0; i < 1800; i++)); do
      grep -q '"id":2' "$out" 2>/dev/null && break
      sleep 0.1
    done
  } | chroot "$@" >"$out" 2>"$TMP/$name.log" || { cat "$TMP/$name.log"; fail "$name: parleyd serve --stdio failed"; }
  grep -q '"id":1,"result":{.*"serverInfo"' "$out" || { cat "$out" "$TMP/$name.log"; fail "$name: no initialize answer"; }
  grep -q '"id":2,"result":{"tools":\[{' "$out" || { cat "$out" "$TMP/$name.log"; fail "$name: no tools/list answer"; }
  grep -q "(embedded PostgreSQL)" "$TMP/$name.log" || fail "$name: not on the embedded default"
}

mount -t proc proc "$ROOT/proc"
mount -t tmpfs -o mode=1777 tmpfs "$ROOT/dev/shm"
# As the unit runs it: the parley user, the config file, /var/lib/parley
# made as StateDirectory= makes it.
install -d -m 0700 -o "$uid" -g "$gid" "$ROOT/var/lib/parley"
stdio_session unit --userspec=parley:parley "$ROOT" /usr/bin/env HOME=/var/lib/parley \
  /usr/bin/parleyd serve --stdio --config /etc/parley.conf --data-dir /var/lib/parley
[ -f "$ROOT/var/lib/parley/pg/data/PG_VERSION" ] || fail "no cluster in /var/lib/parley"
[ -e "$ROOT/var/lib/parley/pg/data/postmaster.pid" ] && fail "the embedded PostgreSQL outlived parleyd"
# As root with the defaults (sudo parleyd serve): PostgreSQL runs as the
# parley user, in a data directory of its own here.
stdio_session root "$ROOT" /usr/bin/parleyd serve --stdio --data-dir /var/lib/parley-root
[ "$(stat -c %u "$ROOT/var/lib/parley-root/pg/data")" = "$uid" ] || fail "root: the cluster is not parley's"
[ -e "$ROOT/var/lib/parley-root/pg/data/postmaster.pid" ] && fail "root: PostgreSQL outlived parleyd"
umount_root

# ---- the unit -------------------------------------------------------------------
# verify needs systemd's own units, which the minimal root has not: the
# host's systemd checks the installed unit, its ExecStart pointed at the
# root's binary and man pointed at the root's man pages (Documentation=).
mkdir "$TMP/unit"
sed "s|/usr/bin/parleyd|$ROOT/usr/bin/parleyd|" "$ROOT/usr/lib/systemd/system/parleyd.service" \
  >"$TMP/unit/parleyd.service"
MANPATH="$ROOT/usr/share/man" systemd-analyze verify "$TMP/unit/parleyd.service" >"$TMP/verify.log" 2>&1 ||
  { cat "$TMP/verify.log"; fail "systemd-analyze verify"; }
[ -s "$TMP/verify.log" ] && { cat "$TMP/verify.log"; fail "systemd-analyze verify complains"; }
systemd-analyze security --offline=yes --root="$ROOT" parleyd.service >"$TMP/security.log" 2>&1 ||
  true
score=$(sed -n 's/.*Overall exposure level for parleyd.service: \([0-9.]*\).*/\1/p' "$TMP/security.log")
[ -n "$score" ] || { cat "$TMP/security.log"; fail "no exposure level"; }
awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' || { cat "$TMP/security.log"; fail "exposure $score > 2.0"; }
# ---- the unit under systemd ---------------------------------------------------
# The root boots with systemd as PID 1 (systemd-nspawn, no network but
# loopback) and runs parleyd.service as installed, hardening and all, with
# a drop-in for the test alone: WatchdogSec=3s (pings every 1.5 s). A
# oneshot unit ordered after it (so started once parleyd said READY=1)
# checks it serves, outlives several watchdog intervals, stops cleanly,
# writes what it saw to /root/parley-check and powers the container off.
cat >"$ROOT/etc/parley.conf" <<'CONF'
listen = http://127.0.0.1:8765/mcp,unix:/run/parley/mcp.sock
CONF
mkdir -p "$ROOT/etc/systemd/system/parleyd.service.d"
printf '[Service]\nWatchdogSec=3s\n' >"$ROOT/etc/systemd/system/parleyd.service.d/test.conf"
cat >"$ROOT/usr/local/bin/parley-check" <<'CHECK'
#!/bin/bash
# Runs in the booted root once parleyd.service has started (READY=1).
out=/root/parley-check
say() { echo "$*" >>"$out"; }
prop() { systemctl show parleyd.service -p "$1" --value; }
say "active=$(prop ActiveState) status=$(prop StatusText) watchdog=$(prop WatchdogUSec)"
# initialize over HTTP on the loopback (bash's /dev/tcp: the root has no curl).
body='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"package-test","version":"1"}}}'
if exec 3<>/dev/tcp/127.0.0.1/8765; then
  printf 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8765\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
    "${#body}" "$body" >&3
  timeout 10 grep -q '"serverInfo"' <&3 && say "http=initialized" || say "http=no answer"
  exec 3<&-
fi
[ -S /run/parley/mcp.sock ] && say "socket=$(stat -c '%a %U' /run/parley/mcp.sock)"
say "datadir=$(stat -c '%a %U' /var/lib/parley) cluster=$(stat -c %U /var/lib/parley/pg/data)"
pid=$(prop MainPID)
sleep 8 # past five watchdog intervals: a missing ping would have killed it
say "after=$(prop ActiveState) restarts=$(prop NRestarts) samepid=$([ "$(prop MainPID)" = "$pid" ] && echo yes || echo no)"
systemctl stop parleyd.service
say "stopped=$(prop ActiveState) result=$(prop Result) exit=$(prop ExecMainStatus) status=$(prop StatusText)"
[ -e /var/lib/parley/pg/data/postmaster.pid ] && say "postgres=left running" || say "postgres=stopped"
journalctl -u parleyd.service --no-pager >/root/parley-journal 2>&1
say done
systemctl poweroff
CHECK
chmod 755 "$ROOT/usr/local/bin/parley-check"
cat >"$ROOT/etc/systemd/system/parley-check.service" <<'UNIT'
[Unit]
Description=package test: check parleyd.service
After=parleyd.service
Wants=parleyd.service
[Service]
Type=oneshot
ExecStart=/usr/local/bin/parley-check
UNIT
mkdir -p "$ROOT/etc/systemd/system/multi-user.target.wants"
ln -s /usr/lib/systemd/system/parleyd.service "$ROOT/etc/systemd/system/multi-user.target.wants/"
ln -s /etc/systemd/system/parley-check.service "$ROOT/etc/systemd/system/multi-user.target.wants/"
rm -rf "$ROOT/var/lib/parley" "$ROOT/root/parley-check"
t3=$(date +%s)
timeout 300 systemd-nspawn --quiet --register=no --keep-unit --private-network --console=read-only \
  -D "$ROOT" --boot </dev/null >"$TMP/boot.log" 2>&1 || true
t4=$(date +%s)
check=$(cat "$ROOT/root/parley-check" 2>/dev/null) || true
echo "$check" | sed 's/^/package: unit: /'
expect() {
  grep -qxF -- "$1" <<<"$check" || {
    tail -30 "$TMP/boot.log"; cat "$ROOT/root/parley-journal" 2>/dev/null
    fail "under systemd: expected '$1'"
  }
}
grep -q "^active=active status=ready (schema version [0-9]*) watchdog=3s$" <<<"$check" ||
  { tail -30 "$TMP/boot.log"; cat "$ROOT/root/parley-journal" 2>/dev/null; fail "parleyd.service did not start ready"; }
expect "http=initialized"
expect "socket=600 parley"
expect "datadir=700 parley cluster=parley"
expect "after=active restarts=0 samepid=yes"
expect "stopped=inactive result=success exit=0 status=stopping"
expect "postgres=stopped"
expect "done"
echo "package: parleyd.service under systemd in $((t4 - t3)) s"

# ---- removed ----------------------------------------------------------------------
# dpkg --purge runs the prerm and postrm (deb-systemd-invoke, deb-systemd-helper
# purge); the archive and the parley user stay.
chroot "$ROOT" dpkg --purge parley >"$TMP/purge.log" 2>&1 || { cat "$TMP/purge.log"; fail "dpkg --purge parley"; }
[ -e "$ROOT/usr/bin/parleyd" ] && fail "parleyd is still there after the purge"
[ -d "$ROOT/var/lib/parley" ] || fail "the purge removed /var/lib/parley"
chroot "$ROOT" getent passwd parley >/dev/null || fail "the purge removed the parley user"

echo "package: ok (unit exposure $score; $(($(date +%s) - t0)) s in all)"
