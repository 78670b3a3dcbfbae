-- telegram/sync: the telegram toolset's account, status and sync-job tools.

-- authStatus: a signed-in user account first (the default one), with its
-- phone and TDLib session directory (accounts.extra); else the bot. The
-- user connector gives its state in ctx.telegramUser ({state, error}: the
-- state as TDLib's authorizationState without the prefix, e.g. "ready",
-- "waitCode", "closed"); a state that is no signed-in session (wait*,
-- logging out, closing, closed, loggedOut, error) reports authenticated
-- false with the reason.
CREATE OR REPLACE FUNCTION parley_tg_auth_status(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    st text := regexp_replace(ctx -> 'telegramUser' ->> 'state', '^authorizationState', '');
    why text := nullif(ctx -> 'telegramUser' ->> 'error', '');
    gone boolean;
BEGIN
    st := lower(left(st, 1)) || substr(st, 2);
    gone := coalesce(st ~* '^(wait|loggingOut|loggedOut|signedOut|clos|error|failed)', false);
    RETURN (SELECT coalesce(
        (SELECT jsonb_strip_nulls(jsonb_build_object(
                    'authenticated', NOT gone, 'kind', 'user',
                    'userId', ac.external_id, 'phone', ac.extra ->> 'phone',
                    'sessionPath', ac.extra ->> 'session_path', 'lastLoginAt', ac.last_login_at,
                    'account', ac.handle, 'state', st,
                    'reason', CASE WHEN gone THEN coalesce(why, format(
                        'the Telegram session of %s is not signed in (%s); sign in again with '
                        '"parleyd login telegram --phone %s"', ac.handle, st,
                        coalesce(ac.extra ->> 'phone', ac.handle))) END))
         FROM accounts ac WHERE ac.kind = 'telegram_user' AND ac.enabled
         ORDER BY ac.is_default DESC, ac.id LIMIT 1),
        (SELECT jsonb_strip_nulls(jsonb_build_object('authenticated', true, 'kind', 'bot',
                    'userId', ac.external_id, 'lastLoginAt', ac.last_login_at,
                    'account', ac.handle))
         FROM accounts ac WHERE ac.kind = 'telegram_bot' AND ac.enabled
         ORDER BY ac.is_default DESC, ac.id LIMIT 1),
        jsonb_build_object('authenticated', false, 'reason',
            'no Telegram account is connected; the archive (imports) is available')));
END
$$;

-- Telegram's figures: its chats, messages and jobs (the other sources'
-- are the other toolsets').
CREATE OR REPLACE FUNCTION parley_tg_server_status(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    scope bigint[] := parley_source_chats('telegram');
BEGIN
    RETURN jsonb_strip_nulls(jsonb_build_object(
        'realtimeActive', coalesce((ctx ->> 'realtimeActive')::boolean, false),
        -- The live connector's state word (src/upstream: polling, standby,
        -- backoff, conflict, unauthorized, stopped...; 'none' without one).
        'upstream', ctx ->> 'upstream',
        -- Bot API batches received and not applied yet (live-sync.md).
        'stagedBatches', (SELECT count(*) FROM bot_update_batches),
        'queueSize', (SELECT count(*) FROM sync_jobs
                      WHERE status = 'pending' AND class LIKE 'telegram.%'),
        'jobsInProgress', (SELECT count(*) FROM sync_jobs
                           WHERE status = 'in_progress' AND class LIKE 'telegram.%'),
        'ftsEnabled', true,
        'lastSyncAt', (SELECT max(last_run_at) FROM sync_jobs WHERE class LIKE 'telegram.%'),
        'chats', (SELECT count(*) FROM chats WHERE kind = ANY (parley_source_kinds('telegram'))),
        'messages', (SELECT count(*) FROM messages m
                     WHERE scope IS NULL OR m.chat_id = ANY (scope)),
        'daemon', ctx -> 'daemon'));
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_sync_jobs_list(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
    lim integer;
BEGIN
    lim := parley_tg_limit(a, 50, 500);
    chat := parley_tg_chat(a, 'channelId');
    RETURN parley_tg_page(a, 50, 500) || jsonb_build_object('jobs', coalesce((
        SELECT jsonb_agg(parley_tg_job_json(j) ORDER BY j.id) FROM (
            SELECT * FROM sync_jobs j
            WHERE (a ->> 'status' IS NULL OR j.status = a ->> 'status')
              AND (chat IS NULL OR j.chat_id = chat) AND j.class LIKE 'telegram.%'
            ORDER BY j.id LIMIT lim) j), '[]'));
END
$$;

-- syncJobsAdd: with an enabled user account (the one named by "account",
-- a handle or accounts.id, else the default) a 'telegram.history' job
-- under that account backfills the chat's history (the user connector);
-- without one a 'telegram.sync' job. Adding a history job again takes the
-- new depth and minDate and keeps its cursor (the backfill resumes where it
-- was); a job in progress keeps running, and one paused by a FloodWait
-- keeps its pause.
CREATE OR REPLACE FUNCTION parley_tg_sync_jobs_add(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
    acc bigint;
    res jsonb;
BEGIN
    chat := parley_tg_chat(a, 'channelId');
    SELECT ac.id INTO acc FROM accounts ac
    WHERE ac.kind = 'telegram_user' AND ac.enabled
      AND CASE WHEN coalesce(a ->> 'account', '') = '' THEN true
               ELSE ac.handle = a ->> 'account' OR ac.id::text = a ->> 'account'
                    OR ac.extra ->> 'phone' = a ->> 'account' END
    ORDER BY ac.is_default DESC, ac.id LIMIT 1;
    IF acc IS NULL AND coalesce(a ->> 'account', '') <> '' THEN
        PERFORM parley_tg_bad(format('account: no signed-in Telegram user account %s; '
                                     'authStatus names the account, or leave account out',
                                     a -> 'account'));
    END IF;
    IF acc IS NOT NULL THEN
        INSERT INTO sync_jobs AS j (account_id, class, channel, chat_id, depth, min_date, realtime)
        VALUES (acc, 'telegram.history', a ->> 'channelId', chat,
                coalesce((a ->> 'depth')::integer, 1000), parley_tg_time(a, 'minDate', ctx),
                coalesce((a ->> 'enableRealtime')::boolean, true))
        ON CONFLICT (account_id, class, channel) DO UPDATE
            SET depth = EXCLUDED.depth, min_date = EXCLUDED.min_date,
                realtime = EXCLUDED.realtime, chat_id = EXCLUDED.chat_id,
                status = CASE WHEN j.status = 'in_progress' THEN j.status ELSE 'pending' END,
                error = CASE WHEN j.status = 'in_progress' OR (j.status = 'pending'
                                  AND j.error LIKE 'Telegram asked to wait (FloodWait)%')
                             THEN j.error END,
                next_attempt_at = CASE
                    WHEN j.status = 'in_progress' THEN j.next_attempt_at
                    WHEN j.status = 'pending' AND j.error LIKE 'Telegram asked to wait (FloodWait)%'
                        THEN greatest(j.next_attempt_at, now())
                    ELSE now() END,
                updated_at = now()
        RETURNING parley_tg_job_json(j) INTO res;
        RETURN jsonb_build_object('job', res);
    END IF;
    INSERT INTO sync_jobs AS j (class, channel, chat_id, depth, min_date, realtime)
    VALUES ('telegram.sync', a ->> 'channelId', chat, coalesce((a ->> 'depth')::integer, 1000),
            parley_tg_time(a, 'minDate', ctx), coalesce((a ->> 'enableRealtime')::boolean, true))
    ON CONFLICT (account_id, class, channel) DO UPDATE
        SET depth = EXCLUDED.depth, min_date = EXCLUDED.min_date,
            realtime = EXCLUDED.realtime, status = 'pending', error = NULL,
            next_attempt_at = now(), updated_at = now()
    RETURNING parley_tg_job_json(j) INTO res;
    RETURN jsonb_build_object('job', res);
END
$$;

-- Whether job j is one a retry or a cancel names: a Telegram job, of
-- jobId and of the chat (channelId, read as chat) when given. Inlined
-- into their UPDATE.
CREATE OR REPLACE FUNCTION parley_tg_job_named(j sync_jobs, a jsonb, chat bigint) RETURNS boolean
    LANGUAGE sql IMMUTABLE AS $$
    SELECT (a ->> 'jobId' IS NULL OR j.id = (a ->> 'jobId')::bigint)
           AND (chat IS NULL OR j.chat_id = chat) AND j.class LIKE 'telegram.%'
$$;

-- What a retry or a cancel answers: {what: how many jobs, jobIds: their
-- ids in order}.
CREATE OR REPLACE FUNCTION parley_tg_jobs_answer(what text, ids bigint[]) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object(what, coalesce(cardinality(ids), 0),
                              'jobIds', coalesce((SELECT jsonb_agg(i ORDER BY i) FROM unnest(ids) i),
                                                 '[]'))
$$;

CREATE OR REPLACE FUNCTION parley_tg_sync_jobs_retry(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
    res jsonb;
BEGIN
    chat := parley_tg_chat(a, 'channelId');
    IF a ->> 'jobId' IS NULL AND chat IS NULL AND NOT coalesce((a ->> 'allErrors')::boolean, false) THEN
        PERFORM parley_tg_bad('give jobId, channelId, or allErrors: true');
    END IF;
    WITH u AS (
        UPDATE sync_jobs j SET status = 'pending', error = NULL, next_attempt_at = now(),
                               updated_at = now()
        WHERE parley_tg_job_named(j, a, chat)
          AND (NOT coalesce((a ->> 'allErrors')::boolean, false) OR status = 'error')
          AND status <> 'in_progress'
        RETURNING id)
    SELECT parley_tg_jobs_answer('updated', array_agg(id)) INTO res FROM u;
    RETURN res;
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_sync_jobs_cancel(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
    res jsonb;
BEGIN
    chat := parley_tg_chat(a, 'channelId');
    IF a ->> 'jobId' IS NULL AND chat IS NULL THEN
        PERFORM parley_tg_bad('give jobId or channelId');
    END IF;
    WITH d AS (
        UPDATE sync_jobs j SET status = 'idle', realtime = false, updated_at = now(),
                               error = 'canceled'
        WHERE parley_tg_job_named(j, a, chat) AND status <> 'idle'
        RETURNING id)
    SELECT parley_tg_jobs_answer('canceled', array_agg(id)) INTO res FROM d;
    RETURN res;
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_sync_realtime_set(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_needs_connector('syncRealtimeSet',
        'the archive is served from imports; import newer exports to update it');
END
$$;
