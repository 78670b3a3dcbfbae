#!/usr/bin/env bash
# bench/row_cost.sh [MESSAGES] [ROUNDS]: what each part of the messages
# schema costs a stored row, measured in one run. Generates the synthetic
# archive (bench/gen_archive.mjs: MESSAGES messages, default 150,000, in one
# chat per 1,000), loads it with a release `parleyd import telegram-export`
# into the cluster users get (durability on; the import ends with the word
# forms and the phrases' pairs index built), dumps the rows, and COPYs them
# (one durable transaction, bench/floor_twin.sh) into twins of messages
# read from the live catalog:
#   pk            the primary key only: a bare row;
#   all           every index, foreign key and trigger of messages: the
#                 floor of import and live ingest;
#   all, before   the same with the parts bench/row_cost_before.sql keeps
#                 as they were before issue #31 (the forms trigger that
#                 looked search_forms up for every row), for the comparison
#                 in one run;
#   pk + X        the primary key and one part X of messages (an index, a
#                 foreign key, a trigger; an index of messages.tsv or
#                 messages.forms with the forms trigger that fills them,
#                 which is then measured alone too).
# Prints one line per twin (rows/s, the database's CPU per row, both as a
# ratio to pk) and, per part, what it adds to pk. ROUNDS (default 1) repeats
# the whole list, interleaved, for a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-150000}
rounds=${2:-1}
cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DPARLEY_TESTS=OFF >/dev/null
cmake --build build-bench -j "$(nproc)" >/dev/null
work=$(mktemp -d /tmp/parley-bench-row.XXXXXX)
chmod 755 "$work"
pg="$work/pg"
PARLEY_PG_EMBEDDED=build-bench/parleyd tests/harness/pg_cluster.sh start "$pg" >/dev/null
trap 'tests/harness/pg_cluster.sh destroy "$pg" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
q() { psql -X -q -At -h "$pg" -U parley -d bench -c "$1"; }
psql -X -q -At -h "$pg" -U parley -d postgres -c "CREATE DATABASE bench"
url="host=$pg port=5432 user=parley dbname=bench"
node bench/gen_archive.mjs "$work/result.json" "$n" "$(((n + 999) / 1000))" 1 >/dev/null
build-bench/parleyd import telegram-export "$work/result.json" --db "$url" 2>"$work/import.log" ||
  { tail -20 "$work/import.log" >&2; exit 1; }
rm -f "$work/result.json"
cols="chat_id,id,sender_id,sender_name,date,edit_date,text,entities,reply_to_id,media_kind,has_link,kind,extra"
q "\\copy (SELECT $cols FROM messages) TO '$work/rows.copy'"
rows=$(wc -l <"$work/rows.copy")
. bench/floor_twin.sh
FLOOR_TWIN_PGPID=$(head -1 "$pg/pg/data/postmaster.pid" 2>/dev/null || head -1 "$pg/data/postmaster.pid")
export FLOOR_TWIN_PGPID

# The parts of messages: NAME<TAB>KIND<TAB>DEFINITION (on TABLE_), read
# from the catalog.
psql -X -q -At -F $'\t' -h "$pg" -U parley -d bench -c "SELECT c.relname, 'index', pg_get_indexdef(i.indexrelid)
   FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
   WHERE i.indrelid = 'messages'::regclass AND NOT i.indisprimary
   UNION ALL
   SELECT conname, 'fk', pg_get_constraintdef(oid) FROM pg_constraint
   WHERE conrelid = 'messages'::regclass AND contype = 'f'
   UNION ALL
   SELECT tgname, 'trigger', pg_get_triggerdef(oid) FROM pg_trigger
   WHERE tgrelid = 'messages'::regclass AND NOT tgisinternal
   ORDER BY 2, 1" >"$work/parts"

# row_cost_add TABLE NAME: adds messages' part NAME to TABLE.
row_cost_add() {
  local t=$1 name=$2 kind def
  IFS=$'\t' read -r _ kind def < <(awk -F'\t' -v n="$name" '$1 == n' "$work/parts")
  case "$kind" in
    index) def=${def/INDEX $name ON public.messages /INDEX ${t}_$name ON $t }
      def=${def/INDEX $name ON messages /INDEX ${t}_$name ON $t } ;;
    fk) def="ALTER TABLE $t ADD $def" ;;
    trigger) def=${def/TRIGGER $name /TRIGGER ${t}_$name }
      def=$(sed -E "s/ ON (public\.)?messages / ON $t /" <<<"$def") ;;
    *) echo "row_cost.sh: no part $name" >&2; return 1 ;;
  esac
  q "$def" >/dev/null
}

# measure LABEL MODE [PART...]: a twin (MODE all or pk, then PARTs added)
# loaded with the rows; prints LABEL rows/s cpu_us.
measure() {
  local label=$1 mode=$2 p
  shift 2
  floor_twin_make q twin "$mode"
  for p in "$@"; do
    if [ "$p" = before ]; then
      q "\\i bench/row_cost_before.sql" >/dev/null
      q "DROP TRIGGER IF EXISTS messages_forms ON twin" >/dev/null
      q "CREATE TRIGGER messages_forms BEFORE INSERT OR UPDATE OF text ON twin
         FOR EACH ROW EXECUTE FUNCTION bench_messages_forms_before()" >/dev/null
    else
      row_cost_add twin "$p"
    fi
  done
  printf '%s\t%s\n' "$label" "$(floor_twin_copy q twin "$cols" "$work/rows.copy" "$rows")"
  q "DROP TABLE twin" >/dev/null
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "# rows=$rows ($(stat -c %s "$work/rows.copy") bytes of COPY text), search_languages=$(q "SELECT parley_search_languages()")"
for _ in $(seq "$rounds"); do
  measure pk pk
  measure all all
  measure "all, before" all before
  while IFS=$'\t' read -r name kind def; do
    needs=()
    # an index of messages.tsv or messages.forms: with the trigger filling them
    if [ "$kind" = index ] && grep -qwE 'tsv|forms' <<<"${def#* USING }"; then
      needs=(messages_forms)
    fi
    [ "$kind" = trigger ] && grep -q "new_rows" <<<"$def" && grep -q words <<<"$name" && needs=(messages_forms)
    measure "pk + ${needs[*]:+${needs[*]} + }$name" pk "${needs[@]}" "$name"
  done <"$work/parts"
done >"$work/results"
# Means over the rounds, each as a ratio to pk; a part's own cost is its
# line's CPU less pk's (less the forms trigger's, for the indexes it fills).
awk -F'\t' '
  { split($2, v, " "); n[$1]++; r[$1] += v[1]; c[$1] += v[2]; if (!(($1) in seen)) { seen[$1] = 1; order[++k] = $1 } }
  END {
    pr = r["pk"] / n["pk"]; pc = c["pk"] / n["pk"]
    ft = "pk + messages_forms"; fc = (ft in n) ? c[ft] / n[ft] : pc
    printf "%-62s %10s %8s %10s %8s %9s\n", "twin", "rows/s", "x pk", "cpu us/row", "x pk", "adds us"
    for (i = 1; i <= k; i++) {
      l = order[i]; rr = r[l] / n[l]; cc = c[l] / n[l]
      base = (l ~ /^pk \+ messages_forms \+ /) ? fc : pc
      add = (l ~ /^pk \+ /) ? sprintf("%.1f", cc - base) : "-"
      printf "%-62s %10.0f %8.2f %10.1f %8.2f %9s\n", l, rr, pr / rr, cc, cc / pc, add
    }
  }' "$work/results"
