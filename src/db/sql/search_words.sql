-- search_words: the vocabulary of the fuzzy search (migration 024): the
-- trigger function that appends a stored message's words, the merge and
-- the fill that keep the vocabulary whole, which src/archive/search_forms.c
-- runs (the importer, src/app/import.c, merges too), and the fuzzy query
-- over it, which parley_search_run (search.sql) calls once the vocabulary
-- is ready (parley_search_words_ready, which search_near.sql asks too).
-- Split from search_forms.sql. Applied after search_near.sql: the fuzzy
-- query (LANGUAGE sql) calls parley_edits1.
--
-- search_words holds the distinct lexemes of messages.tsv, with a trigram
-- index; the fuzzy mode looks a term's near words up there and matches
-- them through the full-text index.

-- Appends the words of the rows a statement inserted, or of a row whose
-- text an update changed, to search_words_new, which the daemon merges.
CREATE OR REPLACE FUNCTION parley_messages_words() RETURNS trigger
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

-- Moves up to batch appended words into search_words; returns how many
-- rows were taken (fewer than batch: none left). Several daemons may run
-- it at once (each takes rows the others have not locked; words go in in
-- order, so two merges cannot deadlock).
CREATE OR REPLACE FUNCTION parley_search_words_merge(batch integer) RETURNS bigint
    LANGUAGE sql AS $$
    WITH moved AS (
        DELETE FROM search_words_new n
        WHERE n.ctid = ANY (ARRAY(SELECT ctid FROM search_words_new LIMIT batch
                                  FOR UPDATE SKIP LOCKED))
        RETURNING n.word),
    ins AS (
        INSERT INTO search_words (word)
        SELECT DISTINCT word FROM moved ORDER BY 1
        ON CONFLICT DO NOTHING)
    SELECT count(*) FROM moved
$$;

-- Puts the words of the next batch rows stored before migration 024 (in
-- key order after the cursor) into search_words. Returns
-- {finished, rows_filled, rows_estimate}.
CREATE OR REPLACE FUNCTION parley_search_words_fill(batch integer) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    st search_words_fill;
    n bigint;
    last_chat bigint;
    last_id bigint;
BEGIN
    SELECT * INTO st FROM search_words_fill FOR UPDATE;
    IF NOT st.filled THEN
        WITH b AS (
            SELECT m.chat_id, m.id, m.tsv FROM messages m
            WHERE st.fill_chat_id IS NULL OR (m.chat_id, m.id) > (st.fill_chat_id, st.fill_id)
            ORDER BY m.chat_id, m.id
            LIMIT batch),
        ins AS (
            INSERT INTO search_words (word)
            SELECT DISTINCT w FROM b, unnest(tsvector_to_array(b.tsv)) AS w ORDER BY 1
            ON CONFLICT DO NOTHING)
        SELECT count(*), (array_agg(b.chat_id ORDER BY b.chat_id DESC, b.id DESC))[1],
               (array_agg(b.id ORDER BY b.chat_id DESC, b.id DESC))[1]
        INTO n, last_chat, last_id FROM b;
        UPDATE search_words_fill
        SET fill_chat_id = coalesce(last_chat, fill_chat_id), fill_id = coalesce(last_id, fill_id),
            rows_filled = rows_filled + n, filled = n < batch,
            ready_at = CASE WHEN n < batch THEN now() END
        RETURNING * INTO st;
    END IF;
    RETURN jsonb_build_object('finished', st.filled, 'rows_filled', st.rows_filled,
                              'rows_estimate', (SELECT greatest(reltuples, 0)::bigint
                                                FROM pg_class WHERE oid = 'messages'::regclass));
END
$$;

-- The fuzzy query of terms: each term (not -excluded) becomes the OR of
-- its near words in the vocabulary (word similarity at least 0.5, and
-- for a term of 4 letters or more the words one edit away, which a short
-- word's slip can be without that similarity: "metting" has 0.45 with
-- "meeting"; src/db/sql/search_near.sql; the closest 64), the terms ANDed; the words not merged yet are read too
-- (a few seconds' worth, without an index), so that a message is found as
-- soon as it is stored. NULL when a term has no near word (nothing can
-- match) or there is no term.
CREATE OR REPLACE FUNCTION parley_fuzzy_query(terms text[]) RETURNS tsquery
    LANGUAGE sql STABLE
    SET pg_trgm.word_similarity_threshold = 0.5
AS $$
    WITH t AS (
        SELECT t, (SELECT string_agg('''' || replace(replace(w, '\', '\\'), '''', '''''') || '''',
                                     ' | ')
                   FROM (SELECT u.w FROM (SELECT s.word AS w FROM search_words s
                                          WHERE t <% s.word
                                          UNION
                                          SELECT n.word FROM search_words_new n
                                          WHERE t <% n.word
                                          UNION
                                          SELECT s.word FROM unnest(e) v
                                          JOIN search_words s ON s.word = v
                                          UNION
                                          SELECT n.word FROM unnest(e) v
                                          JOIN search_words_new n ON n.word = v) u
                         ORDER BY word_similarity(t, u.w) DESC, u.w
                         LIMIT 64) x) AS alts
        FROM (SELECT t, CASE WHEN char_length(t) >= 4 THEN parley_edits1(t) END AS e
              FROM unnest(terms) AS t) tt
        WHERE t NOT LIKE '-%')
    SELECT CASE WHEN count(*) > 0 AND bool_and(alts IS NOT NULL)
                THEN string_agg('(' || alts || ')', ' & ')::tsquery END
    FROM t
$$;

-- True once every stored message's words are in the vocabulary.
CREATE OR REPLACE FUNCTION parley_search_words_ready() RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT filled FROM search_words_fill), false)
$$;
