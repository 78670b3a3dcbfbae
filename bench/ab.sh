#!/usr/bin/env bash
# bench/ab.sh: CPU per trivial call of two parleyd builds, side by side.
# Starts both (each on its own embedded store in a temporary directory,
# the conformance toolset, a Unix socket and Streamable HTTP), then for
# each round drives every cell (transport x revision x sessions) with
# parley-loadgen calling test_simple_text, against A then B (B then A in
# even rounds), and reads each daemon's CPU time (user + system, from
# /proc) over its run. Prints, per cell, the median over the rounds of
# each build's microseconds of CPU a call (the kernel's part in
# brackets) and B/A; then, per build, each 2026-07-28 cell over the
# 2025-11-25 one. The machine's noise moves single runs by tens of per
# cent: the alternation and the median are what make two builds
# comparable (bench/README.md quotes such runs).
#
#   bench/ab.sh [--rounds N] [--seconds S] [--sessions 1,16,64,256]
#               [--transports unix,http] [--loadgen BIN] A_PARLEYD B_PARLEYD
#
# Defaults: 3 rounds of 4 s a cell, sessions 1,16,64,256, both
# transports, the loadgen of build-bench/ (built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 secs=4 sessions=1,16,64,256 transports=unix,http loadgen=
while [ $# -gt 2 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    --sessions) sessions=$2; shift 2 ;;
    --transports) transports=$2; shift 2 ;;
    --loadgen) loadgen=$2; shift 2 ;;
    *) break ;;
  esac
done
[ $# -eq 2 ] || { echo "usage: bench/ab.sh [--rounds N] [--seconds S] [--sessions L] [--transports L] [--loadgen BIN] A_PARLEYD B_PARLEYD" >&2; exit 2; }
bins=("$(readlink -f "$1")" "$(readlink -f "$2")")
for b in "${bins[@]}"; do [ -x "$b" ] || { echo "bench/ab.sh: $b is not an executable" >&2; exit 2; }; done
if [ -z "$loadgen" ]; then
  loadgen=build-bench/parley-loadgen
  if [ ! -x "$loadgen" ]; then
    cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPARLEY_TESTS=OFF >/dev/null
    cmake --build build-bench -j "$(nproc)" --target parley-loadgen >/dev/null
  fi
fi
work=$(mktemp -d /tmp/parley-ab-XXXXXX)
# The embedded store runs as an unprivileged user when this runs as root.
[ "$(id -u)" = 0 ] && chmod 755 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
port0=$((18300 + RANDOM % 500))
for i in 0 1; do
  "${bins[$i]}" serve --data-dir "$work/data$i" --toolsets conformance --log-level warn \
    --listen "unix:$work/s$i.sock" --listen "http://127.0.0.1:$((port0 + i))/mcp" 2>"$work/err$i" &
  pids+=($!)
done
for i in 0 1; do
  for _ in $(seq 1 300); do [ -S "$work/s$i.sock" ] && break; sleep 0.1; done
  [ -S "$work/s$i.sock" ] || { echo "bench/ab.sh: build $i did not start:" >&2; cat "$work/err$i" >&2; exit 1; }
done
ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
: >"$work/runs"
for r in $(seq 1 "$rounds"); do
  order="0 1"; [ $((r % 2)) = 0 ] && order="1 0"
  for t in ${transports//,/ }; do
    for proto in 2025-11-25 2026-07-28; do
      for n in ${sessions//,/ }; do
        for i in $order; do
          url="unix:$work/s$i.sock"; [ "$t" = http ] && url="http://127.0.0.1:$((port0 + i))/mcp"
          read -r u0 s0 < <(ticks "${pids[$i]}")
          out=$("$loadgen" --url "$url" --sessions "$n" --seconds "$secs" --tool test_simple_text --protocol "$proto")
          read -r u1 s1 < <(ticks "${pids[$i]}")
          calls=$(sed -n 's/.* requests_all=\([0-9]*\).*/\1/p' <<<"$out")
          errors=$(sed -n 's/.* errors=\([0-9]*\).*/\1/p' <<<"$out")
          [ "${errors:-1}" = 0 ] || { echo "bench/ab.sh: errors in $t $proto $n (build $i): $out" >&2; exit 1; }
          echo "$t $proto $n $i $calls $((u1 - u0)) $((s1 - s0))" >>"$work/runs"
        done
      done
    done
  done
  echo "bench/ab.sh: round $r of $rounds done" >&2
done
echo "A: ${bins[0]}"
echo "B: ${bins[1]}"
echo "$rounds rounds of $secs s a cell, alternated; µs of CPU a call (kernel), medians"
echo
sort -k1,1 -k2,2 -k3,3n -k4,4n "$work/runs" | awk -v hz="$hz" '
  function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  { k = $1 " " $2 " " $3 " " $4; n[k]++; c[k, n[k]] = ($6 + $7) * 1e6 / hz / $5; s[k, n[k]] = $7 * 1e6 / hz / $5
    if (!(($1 " " $2 " " $3) in seen)) { seen[$1 " " $2 " " $3] = 1; cells[++nc] = $1 " " $2 " " $3 } }
  END {
    print "| transport | revision | sessions | A µs/call | B µs/call | B/A |"
    print "|---|---|---:|---:|---:|---:|"
    for (x = 1; x <= nc; x++) {
      for (b = 0; b <= 1; b++) { k = cells[x] " " b; m = n[k]; for (i = 1; i <= m; i++) { ca[i] = c[k, i]; sa[i] = s[k, i] } C[cells[x], b] = med(ca, m); S[cells[x], b] = med(sa, m) }
      split(cells[x], f, " ")
      printf "| %s | %s | %s | %.1f (%.1f) | %.1f (%.1f) | %.2f |\n", f[1], f[2], f[3], C[cells[x], 0], S[cells[x], 0], C[cells[x], 1], S[cells[x], 1], C[cells[x], 1] / C[cells[x], 0]
    }
    print ""
    print "| transport | sessions | A 2026/2025 | B 2026/2025 |"
    print "|---|---:|---:|---:|"
    for (x = 1; x <= nc; x++) {
      split(cells[x], f, " "); if (f[2] != "2026-07-28") continue
      old = f[1] " 2025-11-25 " f[3]
      printf "| %s | %s | %.2f | %.2f |\n", f[1], f[3], C[cells[x], 0] / C[old, 0], C[cells[x], 1] / C[old, 1]
    }
  }'
