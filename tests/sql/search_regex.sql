-- search_regex: a regex alone that the text column's statistics say is
-- common is counted by reading the table from its start
-- (parley_text_share; parley_search_run), and by the trigram index where
-- that reading falls short; the page and the count are the same either
-- way. 12,000 messages: the first 3,000 hold "alpha", the other 9,000
-- "alpha beta" (so "be.a" is in three quarters of the rows, none of them
-- among the first).

-- No ANALYZE but the test's own (the first check is of no statistics).
ALTER TABLE messages SET (autovacuum_enabled = off);
INSERT INTO chats (id, kind, title) VALUES (-700, 'group', 'Regex bulk');
INSERT INTO messages (chat_id, id, sender_id, date, text)
SELECT -700, g, 7, '2026-04-01 00:00Z'::timestamptz + g * interval '1 minute',
       CASE WHEN g <= 3000 THEN 'alpha ' || g ELSE 'alpha beta ' || g END
FROM generate_series(1, 12000) g;

-- No statistics yet: no share, and the index counts.
SELECT pg_temp.expect('share without statistics', parley_text_share('be.a'), NULL::float8);
ANALYZE messages;
SELECT pg_temp.expect('share of ' || rx, abs(parley_text_share(rx) - want) < 0.1, true)
FROM (VALUES ('alp.a', 1.0), ('be.a', 0.75), ('^alpha [0-9]+$', 0.25), ('gamma', 0.0)) AS v(rx, want);
SELECT pg_temp.expect_error('share of a bad regex', $$SELECT parley_text_share('(')$$, '2201B',
                            'regular expression');

CREATE FUNCTION pg_temp.ids(r jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg((e ->> 'chat_id') || ':' || (e ->> 'id'), ',' ORDER BY o), '')
    FROM jsonb_array_elements(r -> 'results') WITH ORDINALITY AS x(e, o)
$$;
-- A search for rx newest first (20 a page from off), with the reads of
-- messages from its start ("seq") and of the trigram index it made.
CREATE FUNCTION pg_temp.rx(rx text, off integer DEFAULT 0, chats bigint[] DEFAULT NULL,
                           kind text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    t0 bigint := pg_stat_get_xact_numscans('messages_text_trgm_idx'::regclass);
    s0 bigint := pg_stat_get_xact_numscans('messages'::regclass);
    r jsonb;
BEGIN
    r := parley_search(NULL, rx, false, chats, NULL, NULL, NULL, NULL, kind, 'time', 20, off);
    RETURN r || jsonb_build_object(
        'trgm', pg_stat_get_xact_numscans('messages_text_trgm_idx'::regclass) - t0,
        'seq', pg_stat_get_xact_numscans('messages'::regclass) - s0);
END
$$;
-- The reference page: the newest rows matching rx (of chat, when given),
-- by a plain query.
CREATE FUNCTION pg_temp.ref(rx text, off integer DEFAULT 0, chat bigint DEFAULT NULL)
    RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(chat_id || ':' || id, ',' ORDER BY date DESC, id DESC)
    FROM (SELECT chat_id, id, date FROM messages WHERE text ~* rx
              AND (chat IS NULL OR chat_id = chat)
          ORDER BY date DESC, id DESC LIMIT 20 OFFSET off) x
$$;

-- In every row: the first 1,001 rows read hold 1,001 hits; the trigram
-- index is not read at all (the page walks the dates).
SELECT pg_temp.expect('common regex: the page', pg_temp.ids(pg_temp.rx('alp.a')), pg_temp.ref('alp.a'));
SELECT pg_temp.expect('common regex: a later page', pg_temp.ids(pg_temp.rx('alp.a', 40)),
                      pg_temp.ref('alp.a', 40));
SELECT pg_temp.expect('common regex: count capped',
    pg_temp.rx('alp.a') - 'results', '{"count": 1000, "countCapped": true, "limit": 20, "offset": 0, "mode": "regex", "trgm": 0, "seq": 1}'::jsonb);
-- Common, but not among the rows read first: the reading stops short (at
-- twice the rows the share says, 2,670) and the index counts.
SELECT pg_temp.expect('common elsewhere: the page', pg_temp.ids(pg_temp.rx('be.a')), pg_temp.ref('be.a'));
SELECT pg_temp.expect('common elsewhere: count capped, through the index',
    pg_temp.rx('be.a') - 'results', '{"count": 1000, "countCapped": true, "limit": 20, "offset": 0, "mode": "regex", "trgm": 1, "seq": 1}'::jsonb);
-- A quarter of the rows, the first ones: too rare for the reading at this
-- size (0.25^2 * 12,000 = 750 < 3.5 * 1,001); the index counts.
SELECT pg_temp.expect('a quarter: through the index', pg_temp.rx('^alpha [0-9]+$') - 'results' - 'count',
    '{"countCapped": true, "limit": 20, "offset": 0, "mode": "regex", "trgm": 1, "seq": 0}'::jsonb);
-- Rare: the exact count and page from the index's hits.
SELECT pg_temp.expect('rare regex', pg_temp.rx('beta 1199[0-9]') - 'results',
    '{"count": 10, "limit": 20, "offset": 0, "mode": "regex", "trgm": 1, "seq": 0}'::jsonb);
SELECT pg_temp.expect('rare regex: the page', pg_temp.ids(pg_temp.rx('beta 1199[0-9]')),
                      pg_temp.ref('beta 1199[0-9]'));
-- In a chat: its index narrows the rows; no reading.
SELECT pg_temp.expect('common regex in a chat', pg_temp.rx('alp.a', 0, '{-700}') ->> 'seq', '0');
SELECT pg_temp.expect('common regex in a chat: the page',
    pg_temp.ids(pg_temp.rx('alp.a', 0, '{-700}')), pg_temp.ref('alp.a'));
SELECT pg_temp.expect_error('bad regex', $$SELECT pg_temp.rx('(')$$, '2201B', 'regular expression');
-- Of a kind of content (links here: none): the hits are fewer than the
-- share says; no reading.
SELECT pg_temp.expect('common regex, links only', pg_temp.rx('alp.a', 0, NULL, 'links') - 'results',
    '{"count": 0, "limit": 20, "offset": 0, "mode": "regex", "trgm": 1, "seq": 0}'::jsonb);

-- Two sources on one store: a ChatWise chat whose messages are the newest
-- and match too. The Telegram surface's count reads its own rows only and
-- its page shows none of the other's; the ChatWise surface's count (the
-- reading finds none of its rows among the first) falls to the index and
-- is exact.
INSERT INTO chats (id, kind, title) VALUES (-701, 'ai_chat', 'Another source');
INSERT INTO messages (chat_id, id, sender_id, date, text)
SELECT -701, g, 7, '2026-06-01 00:00Z'::timestamptz + g * interval '1 minute', 'alpha chat ' || g
FROM generate_series(1, 3) g;
CREATE FUNCTION pg_temp.rx_source(rx text, src text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    t0 bigint := pg_stat_get_xact_numscans('messages_text_trgm_idx'::regclass);
    s0 bigint := pg_stat_get_xact_numscans('messages'::regclass);
    r jsonb := parley_search(NULL, rx, false, NULL, NULL, NULL, NULL, NULL, NULL, 'time', 20, 0, src);
BEGIN
    RETURN r || jsonb_build_object(
        'trgm', pg_stat_get_xact_numscans('messages_text_trgm_idx'::regclass) - t0,
        'seq', pg_stat_get_xact_numscans('messages'::regclass) - s0,
        'chats', (SELECT string_agg(DISTINCT e ->> 'chat_id', ',') FROM jsonb_array_elements(r -> 'results') e));
END
$$;
SELECT pg_temp.expect('telegram surface: its rows only, counted by reading',
    pg_temp.rx_source('alp.a', 'telegram') - 'results',
    '{"count": 1000, "countCapped": true, "limit": 20, "offset": 0, "mode": "regex", "trgm": 0, "seq": 1, "chats": "-700"}'::jsonb);
SELECT pg_temp.expect('telegram surface: the page', pg_temp.ids(pg_temp.rx_source('alp.a', 'telegram')),
                      pg_temp.ref('alp.a', 0, -700));
SELECT pg_temp.expect('both on no surface: the other source''s rows are the newest',
    pg_temp.ids(pg_temp.rx('alp.a')), pg_temp.ref('alp.a'));
SELECT pg_temp.expect('chatwise surface: its rows only, the index counts',
    pg_temp.rx_source('alp.a', 'chatwise') - 'results',
    '{"count": 3, "limit": 20, "offset": 0, "mode": "regex", "trgm": 1, "seq": 1, "chats": "-701"}'::jsonb);
