-- search_pairs: phrases through the index of adjacent word pairs
-- (migration 030, parley_phrase_pairs in src/db/sql/search_forms.sql and
-- parley_search in search.sql): the pairs of a text and of a phrase; every
-- phrase query answers the same with the index as without it (phrases
-- alone, beside words, several phrases, words <N> apart, exclusions, forms
-- off and on); the plan reads the pairs' index; the step asks for it.

INSERT INTO chats (id, kind, title) VALUES (-100, 'supergroup', 'Ops');
INSERT INTO messages (chat_id, id, date, text) VALUES
    (-100, 1, '2026-01-01 10:00Z', 'the search index is rebuilt nightly'),
    (-100, 2, '2026-01-02 10:00Z', 'index the search results first'),
    (-100, 3, '2026-01-03 10:00Z', 'search, index: both slow'),
    (-100, 4, '2026-01-04 10:00Z', 'a search index and a search engine'),
    (-100, 5, '2026-01-05 10:00Z', 'search search index index'),
    (-100, 6, '2026-01-06 10:00Z', 'the staging server deployed the search index'),
    (-100, 7, '2026-01-07 10:00Z', 'Search Index upper case'),
    (-100, 8, '2026-01-08 10:00Z', 'searching indexes in forms');

CREATE FUNCTION pg_temp.ids(r jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg((e ->> 'id'), ',' ORDER BY (e ->> 'id')::integer), '')
    FROM jsonb_array_elements(r -> 'results') e
$$;
CREATE FUNCTION pg_temp.s(q text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT parley_search(q, NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, 'time', 50, 0)
$$;

SELECT pg_temp.expect('pairs of a text', parley_word_pairs(to_tsvector('simple', 'a b, c a b')),
                      '{"a b","b c","c a"}'::text[]);
SELECT pg_temp.expect('pairs of nothing', parley_word_pairs(''::tsvector), '{}'::text[]);
SELECT pg_temp.expect('pairs of a phrase',
    parley_phrase_pairs(parley_phrase_query(parley_search_exact_query('"search index rebuilt"'))),
    '{"index rebuilt","search index"}'::text[]);
SELECT pg_temp.expect('pairs of two phrases',
    parley_phrase_pairs(parley_phrase_query(parley_search_exact_query('"search index" "staging server"'))),
    '{"search index","staging server"}'::text[]);
SELECT pg_temp.expect('no pairs without a phrase',
    parley_phrase_pairs(parley_phrase_query(parley_search_exact_query('search index'))), '{}'::text[]);
SELECT pg_temp.expect('no pairs of an excluded phrase',
    parley_phrase_pairs(parley_phrase_query(parley_search_exact_query('search -"search engine"'))),
    '{}'::text[]);
SELECT pg_temp.expect('no pairs of words apart',
    parley_phrase_pairs(to_tsquery('simple', 'search <2> index')), '{}'::text[]);

-- Every query, before the index, with it (forms off), then with forms.
CREATE TEMP TABLE cases (q text);
INSERT INTO cases VALUES ('"search index"'), ('"index search"'), ('"search index" nightly'),
    ('"search index" -engine'), ('"search index" "staging server"'), ('"search index" OR nightly'),
    ('search -"search index"'), ('"the search index"'), ('"search index rebuilt nightly"'),
    ('"search    index"'), ('"index"'), ('"searching indexes"'), ('"search index" indexes');
CREATE TEMP TABLE before AS SELECT q, pg_temp.ids(pg_temp.s(q)) AS ids FROM cases;
SELECT pg_temp.expect('the phrase, before', (SELECT ids FROM before WHERE q = '"search index"'),
                      '1,3,4,5,6,7');
SELECT pg_temp.expect('no index yet', parley_search_pairs_ready(), false);
CREATE INDEX messages_pairs_idx ON messages USING gin (parley_word_pairs(tsv));
SELECT pg_temp.expect('ready', parley_search_pairs_ready(), true);
SELECT pg_temp.expect('same with the pairs (forms off): ' || c.q, pg_temp.ids(pg_temp.s(c.q)), b.ids)
FROM cases c JOIN before b USING (q);
-- The plan: the phrase's rows come from the pairs' index.
SET enable_seqscan = off;
SELECT pg_temp.expect('the plan reads messages_pairs_idx',
    pg_temp.plan($$SELECT 1 FROM messages m WHERE parley_word_pairs(m.tsv) @> '{"search index"}'
                     AND (m.tsv || ''::tsvector) @@ '''search'' <-> ''index'''::tsquery$$)
        LIKE '%messages_pairs_idx%', true);
RESET enable_seqscan;

-- With word forms: the same answers as the forms give without the pairs.
SELECT parley_search_forms_step('english,russian');
SELECT parley_search_forms_fill('english,russian', 1000);
SELECT parley_search_forms_fill('english,russian', 1000);
SELECT parley_search_forms_step('english,russian');
CREATE INDEX messages_forms_idx ON messages USING gin ((setweight(tsv, 'A') || forms));
SELECT pg_temp.expect('forms in use', parley_search_forms_step('english,russian') ->> 'state', 'ready');
CREATE TEMP TABLE with_pairs AS SELECT q, pg_temp.ids(pg_temp.s(q)) AS ids FROM cases;
DROP INDEX messages_pairs_idx;
SELECT pg_temp.expect('the step asks for the pairs again',
    parley_search_forms_step('english,russian') ->> 'index', 'phrase word pairs');
SELECT pg_temp.expect('same with forms: ' || w.q, pg_temp.ids(pg_temp.s(w.q)), w.ids)
FROM with_pairs w;
SELECT pg_temp.expect('a phrase beside a form', (SELECT ids FROM with_pairs WHERE q = '"search index" indexes'),
                      '1,3,4,5,6,7');

-- Two long tokens side by side (signed URLs): their pair is left out of
-- the index (a GIN entry holds at most 2,712 bytes), the write and the
-- index's build never fail, and the phrase is still found.
INSERT INTO messages (chat_id, id, date, text) VALUES
    (-100, 50, '2026-02-01 10:00Z', repeat('abcdefghij', 140) || ' ' || repeat('klmnopqrst', 140));
CREATE INDEX messages_pairs_idx ON messages USING gin (parley_word_pairs(tsv));
INSERT INTO messages (chat_id, id, date, text) VALUES
    (-100, 51, '2026-02-02 10:00Z', repeat('uvwxyzabcd', 140) || ' ' || repeat('efghijklmn', 140));
SELECT pg_temp.expect('a long pair left out', parley_word_pairs((SELECT tsv FROM messages WHERE id = 51)),
                      '{}'::text[]);
SELECT pg_temp.expect('its phrase found', pg_temp.ids(pg_temp.s(
    '"' || repeat('uvwxyzabcd', 140) || ' ' || repeat('efghijklmn', 140) || '"')), '51');

-- A common pair (more than 1,000 rows): the page is the same with the
-- pairs as without them (it is read without them), the count capped.
INSERT INTO messages (chat_id, id, date, text)
SELECT -100, 1000 + g, '2026-03-01 10:00Z'::timestamptz + g * interval '1 minute', 'alpha beta ' || g
FROM generate_series(1, 1100) g;
SELECT pg_temp.expect('common pair: newest first',
    (SELECT string_agg(e ->> 'id', ',' ORDER BY o)
     FROM jsonb_array_elements(parley_search('"alpha beta"', NULL, false, NULL, NULL, NULL, NULL, NULL,
                                             NULL, 'time', 3, 0) -> 'results') WITH ORDINALITY x(e, o)),
    '2100,2099,2098');
SELECT pg_temp.expect('common pair: capped',
    parley_search('"alpha beta"', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, 'time', 3, 0)
        ->> 'countCapped', 'true');
SELECT pg_temp.expect('common pair: by rank',
    parley_search('"alpha beta"', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, 'rank', 3, 0)
        #>> '{results,0,id}', '2100');

-- A relation of the index's name that is not messages' index: the step
-- says so (no endless asking), the search does not take it for the index.
DROP INDEX messages_pairs_idx;
CREATE TABLE messages_pairs_idx (x integer);
SELECT pg_temp.expect('not ready: another relation', parley_search_pairs_ready(), false);
SELECT pg_temp.expect_error('the step says so', $$SELECT parley_search_forms_step('english,russian')$$,
                            '55000', 'messages_pairs_idx exists that is not the index');
DROP TABLE messages_pairs_idx;
SELECT pg_temp.expect('then asks for it', parley_search_forms_step('english,russian') ->> 'index',
                      'phrase word pairs');
