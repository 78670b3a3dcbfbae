#!/usr/bin/env bash
# bench/parse.sh: how parleyd reads a request: jansson alone, parleyd's
# path (simdjson's reading built as a jansson tree, src/util/json_simd.cpp),
# and the candidate paths of the evaluation, yajl, jsmn and simdjson
# reading the envelope in place (issue #49; bench/README.md, "Parsing a
# request"). Builds parley-parse-bench (RelWithDebInfo, as the default
# build) in build-parse/, checks that every path reads the benchmark's
# requests (bench/parse/requests/, from capture.mjs), the strictness
# probes and a million mutated messages as jansson does, then measures
# each request with each path: instructions per request under callgrind
# (the loop alone, --toggle-collect, after one read outside it), and ns
# per request (best of 5 rounds; noisy on a shared machine). Prints
# Markdown and writes it to bench/results/parse-<date>.md.
#
#   bench/parse.sh [--n N]      N reads per request under callgrind (2000)
#
# Needs valgrind and libjsmn-dev: apt-get install valgrind libjsmn-dev
set -euo pipefail
cd "$(dirname "$0")/.."
n=2000
while [ $# -gt 0 ]; do
  case "$1" in
    --n) n=$2; shift 2 ;;
    *) echo "usage: bench/parse.sh [--n N]" >&2; exit 2 ;;
  esac
done
command -v valgrind >/dev/null || { echo "bench/parse.sh: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
cmake -S . -B build-parse -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARLEY_TESTS=OFF >/dev/null
cmake --build build-parse -j2 --target parley-parse-bench >/dev/null ||
  { echo "bench/parse.sh: no parley-parse-bench (apt-get install libjsmn-dev)" >&2; exit 1; }
bin=build-parse/parley-parse-bench
reqs=bench/parse/requests
mapfile -t paths < <("$bin" --paths)
out=bench/results/parse-$(date +%Y-%m-%d).md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bin" --check "$reqs" > "$tmp/check" || { cat "$tmp/check" >&2; exit 1; }
"$bin" --differ "$reqs" 1000000 > "$tmp/differ" || { cat "$tmp/differ" >&2; exit 1; }

# Instructions per request: path, file -> Ir / n.
for f in "$reqs"/*.json; do
  for p in "${paths[@]}"; do
    ir=$(valgrind --tool=callgrind --toggle-collect=pb_measured_loop \
           --callgrind-out-file=/dev/null "$bin" --run "$p" "$f" "$n" 2>&1 >/dev/null |
         sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
    printf '%s\t%s\t%s\t%s\n' "$(basename "$f" .json)" "$p" "$(( ir / n ))" "$(wc -c < "$f")"
  done
done > "$tmp/ir"
"$bin" --time "$reqs" 20000 | sed 's/\.json\t/\t/' > "$tmp/ns"

# One row per request: the first path's figure, then each other's with
# its ratio to the first's.
table() { # file unit
  awk -F'\t' -v unit="$2" -v paths="${paths[*]}" '
    function fmt(x,  s, o) { s = sprintf("%d", x); o = ""; while (length(s) > 3) { o = "," substr(s, length(s) - 2) o; s = substr(s, 1, length(s) - 3) }; return s o }
    BEGIN { np = split(paths, p, " ") }
    { v[$1, $2] = $3; if (!($1 in seen)) { seen[$1] = 1; order[++nr] = $1 }; if ($4 != "") bytes[$1] = $4 }
    END {
      nb = length(bytes) > 0
      printf "| request |%s", nb ? " bytes |" : ""; for (i = 1; i <= np; i++) printf " %s %s |", p[i], unit; printf "\n"
      printf "| --- |%s", nb ? " ---: |" : ""; for (i = 1; i <= np; i++) printf " ---: |"; printf "\n"
      for (r = 1; r <= nr; r++) {
        k = order[r]; printf "| %s |", k; if (nb) printf " %s |", bytes[k]
        for (i = 1; i <= np; i++) {
          x = v[k, p[i]]
          if (i == 1) printf " %s |", fmt(x); else printf " %s (%.2f) |", fmt(x), x / v[k, p[1]]
          sum[i] += x
        }
        printf "\n"
      }
      printf "| **all %d, summed** |%s", nr, nb ? " |" : ""
      for (i = 1; i <= np; i++) if (i == 1) printf " %s |", fmt(sum[i]); else printf " %s (%.2f) |", fmt(sum[i]), sum[i] / sum[1]
      printf "\n"
    }' "$1"
}
{
  echo "# Parsing a request: jansson against parleyd's path (simdjson, then a jansson tree), yajl, jsmn and simdjson ($(date +%Y-%m-%d))"
  echo
  echo "bench/parse.sh on $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1));"
  echo "jansson $(dpkg-query -W -f='${Version}' libjansson4 2>/dev/null), yajl $(dpkg-query -W -f='${Version}' libyajl2 2>/dev/null),"
  echo "jsmn $(dpkg-query -W -f='${Version}' libjsmn-dev 2>/dev/null), simdjson $(dpkg-query -W -f='${Version}' libsimdjson-dev 2>/dev/null);"
  echo "$(cc --version | head -1), RelWithDebInfo. Each figure: one request read as parleyd"
  echo "reads it (the envelope, params._meta, arguments built as jansson values), released."
  echo "Ratios are to jansson's."
  echo
  echo "## Instructions per request (callgrind, $n reads)"
  echo
  table "$tmp/ir" "Ir"
  echo
  echo "## ns per request (best of 5 rounds of 20000; noisy: a shared 2-core machine)"
  echo
  table "$tmp/ns" "ns"
  echo
  echo "## Strictness: what each parser refuses alone, and each path"
  echo
  echo "\"refused\": a parse error (-32700); a number: the JSON-RPC error parleyd's session"
  echo "answers once the message is read; \"served\": no error. Every path must read each"
  echo "probe exactly as jansson does (the same verdict and the same values)."
  echo
  "$bin" --probes
  echo
  echo "## Checks"
  echo
  tail -1 "$tmp/check"
  echo
  cat "$tmp/differ"
} | tee "$out"
echo "bench/parse.sh: written to $out" >&2
