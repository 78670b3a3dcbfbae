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
#       rows per second (ROWS / wall seconds, integer).

floor_twin_make() {
  local q=$1 t=$2 mode=$3
  "$q" "DROP TABLE IF EXISTS $t" >/dev/null
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

floor_twin_copy() {
  local q=$1 t=$2 cols=$3 file=$4 rows=$5 start end
  "$q" "TRUNCATE $t" >/dev/null
  "$q" "CHECKPOINT" >/dev/null
  start=$(date +%s.%N)
  "$q" "\\copy $t ($cols) FROM '$file'" >/dev/null
  end=$(date +%s.%N)
  awk -v n="$rows" -v a="$start" -v b="$end" 'BEGIN{printf "%.0f\n", n/(b-a)}'
}
