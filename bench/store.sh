#!/usr/bin/env bash
# bench/store.sh CONNINFO: what a stored message costs, part by part, in the
# database CONNINFO names (a store parleyd made: `bench/scale` keeps none,
# so point it at a store imported by the parleyd to measure, e.g. one made
# with `parleyd import telegram-export` of bench/gen_archive.mjs's archive
# into the embedded cluster). Prints bytes a message of:
#   - messages as a whole, its heap, its TOAST and free-space maps, its
#     indexes, and the whole database;
#   - each stored column of a row (pg_column_size over a 1 % sample), the
#     row itself and the tuple's header and line pointer (28 bytes);
#   - each index of messages, with the query class it serves (the list
#     below, kept with the schema: a new index of messages adds its line).
# Running it on a store made by the release before a change and on one
# made after is the before/after of a change to the store
# (bench/README.md, "The store: bytes a message").
set -euo pipefail
conninfo=${1:?usage: bench/store.sh CONNINFO}
psql -X -q -v ON_ERROR_STOP=1 "$conninfo" <<'SQL'
\pset footer off
WITH n AS (SELECT greatest(reltuples, 1) AS rows FROM pg_class WHERE oid = 'messages'::regclass)
SELECT to_char(n.rows, 'FM999,999,999') AS messages,
       round(pg_total_relation_size('messages') / n.rows) AS "messages, bytes a message",
       round(pg_relation_size('messages') / n.rows) AS heap,
       round((pg_total_relation_size('messages') - pg_relation_size('messages')
              - pg_indexes_size('messages')) / n.rows) AS "toast, maps",
       round(pg_indexes_size('messages') / n.rows) AS indexes,
       round(pg_database_size(current_database()) / n.rows) AS database
FROM n;

-- Each column's bytes a row (its stored size over every row of a 1 %
-- sample, NULL counting 0: it costs a bit of the row's null bitmap).
CREATE TEMP TABLE store_sample AS SELECT * FROM messages TABLESAMPLE SYSTEM (1);
SELECT v.col AS "column", round(coalesce(sum(v.size), 0)::numeric / count(*), 1) AS "bytes a message",
       round(100 * avg((v.size IS NOT NULL)::integer), 1) AS "% set"
FROM store_sample m,
     LATERAL (VALUES ('text', pg_column_size(m.text)), ('tsv', pg_column_size(m.tsv)),
                     ('forms', pg_column_size(m.forms)), ('entities', pg_column_size(m.entities)),
                     ('extra', pg_column_size(m.extra)), ('action', pg_column_size(m.action)),
                     ('sender_name', pg_column_size(m.sender_name)),
                     ('tool_calls', pg_column_size(m.tool_calls)),
                     ('tool_results', pg_column_size(m.tool_results)),
                     ('tool_text', pg_column_size(m.tool_text)),
                     ('external_id', pg_column_size(m.external_id)),
                     ('forward_from_name', pg_column_size(m.forward_from_name))) AS v(col, size)
GROUP BY v.col
ORDER BY coalesce(sum(v.size), 0) DESC;
SELECT round(avg(pg_column_size(m.*)), 1) AS "row, bytes a message (+ 28 header and line pointer)"
FROM store_sample m;

-- Each index, and the class it serves.
WITH n AS (SELECT greatest(reltuples, 1) AS rows FROM pg_class WHERE oid = 'messages'::regclass),
serves(idx, what) AS (VALUES
    ('messages_pkey', 'a message by its key; a chat''s history by id; the hits'' keys'),
    ('messages_text_trgm_idx', 'regex (and fuzzy until its vocabulary is in)'),
    ('messages_pairs_idx', 'phrases of common words'),
    ('messages_forms_idx', 'words in their forms (the search''s vector)'),
    ('messages_tsv_idx', 'words as written: phrases, fuzzy, word forms off'),
    ('messages_sender_idx', 'a sender''s messages'),
    ('messages_chat_date_idx', 'a chat''s history by date; context'),
    ('messages_date_idx', 'newest first over every chat: the search''s walk'),
    ('messages_topic_idx', 'a forum topic''s messages (only messages with one)'),
    ('messages_chat_topic_idx', 'a forum topic''s messages (every message; before 035)'),
    ('messages_cjk_bigrams_idx', 'CJK substrings'),
    ('messages_reply_idx', 'replies to a message'),
    ('messages_heap_idx', 'an agent session''s context heap'),
    ('messages_continuation_idx', 'agent session continuations'),
    ('messages_external_idx', 'a message by its upstream id'),
    ('messages_tool_text_trgm_idx', 'tool results, substrings'),
    ('messages_tool_tsv_idx', 'tool results, words'))
SELECT i.indexrelid::regclass AS index, round((pg_relation_size(i.indexrelid) / n.rows)::numeric, 1) AS "bytes a message",
       coalesce(s.what, '(not in bench/store.sh''s list: add it)') AS serves
FROM pg_index i CROSS JOIN n LEFT JOIN serves s ON s.idx = i.indexrelid::regclass::text
WHERE i.indrelid = 'messages'::regclass
ORDER BY pg_relation_size(i.indexrelid) DESC;
SQL
