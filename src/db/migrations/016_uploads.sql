-- 016_uploads: files given to parley to send (the inline toolset's
-- files_upload), kept in the content-addressed media store. id is the
-- fileId tools pass around; sha256 is the file's unique id (the same bytes
-- are one file).
CREATE TABLE uploads (
    id         text PRIMARY KEY,
    sha256     text NOT NULL UNIQUE,
    local_path text NOT NULL,      -- inside the media store (xx/SHA256)
    kind       text NOT NULL CHECK (kind IN ('photo', 'video', 'document')),
    mime_type  text NOT NULL,
    file_name  text NOT NULL,
    file_size  bigint NOT NULL,
    source     text NOT NULL,      -- 'base64', or the URL's scheme and host
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
