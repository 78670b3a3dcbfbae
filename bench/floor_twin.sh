# bench/floor_twin.sh: the raw COPY floor of a write benchmark, shared by
# the scripts that measure one (bench/sync.sh; bench/import.sh may use it).
# Source it; it defines functions only. Each takes PSQLFN, the name of a
# shell function of the caller that runs its first argument as SQL (or a
# psql backslash command) in the benchmark's database and prints the result
# unaligned, tuples only (as `psql -X -q -At -c "$1"`).
#
#   floor_twin_make PSQLFN TABLE MODE
#       Creates TABLE (dropped first if it exists) as a twin of messages,
#       read from the live catalog at call time (the schema changes; no
#       index is named here):
#         all  LIKE messages INCLUDING ALL (columns, defaults, generated
#              columns, checks, every index), messages' foreign keys
#              (pg_constraint) and its user triggers (pg_trigger,
#              pg_get_triggerdef, moved onto TABLE): what a row written to
#              messages costs.
#         pk   the same columns, defaults, generated columns and checks,
#              with the primary key only: no other index, no foreign key,
#              no trigger: a bare row.
#   floor_twin_cols
#       Prints the columns live ingest writes into messages (the column
#       list of parley_tg_msgs_store), comma-separated, for COPY.
#   floor_twin_copy PSQLFN TABLE COLS FILE ROWS
#       Empties TABLE, checkpoints, then COPYs FILE (COPY text format, the
#       columns COLS) into it in one durable transaction; prints the rate,
#       rows per second (ROWS / wall seconds, integer). With FLOOR_TWIN_PGPID
#       set (the postmaster's pid), a second word follows: the cluster's CPU
#       time per row in microseconds (floor_twin_cpu_ticks around the COPY).
#   floor_twin_cpu_ticks PID
#       Prints the CPU time (clock ticks, user + system) that PID and its
#       children have used: its own, its reaped children's and its live
#       children's. For the cluster, PID is the postmaster's (the first line
#       of postmaster.pid): a difference around a COPY is the database's CPU
#       for it, which other work on a shared machine sways less than the
#       wall time.

floor_twin_make() {
  local q=$1 t=$2 mode=$3
  "$q" "DROP TABLE IF EXISTS $t" >/dev/null 2>&1
  case "$mode" in
    all)
      "$q" "CREATE TABLE $t (LIKE messages INCLUDING ALL)" >/dev/null
      "$q" "SELECT 'ALTER TABLE $t ADD ' || pg_get_constraintdef(oid) FROM pg_constraint
            WHERE conrelid = 'messages'::regclass AND contype = 'f' ORDER BY conname" |
        while read -r def; do "$q" "$def" >/dev/null; done
      # pg_get_triggerdef names the table as messages or public.messages.
      "$q" "SELECT regexp_replace(pg_get_triggerdef(oid),
                                  ' ON (public\\.)?messages ', ' ON $t ')
            FROM pg_trigger WHERE tgrelid = 'messages'::regclass AND NOT tgisinternal
            ORDER BY tgname" |
        while read -r def; do "$q" "$def" >/dev/null; done
      ;;
    pk)
      "$q" "CREATE TABLE $t (LIKE messages INCLUDING ALL EXCLUDING INDEXES)" >/dev/null
      "$q" "SELECT 'ALTER TABLE $t ADD ' || pg_get_constraintdef(oid) FROM pg_constraint
            WHERE conrelid = 'messages'::regclass AND contype = 'p'" |
        while read -r def; do "$q" "$def" >/dev/null; done
      ;;
    *)
      echo "floor_twin_make: MODE is all or pk, not '$mode'" >&2
      return 2
      ;;
  esac
}

floor_twin_cols() {
  echo "chat_id,id,topic_id,sender_id,sender_name,date,edit_date,text,entities,reply_to_id,reply_to_chat_id,forward_from_name,media_kind,has_link,kind,outgoing,action,extra"
}

floor_twin_cpu_ticks() {
  local p=$1 f line rest total=0
  for f in /proc/[0-9]*/stat; do
    line=$(cat "$f" 2>/dev/null) || continue
    rest=${line##*) }
    # shellcheck disable=SC2086
    set -- $rest
    if [ "${f#/proc/}" = "$p/stat" ]; then
      total=$((total + ${12} + ${13} + ${14} + ${15}))
    elif [ "$2" = "$p" ]; then
      total=$((total + ${12} + ${13}))
    fi
  done
  echo "$total"
}

floor_twin_copy() {
  local q=$1 t=$2 cols=$3 file=$4 rows=$5 start end c0=0 c1=0 hz
  "$q" "TRUNCATE $t" >/dev/null
  "$q" "CHECKPOINT" >/dev/null
  [ -n "${FLOOR_TWIN_PGPID:-}" ] && c0=$(floor_twin_cpu_ticks "$FLOOR_TWIN_PGPID")
  start=$(date +%s.%N)
  "$q" "\\copy $t ($cols) FROM '$file'" >/dev/null
  end=$(date +%s.%N)
  [ -n "${FLOOR_TWIN_PGPID:-}" ] && c1=$(floor_twin_cpu_ticks "$FLOOR_TWIN_PGPID")
  hz=$(getconf CLK_TCK)
  awk -v n="$rows" -v a="$start" -v b="$end" -v c="$((c1 - c0))" -v hz="$hz" -v cpu="${FLOOR_TWIN_PGPID:-}" \
    'BEGIN{printf "%.0f", n/(b-a); if (cpu != "") printf " %.0f", c/hz*1e6/n; printf "\n"}'
}
