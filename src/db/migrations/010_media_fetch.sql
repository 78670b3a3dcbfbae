-- 010_media_fetch: one file claimed ahead of the queue for a caller that
-- waits for it (mediaDownload while the file is not stored yet). Returns the
-- row as parley_bot_media_claim does, with "claimed": true, when this daemon
-- should download it now (remote, failed, or stuck downloading elsewhere: a
-- second download of the same file is harmless, the store is
-- content-addressed); otherwise the row's state, so the caller can say why
-- there is nothing to download ("done" already, "unavailable", no file_id).
CREATE FUNCTION parley_bot_media_claim_one(p_chat bigint, p_message bigint) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    f media;
BEGIN
    SELECT * INTO f FROM media
    WHERE chat_id = p_chat AND message_id = p_message
    ORDER BY ordinal LIMIT 1
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN jsonb_build_object('chat_id', p_chat, 'message_id', p_message, 'state', 'missing',
                                  'error', 'the message has no file');
    END IF;
    IF f.state IN ('done', 'unavailable') OR f.file_id IS NULL THEN
        RETURN jsonb_strip_nulls(jsonb_build_object(
            'chat_id', f.chat_id, 'message_id', f.message_id, 'ordinal', f.ordinal,
            'state', f.state, 'error', coalesce(f.error, CASE WHEN f.file_id IS NULL THEN
                'the upstream gave no file handle for it' END),
            'sha256', f.sha256, 'local_path', f.local_path, 'size', f.file_size));
    END IF;
    UPDATE media SET state = 'downloading', attempts = attempts + 1, updated_at = now()
    WHERE chat_id = f.chat_id AND message_id = f.message_id AND ordinal = f.ordinal
    RETURNING * INTO f;
    RETURN jsonb_strip_nulls(jsonb_build_object(
        'claimed', true, 'chat_id', f.chat_id, 'message_id', f.message_id, 'ordinal', f.ordinal,
        'file_id', f.file_id, 'file_unique_id', f.file_unique_id, 'file_size', f.file_size,
        'mime_type', f.mime_type,
        'stored', (SELECT jsonb_build_object('sha256', d.sha256, 'local_path', d.local_path,
                                             'size', d.file_size)
                   FROM media d WHERE d.file_unique_id = f.file_unique_id AND d.state = 'done'
                   LIMIT 1)));
END
$$;
