-- search: parley_search (src/db/sql/search.sql) on fixed data: full text
-- with phrases, OR and exclusions; CJK substrings; fuzzy word forms;
-- regex; the filters; paging and the capped count.

INSERT INTO chats (id, kind, title) VALUES (-100, 'supergroup', 'Ops'), (-200, 'group', 'Friends');
INSERT INTO messages (chat_id, id, topic_id, sender_id, date, text, media_kind, has_link) VALUES
    (-100, 1, NULL, 7, '2026-01-01 10:00Z', 'the deploy failed on the staging server', NULL, false),
    (-100, 2, 5, 8, '2026-01-02 10:00Z', 'deploy succeeded after the rollback', NULL, true),
    (-100, 3, 5, 7, '2026-01-03 10:00Z', 'see https://example.com/runbook for the rollback', NULL, true),
    (-200, 1, NULL, 9, '2026-01-04 10:00Z', 'Привет, как дела с развёртыванием?', 'photo', false),
    (-200, 2, NULL, 9, '2026-01-05 10:00Z', '今天的部署很顺利', NULL, false),
    (-200, 3, NULL, 8, '2026-01-06 10:00Z', '部署失败了，明天再试', 'document', false),
    (-200, 4, NULL, 8, '2026-01-07 10:00Z', 'the deployment is scheduled', NULL, false);

-- A search with only filters: ids of a page, newest first.
CREATE FUNCTION pg_temp.ids(r jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg((e ->> 'chat_id') || ':' || (e ->> 'id'), ',' ORDER BY o), '')
    FROM jsonb_array_elements(r -> 'results') WITH ORDINALITY AS x(e, o)
$$;
CREATE FUNCTION pg_temp.s(q text, rx text DEFAULT NULL, fuzzy boolean DEFAULT false,
                          chats bigint[] DEFAULT NULL, topic bigint DEFAULT NULL,
                          sender bigint DEFAULT NULL, kind text DEFAULT NULL,
                          lim integer DEFAULT 50, off integer DEFAULT 0) RETURNS jsonb
    LANGUAGE sql AS $$
    SELECT parley_search(q, rx, fuzzy, chats, topic, sender, NULL, NULL, kind, 'time', lim, off)
$$;

SELECT pg_temp.expect('full text', pg_temp.ids(pg_temp.s('deploy')), '-100:2,-100:1');
SELECT pg_temp.expect('full text mode', pg_temp.s('deploy') ->> 'mode', 'fulltext');
SELECT pg_temp.expect('phrase', pg_temp.ids(pg_temp.s('"deploy failed"')), '-100:1');
SELECT pg_temp.expect('phrase and a word', pg_temp.ids(pg_temp.s('"deploy failed" server')),
                      '-100:1');
SELECT pg_temp.expect('phrase not as written', pg_temp.ids(pg_temp.s('"deployed failed"')), '');
SELECT pg_temp.expect('OR', pg_temp.ids(pg_temp.s('staging OR scheduled')), '-200:4,-100:1');
SELECT pg_temp.expect('exclusion', pg_temp.ids(pg_temp.s('deploy -rollback')), '-100:1');
-- A run of exclusions is one (found by fuzz_search_query: 33 or more made
-- PostgreSQL fail with "tsquery stack too small").
SELECT pg_temp.expect('double exclusion', pg_temp.ids(pg_temp.s('deploy --rollback')), '-100:1');
SELECT pg_temp.expect('spaced exclusions', pg_temp.ids(pg_temp.s('deploy - -!- rollback')),
    '-100:1');
SELECT pg_temp.expect('many exclusions',
    pg_temp.ids(pg_temp.s('deploy ' || repeat('-', 80) || 'rollback')), '-100:1');
SELECT pg_temp.expect('case', pg_temp.ids(pg_temp.s('DEPLOY Staging')), '-100:1');
SELECT pg_temp.expect('snippet marks the match',
    pg_temp.s('staging') #>> '{results,0,snippet}' LIKE '%**staging**%', true);
SELECT pg_temp.expect('cyrillic', pg_temp.ids(pg_temp.s('привет')), '-200:1');

-- CJK: substrings, two characters are enough; exclusions too.
SELECT pg_temp.expect('cjk mode', pg_temp.s('部署') ->> 'mode', 'substring');
SELECT pg_temp.expect('cjk', pg_temp.ids(pg_temp.s('部署')), '-200:3,-200:2');
SELECT pg_temp.expect('cjk exclusion', pg_temp.ids(pg_temp.s('部署 -失败')), '-200:2');
SELECT pg_temp.expect('cjk, three characters', pg_temp.ids(pg_temp.s('部署很')), '-200:2');
SELECT pg_temp.expect('cjk, the pair apart', pg_temp.ids(pg_temp.s('署很')), '-200:2');
SELECT pg_temp.expect('cjk, not a pair of the text', pg_temp.ids(pg_temp.s('署部')), '');
SELECT pg_temp.expect('cjk by rank', pg_temp.ids(parley_search('部署', NULL, false, NULL, NULL, NULL,
    NULL, NULL, NULL, 'rank', 5, 0)), '-200:3,-200:2');
SELECT pg_temp.expect('cjk snippet', pg_temp.s('顺利') #>> '{results,0,snippet}', '今天的部署很**顺利**');

-- Fuzzy: other word forms and a misspelling.
SELECT pg_temp.expect('fuzzy mode', pg_temp.s('deplyo', fuzzy => true) ->> 'mode', 'fuzzy');
SELECT pg_temp.expect('fuzzy finds a misspelling',
    pg_temp.s('deploymnet', fuzzy => true) #>> '{results,0,id}', '4');
SELECT pg_temp.expect('fuzzy exclusion', pg_temp.ids(pg_temp.s('deploy -rollback', fuzzy => true)),
                      '-200:4,-100:1');
SELECT pg_temp.expect('fuzzy exclusions only', pg_temp.ids(pg_temp.s('-rollback', fuzzy => true)),
                      '-200:4,-200:3,-200:2,-200:1,-100:1');
SELECT pg_temp.expect('fuzzy by rank, the closest first',
    parley_search('deploymnet', NULL, true, NULL, NULL, NULL, NULL, NULL, NULL, 'rank', 1, 0)
        #>> '{results,0,id}', '4');

-- Regex, alone or beside a query; a bad one is the caller's mistake.
SELECT pg_temp.expect('regex alone', pg_temp.ids(pg_temp.s(NULL, rx => 'https?://')), '-100:3');
SELECT pg_temp.expect('regex mode', pg_temp.s(NULL, rx => 'x') ->> 'mode', 'regex');
SELECT pg_temp.expect('regex beside a query', pg_temp.ids(pg_temp.s('rollback', rx => '^deploy')),
                      '-100:2');
SELECT pg_temp.expect_error('bad regex', $$SELECT pg_temp.s(NULL, rx => '(')$$, '2201B',
                            'regular expression');

-- Filters: chats, topic, sender, kinds.
SELECT pg_temp.expect('chats', pg_temp.ids(pg_temp.s('deploy', chats => '{-200}')), '');
SELECT pg_temp.expect('topic', pg_temp.ids(pg_temp.s(NULL, topic => 5)), '-100:3,-100:2');
SELECT pg_temp.expect('sender', pg_temp.ids(pg_temp.s(NULL, sender => 8)), '-200:4,-200:3,-100:2');
SELECT pg_temp.expect('links', pg_temp.ids(pg_temp.s(NULL, kind => 'links')), '-100:3,-100:2');
SELECT pg_temp.expect('photos', pg_temp.ids(pg_temp.s(NULL, kind => 'photos')), '-200:1');
SELECT pg_temp.expect('documents', pg_temp.ids(pg_temp.s(NULL, kind => 'documents')), '-200:3');
SELECT pg_temp.expect('dates',
    pg_temp.ids(parley_search(NULL, NULL, false, NULL, NULL, NULL, '2026-01-03', '2026-01-05',
                              NULL, 'time', 50, 0)), '-200:1,-100:3');

-- Paging: the count is of every hit; the page is limit after offset.
SELECT pg_temp.expect('page', pg_temp.ids(pg_temp.s(NULL, lim => 2, off => 1)), '-200:3,-200:2');
SELECT pg_temp.expect('count', (pg_temp.s(NULL, lim => 2) ->> 'count')::integer, 7);
SELECT pg_temp.expect('not capped', pg_temp.s(NULL) ? 'countCapped', false);

-- Ranking: by rank the message with both words comes first; by time, the
-- newest.
SELECT pg_temp.expect('rank order',
    parley_search('deploy OR rollback', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, 'rank', 1,
                  0) #>> '{results,0,id}', '2');
SELECT pg_temp.expect('time order', pg_temp.s('deploy OR rollback', lim => 1) #>> '{results,0,id}',
                      '3');

-- Past 1,000 hits the count says so instead of counting them all.
INSERT INTO messages (chat_id, id, date, text)
SELECT -100, 1000 + g, '2025-01-01'::timestamptz + g * interval '1 minute', 'bulk line ' || g
FROM generate_series(1, 1001) g;
SELECT pg_temp.expect('capped count', pg_temp.s('bulk', lim => 1) ->> 'count', '1000');
SELECT pg_temp.expect('capped flag', (pg_temp.s('bulk', lim => 1) ->> 'countCapped')::boolean, true);
-- Past it, by rank, the newest 200 hits are ranked, in every mode.
SELECT pg_temp.expect('capped ' || q || ', by rank',
    parley_search(q, NULL, f, NULL, NULL, NULL, NULL, NULL, NULL, 'rank', 2, 0) #>> '{results,1,id}',
    '2000')
FROM (VALUES ('bulk', false), ('"bulk line"', false), ('bulk', true), ('bulkk', true)) AS v(q, f);
SELECT pg_temp.expect('capped, newest first', pg_temp.ids(pg_temp.s('"bulk line"', lim => 2, off => 1)),
                      '-100:2000,-100:1999');

-- parley_cjk_bigrams (src/db/sql/search.sql) gives the very pairs of migration
-- 012's version, which the CJK index was built with, for every text.
CREATE FUNCTION pg_temp.bigrams_012(t text) RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(array_agg(DISTINCT b), '{}')
    FROM (SELECT substr(lower(t), i, 2) AS b FROM generate_series(1, length(t) - 1) AS i) x
    WHERE b ~ '^[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f\uf900-\ufaff]{2}$'
$$;
SELECT pg_temp.expect('cjk pairs unchanged: ' || coalesce(t, 'NULL'), parley_cjk_bigrams(t), pg_temp.bigrams_012(t))
FROM unnest(ARRAY[NULL, '', 'a', '部', '部署', '部署a', 'a部署', '部a署', '部署部署', '今天的部署很顺利',
                  'ΑΒ部署ΓΔ', 'ひらがなカタカナ', '한국어 텍스트', 'ภาษาไทย', '豈更', '部 署', '部署。顺利',
                  'x' || repeat('数据', 50) || 'y', 'İ部署', '部署🙂数据', E'部\n署', 'ＡＢ部']) AS t;
SELECT pg_temp.expect('cjk pairs, a sample', parley_cjk_bigrams('检索 ipsum 数据数据 lorem'), '{据数,数据,检索}'::text[]);

-- parley_search runs without JIT whatever the database's setting: its
-- enable_seqscan = off prices the scans it cannot avoid past
-- jit_above_cost, and a compile per search cost 400 ms on six messages.
SELECT pg_temp.expect('parley_search: jit off in ' || f,
    (SELECT 'jit=off' = ANY (proconfig) FROM pg_proc WHERE proname = f), true)
FROM unnest(ARRAY['parley_search_run', 'parley_search_near', 'parley_search_near_words']) AS f;

-- A common CJK term past the capped count: the pairs' share is read from
-- their statistics (parley_cjk_pairs_share), and a page walks the newest
-- messages (ILIKE) where that reads fewer rows than the pair index's hits;
-- either way it holds what the pair index finds, in the same order. Half
-- of 3,000 messages hold 数据 and 很多, at a place that moves with the id
-- (the rank: the earlier the term, the higher); the other half has no CJK
-- text, so the planner takes the hits for a third of what they are (the
-- pair's share times the CJK messages' share) and, by rank, would read
-- them all from the pair index ("2,0" below).
INSERT INTO chats (id, kind, title) VALUES (-900, 'group', 'CJK bulk');
INSERT INTO messages (chat_id, id, sender_id, date, text)
SELECT -900, g, 7, '2026-03-01 00:00Z'::timestamptz + g * interval '1 minute',
       CASE WHEN g % 2 = 0 THEN repeat('今天', g % 7) || '数据很多' ELSE 'plain words ' || g END
FROM generate_series(1, 3000) g;
ANALYZE messages;
SELECT pg_temp.expect('cjk pairs share of ' || p || ' (the rows holding it)',
    abs(parley_cjk_pairs_share(ARRAY[p]) * (SELECT count(*) FROM messages) - 1500) < 150, true)
FROM unnest(ARRAY['数据', '很多']) AS p;
SELECT pg_temp.expect('cjk pairs share, two pairs (as if independent)',
    abs(parley_cjk_pairs_share('{数据,很多}')
        - parley_cjk_pairs_share('{数据}') * parley_cjk_pairs_share('{很多}')) < 1e-9, true);
SELECT pg_temp.expect('cjk pairs share, a pair not among the common',
    parley_cjk_pairs_share('{没有}') < 1e-6, true);
-- The page a reference query gives: the newest hits of 数据 without neg
-- (NULL: none), by rank among the newest 200 or newest first.
CREATE FUNCTION pg_temp.cjk_ref(ord text, lim integer, off integer, neg text DEFAULT NULL)
    RETURNS text LANGUAGE sql AS $$
    SELECT string_agg(chat_id || ':' || id, ',' ORDER BY o)
    FROM (SELECT chat_id, id, row_number() OVER () AS o
          FROM (SELECT chat_id, id, date, CASE WHEN ord = 'rank' THEN r END AS r
                FROM (SELECT *, (1.0 / (1 + strpos(lower(text), '数据')))::real AS r
                      FROM messages
                      WHERE text LIKE '%数据%' AND (neg IS NULL OR text NOT LIKE '%' || neg || '%')
                      ORDER BY date DESC, id DESC
                      LIMIT CASE WHEN ord = 'rank' THEN 200 ELSE lim + off END) w
                ORDER BY 4 DESC NULLS LAST, date DESC, id DESC
                LIMIT lim OFFSET off) x) y
$$;
-- The scans of the pair index and of the date index one search made
-- ("pairs,date"): a walk reads the pair index once (the count) and the
-- date index once (the page).
CREATE FUNCTION pg_temp.cjk_scans(q text, ord text) RETURNS text
    LANGUAGE plpgsql AS $$
DECLARE
    p0 bigint := pg_stat_get_xact_numscans('messages_cjk_bigrams_idx'::regclass);
    d0 bigint := pg_stat_get_xact_numscans('messages_date_idx'::regclass);
BEGIN
    PERFORM parley_search(q, NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, ord, 20, 0);
    RETURN (pg_stat_get_xact_numscans('messages_cjk_bigrams_idx'::regclass) - p0) || ','
           || (pg_stat_get_xact_numscans('messages_date_idx'::regclass) - d0);
END
$$;
SELECT pg_temp.expect('cjk common, ' || ord || ' ' || lim || '+' || off,
    pg_temp.ids(parley_search('数据', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, ord, lim, off)),
    pg_temp.cjk_ref(ord, lim, off))
FROM (VALUES ('time', 20, 0), ('time', 5, 40), ('rank', 20, 0), ('rank', 10, 30)) AS v(ord, lim, off);
SELECT pg_temp.expect('cjk common walks, ' || ord, pg_temp.cjk_scans('数据', ord), '1,1')
FROM unnest(ARRAY['time', 'rank']) AS ord;
-- An exclusion that leaves more than 1,000 hits (those with six 今天 go).
SELECT pg_temp.expect('cjk common, exclusion, ' || ord,
    pg_temp.ids(parley_search('数据 -今天今天今天今天今天今天', NULL, false, NULL, NULL, NULL, NULL,
                              NULL, NULL, ord, 20, 0)),
    pg_temp.cjk_ref(ord, 20, 0, '今天今天今天今天今天今天'))
FROM unnest(ARRAY['time', 'rank']) AS ord;
SELECT pg_temp.expect('cjk common, exclusion walks',
    pg_temp.cjk_scans('数据 -今天今天今天今天今天今天', 'rank'), '1,1');
SELECT pg_temp.expect('cjk common, capped', parley_search('数据', NULL, false, NULL, NULL, NULL,
    NULL, NULL, NULL, 'time', 1, 0) ->> 'countCapped', 'true');
-- With a filter the planner chooses, as before.
SELECT pg_temp.expect('cjk common, in a chat',
    pg_temp.ids(parley_search('数据', NULL, false, ARRAY[-900::bigint], NULL, NULL, NULL, NULL, NULL, 'time', 2, 0)),
    '-900:3000,-900:2998');
