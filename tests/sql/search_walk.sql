-- search_walk: a full-text query whose hits PostgreSQL estimates to be
-- many is counted by walking the newest messages by date
-- (parley_search_run: est * est > walk_cost * 1,001 * rows), not by the
-- index's bitmap of every hit nor by a scan from the table's start; where
-- the estimate says many times 1,001, the walk stops at the page's hits
-- when the rate they came at agrees; a walk that falls short leaves the
-- count to the index; a query estimated at more than 1,000 hits but under
-- 20,000 has all its hits read from the index at once; past 1,000 hits a
-- rank page ranks the newest 200 and says so. The pages are those of a plain query either way. 12,000
-- messages written chat by chat (as an import writes them), dates
-- interleaved across the two chats: "common" in every one, "half" in
-- every other one, "early" in the oldest 1,500 only.

ALTER TABLE messages SET (autovacuum_enabled = off);
INSERT INTO chats (id, kind, title) VALUES (-801, 'group', 'Walk one'), (-802, 'group', 'Walk two');
INSERT INTO messages (chat_id, id, sender_id, date, text)
SELECT -801, g, 7, '2026-05-01 00:00Z'::timestamptz + (2 * g) * interval '1 minute',
       CASE WHEN g <= 750 THEN 'common early ' ELSE 'common ' END || 'alpha ' || g
       || ' stale half'
FROM generate_series(1, 6000) g;
INSERT INTO messages (chat_id, id, sender_id, date, text)
SELECT -802, g, 8, '2026-05-01 00:00Z'::timestamptz + (2 * g + 1) * interval '1 minute',
       CASE WHEN g <= 750 THEN 'common early ' ELSE 'common ' END || 'beta ' || g || ' stale'
FROM generate_series(1, 6000) g;
ANALYZE messages;

CREATE FUNCTION pg_temp.ids(r jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg((e ->> 'chat_id') || ':' || (e ->> 'id'), ',' ORDER BY o), '')
    FROM jsonb_array_elements(r -> 'results') WITH ORDINALITY AS x(e, o)
$$;
-- A search for q (20 a page from off, newest first or by rank), with the
-- scans it made of the date index ("walk"), of the exact words' index
-- ("words"), of the pairs' index ("pairs") and of messages from its start
-- ("seq"), and the rows the walks read ("read").
CREATE FUNCTION pg_temp.s(q text, ord text DEFAULT 'time', off integer DEFAULT 0,
                          since timestamptz DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    d0 bigint := pg_stat_get_xact_numscans('messages_date_idx'::regclass);
    w0 bigint := pg_stat_get_xact_numscans('messages_tsv_idx'::regclass);
    p0 bigint := coalesce(pg_stat_get_xact_numscans(to_regclass('messages_pairs_idx')), 0);
    s0 bigint := pg_stat_get_xact_numscans('messages'::regclass);
    r0 bigint := pg_stat_get_xact_tuples_returned('messages_date_idx'::regclass);
    r jsonb;
BEGIN
    r := parley_search(q, NULL, false, NULL, NULL, NULL, since, NULL, NULL, ord, 20, off);
    RETURN r || jsonb_build_object(
        'walk', pg_stat_get_xact_numscans('messages_date_idx'::regclass) - d0 > 0,
        'words', pg_stat_get_xact_numscans('messages_tsv_idx'::regclass) - w0 > 0,
        'pairs', coalesce(pg_stat_get_xact_numscans(to_regclass('messages_pairs_idx')), 0) - p0 > 0,
        'seq', pg_stat_get_xact_numscans('messages'::regclass) - s0 > 0,
        'read', pg_stat_get_xact_tuples_returned('messages_date_idx'::regclass) - r0);
END
$$;
-- The reference: the newest n rows holding the words of q as written.
CREATE FUNCTION pg_temp.ref(q text, n integer DEFAULT 20, off integer DEFAULT 0)
    RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(chat_id || ':' || id, ',' ORDER BY date DESC, id DESC)
    FROM (SELECT chat_id, id, date FROM messages
          WHERE to_tsvector('simple', text) @@ websearch_to_tsquery('simple', q)
          ORDER BY date DESC, id DESC LIMIT n OFFSET off) x
$$;

-- Every row: the estimate (12,000) is over ten times 1,001, and so is
-- the rate of the page's hits among the newest rows: counted there, the
-- page from the walk's hits.
SELECT pg_temp.expect('common: the page', pg_temp.ids(pg_temp.s('common')), pg_temp.ref('common'));
SELECT pg_temp.expect('common: a later page', pg_temp.ids(pg_temp.s('common', off => 40)),
                      pg_temp.ref('common', off => 40));
SELECT pg_temp.expect('common: counted by the walk',
    pg_temp.s('common') - 'results' - 'read',
    '{"count": 1000, "countCapped": true, "limit": 20, "offset": 0, "mode": "fulltext", "walk": true, "words": false, "pairs": false, "seq": false}'::jsonb);
-- (the walk reads the date index in date order and sorts each run of one
-- date by id: up to 32 rows past the last one it needs)
SELECT pg_temp.expect('common: the walk read about 100 rows, not 1,001',
    (pg_temp.s('common') ->> 'read')::integer BETWEEN 100 AND 132, true);
-- By rank: the newest 200 matches are the candidates, and the answer says so.
SELECT pg_temp.expect('common by rank: candidates',
    pg_temp.s('common', 'rank') - 'results' - 'walk' - 'words' - 'pairs' - 'seq' - 'read',
    '{"count": 1000, "countCapped": true, "candidatesCapped": true, "candidates": 200, "limit": 20, "offset": 0, "mode": "fulltext"}'::jsonb);
SELECT pg_temp.expect('common by rank: the walk read about 200 rows',
    (pg_temp.s('common', 'rank') ->> 'read')::integer BETWEEN 200 AND 232, true);
SELECT pg_temp.expect('common by rank: from the newest 200',
    (SELECT bool_and(position(h IN pg_temp.ref('common', 200)) > 0)
     FROM unnest(string_to_array(pg_temp.ids(pg_temp.s('common', 'rank')), ',')) AS h), true);
-- A page past 1,001 hits: walked to its end.
SELECT pg_temp.expect('common: a page past 1,001', pg_temp.ids(pg_temp.s('common', off => 1000)),
                      pg_temp.ref('common', off => 1000));

-- Half the rows (6,000: est^2 = 36M > 2 * 1,001 * 12,000, under ten
-- times 1,001): the walk counts to the 1,001st hit.
SELECT pg_temp.expect('half: the page', pg_temp.ids(pg_temp.s('half')), pg_temp.ref('half'));
SELECT pg_temp.expect('half: counted by the walk', pg_temp.s('half') - 'results' - 'read',
    '{"count": 1000, "countCapped": true, "limit": 20, "offset": 0, "mode": "fulltext", "walk": true, "words": false, "pairs": false, "seq": false}'::jsonb);
SELECT pg_temp.expect('half: the walk read to the 1,001st hit',
    (pg_temp.s('half') ->> 'read')::integer BETWEEN 2001 AND 2034, true);
-- With a filter (dates here) the count does not stop at the page's hits:
-- it walks on to the 1,001st.
SELECT pg_temp.expect('common, from a date: walked to the 1,001st hit',
    (pg_temp.s('common', since => '2026-05-01') ->> 'read')::integer BETWEEN 1001 AND 1033, true);
SELECT pg_temp.expect('common, from a date: the page',
    pg_temp.ids(pg_temp.s('common', since => '2026-05-01')), pg_temp.ref('common'));

-- An eighth of the rows, all of them old (est^2 = 2.25M, under 2 * 1,001
-- * 12,000; est under 20,000): every hit read at once from the index,
-- newest first, the page made from them; no walk.
SELECT pg_temp.expect('old hits: the page', pg_temp.ids(pg_temp.s('early')), pg_temp.ref('early'));
SELECT pg_temp.expect('old hits: by rank, the newest 200', pg_temp.s('early', 'rank') ->> 'candidates', '200');
SELECT pg_temp.expect('old hits: read from the index at once',
    pg_temp.s('early') - 'results',
    '{"count": 1000, "countCapped": true, "limit": 20, "offset": 0, "mode": "fulltext", "walk": false, "words": true, "pairs": false, "seq": false, "read": 0}'::jsonb);
SELECT pg_temp.expect('old hits: a page past them', pg_temp.ids(pg_temp.s('early', off => 1500)), '');

-- Statistics that say every row, where only the oldest 1,500 are left
-- (no ANALYZE since): the walk finds none among the rows it may read, and
-- the index counts.
UPDATE messages SET text = replace(text, ' stale', '') WHERE NOT text LIKE 'common early%';
SELECT pg_temp.expect('stale: the page', pg_temp.ids(pg_temp.s('stale')), pg_temp.ref('stale'));
SELECT pg_temp.expect('stale: walked, then the index',
    pg_temp.s('stale') - 'results' - 'read',
    '{"count": 1000, "countCapped": true, "limit": 20, "offset": 0, "mode": "fulltext", "walk": true, "words": true, "pairs": false, "seq": false}'::jsonb);
SELECT pg_temp.expect('stale: the walks bounded',
                      (pg_temp.s('stale') ->> 'read')::integer < 5000, true);

-- Rare: the index alone, the exact count.
SELECT pg_temp.expect('rare: the page', pg_temp.ids(pg_temp.s('alpha 2999')), pg_temp.ref('alpha 2999'));
SELECT pg_temp.expect('rare: the index alone', pg_temp.s('alpha 2999') - 'results',
    '{"count": 1, "limit": 20, "offset": 0, "mode": "fulltext", "walk": false, "words": true, "pairs": false, "seq": false, "read": 0}'::jsonb);

-- 100,000 newer messages, a ninth of them with "twelve" (11,111: est over
-- ten times 1,001, but est^2 under 2 * 1,001 * 112,000, so no walk would
-- count it): the page's hits are walked for all the same (about 900 rows
-- for 100 hits), and their rate (one in nine) says more than 1,000; the
-- index reads none of its 11,111 hits.
INSERT INTO messages (chat_id, id, sender_id, date, text)
SELECT -802, 10000 + g, 8, '2026-06-01 00:00Z'::timestamptz + g * interval '1 minute',
       CASE WHEN g % 9 = 0 THEN 'twelve ' ELSE 'filler ' END || g
FROM generate_series(1, 100000) g;
ANALYZE messages;
SELECT pg_temp.expect('twelve: the page', pg_temp.ids(pg_temp.s('twelve')), pg_temp.ref('twelve'));
SELECT pg_temp.expect('twelve: the page''s hits walked, counted there',
    pg_temp.s('twelve') - 'results' - 'read',
    '{"count": 1000, "countCapped": true, "limit": 20, "offset": 0, "mode": "fulltext", "walk": true, "words": false, "pairs": false, "seq": false}'::jsonb);
SELECT pg_temp.expect('twelve: about 900 rows read',
    (pg_temp.s('twelve') ->> 'read')::integer BETWEEN 890 AND 940, true);
