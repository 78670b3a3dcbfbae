-- 024_search_words: the archive's vocabulary, for fuzzy search. The fuzzy
-- mode finds the words of the archive near each term of the query through
-- a trigram index of the distinct words (a small table), then the messages
-- holding them through the full-text index (the pattern of pg_trgm's
-- documentation), instead of testing every message that shares a few
-- trigrams with a term (85,000 of a million for "databse").
-- search_words holds the lexemes of messages.tsv (the words as written,
-- lower case). Words of rows written are appended to search_words_new by
-- triggers (a statement's inserted rows at once, an edited text row by row;
-- no unique check, so writers never wait on each other) and moved into search_words by the daemon every few seconds; the words of
-- the rows stored before this migration are filled in batches by the
-- daemon, the cursor in search_words_fill (src/archive/search_forms.c).
-- Until that fill is done the fuzzy mode reads the messages' trigrams as
-- before. The functions live in src/db/sql/search.sql.
CREATE TABLE search_words (
    word text PRIMARY KEY
);
CREATE INDEX search_words_trgm_idx ON search_words USING gin (word gin_trgm_ops);

CREATE TABLE search_words_new (
    word text NOT NULL
);

CREATE TABLE search_words_fill (
    one          boolean PRIMARY KEY DEFAULT true CHECK (one),
    -- Rows up to this key (chat_id, id) have their words in search_words.
    fill_chat_id bigint,
    fill_id      bigint,
    filled       boolean NOT NULL DEFAULT false,
    rows_filled  bigint NOT NULL DEFAULT 0,
    ready_at     timestamptz
);
INSERT INTO search_words_fill (filled, ready_at)
SELECT NOT EXISTS (SELECT 1 FROM messages), CASE WHEN NOT EXISTS (SELECT 1 FROM messages) THEN now() END;

-- Owned by src/db/sql/search.sql from here on; the triggers need it now.
CREATE FUNCTION parley_messages_words() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF TG_LEVEL = 'ROW' THEN
        INSERT INTO search_words_new (word) SELECT unnest(tsvector_to_array(NEW.tsv));
    ELSE
        INSERT INTO search_words_new (word)
        SELECT DISTINCT w FROM new_rows, unnest(tsvector_to_array(new_rows.tsv)) AS w;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER messages_words_insert AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION parley_messages_words();
-- An edit is rare, and most updates of messages do not touch the text
-- (media, reactions, the forms' fill): a row trigger on the text alone.
CREATE TRIGGER messages_words_update AFTER UPDATE OF text ON messages
    FOR EACH ROW WHEN (OLD.text IS DISTINCT FROM NEW.text) EXECUTE FUNCTION parley_messages_words();
