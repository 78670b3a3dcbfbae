-- 025_search_vector_cap: one oversized message never fails a write.
-- PostgreSQL's tsvector holds at most 1 MB of lexemes ("string is too
-- long for tsvector"): a message of about 1.8 MB of distinct words failed
-- the generated column messages.tsv, and with it the whole batch of an
-- import or of live sync. The column is now an ordinary one, filled by the
-- row trigger that already fills messages.forms (parley_messages_forms,
-- src/db/sql/search.sql) with parley_text_tsv: the same vector as before
-- for every text that fitted (DROP EXPRESSION keeps the stored values, no
-- rewrite), the vector of the longest prefix that fits for one that did
-- not (the text itself is stored whole). The full-text index of tool
-- results (018) had the same limit and is rebuilt on the same function.

-- The simple configuration's vector of t ('' for NULL), as
-- to_tsvector('simple', coalesce(t, '')); for a text whose lexemes exceed
-- the tsvector's limit, the vector of a prefix that fits (shortened by
-- the share the error says was too much, with a tenth to spare, or halved
-- when it does not say). A text under 64 kB cannot reach the limit and
-- takes no exception block. Part of the table (an index uses it): it
-- stays here.
CREATE FUNCTION parley_text_tsv(t text) RETURNS tsvector
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    n integer;
    msg text;
    need numeric;
BEGIN
    IF t IS NULL OR octet_length(t) <= 65536 THEN
        RETURN to_tsvector('simple', coalesce(t, ''));
    END IF;
    n := length(t);
    LOOP
        BEGIN
            RETURN to_tsvector('simple', left(t, n));
        EXCEPTION WHEN program_limit_exceeded THEN
            -- "string is too long for tsvector (N bytes, max M bytes)"
            GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
            need := substring(msg FROM '\((\d{1,12}) ')::numeric;
            n := CASE WHEN need > 1048576 THEN least(n - 1, floor(n::numeric * 943718 / need)::integer)
                      ELSE n / 2 END;
        END;
    END LOOP;
END
$$;

ALTER TABLE messages ALTER COLUMN tsv DROP EXPRESSION;

-- Owned by src/db/sql/search.sql (applied right after the migrations);
-- the column needs it filled from now on.
CREATE OR REPLACE FUNCTION parley_messages_forms() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := CASE WHEN NEW.text IS NULL OR octet_length(NEW.text) <= 65536
                    THEN to_tsvector('simple', coalesce(NEW.text, ''))
                    ELSE parley_text_tsv(NEW.text) END;
    NEW.forms := parley_forms_vector(NEW.text, (SELECT languages FROM search_forms WHERE target));
    RETURN NEW;
END
$$;

DROP INDEX IF EXISTS messages_tool_tsv_idx;
CREATE INDEX messages_tool_tsv_idx ON messages USING gin (parley_text_tsv(tool_text))
    WHERE tool_text IS NOT NULL;
