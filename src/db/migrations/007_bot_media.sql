-- 007_bot_media: the media download queue of the Bot API connector. Files
-- are claimed with FOR UPDATE SKIP LOCKED (so several daemons on one
-- database share the work; a claim not finished in 10 minutes is taken
-- over), deduplicated by file_unique_id against files already stored, and
-- retried with exponential backoff up to 5 attempts.
CREATE INDEX media_remote_idx ON media (chat_id, message_id)
    WHERE state IN ('remote', 'downloading', 'error') AND file_id IS NOT NULL;

CREATE FUNCTION parley_bot_media_claim(p_account bigint, p_limit integer) RETURNS jsonb
    LANGUAGE sql AS $$
    WITH c AS (
        SELECT f.chat_id, f.message_id, f.ordinal
        FROM media f JOIN chats ch ON ch.id = f.chat_id
        WHERE ch.account_id = p_account AND f.file_id IS NOT NULL
          AND (f.state = 'remote'
               OR (f.state = 'error' AND f.attempts < 5
                   AND f.updated_at < now() - interval '2 seconds' * power(2, f.attempts))
               OR (f.state = 'downloading' AND f.updated_at < now() - interval '10 minutes'))
        ORDER BY f.chat_id, f.message_id, f.ordinal
        LIMIT p_limit
        FOR UPDATE OF f SKIP LOCKED
    ), u AS (
        UPDATE media f SET state = 'downloading', attempts = f.attempts + 1, updated_at = now()
        FROM c
        WHERE f.chat_id = c.chat_id AND f.message_id = c.message_id AND f.ordinal = c.ordinal
        RETURNING f.*
    )
    SELECT coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               'chat_id', u.chat_id, 'message_id', u.message_id, 'ordinal', u.ordinal,
               'file_id', u.file_id, 'file_unique_id', u.file_unique_id,
               'file_size', u.file_size, 'mime_type', u.mime_type,
               'stored', (SELECT jsonb_build_object('sha256', d.sha256, 'local_path', d.local_path,
                                                    'size', d.file_size)
                          FROM media d
                          WHERE d.file_unique_id = u.file_unique_id AND d.state = 'done'
                          LIMIT 1)))), '[]')
    FROM u
$$;

CREATE FUNCTION parley_bot_media_done(p jsonb) RETURNS void
    LANGUAGE sql AS $$
    UPDATE media SET state = p ->> 'state', sha256 = coalesce(p ->> 'sha256', sha256),
                     local_path = coalesce(p ->> 'local_path', local_path),
                     file_size = coalesce((p ->> 'size')::bigint, file_size),
                     error = p ->> 'error',
                     downloaded_at = CASE WHEN p ->> 'state' = 'done' THEN now() END,
                     updated_at = now()
    WHERE chat_id = (p ->> 'chat_id')::bigint AND message_id = (p ->> 'message_id')::bigint
      AND ordinal = (p ->> 'ordinal')::smallint
$$;
