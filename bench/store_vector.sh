#!/usr/bin/env bash
# bench/store_vector.sh CONNINFO: what the stored exact vector
# (messages.tsv, 178 bytes a message of bench/gen_archive.mjs's archive)
# buys, measured. In one psql session on the store CONNINFO names (one
# parleyd made, not being served: the second half holds an exclusive lock
# on messages), every search class bench/run measures is timed twice:
#   1. on the store as it is;
#   2. in one transaction, rolled back at the end: messages.tsv dropped,
#      the exact vector computed from the text in the index expressions
#      (parley_tsv(text): the three indexes that read it are built again)
#      and at every row a search reads (src/db/sql's search files with
#      m.tsv read as parley_tsv(m.text)), the way issue #47 asked a vector
#      to be computed "in index expressions instead of stored where the
#      plans allow".
# Each class runs six times, the first dropped; the median of the other
# five is printed with the ratio of the second to the first. Nothing is
# left changed: the store is as it was after the run (bench/README.md,
# "The store: bytes a message").
set -euo pipefail
conninfo=${1:?usage: bench/store_vector.sh CONNINFO}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The search's SQL with the exact vector computed instead of read.
for f in search_forms.sql search_words.sql search.sql search_near.sql recall.sql; do
    sed -e 's/m\.tsv/parley_tsv(m.text)/g' \
        -e "s/(setweight(%1\$stsv, ''A'')/(setweight(parley_tsv(%1\$stext), ''A'')/" \
        -e "s/'parley_word_pairs(tsv)'/'parley_word_pairs(parley_tsv(text))'/" \
        "$root/src/db/sql/$f" > "$tmp/$f"
done

classes() {
    local w fz o
    for w in database meeting встреча сервер кофе '"search index"' 'database -release' \
             'deploy OR backup' 'meeting coffee' '数据' 'databse'; do
        fz=false
        [ "$w" = databse ] && fz=true
        for o in date rank; do
            echo "\\echo @$w, $o"
            for _ in 1 2 3 4 5 6; do
                echo "SELECT length(parley_tg_messages_search(jsonb_build_object('query', \$q\$$w\$q\$," \
                     "'limit', 20, 'fuzzy', $fz, 'orderBy', '$o'), '{}')::text);"
            done
        done
    done
    for w in meeting встреча '"search index"' 'meeting coffee'; do
        echo "\\echo @recall $w"
        for _ in 1 2 3 4 5 6; do
            echo "SELECT length(parley_recall_recall(jsonb_build_object('query', \$q\$$w\$q\$," \
                 "'limit', 20), '{}')::text);"
        done
    done
    echo "\\echo @regex data.?base"
    for _ in 1 2 3 4 5 6; do
        echo "SELECT length(parley_tg_messages_search(jsonb_build_object('regex', 'data.?base'," \
             "'limit', 20), '{}')::text);"
    done
    echo '\echo @-'
}

{
    echo '\set ON_ERROR_STOP on'
    echo '\timing on'
    echo '\echo @stored'
    classes
    cat <<SQL
BEGIN;
SET LOCAL maintenance_work_mem = '1GB';
CREATE FUNCTION parley_tsv(t text) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS \$\$
    SELECT CASE WHEN t IS NULL OR octet_length(t) <= 65536
                THEN to_tsvector('simple'::regconfig, coalesce(t, '')) ELSE parley_text_tsv(t) END
\$\$;
DROP INDEX IF EXISTS messages_tsv_idx, messages_forms_idx, messages_pairs_idx;
ALTER TABLE messages DROP COLUMN tsv;
CREATE INDEX messages_tsv_idx ON messages USING gin (parley_tsv(text));
CREATE INDEX messages_forms_idx ON messages USING gin ((setweight(parley_tsv(text), 'A') || forms));
CREATE INDEX messages_pairs_idx ON messages USING gin (parley_word_pairs(parley_tsv(text)));
\\i $tmp/search_forms.sql
\\i $tmp/search_words.sql
\\i $tmp/search.sql
\\i $tmp/search_near.sql
\\i $tmp/recall.sql
ANALYZE messages;
SQL
    echo '\echo @computed'
    classes
    echo 'ROLLBACK;'
} > "$tmp/run.sql"

psql -X -q -A -t "$conninfo" -f "$tmp/run.sql" 2>&1 | awk '
    function median(s,   a, n, i, j, t) {
        n = split(s, a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return a[int((n + 1) / 2)]
    }
    /^ERROR/ { print; bad = 1 }
    /^@stored$/ { phase = 1; next }
    /^@computed$/ { phase = 2; next }
    /^@/ { label = substr($0, 2); seen = 0; if (phase == 1 && label != "-") order[++n] = label; next }
    /^Time:/ {
        if (label == "" || label == "-") next
        if (seen++ == 0) next
        t[phase, label] = t[phase, label] " " $2
    }
    END {
        if (bad) exit 1
        printf "| class | stored vector, ms | computed, ms | ratio |\n|---|---:|---:|---:|\n"
        for (i = 1; i <= n; i++) {
            a = median(t[1, order[i]]); b = median(t[2, order[i]])
            printf "| %s | %.1f | %.1f | %.2f |\n", order[i], a, b, (a > 0 ? b / a : 0)
        }
    }'
