-- telegram/sync: the telegram toolset's account, status and sync-job tools.

CREATE OR REPLACE FUNCTION parley_tg_auth_status(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT coalesce(
        (SELECT jsonb_strip_nulls(jsonb_build_object('authenticated', true,
                    'userId', ac.external_id, 'lastLoginAt', ac.last_login_at))
         FROM accounts ac WHERE ac.kind IN ('telegram_bot', 'telegram_user') AND ac.enabled
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

CREATE OR REPLACE FUNCTION parley_tg_sync_jobs_add(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
    res jsonb;
BEGIN
    chat := parley_tg_chat(a, 'channelId');
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
        UPDATE sync_jobs SET status = 'pending', error = NULL, next_attempt_at = now(),
                             updated_at = now()
        WHERE (a ->> 'jobId' IS NULL OR id = (a ->> 'jobId')::bigint)
          AND (chat IS NULL OR chat_id = chat)
          AND (NOT coalesce((a ->> 'allErrors')::boolean, false) OR status = 'error')
          AND status <> 'in_progress' AND class LIKE 'telegram.%'
        RETURNING id)
    SELECT jsonb_build_object('updated', count(*), 'jobIds', coalesce(jsonb_agg(id ORDER BY id), '[]'))
    INTO res FROM u;
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
        UPDATE sync_jobs SET status = 'idle', realtime = false, updated_at = now(),
                             error = 'canceled'
        WHERE (a ->> 'jobId' IS NULL OR id = (a ->> 'jobId')::bigint)
          AND (chat IS NULL OR chat_id = chat) AND status <> 'idle' AND class LIKE 'telegram.%'
        RETURNING id)
    SELECT jsonb_build_object('canceled', count(*), 'jobIds', coalesce(jsonb_agg(id ORDER BY id), '[]'))
    INTO res FROM d;
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
