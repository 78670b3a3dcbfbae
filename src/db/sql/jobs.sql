-- jobs: leasing sync_jobs (src/sync/jobs.c). A daemon claims due jobs of
-- the classes it has room for with FOR UPDATE SKIP LOCKED (several daemons
-- on one database never take the same job) and holds them under a lease; a
-- job whose lease expired (its daemon died) is claimed again. Finishing
-- records idle or error, or puts the job back to pending with exponential
-- backoff and jitter.

-- Due jobs of class p_class for daemon p_owner: pending ones, and ones
-- in progress under a lease that expired or held by a daemon that died
-- (its presence lock is gone: src/db/sql/presence.sql).
CREATE OR REPLACE FUNCTION parley_jobs_claim(p_owner text, p_class text, p_limit integer,
                                  p_lease_s integer) RETURNS jsonb
    LANGUAGE sql AS $$
    WITH c AS (
        SELECT id FROM sync_jobs
        WHERE class = p_class
          AND ((status = 'pending' AND next_attempt_at <= now())
               OR (status = 'in_progress'
                   AND (lease_expires_at < now()
                        OR (lease_owner IS DISTINCT FROM p_owner
                            AND NOT parley_daemon_alive(lease_owner)))))
        ORDER BY next_attempt_at, id
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ), u AS (
        UPDATE sync_jobs j
        SET status = 'in_progress', lease_owner = p_owner,
            lease_expires_at = now() + make_interval(secs => p_lease_s),
            attempts = j.attempts + 1, last_run_at = now(), updated_at = now()
        FROM c WHERE j.id = c.id
        RETURNING j.*
    )
    SELECT coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               'id', u.id, 'class', u.class, 'channel', u.channel, 'chat_id', u.chat_id,
               'account_id', u.account_id, 'depth', u.depth, 'attempts', u.attempts,
               'realtime', u.realtime, 'params', u.params, 'cursor', u.cursor,
               'min_date', extract(epoch FROM u.min_date)::bigint, 'fetched', u.fetched))
               ORDER BY u.id), '[]')
    FROM u
$$;

-- p: {id, owner, status, error, fetched, chat_id, max_attempts, wait_s}.
-- status 'retry' puts the job back to pending with backoff (error once its
-- attempts are spent); 'wait' (the upstream asked to wait: Telegram's
-- FloodWait) puts it back to pending for wait_s seconds without counting
-- the attempt, its error saying when it resumes (parley_tg_job_json reads
-- it); others are recorded as they are (idle, error). A job that
-- syncJobsCancel ended while it ran is no longer in progress: its
-- executor's outcome must not bring it back.
CREATE OR REPLACE FUNCTION parley_jobs_finish(p jsonb) RETURNS void
    LANGUAGE sql AS $$
    UPDATE sync_jobs j
    SET status = CASE
            WHEN p ->> 'status' = 'retry' AND j.attempts >= coalesce((p ->> 'max_attempts')::integer, 5)
                THEN 'error'
            WHEN p ->> 'status' IN ('retry', 'wait') THEN 'pending'
            ELSE p ->> 'status' END,
        error = CASE WHEN p ->> 'status' = 'wait'
            THEN 'Telegram asked to wait (FloodWait): resumes at '
                 || to_char((now() + make_interval(secs => greatest(coalesce((p ->> 'wait_s')::float8, 0), 0)))
                            AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
            ELSE p ->> 'error' END,
        attempts = CASE WHEN p ->> 'status' = 'wait' THEN greatest(j.attempts - 1, 0)
                        ELSE j.attempts END,
        fetched = j.fetched + coalesce((p ->> 'fetched')::bigint, 0),
        chat_id = coalesce((p ->> 'chat_id')::bigint, j.chat_id),
        next_attempt_at = CASE WHEN p ->> 'status' = 'retry'
            THEN now() + make_interval(secs => least(2 ^ j.attempts, 300) * (0.75 + random() / 2))
            WHEN p ->> 'status' = 'wait'
            THEN now() + make_interval(secs => greatest(coalesce((p ->> 'wait_s')::float8, 0), 0))
            ELSE j.next_attempt_at END,
        lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
    WHERE j.id = (p ->> 'id')::bigint AND j.lease_owner = p ->> 'owner'
      AND j.status = 'in_progress'
$$;
