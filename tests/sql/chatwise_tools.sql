-- chatwise_tools: the chatwise toolset's SQL helpers (src/db/sql/chatwise/tools.sql):
-- word matching in Latin and CJK text, basic and fuzzy; the terms of a
-- query; snippets cut on characters; time windows. The tools themselves
-- are exercised end to end by tests/e2e/chatwise.test.mjs.

SELECT pg_temp.expect('a word start, any case', parley_cw_word_pos('Learning Rust today', 'rust', false), 10);
SELECT pg_temp.expect('not inside a word', parley_cw_word_pos('I trust it', 'rust', false), NULL::integer);
SELECT pg_temp.expect('a prefix of a word', parley_cw_word_pos('rusty nails', 'rust', false), 1);
SELECT pg_temp.expect('regex characters are literal', parley_cw_word_pos('use c++ now', 'c++', false), 5);
SELECT pg_temp.expect('CJK as a substring', parley_cw_word_pos('虚拟列表滚动很卡怎么办', '滚动很卡', false), 5);
SELECT pg_temp.expect('a misspelling: not basic', parley_cw_word_pos('the tokio runtime', 'tokoi', false), NULL::integer);
SELECT pg_temp.expect('a close spelling: fuzzy', parley_cw_word_pos('the tokio runtime', 'tokip', true) IS NOT NULL, true);
SELECT pg_temp.expect('most CJK pairs: fuzzy', parley_cw_word_pos('虚拟列表滚动非常卡', '虚拟列表滚动很卡', true), 1);
SELECT pg_temp.expect('few CJK pairs: no', parley_cw_word_pos('今天天气很好', '虚拟列表滚动很卡', true), NULL::integer);
SELECT pg_temp.expect('every word of a term', parley_cw_term_pos('rust 异步 和 线程', 'rust 异步', false), 1);
SELECT pg_temp.expect('a missing word fails the term', parley_cw_term_pos('rust only', 'rust 异步', false), NULL::integer);

SELECT pg_temp.expect('terms of a string', parley_cw_terms('"生活 / 日常, life ，travel"'),
                      '{life,travel,日常,生活}'::text[]);
SELECT pg_temp.expect('terms of an array', parley_cw_terms('["idea", " 想法 ", ""]'), '{idea,想法}'::text[]);

SELECT pg_temp.expect('a snippet around the hit',
    parley_cw_snippet('0123456789abcdefghijklmnopqrstuvwxyz', 20, 1, 10), '…efghijklmno…');
SELECT pg_temp.expect('CJK cut on characters',
    parley_cw_snippet('一二三四五六七八九十', 5, 1, 4), '…三四五六七…');
SELECT pg_temp.expect('a short text whole', parley_cw_snippet('short', 1, 5, 64), 'short');

SELECT pg_temp.expect('60d', (parley_cw_window('"60d"', '2026-03-01Z')).w_from, '2025-12-31Z'::timestamptz);
SELECT pg_temp.expect('epochs in ms', (parley_cw_window('{"start": 1700000000000, "end": 1700000001}',
                                                       now())).w_to, to_timestamp(1700000001));
SELECT pg_temp.expect_error('a bad window', $$SELECT parley_cw_window('"soon"', now())$$, 'PT400',
                            'time_window: one of 7d');
-- Date words as every other tool reads them (parley_when), days in the
-- daemon's timezone: yesterday in Berlin is 03-08 23:00Z to 03-09 23:00Z.
SELECT pg_temp.expect('start and end yesterday',
    (SELECT array[w_from, w_to] FROM parley_cw_window_in('{"start": "yesterday", "end": "yesterday"}',
        '{"now": "2026-03-10T11:00:00Z", "timezone": "Europe/Berlin"}')),
    array['2026-03-08 23:00Z', '2026-03-09 23:00Z']::timestamptz[]);
SELECT pg_temp.expect('last week as the window', (parley_cw_window('"last week"', '2026-03-10Z')).w_from,
                      '2026-03-03Z'::timestamptz);
SELECT pg_temp.expect('2w as the window', (parley_cw_window('"2w"', '2026-03-10Z')).w_from,
                      '2026-02-24Z'::timestamptz);
SELECT pg_temp.expect_error('a bad start', $$SELECT parley_cw_window('{"start": "soon"}', now())$$,
                            'PT400', 'time_window.start: "soon" is not a time');
