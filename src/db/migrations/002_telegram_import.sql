-- 002_telegram_import: importing Telegram Desktop JSON exports. The
-- importer streams each chat's messages, as the export's own JSON objects,
-- into import_staging with COPY; at the end of a chat one call of
-- parley_tg_import_chat maps them into chats, users, messages, media and
-- topics in one transaction and clears the chat's staging rows. Re-running
-- it with the same rows changes nothing (every upsert only writes what
-- differs); a later export adds messages and applies edits; nothing is
-- deleted.
--
-- Its functions moved to src/db/sql/telegram/import.sql
-- (repeatable files, applied at every start: src/db/sql/manifest).

ALTER TABLE messages DROP CONSTRAINT messages_kind_check;
ALTER TABLE messages ADD CONSTRAINT messages_kind_check CHECK (kind IN ('message', 'service',
    'unsupported', 'thought', 'tool_use', 'tool_result'));

CREATE SEQUENCE import_id_seq;

-- Rows of imports in progress; never read by tools.
CREATE UNLOGGED TABLE import_staging (
    import_id bigint NOT NULL,
    chat_key  bigint NOT NULL,      -- ordinal of the chat within the export
    msg       jsonb NOT NULL
);
CREATE INDEX import_staging_idx ON import_staging (import_id, chat_key);
