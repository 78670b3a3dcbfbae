-- 022_search_forms: word forms in the archive search (search_languages).
-- messages.forms holds each message's lexemes in the configured text search
-- configurations; the search matches them together with the exact words of
-- messages.tsv (src/db/sql/search.sql). A trigger fills the column for
-- every row written; the daemon fills the rows that were there before in
-- batches and then builds the GIN index with CREATE INDEX CONCURRENTLY
-- (src/archive/search_forms.c): neither step locks writes for long, and
-- serve answers with the exact words until the switch. search_forms
-- records each list's progress and which list is in use; the functions
-- that read and write it live in src/db/sql/search.sql.
ALTER TABLE messages ADD COLUMN forms tsvector;

CREATE TABLE search_forms (
    -- The text search configurations, resolved and comma-separated
    -- ('english,russian'); '' is exact words only.
    languages     text PRIMARY KEY,
    -- The backfill's cursor: rows up to this key (chat_id, id) are filled.
    fill_chat_id  bigint,
    fill_id       bigint,
    filled        boolean NOT NULL DEFAULT false,
    rows_filled   bigint NOT NULL DEFAULT 0,
    started_at    timestamptz NOT NULL DEFAULT now(),
    ready_at      timestamptz,
    -- target: the list the trigger fills new rows with (the one asked for
    -- last); active: the list the search uses.
    target        boolean NOT NULL DEFAULT false,
    active        boolean NOT NULL DEFAULT false,
    CHECK (NOT active OR ready_at IS NOT NULL)
);
CREATE UNIQUE INDEX search_forms_target_idx ON search_forms (target) WHERE target;
CREATE UNIQUE INDEX search_forms_active_idx ON search_forms (active) WHERE active;

-- Fills messages.forms of every row written; owned by
-- src/db/sql/search.sql from here on (with parley_forms_vector, which it
-- calls when it runs, not before), the trigger needs it now.
CREATE FUNCTION parley_messages_forms() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    NEW.forms := parley_forms_vector(NEW.text, (SELECT languages FROM search_forms WHERE target));
    RETURN NEW;
END
$$;

CREATE TRIGGER messages_forms BEFORE INSERT OR UPDATE OF text ON messages
    FOR EACH ROW EXECUTE FUNCTION parley_messages_forms();
