-- search_words: the vocabulary of the fuzzy search (src/db/sql/search_words.sql,
-- migration 024): the words of rows written are appended by the triggers
-- (an UPDATE only when the text changed) and merged; the rows stored before
-- are filled in batches with a cursor; fuzzy search through the vocabulary
-- finds what the trigram path found, words not merged yet included, and
-- falls back to that path until the fill is done; words needing quotes.

INSERT INTO chats (id, kind, title) VALUES (-100, 'supergroup', 'Ops');
INSERT INTO messages (chat_id, id, date, text) VALUES
    (-100, 1, '2026-01-01 10:00Z', 'the deploy failed on the staging server'),
    (-100, 2, '2026-01-02 10:00Z', 'deploy succeeded after the rollback'),
    (-100, 3, '2026-01-03 10:00Z', 'the deployment is scheduled');

CREATE FUNCTION pg_temp.ids(r jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg((e ->> 'chat_id') || ':' || (e ->> 'id'), ',' ORDER BY o), '')
    FROM jsonb_array_elements(r -> 'results') WITH ORDINALITY AS x(e, o)
$$;
CREATE FUNCTION pg_temp.fz(q text, order_by text DEFAULT 'time') RETURNS jsonb LANGUAGE sql AS $$
    SELECT parley_search(q, NULL, true, NULL, NULL, NULL, NULL, NULL, NULL, order_by, 50, 0)
$$;

-- The database was empty at the migration: nothing to fill.
SELECT pg_temp.expect('ready on an empty store', parley_search_words_ready(), true);
-- One insert statement appends its distinct words once.
SELECT pg_temp.expect('appended once', (SELECT count(*) FROM search_words_new WHERE word = 'deploy'),
                      1::bigint);
SELECT pg_temp.expect('every word appended',
    (SELECT count(DISTINCT word) FROM search_words_new), 12::bigint);
-- Found before the merge (the words not merged are read too).
SELECT pg_temp.expect('before the merge', pg_temp.ids(pg_temp.fz('deploymnet')), '-100:3,-100:2,-100:1');
SELECT pg_temp.expect('merge takes them all', parley_search_words_merge(1000), 12::bigint);
SELECT pg_temp.expect('nothing left', parley_search_words_merge(1000), 0::bigint);
SELECT pg_temp.expect('in the vocabulary', (SELECT count(*) FROM search_words), 12::bigint);
SELECT pg_temp.expect('after the merge', pg_temp.ids(pg_temp.fz('deploymnet')), '-100:3,-100:2,-100:1');
SELECT pg_temp.expect('a misspelling', pg_temp.ids(pg_temp.fz('deplyo')), '-100:3,-100:2,-100:1');
SELECT pg_temp.expect('every term', pg_temp.ids(pg_temp.fz('deplyo rolback')), '-100:2');
SELECT pg_temp.expect('exclusion', pg_temp.ids(pg_temp.fz('deploy -rollback')), '-100:3,-100:1');
SELECT pg_temp.expect('no near word', pg_temp.ids(pg_temp.fz('qqqzzz')), '');
SELECT pg_temp.expect('no near word for one term', pg_temp.ids(pg_temp.fz('deploy qqqzzz')), '');
SELECT pg_temp.expect('by rank', pg_temp.fz('deploymnet', 'rank') #>> '{results,0,id}', '3');
SELECT pg_temp.expect('mode', pg_temp.fz('deplyo') ->> 'mode', 'fuzzy');

-- A merge in batches.
INSERT INTO messages (chat_id, id, date, text) VALUES (-100, 4, '2026-01-04 10:00Z', 'alpha beta gamma');
SELECT pg_temp.expect('a batch', parley_search_words_merge(2), 2::bigint);
SELECT pg_temp.expect('the rest', parley_search_words_merge(2), 1::bigint);

-- An UPDATE appends the words of rows whose text changed, only.
UPDATE messages SET edit_date = now() WHERE chat_id = -100 AND id = 1;
SELECT pg_temp.expect('text unchanged', (SELECT count(*) FROM search_words_new), 0::bigint);
UPDATE messages SET text = 'kubernetes upgrade' WHERE chat_id = -100 AND id = 4;
SELECT pg_temp.expect('text changed', (SELECT string_agg(word, ',' ORDER BY word) FROM search_words_new),
                      'kubernetes,upgrade');
SELECT pg_temp.expect('an edit is found', pg_temp.ids(pg_temp.fz('kubernets')), '-100:4');
-- An edit stored by an upsert (as the Bot API ingest stores them).
SELECT parley_search_words_merge(1000);
INSERT INTO messages (chat_id, id, date, text) VALUES (-100, 4, '2026-01-04 10:00Z', 'helm chart')
ON CONFLICT (chat_id, id) DO UPDATE SET text = EXCLUDED.text;
SELECT pg_temp.expect('an upserted edit', (SELECT string_agg(word, ',' ORDER BY word) FROM search_words_new),
                      'chart,helm');

-- Words that need quoting in a tsquery.
INSERT INTO messages (chat_id, id, date, text) VALUES (-100, 5, '2026-01-05 10:00Z', 'x');
INSERT INTO search_words (word) VALUES ('o''brien\x'), ('back\slash');
SELECT pg_temp.expect('quote and backslash: ' || w,
    array_to_tsvector(ARRAY[w]) @@ parley_fuzzy_query(ARRAY[w]), true)
FROM unnest(ARRAY['o''brien\x', 'back\slash']) AS w;
SELECT pg_temp.expect('not another word', array_to_tsvector('{obrienx}') @@ parley_fuzzy_query('{o''brien\x}'),
                      false);

-- The rows stored before the migration: filled in batches, in key order.
DELETE FROM search_words;
DELETE FROM search_words_new;
UPDATE search_words_fill SET filled = false, fill_chat_id = NULL, fill_id = NULL, rows_filled = 0,
                             ready_at = NULL;
SELECT pg_temp.expect('not ready', parley_search_words_ready(), false);
-- Until then, fuzzy search reads the messages' trigrams.
SELECT pg_temp.expect('fallback', pg_temp.ids(pg_temp.fz('deploymnet')), '-100:3,-100:2,-100:1');
SELECT pg_temp.expect('first batch', parley_search_words_fill(2) ->> 'finished', 'false');
SELECT pg_temp.expect('cursor', (SELECT fill_chat_id || ':' || fill_id FROM search_words_fill), '-100:2');
SELECT pg_temp.expect('second batch', parley_search_words_fill(2) ->> 'finished', 'false');
SELECT pg_temp.expect('last batch', parley_search_words_fill(2), 
    jsonb_build_object('finished', true, 'rows_filled', 5,
                       'rows_estimate', parley_search_words_fill(2) -> 'rows_estimate'));
SELECT pg_temp.expect('ready', parley_search_words_ready(), true);
SELECT pg_temp.expect('filled words', (SELECT count(*) FROM search_words WHERE word IN ('staging', 'helm', 'x')),
                      3::bigint);
SELECT pg_temp.expect('idle once filled', parley_search_words_fill(2) ->> 'rows_filled', '5');
SELECT pg_temp.expect('through the vocabulary', pg_temp.ids(pg_temp.fz('deploymnet')), '-100:3,-100:2,-100:1');
