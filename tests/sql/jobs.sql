-- jobs: parley_jobs_claim and parley_jobs_finish (src/db/sql/jobs.sql):
-- claims by namespaced class under a lease, never a job another daemon
-- holds, takes over expired leases; finishing retries with backoff until
-- the attempts run out, and leaves a job cancelled while it ran cancelled.

-- The daemons d1..d4 are alive: each holds its presence lock (here, in
-- this session; a daemon holds it on a connection of its own).
SELECT pg_advisory_lock(hashtextextended('parley_daemon:' || o, 0))
FROM unnest(ARRAY['d1', 'd2', 'd3', 'd4']) o;
SELECT pg_temp.expect('alive', parley_daemon_alive('d1'), true);
SELECT pg_temp.expect('not alive', parley_daemon_alive('gone'), false);

INSERT INTO sync_jobs (class, channel) VALUES
    ('telegram.sync', 'a'), ('telegram.sync', 'b'), ('telegram.sync', 'c'),
    ('bluesky.sync', 'd');

CREATE FUNCTION pg_temp.claim(owner text, cls text, n integer) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(e ->> 'channel', ',' ORDER BY e ->> 'channel'), '')
    FROM jsonb_array_elements(parley_jobs_claim(owner, cls, n, 60)) e
$$;

SELECT pg_temp.expect('claim two', pg_temp.claim('d1', 'telegram.sync', 2), 'a,b');
SELECT pg_temp.expect('the next daemon gets the rest', pg_temp.claim('d2', 'telegram.sync', 5), 'c');
SELECT pg_temp.expect('nothing left', pg_temp.claim('d3', 'telegram.sync', 5), '');
SELECT pg_temp.expect('classes are the connector''s own', pg_temp.claim('d3', 'bluesky.sync', 5), 'd');
SELECT pg_temp.expect('leased', (SELECT string_agg(lease_owner, ',' ORDER BY channel) FROM sync_jobs), 'd1,d1,d2,d3');
SELECT pg_temp.expect_error('a class names its connector',
    $$INSERT INTO sync_jobs (class, channel) VALUES ('sync', 'x')$$, '23514', 'sync_jobs_class_check');

-- Finishing: idle clears the lease; retry backs off; the last attempt errs.
SELECT parley_jobs_finish(jsonb_build_object('id', id, 'owner', 'd1', 'status', 'idle', 'fetched', 4))
FROM sync_jobs WHERE channel = 'a';
SELECT pg_temp.expect('idle', (SELECT status || ':' || fetched || ':' || (lease_owner IS NULL) FROM sync_jobs WHERE channel = 'a'),
                      'idle:4:true');
SELECT parley_jobs_finish(jsonb_build_object('id', id, 'owner', 'd1', 'status', 'retry', 'error', 'boom'))
FROM sync_jobs WHERE channel = 'b';
SELECT pg_temp.expect('retry backs off',
    (SELECT status || ':' || (next_attempt_at > now()) || ':' || error FROM sync_jobs WHERE channel = 'b'), 'pending:true:boom');
SELECT pg_temp.expect('not due yet', pg_temp.claim('d1', 'telegram.sync', 5), '');
UPDATE sync_jobs SET attempts = 5 WHERE channel = 'c';
SELECT parley_jobs_finish(jsonb_build_object('id', id, 'owner', 'd2', 'status', 'retry', 'max_attempts', 5))
FROM sync_jobs WHERE channel = 'c';
SELECT pg_temp.expect('attempts run out', (SELECT status FROM sync_jobs WHERE channel = 'c'), 'error');

-- Only the lease holder finishes a job.
SELECT parley_jobs_finish(jsonb_build_object('id', id, 'owner', 'intruder', 'status', 'idle'))
FROM sync_jobs WHERE channel = 'd';
SELECT pg_temp.expect('foreign finish ignored', (SELECT status FROM sync_jobs WHERE channel = 'd'), 'in_progress');

-- An expired lease is taken over; a job cancelled while it ran stays so.
UPDATE sync_jobs SET lease_expires_at = now() - interval '1 second' WHERE channel = 'd';
SELECT pg_temp.expect('takeover', pg_temp.claim('d4', 'bluesky.sync', 5), 'd');
UPDATE sync_jobs SET status = 'idle', error = 'canceled' WHERE channel = 'd';
SELECT parley_jobs_finish(jsonb_build_object('id', id, 'owner', 'd4', 'status', 'retry'))
FROM sync_jobs WHERE channel = 'd';
SELECT pg_temp.expect('cancel stays', (SELECT status || ':' || error FROM sync_jobs WHERE channel = 'd'), 'idle:canceled');

-- A job held by a daemon that died (its presence lock is gone) is taken
-- over at once, before its lease runs out; one of a live daemon is not.
INSERT INTO sync_jobs (class, channel, status, lease_owner, lease_expires_at) VALUES
    ('telegram.sync', 'dead', 'in_progress', 'gone', now() + interval '100 seconds'),
    ('telegram.sync', 'live', 'in_progress', 'd1', now() + interval '100 seconds');
SELECT pg_temp.expect('a dead daemon''s job is taken over', pg_temp.claim('d2', 'telegram.sync', 5), 'dead');
SELECT pg_temp.expect('by d2', (SELECT lease_owner FROM sync_jobs WHERE channel = 'dead'), 'd2');
SELECT pg_advisory_unlock(hashtextextended('parley_daemon:d1', 0));
SELECT pg_temp.expect('d1 died: its job too', pg_temp.claim('d3', 'telegram.sync', 5), 'live');
