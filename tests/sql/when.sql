-- when: parley_when, the one reader of a time in a tool argument
-- (src/db/sql/when.sql): date words, relative times, dates, date-times and
-- epochs, days local to the daemon's timezone, and what each toolset's
-- date argument makes of it.

CREATE FUNCTION pg_temp.ctx() RETURNS jsonb LANGUAGE sql AS $$
    SELECT '{"now": "2026-03-10T11:00:00Z", "timezone": "Europe/Berlin"}'::jsonb
$$;
CREATE FUNCTION pg_temp.w(v text, is_until boolean = false) RETURNS timestamptz LANGUAGE sql AS $$
    SELECT parley_when(to_jsonb(v), 'x', is_until, pg_temp.ctx())
$$;

-- Words: days are Berlin's (UTC+1 in March); an upper bound takes the day whole.
SELECT pg_temp.expect('today', pg_temp.w('today'), '2026-03-09 23:00Z'::timestamptz);
SELECT pg_temp.expect('today until', pg_temp.w('Today', true), '2026-03-10 23:00Z'::timestamptz);
SELECT pg_temp.expect('yesterday', pg_temp.w('yesterday'), '2026-03-08 23:00Z'::timestamptz);
SELECT pg_temp.expect('yesterday until', pg_temp.w('yesterday', true), '2026-03-09 23:00Z'::timestamptz);
SELECT pg_temp.expect('now', pg_temp.w('now'), '2026-03-10 11:00Z'::timestamptz);
SELECT pg_temp.expect('last week', pg_temp.w('last week'), '2026-03-03 11:00Z'::timestamptz);
SELECT pg_temp.expect('last month', pg_temp.w('last month'), '2026-02-10 11:00Z'::timestamptz);
SELECT pg_temp.expect('last 3 days', pg_temp.w('last 3 days'), '2026-03-07 11:00Z'::timestamptz);
SELECT pg_temp.expect('3 days ago', pg_temp.w('3 days ago'), '2026-03-07 11:00Z'::timestamptz);
SELECT pg_temp.expect('1 day ago', pg_temp.w('1 day ago'), '2026-03-09 11:00Z'::timestamptz);
SELECT pg_temp.expect('2 weeks ago', pg_temp.w('2 weeks ago'), '2026-02-24 11:00Z'::timestamptz);
SELECT pg_temp.expect('12 hours ago', pg_temp.w('12  hours ago'), '2026-03-09 23:00Z'::timestamptz);
SELECT pg_temp.expect('30 minutes ago', pg_temp.w('30 minutes ago'), '2026-03-10 10:30Z'::timestamptz);
SELECT pg_temp.expect('3d ago', pg_temp.w('3d ago'), '2026-03-07 11:00Z'::timestamptz);
SELECT pg_temp.expect('12h', pg_temp.w('12h'), '2026-03-09 23:00Z'::timestamptz);
SELECT pg_temp.expect('2w', pg_temp.w('2w'), '2026-02-24 11:00Z'::timestamptz);
-- Dates, date-times, epochs.
SELECT pg_temp.expect('a date', pg_temp.w('2026-03-01'), '2026-02-28 23:00Z'::timestamptz);
SELECT pg_temp.expect('a date until', pg_temp.w('2026-03-01', true), '2026-03-01 23:00Z'::timestamptz);
SELECT pg_temp.expect('a local date-time', pg_temp.w('2026-03-01T10:00'), '2026-03-01 09:00Z'::timestamptz);
SELECT pg_temp.expect('a zoned date-time', pg_temp.w('2026-03-01T10:00:00Z', true), '2026-03-01 10:00Z'::timestamptz);
SELECT pg_temp.expect('epoch seconds text', pg_temp.w('1773100800'), to_timestamp(1773100800));
SELECT pg_temp.expect('epoch seconds', parley_when('1773100800', 'x', false, NULL), to_timestamp(1773100800));
SELECT pg_temp.expect('epoch milliseconds', parley_when('1773100800000', 'x', false, NULL), to_timestamp(1773100800));
SELECT pg_temp.expect('absent', parley_when(NULL, 'x', false, NULL), NULL::timestamptz);
SELECT pg_temp.expect('empty', pg_temp.w(' '), NULL::timestamptz);
SELECT pg_temp.expect('UTC without a timezone', parley_when('"yesterday"', 'x', false, '{"now": "2026-03-10T11:00:00Z"}'),
                      '2026-03-09 00:00Z'::timestamptz);
-- Mistakes name the argument and what it takes.
SELECT pg_temp.expect_error('a word', $$SELECT parley_when('"soon"', 'since', false, NULL)$$, 'PT400',
                            'since: "soon" is not a time; use now, today, yesterday, last week, 3 days ago');
SELECT pg_temp.expect_error('a bad date', $$SELECT parley_when('"2026-02-30"', 'since', false, NULL)$$, 'PT400',
                            'since: "2026-02-30" is not a date');
SELECT pg_temp.expect_error('a boolean', $$SELECT parley_when('true', 'since', false, NULL)$$, 'PT400',
                            'since: true is not a time');

-- Every toolset's date argument reads the same words.
SELECT pg_temp.expect('telegram fromDate', parley_tg_time('{"fromDate": "yesterday"}', 'fromDate', pg_temp.ctx()),
                      '2026-03-08 23:00Z'::timestamptz);
SELECT pg_temp.expect('telegram toDate takes the day whole', parley_tg_time('{"toDate": "yesterday"}', 'toDate', pg_temp.ctx()),
                      '2026-03-09 23:00Z'::timestamptz - interval '1 microsecond');
SELECT pg_temp.expect('telegram minDate', parley_tg_time('{"minDate": "3 days ago"}', 'minDate', pg_temp.ctx()),
                      '2026-03-07 11:00Z'::timestamptz);
SELECT pg_temp.expect('telegram ISO as before', parley_tg_time('{"fromDate": "2026-01-31T18:00:00Z"}', 'fromDate'),
                      '2026-01-31 18:00Z'::timestamptz);
SELECT pg_temp.expect_error('telegram names the argument', $$SELECT parley_tg_time('{"toDate": "soon"}', 'toDate')$$,
                            'PT400', 'toDate: "soon" is not a time');
SELECT pg_temp.expect('inline since', parley_inline_time('{"since": "last week"}', 'since', pg_temp.ctx()),
                      '2026-03-03 11:00Z'::timestamptz);
SELECT pg_temp.expect('chatwise start', (parley_cw_window_in('{"start": "3 days ago"}', pg_temp.ctx())).w_from,
                      '2026-03-07 11:00Z'::timestamptz);
