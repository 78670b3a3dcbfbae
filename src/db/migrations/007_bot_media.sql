-- 007_bot_media: the media download queue of the Bot API connector. Files
-- are claimed with FOR UPDATE SKIP LOCKED (so several daemons on one
-- database share the work; a claim not finished in 10 minutes is taken
-- over), deduplicated by file_unique_id against files already stored, and
-- retried with exponential backoff up to 5 attempts.
--
-- Its functions moved to src/db/sql/telegram/bot.sql
-- (repeatable files, applied at every start: src/db/sql/manifest).

CREATE INDEX media_remote_idx ON media (chat_id, message_id)
    WHERE state IN ('remote', 'downloading', 'error') AND file_id IS NOT NULL;
