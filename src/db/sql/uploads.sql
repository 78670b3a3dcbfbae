-- uploads: the records of uploaded files (src/archive/uploads.c). The
-- file itself is already in the media store when it is recorded.

-- A file as the tools answer it.
CREATE OR REPLACE FUNCTION parley_upload_json(u uploads) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object(
        'fileId', u.id, 'fileUniqueId', u.sha256, 'kind', u.kind, 'size', u.file_size,
        'mimeType', u.mime_type, 'fileName', u.file_name, 'uri', 'inline://file/' || u.id,
        'createdAt', u.created_at)
$$;

-- Records a stored file: a = {sha256, localPath, kind, mimeType, fileName,
-- size, source}. The same bytes again keep their fileId and take the new
-- name and type.
CREATE OR REPLACE FUNCTION parley_upload_store(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE sql AS $$
    INSERT INTO uploads AS u (id, sha256, local_path, kind, mime_type, file_name, file_size,
                              source)
    VALUES ('f' || substr(a ->> 'sha256', 1, 31), a ->> 'sha256', a ->> 'localPath', a ->> 'kind',
            a ->> 'mimeType', a ->> 'fileName', (a ->> 'size')::bigint, a ->> 'source')
    ON CONFLICT (sha256) DO UPDATE
        SET kind = EXCLUDED.kind, mime_type = EXCLUDED.mime_type,
            file_name = EXCLUDED.file_name, source = EXCLUDED.source, updated_at = now()
    RETURNING parley_upload_json(u)
$$;

-- a = {fileId}: the record, or PT400 naming fileId.
CREATE OR REPLACE FUNCTION parley_upload_get(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    r jsonb;
BEGIN
    SELECT parley_upload_json(u) || jsonb_build_object('localPath', u.local_path) INTO r
    FROM uploads u WHERE u.id = a ->> 'fileId';
    IF r IS NULL THEN
        PERFORM parley_tg_bad(format('fileId: no file %s; upload it with files_upload',
                                     (a -> 'fileId')::text));
    END IF;
    RETURN r;
END
$$;
