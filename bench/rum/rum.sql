-- bench/rum/rum.sql: the helpers of bench/rum/run (RUM against GIN). Loaded
-- into the throw-away benchmark database only, never into a store: the
-- timer that runs a statement with some indexes dropped and rolls the drop
-- back, parley_search's full-text mode with its page ordered inside a RUM
-- index, and the procedure of single-row inserts.

CREATE TABLE IF NOT EXISTS bench_times (round integer, cls text, arm text, ms double precision);

-- Runs p_sql once with the indexes p_drops dropped (and word forms off
-- when p_forms_off: search_forms' active list cleared), and answers its
-- time in ms; everything is rolled back (a subtransaction ended by an
-- exception), so the indexes are back for the next call. Both arms of a
-- comparison drop the other's indexes: each pays the same catalog work.
CREATE OR REPLACE FUNCTION bench_time(p_drops text[], p_forms_off boolean, p_sql text)
    RETURNS double precision
    LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz;
    ms double precision;
    d text;
    r jsonb;
BEGIN
    BEGIN
        FOREACH d IN ARRAY p_drops LOOP
            EXECUTE format('DROP INDEX IF EXISTS %I', d);
        END LOOP;
        IF p_forms_off THEN
            UPDATE search_forms SET active = false WHERE active;
        END IF;
        t0 := clock_timestamp();
        EXECUTE p_sql INTO r;
        ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
        IF r IS NULL OR r->'results' IS NULL THEN
            RAISE WARNING 'bench_time: no results from %', p_sql;
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'bench rollback';
    EXCEPTION WHEN raise_exception THEN
        NULL;
    END;
    RETURN ms;
END
$$;

-- parley_search's full-text mode (same conditions, same capped count, same
-- answer) with the page ordered by a RUM index, as parley would search with
-- RUM: by rank, "vector <=> query" (RUM's own rank, from the positions in
-- the index: the exact index for a query of phrases only, the forms index
-- otherwise); newest first past 1,000 hits, "date <=| bound" from an index
-- with the date attached (rum_tsvector_addon_ops), which RUM allows on a
-- column only: the exact vector, word forms off. Newest first with at most
-- 1,000 hits sorts the hits' keys, as parley_search does.
--
-- p_way 'pairs': no RUM; a query of phrases only finds its rows through the
-- index of adjacent word pairs (bench_word_pairs, below) and checks the
-- phrase on the stored vector (not through the exact index: "|| ''"), then
-- the page as parley_search makes it from the hits' keys (by rank:
-- parley_search_score of each hit).
CREATE OR REPLACE FUNCTION bench_rum_search(p_q text, p_order text, p_lim integer,
                                            p_way text DEFAULT 'rum')
    RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET enable_seqscan = off
    SET jit = off
AS $$
DECLARE
    count_max constant integer := 1000;
    qx tsquery := parley_search_exact_query(p_q);
    langs text := parley_search_languages();
    tsq tsquery;
    phr tsquery;
    vec text;
    cond text;
    ord text;
    src text;
    n bigint;
    hit_chats bigint[];
    hit_ids bigint[];
    res jsonb;
BEGIN
    IF langs = '' THEN
        tsq := qx;
        vec := 'm.tsv';
        cond := 'm.tsv @@ $1';
    ELSE
        tsq := parley_forms_query(qx, langs);
        vec := parley_search_vector_sql('m');
        phr := parley_phrase_query(qx);
        cond := CASE WHEN phr IS NULL THEN vec || ' @@ $1'
                     WHEN phr::text = qx::text THEN 'm.tsv @@ $2'
                     ELSE format('m.tsv @@ $2 AND (%s || ''''::tsvector) @@ $1', vec) END;
    END IF;
    IF p_way = 'pairs' AND phr::text = qx::text THEN
        cond := 'bench_word_pairs(m.tsv) @> $4 AND (m.tsv || ''''::tsvector) @@ $2';
    END IF;
    IF phr IS NULL THEN
        PERFORM set_config('enable_seqscan', 'on', true);
    END IF;
    EXECUTE format('SELECT count(*), array_agg(chat_id), array_agg(id) '
                   'FROM (SELECT m.chat_id, m.id FROM messages m WHERE %s LIMIT $3) x', cond)
        INTO n, hit_chats, hit_ids USING tsq, phr, count_max + 1, bench_query_pairs(phr);
    PERFORM set_config('enable_seqscan', 'off', true);
    IF p_way = 'pairs' AND p_order = 'rank' AND n <= count_max THEN
        src := format('SELECT m.chat_id, m.id, parley_search_score(m.tsv, %s, $7, $1, m.date) AS rank '
                      'FROM unnest($5::bigint[], $6::bigint[]) AS k(chat_id, id) '
                      'JOIN messages m ON m.chat_id = k.chat_id AND m.id = k.id '
                      'ORDER BY rank DESC NULLS LAST, m.date DESC, m.id DESC LIMIT $4', vec);
    ELSIF p_order = 'rank' THEN
        ord := CASE WHEN phr IS NOT NULL AND phr::text = qx::text THEN 'm.tsv <=> $2'
                    ELSE vec || ' <=> $1' END;
        src := format('SELECT m.chat_id, m.id, (%s)::real AS rank FROM messages m WHERE %s '
                      'ORDER BY %s LIMIT $4', ord, cond, ord);
    ELSIF n <= count_max THEN
        src := 'SELECT m.chat_id, m.id, NULL::real AS rank '
               'FROM unnest($5::bigint[], $6::bigint[]) AS k(chat_id, id) '
               'JOIN messages m ON m.chat_id = k.chat_id AND m.id = k.id '
               'ORDER BY m.date DESC, m.id DESC LIMIT $4';
    ELSE
        src := format('SELECT m.chat_id, m.id, NULL::real AS rank FROM messages m WHERE %s '
                      'ORDER BY m.date <=| ''2100-01-01''::timestamptz LIMIT $4', cond);
    END IF;
    EXECUTE format($f$
        WITH page AS (%s)
        SELECT jsonb_build_object('results', coalesce((
            SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                       'chat_id', m.chat_id, 'chat_title', c.title, 'id', m.id,
                       'topic_id', m.topic_id, 'date', m.date, 'edit_date', m.edit_date,
                       'sender_id', m.sender_id, 'sender_name', m.sender_name,
                       'text', m.text,
                       'snippet', ts_headline(%L, m.text, $1,
                                  'StartSel=**, StopSel=**, MaxWords=35, MinWords=15'),
                       'rank', page.rank, 'media_kind', m.media_kind,
                       'has_link', m.has_link, 'kind', m.kind,
                       'reply_to_id', m.reply_to_id)))
            FROM page JOIN messages m ON m.chat_id = page.chat_id AND m.id = page.id
            LEFT JOIN chats c ON c.id = m.chat_id), '[]'::jsonb))
        $f$, src, parley_search_headline_config(langs))
        INTO res USING tsq, phr, count_max + 1, p_lim, hit_chats, hit_ids, qx;
    RETURN res || jsonb_build_object('count', least(n, count_max));
END
$$;

-- Inserts p_n rows of bench_src (from its p_from-th, by seq) into p_table
-- one statement and one transaction each, as live ingest writes a message
-- (durable: each commit waits for its WAL flush).
CREATE OR REPLACE PROCEDURE bench_single_inserts(p_table text, p_cols text, p_from integer,
                                                 p_n integer)
    LANGUAGE plpgsql AS $$
DECLARE
    i integer;
BEGIN
    FOR i IN p_from .. p_from + p_n - 1 LOOP
        EXECUTE format('INSERT INTO %I (%s) SELECT %s FROM bench_src WHERE seq = $1',
                       p_table, p_cols, p_cols) USING i;
        COMMIT;
    END LOOP;
END
$$;

-- ---- a way without RUM: an index of adjacent word pairs ----------------------
-- The pairs of adjacent words of an exact vector (messages.tsv: the simple
-- configuration, no stop words, so adjacent positions are adjacent words),
-- 'w1 w2'. A GIN index on it answers a phrase of two or more words with
-- the rows holding its pairs: about the rows holding the phrase, where the
-- exact index gives every row holding its words, each read to check them.
CREATE OR REPLACE FUNCTION bench_word_pairs(v tsvector) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT a.lexeme || ' ' || b.lexeme), '{}')
    FROM (SELECT lexeme, unnest(positions) AS p FROM unnest(v)) a
    JOIN (SELECT lexeme, unnest(positions) AS p FROM unnest(v)) b ON b.p = a.p + 1
$$;

-- The pairs a query of phrases only requires (each phrase's words, in
-- order, joined by <->): the bench's queries are one phrase each.
CREATE OR REPLACE FUNCTION bench_query_pairs(q tsquery) RETURNS text[]
    LANGUAGE sql IMMUTABLE AS $$
    WITH t AS (
        SELECT replace(m[1], '''''', '''') AS w, o
        FROM regexp_matches(q::text, '''((?:[^'']|'''')*)''', 'g') WITH ORDINALITY AS r(m, o))
    SELECT coalesce(array_agg(a.w || ' ' || b.w ORDER BY a.o), '{}')
    FROM t a JOIN t b ON b.o = a.o + 1
$$;
