-- search: message search over the store (src/archive/search.h and the
-- telegram toolset's messagesSearch). parley_search takes a web-search
-- style query and answers the whole page as JSON built here; the helpers
-- parse the query and score substring (CJK) and fuzzy matches.
-- parley_has_cjk belongs to an index and lives in migration 003;
-- parley_cjk_bigrams, which the CJK index is built on, was first created
-- by migration 012 (the index needs it then) and is owned here since.

-- The distinct pairs of adjacent characters of t that are both of a script
-- written without spaces (lower case), read within each run of such
-- characters: linear in the text's length. The version of migration 012
-- took lower(t) again at every position (quadratic: 70 % of the time of
-- loading a CJK message into messages). The pairs are the same for every
-- text (tests/sql/search.sql compares both), so the index stays valid and
-- is not rebuilt; a change that gives other pairs needs a migration that
-- rebuilds messages_cjk_bigrams_idx.
CREATE OR REPLACE FUNCTION parley_cjk_bigrams(t text) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT substr(r, i, 2)), '{}')
    FROM regexp_split_to_table(lower(t),
             '[^\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f\uf900-\ufaff]+') AS r,
         generate_series(1, length(r) - 1) AS i
$$;

-- The terms of a web-search query for substring matching: quotes removed,
-- "OR" dropped, lower case.
CREATE OR REPLACE FUNCTION parley_query_terms(q text) RETURNS text[]
    LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(array_agg(lower(w)), '{}')
    FROM regexp_split_to_table(btrim(replace(q, '"', ' ')), '\s+') AS w
    WHERE w <> '' AND w <> 'OR' AND w <> '-'
$$;

CREATE OR REPLACE FUNCTION parley_substring_match(t text, terms text[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE AS $$
    SELECT t IS NOT NULL AND coalesce(bool_and(CASE
        WHEN w LIKE '-%' THEN strpos(lower(t), substr(w, 2)) = 0
        ELSE strpos(lower(t), w) > 0 END), true)
    FROM unnest(terms) AS w
$$;

-- About 120 characters of t around the first occurrence of the first
-- positive term, the term between ** marks.
CREATE OR REPLACE FUNCTION parley_substring_snippet(t text, terms text[]) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    WITH w AS (SELECT x FROM unnest(terms) AS x WHERE x NOT LIKE '-%' LIMIT 1),
         p AS (SELECT strpos(lower(t), w.x) AS pos, length(w.x) AS len FROM w)
    SELECT CASE
        WHEN t IS NULL THEN NULL
        WHEN NOT EXISTS (SELECT 1 FROM p WHERE pos > 0) THEN left(t, 120)
        ELSE (SELECT CASE WHEN pos > 50 THEN '…' ELSE '' END
                     || substr(t, greatest(1, pos - 50), least(pos, 51) - 1)
                     || '**' || substr(t, pos, len) || '**'
                     || substr(t, pos + len, 60)
                     || CASE WHEN pos + len + 60 <= length(t) THEN '…' ELSE '' END
              FROM p)
    END
$$;

-- Fuzzy score: every positive term must be similar to some word of t
-- (pg_trgm word similarity at least 0.5); the score is their mean. NULL
-- when a term has no match or an excluded term occurs.
CREATE OR REPLACE FUNCTION parley_fuzzy_score(t text, terms text[]) RETURNS real
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN t IS NULL THEN NULL
        WHEN bool_or(w LIKE '-%' AND strpos(lower(t), substr(w, 2)) > 0) THEN NULL
        WHEN coalesce(bool_and(w LIKE '-%' OR word_similarity(w, t) >= 0.5), false)
            THEN avg(word_similarity(w, t)) FILTER (WHERE w NOT LIKE '-%')::real
    END
    FROM unnest(terms) AS w
$$;

-- The query of the words of q as written (the simple configuration's
-- websearch_to_tsquery: words, "phrases", OR, -exclusions). A run of
-- exclusions counts as one ("--x", "- - x" and "-!-x" as "-x"):
-- PostgreSQL's websearch parser stacks each and fails past 32 ("tsquery
-- stack too small", an internal error). A URL ("https://host/path") is
-- asked as a phrase when q has no quotes: websearch_to_tsquery splits it at
-- the colon ('https' & '/host/path'), which no stored text has, while
-- quoted it reads as the text's own parser does.
CREATE OR REPLACE FUNCTION parley_search_exact_query(q text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE AS $$
    SELECT websearch_to_tsquery('simple', regexp_replace(
        CASE WHEN strpos(q, '"') = 0
             THEN regexp_replace(q, '(^|\s)([[:alpha:]][[:alnum:]+.-]*://[^[:space:]]+)', '\1"\2"', 'g')
             ELSE q END,
        '-([^[:alnum:]_"]*-)+', '-', 'g'))
$$;

-- The rank every search tool orders by (docs/search.md): 1 when every
-- word of the query matches as written (exact: messages.tsv, qx: the
-- exact query), then the text rank of the forms that matched (cover
-- density, exact forms weigh 1 and other forms 0.1, scaled into [0, 1))
-- times 0.9, then recency: 0.1 for now, halved at 30 days. forms and q are
-- messages.forms and its query, or tsv and qx when word forms are off.
CREATE OR REPLACE FUNCTION parley_search_score(exact tsvector, forms tsvector, qx tsquery,
                                               q tsquery, at timestamptz)
    RETURNS double precision LANGUAGE sql STABLE AS $$
    SELECT coalesce((exact @@ qx)::integer, 0)
           + 0.9 * coalesce(ts_rank_cd('{0.1,0.2,0.4,1.0}', forms, q, 32), 0)
           + 0.1 / (1 + greatest(extract(epoch FROM now() - coalesce(at, now())), 0) / 2592000)
$$;

-- The configuration snippets read the text with to mark the forms
-- found: the last of langs (the default's, russian, stems English words
-- too), simple when word forms are off.
CREATE OR REPLACE FUNCTION parley_search_headline_config(langs text) RETURNS regconfig
    LANGUAGE sql STABLE AS $$
    SELECT coalesce((string_to_array(nullif(langs, ''), ','))[
                        cardinality(string_to_array(nullif(langs, ''), ','))], 'simple')::regconfig
$$;

-- The search of every surface: a page of the messages matching p_q (and
-- the other filters), as JSON. p_source names the source whose chats are
-- searched (src/db/sql/sources.sql; NULL: every chat). When a full-text
-- query finds few messages (or none) because of a word found in few
-- messages (or none) that has near spellings in the archive
-- (src/db/sql/search_near.sql), the answer is that of the near reading
-- when it finds more: "corrections" [{from, to}], each result that does
-- not match the query as written "near": true, and a sentence in "notes";
-- while the word forms asked for are being brought in, "notes" says that
-- the search matched without them ("formsPending": true).
CREATE OR REPLACE FUNCTION parley_search(p_q text, p_rx text, p_fuzzy boolean,
                                         p_chat_ids bigint[], p_topic bigint, p_sender bigint,
                                         p_from_date timestamptz, p_to_date timestamptz,
                                         p_kind text, p_order_by text, p_lim integer,
                                         p_off integer, p_source text DEFAULT NULL)
    RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    r jsonb;
    near jsonb;
    r2 jsonb;
    have integer;
    own jsonb;
    page jsonb;
    langs text;
    qx tsquery;
    note text;
BEGIN
    r := parley_search_run(p_q, p_rx, p_fuzzy, p_chat_ids, p_topic, p_sender, p_from_date,
                           p_to_date, p_kind, p_order_by, p_lim, p_off, p_source, NULL);
    IF r ->> 'mode' <> 'fulltext' THEN
        RETURN r;
    END IF;
    have := (r ->> 'count')::integer;
    IF have < (parley_search_near_limits() ->> 'few')::integer THEN
        langs := parley_search_languages();
        qx := parley_search_exact_query(btrim(p_q));
        near := parley_search_near(qx, langs, p_source, p_chat_ids, have);
    END IF;
    IF near IS NOT NULL THEN
        -- The near reading's hits in order, the query's own hits (fewer
        -- than few, all read) first whatever the order: a page of the
        -- list own ++ near-only, the near-only ones read from the
        -- reading's first offset + limit + have.
        r2 := parley_search_run(p_q, p_rx, p_fuzzy, p_chat_ids, p_topic, p_sender, p_from_date,
                                p_to_date, p_kind, p_order_by,
                                greatest(p_off, 0) + greatest(p_lim, 0) + have, 0, p_source,
                                (near ->> 'query')::tsquery);
        IF (r2 ->> 'count')::integer > have THEN
            own := CASE WHEN have = 0 THEN '[]'
                        WHEN p_off = 0 AND p_lim >= have THEN r -> 'results'
                        ELSE parley_search_run(p_q, p_rx, p_fuzzy, p_chat_ids, p_topic, p_sender,
                                               p_from_date, p_to_date, p_kind, p_order_by, have, 0,
                                               p_source, NULL) -> 'results' END;
            SELECT coalesce(jsonb_agg(h ORDER BY k, o), '[]') INTO page
            FROM (SELECT h, k, o FROM (
                      SELECT h, 0 AS k, o FROM jsonb_array_elements(own) WITH ORDINALITY AS x(h, o)
                      UNION ALL
                      SELECT h || '{"near": true}', 1, o
                      FROM jsonb_array_elements(r2 -> 'results') WITH ORDINALITY AS x(h, o)
                      WHERE NOT own @> jsonb_build_array(jsonb_build_object(
                                'chat_id', h -> 'chat_id', 'id', h -> 'id'))) u
                  ORDER BY k, o
                  OFFSET greatest(p_off, 0) LIMIT greatest(p_lim, 0)) z;
            r := jsonb_set(r2, '{results}', page)
                 || jsonb_build_object('limit', p_lim, 'offset', p_off,
                                       'corrections', near -> 'corrections',
                                       'notes', jsonb_build_array(parley_search_near_note(
                                           p_q, near -> 'corrections', have)));
        END IF;
    END IF;
    note := parley_search_forms_note();
    IF note IS NOT NULL THEN
        r := r || jsonb_build_object('formsPending', true,
                                     'notes', coalesce(r -> 'notes', '[]') || to_jsonb(note));
    END IF;
    RETURN r;
END
$$;

-- The share of messages holding all of the CJK pairs p, from the pairs'
-- statistics (migration 023), as if the pairs were independent; a pair
-- not among the most common counts as rare (1e-9). NULL where the
-- statistics cannot be read (no ANALYZE yet, a reader that does not own
-- the table). parley_search_run weighs a walk of the newest messages
-- against reading the pair index's hits with it.
CREATE OR REPLACE FUNCTION parley_cjk_pairs_share(p text[]) RETURNS float8
    LANGUAGE sql STABLE AS $$
    SELECT exp(sum(ln(coalesce(e.most_common_elem_freqs[
               array_position(e.most_common_elems::text::text[], x)], 1e-9))))
    FROM pg_stats_ext_exprs e, unnest(p) AS x
    WHERE e.schemaname = current_schema() AND e.tablename = 'messages'
      AND e.statistics_name = 'messages_cjk_bigrams_stats'
$$;

-- The share of messages whose text matches the case-insensitive regular
-- expression rx, as PostgreSQL's planner reads it from the column's
-- statistics: the most common texts that match, and the share of the
-- histogram's sample of the others that does (about a hundred texts;
-- NULL where there are no statistics: no ANALYZE yet, or a reader that
-- may not see them). parley_search_run weighs counting a common regex's
-- hits by reading the table against reading the trigram index's.
-- (PL/pgSQL: its plan is kept for the session; planning the statistics
-- view is most of the cost, 1.7 ms against 0.3 to run it.)
CREATE OR REPLACE FUNCTION parley_text_share(rx text) RETURNS float8
    LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT coalesce((SELECT sum(v.f) FROM unnest(s.most_common_vals::text::text[],
                                                 s.most_common_freqs) AS v(t, f)
                     WHERE v.t ~* rx), 0)
           + (1 - s.null_frac - coalesce((SELECT sum(f) FROM unnest(s.most_common_freqs) AS f), 0))
             * coalesce((SELECT avg((h ~* rx)::integer)
                         FROM unnest(s.histogram_bounds::text::text[]) AS h), 0)
    FROM pg_stats s
    WHERE s.schemaname = current_schema() AND s.tablename = 'messages' AND s.attname = 'text');
END
$$;

-- PostgreSQL's estimate of the rows of messages m matching cond, a
-- condition of parley_search_run's with its parameters in their places
-- ($1 tsq ... $22 wpairs; those a condition never names are NULL here).
-- VOLATILE: EXPLAIN is refused in a read-only (STABLE) function, and
-- parley_search_run, which is, calls this one.
CREATE OR REPLACE FUNCTION parley_search_estimate(cond text, tsq tsquery, pats text[],
                                                  terms text[], pos text[], chat_ids bigint[],
                                                  topic bigint, sender bigint,
                                                  from_date timestamptz, to_date timestamptz,
                                                  rx text, pairs text[], negs text[],
                                                  qx_rank tsquery, phr tsquery, others bigint[],
                                                  wpairs text[])
    RETURNS float8 LANGUAGE plpgsql VOLATILE
    SET enable_seqscan = off
    SET jit = off
AS $$
DECLARE
    j jsonb;
BEGIN
    EXECUTE format('EXPLAIN (FORMAT JSON) SELECT 1 FROM messages m WHERE %s', cond)
        INTO j
        USING tsq, pats, terms, pos, chat_ids, topic, sender, from_date, to_date, rx,
              NULL::integer, NULL::integer, NULL::integer, pairs, negs, qx_rank,
              NULL::integer, phr, NULL::bigint[], NULL::bigint[], others, wpairs;
    RETURN (j -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
END
$$;

-- One reading of a search: parley_search's page for p_q, or for the query
-- of words as written p_qx when given (a near reading, in place of p_q's
-- own; full-text mode only).
CREATE OR REPLACE FUNCTION parley_search_run(p_q text, p_rx text, p_fuzzy boolean,
                                             p_chat_ids bigint[], p_topic bigint, p_sender bigint,
                                             p_from_date timestamptz, p_to_date timestamptz,
                                             p_kind text, p_order_by text, p_lim integer,
                                             p_off integer, p_source text, p_qx tsquery)
    RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET pg_trgm.word_similarity_threshold = 0.5
    -- The count reads hits from the indexes: a sequential scan that stops
    -- at the 1,001st hit reads the whole table when hits are rare.
    SET enable_seqscan = off
    -- Set off for a page that walks (substring mode, below); restored on
    -- return, like every setting here.
    SET enable_bitmapscan = on
    -- The count of a common regex reads messages from the table's start
    -- (below): not from where another scan of the table has got to.
    SET synchronize_seqscans = off
    -- With sequential scans priced at 10^10, every plan that still needs
    -- one (search_words_new, which has no index; a small table) passes
    -- jit_above_cost, and a database with JIT on (PostgreSQL's default;
    -- the embedded cluster has it off) compiled each such search: 400 ms
    -- for a fuzzy search of six messages instead of 5.
    SET jit = off
AS $$
DECLARE
    count_max constant integer := 1000;
    q text := nullif(btrim(p_q), '');
    mode text;
    tsq tsquery;
    terms text[];
    pos text[] := '{}';
    pats text[] := '{}';
    negs text[] := '{}';
    pairs text[];
    w text;
    cond text := 'true';
    rank_expr text := '0::real';
    snip_expr text := 'left(m.text, 160)';
    by_rank boolean := p_order_by = 'rank';
    -- By rank, past count_max hits, the newest rank_window matches (or
    -- offset + limit, if more) are ranked, so that a word in most messages
    -- costs a bounded time whatever the mode.
    rank_window constant integer := 200;
    -- Substring mode, past count_max hits: a page walks the newest
    -- messages testing each with ILIKE when that reads fewer rows than the
    -- pair index's hits, weighted: walking costs about walk_cost times a
    -- hit read from the index (1.3 against 0.85 us measured; 2 leans to
    -- the index, whose time is bounded by the hits).
    walk_cost constant float8 := 2;
    walk_est float8;
    walk_n float8;
    walk boolean := false;
    -- A common regex alone, counted by reading the table from its start
    -- (below): reading and testing a row costs about probe_cost times a
    -- hit read from the trigram index (1.3 against 0.36 us measured).
    probe_cost constant float8 := 3.5;
    rx_share float8;
    count_may_scan boolean := false;
    -- Full text (and fuzzy through the vocabulary): PostgreSQL's estimate
    -- of the rows the query's condition holds (est, of the pairs alone for
    -- a phrase) decides between walking the newest messages by date and
    -- reading the index's hits (below); walked: the count walked, and the
    -- hits are the newest count_max + 1 in date order.
    est float8;
    walk_slack constant float8 := 4;
    sure_hits constant integer := 100;
    sure_factor constant float8 := 10;
    -- est up to read_all_max (or up to where a page would walk): every hit
    -- read at once (below), at most read_all_cap of them.
    read_all_max constant float8 := 20000;
    read_all_cap constant integer := 200000;
    read_all boolean := false;
    sure boolean := false;
    count_walk boolean := false;
    est_cond text;
    need integer;
    walked boolean := false;
    page_index boolean := false;
    hits_n bigint;
    hit_chats bigint[];
    hit_ids bigint[];
    others bigint[];
    src text := 'messages m WHERE %s';
    langs text;
    qx tsquery;
    qx_rank tsquery;
    phr tsquery;
    wpairs text[];
    plain text;
    plain_len integer;
    vec text;
    stmt text;
    res jsonb;
    n bigint;
BEGIN
    -- The rows a page needs: the page's end newest first; by rank, the
    -- candidates ranked (the newest rank_window matches, or offset +
    -- limit if more).
    need := least(CASE WHEN by_rank THEN greatest(rank_window, greatest(p_lim, 0) + greatest(p_off, 0))
                       ELSE greatest(p_lim, 0) + greatest(p_off, 0) END::bigint, 1000000)::integer;
    mode := CASE WHEN q IS NULL THEN 'filter'
                 WHEN coalesce(p_fuzzy, false) THEN 'fuzzy'
                 WHEN parley_has_cjk(q) THEN 'substring'
                 ELSE 'fulltext' END;
    terms := parley_query_terms(coalesce(q, ''));
    FOREACH w IN ARRAY terms LOOP
        IF w NOT LIKE '-%' THEN
            pos := pos || w;
            pats := pats || ('%' || replace(replace(replace(w, '\', '\\'), '%', '\%'), '_', '\_')
                             || '%');
        ELSIF length(w) > 1 THEN
            negs := negs || ('%' || replace(replace(replace(substr(w, 2), '\', '\\'), '%', '\%'),
                                            '_', '\_') || '%');
        END IF;
    END LOOP;
    IF mode = 'fulltext' THEN
        qx := coalesce(p_qx, parley_search_exact_query(q));
        -- The rank's exact term is the query's as asked: in a near
        -- reading, the messages holding its words as written come first.
        qx_rank := parley_search_exact_query(q);
        langs := parley_search_languages();
        -- A phrase's pairs of adjacent words, once their index is built
        -- (migration 030): the rows holding them all are about those
        -- holding the phrase, checked on the stored vector ("|| ''": not
        -- through the exact index too, whose bitmap of every row holding
        -- the words would be ANDed in).
        IF parley_search_pairs_ready() THEN
            wpairs := parley_phrase_pairs(parley_phrase_query(qx));
        END IF;
        IF langs = '' THEN
            tsq := qx;
            phr := parley_phrase_query(qx);
            cond := 'm.tsv @@ $1';
            plain := cond;
            IF cardinality(wpairs) > 0 THEN
                cond := 'parley_word_pairs(m.tsv) @> $22 AND (m.tsv || ''''::tsvector) @@ $1';
            END IF;
            vec := 'm.tsv';
        ELSE
            tsq := parley_forms_query(qx, langs);
            vec := parley_search_vector_sql('m');
            phr := parley_phrase_query(qx);
            -- With a phrase, the pairs' index (or else the exact index)
            -- finds the rows with its words and checks it on the stored
            -- vector; the forms are checked on those rows only ("|| ''"
            -- keeps the planner from the forms index, whose recheck of a
            -- phrase would build the vector of every row holding the
            -- phrase's words). A query of phrases only is matched by the
            -- exact vector alone.
            plain := CASE WHEN phr IS NULL THEN vec || ' @@ $1'
                          WHEN phr::text = qx::text THEN 'm.tsv @@ $18'
                          ELSE format('m.tsv @@ $18 AND (%s || ''''::tsvector) @@ $1', vec) END;
            cond := CASE WHEN phr IS NULL OR coalesce(cardinality(wpairs), 0) = 0 THEN plain
                         WHEN phr::text = qx::text
                             THEN 'parley_word_pairs(m.tsv) @> $22 AND (m.tsv || ''''::tsvector) @@ $18'
                         ELSE format('parley_word_pairs(m.tsv) @> $22 AND (m.tsv || ''''::tsvector) '
                                     '@@ $18 AND (%s || ''''::tsvector) @@ $1', vec) END;
        END IF;
        -- plain: the condition without the pairs, for a page of more than
        -- count_max hits (below).
        plain_len := length(cond);
        rank_expr := format('parley_search_score(m.tsv, %s, $16, $1, m.date)', vec);
        snip_expr := format('ts_headline(%L, m.text, $1, '
                            '''StartSel=**, StopSel=**, MaxWords=35, MinWords=15'')',
                            parley_search_headline_config(langs));
    ELSIF mode = 'substring' THEN
        -- A term of two CJK characters is its one pair: the pair index
        -- says all, and a second test would make PostgreSQL take a common
        -- pair for a rare one (it multiplies the two estimates).
        FOR i IN 1 .. coalesce(array_length(pats, 1), 0) LOOP
            IF length(pos[i]) <> 2 OR parley_cjk_bigrams(pos[i]) <> ARRAY[lower(pos[i])] THEN
                cond := cond || format(' AND m.text ILIKE $2[%s]', i);
            END IF;
        END LOOP;
        SELECT coalesce(array_agg(DISTINCT b), '{}') INTO pairs
        FROM unnest(pos) AS t, unnest(parley_cjk_bigrams(t)) AS b;
        IF cardinality(pairs) > 0 THEN
            cond := cond || ' AND parley_has_cjk(m.text) AND parley_cjk_bigrams(m.text) @> $14';
        END IF;
        -- plain: every term by ILIKE alone, for a page that walks the
        -- newest messages (below). A term's text holds its pairs, so this
        -- matches what the pair index matches.
        plain := 'true';
        FOR i IN 1 .. coalesce(array_length(pats, 1), 0) LOOP
            plain := plain || format(' AND m.text ILIKE $2[%s]', i);
        END LOOP;
        FOR i IN 1 .. coalesce(array_length(negs, 1), 0) LOOP
            cond := cond || format(' AND m.text NOT ILIKE $15[%s]', i);
            plain := plain || format(' AND m.text NOT ILIKE $15[%s]', i);
        END LOOP;
        IF cardinality(pats) = 0 THEN
            cond := cond || ' AND m.text IS NOT NULL';
            plain := plain || ' AND m.text IS NOT NULL';
        END IF;
        plain_len := length(cond);
        rank_expr := '(1.0 / (1 + strpos(lower(m.text), coalesce($3[1], ''''))))::real';
        snip_expr := 'parley_substring_snippet(m.text, $3)';
    ELSIF mode = 'fuzzy' THEN
        -- Once the vocabulary is complete, each term's near words are
        -- looked up there and matched through the full-text index (a term
        -- with none matches nothing). Before, "term <% text" on every
        -- message sharing trigrams with a term: parley_fuzzy_score's test
        -- of a term (the threshold is set above). Exclusions as in
        -- substring mode. The score itself, word_similarity twice more,
        -- only for ranked rows.
        IF cardinality(pos) > 0 AND parley_search_words_ready() THEN
            tsq := parley_fuzzy_query(terms);
            cond := CASE WHEN tsq IS NULL THEN 'false' ELSE 'm.tsv @@ $1' END;
            count_may_scan := true;
        ELSE
            FOR i IN 1 .. coalesce(array_length(pos, 1), 0) LOOP
                cond := cond || format(' AND $4[%s] <%% m.text', i);
            END LOOP;
        END IF;
        FOR i IN 1 .. coalesce(array_length(negs, 1), 0) LOOP
            cond := cond || format(' AND m.text NOT ILIKE $15[%s]', i);
        END LOOP;
        IF cardinality(pos) = 0 THEN
            cond := cond || ' AND m.text IS NOT NULL';
        END IF;
        plain_len := length(cond);
        rank_expr := 'parley_fuzzy_score(m.text, $3)';
    END IF;
    -- A surface's search (p_source: src/db/sql/sources.sql) keeps to its
    -- source's chats: of the chats asked for, those of it; else one more
    -- filter: not the other sources' chats ("<> ALL", a hashed test of
    -- each row that changes no plan: the store's other sources are
    -- usually few chats), or, when they are more than the source's own
    -- chats, one of its own. In a store of one source there is nothing to
    -- keep out, and the statement is the one without p_source.
    IF p_source IS NOT NULL THEN
        others := parley_source_others(p_source);
        IF cardinality(others) > 0 AND p_chat_ids IS NOT NULL THEN
            p_chat_ids := ARRAY(SELECT x FROM unnest(p_chat_ids) AS x WHERE x <> ALL (others));
        ELSIF cardinality(others) > 0
              AND cardinality(others) > (SELECT count(*) FROM chats c
                                         WHERE c.kind = ANY (parley_source_kinds(p_source))) THEN
            p_chat_ids := ARRAY(SELECT c.id FROM chats c
                                WHERE c.kind = ANY (parley_source_kinds(p_source)));
        ELSIF cardinality(others) > 0 THEN
            cond := cond || ' AND m.chat_id <> ALL ($21)';
        END IF;
    END IF;
    IF p_chat_ids IS NOT NULL THEN cond := cond || ' AND m.chat_id = ANY ($5)'; END IF;
    IF p_topic IS NOT NULL THEN cond := cond || ' AND m.topic_id = $6'; END IF;
    IF p_sender IS NOT NULL THEN cond := cond || ' AND m.sender_id = $7'; END IF;
    IF p_from_date IS NOT NULL THEN cond := cond || ' AND m.date >= $8'; END IF;
    IF p_to_date IS NOT NULL THEN cond := cond || ' AND m.date <= $9'; END IF;
    IF p_rx IS NOT NULL THEN cond := cond || ' AND m.text ~* $10'; END IF;
    cond := cond || CASE p_kind
        WHEN 'links' THEN ' AND m.has_link'
        WHEN 'media' THEN ' AND m.media_kind IS NOT NULL'
        WHEN 'photos' THEN ' AND m.media_kind = ''photo'''
        WHEN 'videos' THEN ' AND m.media_kind IN (''video'', ''animation'', ''video_note'')'
        WHEN 'documents' THEN ' AND m.media_kind = ''document'''
        WHEN 'files' THEN ' AND EXISTS (SELECT 1 FROM media f WHERE f.chat_id = m.chat_id '
                          'AND f.message_id = m.id)'
        ELSE '' END;
    -- The hits first (up to count_max + 1, their keys): with few hits (a
    -- rare word, the usual search) every hit is read from the index once,
    -- then the page is sorted from their keys; never found by walking
    -- messages in date order and testing each row, which reads the whole
    -- table when the rows are rare. With more, PostgreSQL chooses (the date
    -- order finds a common word's newest hits at once).
    -- A full-text query without a phrase (or a fuzzy one through the
    -- vocabulary) may be counted by reading the
    -- table until the 1,001st hit, where PostgreSQL's estimate says a
    -- word is common (a word in 8 % of a million messages: 10 ms, against
    -- 17-52 ms to build the index's bitmap of every hit); a phrase's
    -- estimate counts the rows holding its words, which can be many more
    -- than hold the phrase, so phrases and the other modes keep to the
    -- indexes.
    -- A regex alone that the column's statistics say is common
    -- (parley_text_share) is counted by reading the table from its start,
    -- up to count_max + 1 hits: the trigram index builds its bitmap of
    -- every row holding the regex's trigrams before the first hit (31 ms
    -- for data.?base, in 8.5 % of a million messages), where reading finds
    -- count_max + 1 hits in about (count_max + 1) / share rows (10 ms).
    -- Reading is the cheaper when share * share * rows > probe_cost *
    -- (count_max + 1); it stops after twice the rows the share says, and
    -- short of count_max + 1 hits there (the sample misled, or the hits
    -- are elsewhere in the table) the indexes count them as before. With a
    -- chat, sender, topic or dates their indexes narrow the rows, and a
    -- kind of content makes the hits fewer than the share: no reading (a
    -- surface's filter of the other sources' chats stays in cond: those
    -- are usually few).
    IF mode = 'filter' AND p_rx IS NOT NULL AND p_chat_ids IS NULL AND p_topic IS NULL
       AND p_sender IS NULL AND p_from_date IS NULL AND p_to_date IS NULL
       AND coalesce(p_kind, '') = '' THEN
        SELECT reltuples INTO walk_n FROM pg_class WHERE oid = 'messages'::regclass;
        rx_share := parley_text_share(p_rx);
        IF walk_n > 0 AND rx_share > 0
           AND rx_share * rx_share * walk_n > probe_cost * (count_max + 1) THEN
            PERFORM set_config('enable_seqscan', 'on', true);
            EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM (SELECT * FROM messages '
                           'LIMIT $23) m WHERE %s LIMIT $13) x', cond)
                INTO n
                USING tsq, pats, terms, pos, p_chat_ids, p_topic, p_sender, p_from_date,
                      p_to_date, p_rx, p_lim, p_off, count_max + 1, pairs, negs, qx_rank,
                      rank_window, phr, hit_chats, hit_ids, others, wpairs,
                      ceil(2 * (count_max + 1) / rx_share)::bigint;
            PERFORM set_config('enable_seqscan', 'off', true);
        END IF;
    END IF;
    -- A full-text query (or a fuzzy one through the vocabulary) whose
    -- hits PostgreSQL estimates to be many is counted by walking the
    -- newest messages by date (messages_date_idx) until count_max + 1
    -- hits: that reads about (count_max + 1) * rows / est rows whatever
    -- the archive's size, where the index's bitmap holds every hit (a
    -- word in 3.5 % of two million messages: 15 ms, growing with the
    -- archive) and a sequential scan meets the hits in the order they
    -- were written (an archive imported chat by chat keeps a language's
    -- messages together: 500 ms for a Russian word at two million,
    -- 900 ms at five). Walking is the cheaper when est * est > walk_cost
    -- * (count_max + 1) * rows; it stops after walk_slack times the rows
    -- the estimate says, and short of count_max + 1 hits (the estimate
    -- misled, or the hits are old) the index counts them as before
    -- (walk_slack: PostgreSQL counts a word and its stem in one message
    -- twice, so a word's estimate is up to twice its hits). A
    -- phrase is estimated by its pairs (the rows the pairs' index reads)
    -- and walked without them.
    IF mode = 'fulltext' OR count_may_scan THEN
        SELECT reltuples INTO walk_n FROM pg_class WHERE oid = 'messages'::regclass;
        est_cond := CASE WHEN mode = 'fulltext' AND plain <> left(cond, plain_len)
                              AND cardinality(wpairs) > 0
                         THEN 'parley_word_pairs(m.tsv) @> $22' ELSE left(cond, plain_len) END
                    || substr(cond, plain_len + 1);
        est := parley_search_estimate(est_cond, tsq, pats, terms, pos, p_chat_ids, p_topic,
                                      p_sender, p_from_date, p_to_date, p_rx, pairs, negs, qx_rank,
                                      phr, others, wpairs);
        -- The walk: up to $13 hits among the newest $23 messages, newest
        -- first, and how many messages it read to find them.
        stmt := format('SELECT count(*), array_agg(chat_id ORDER BY date DESC, id DESC), '
                       'array_agg(id ORDER BY date DESC, id DESC), max(rn) '
                       'FROM (SELECT m.chat_id, m.id, m.date, m.rn '
                       'FROM (SELECT m.*, row_number() OVER () AS rn FROM (SELECT * '
                       'FROM messages m ORDER BY m.date DESC, m.id DESC LIMIT $23) m) m '
                       'WHERE %s LIMIT $13) x',
                       coalesce(plain, left(cond, plain_len)) || substr(cond, plain_len + 1));
        sure := est >= sure_factor * (count_max + 1) AND p_chat_ids IS NULL AND p_topic IS NULL
                AND p_sender IS NULL AND p_from_date IS NULL AND p_to_date IS NULL
                AND p_rx IS NULL AND coalesce(p_kind, '') = '';
        count_walk := est * est > walk_cost * (count_max + 1) * walk_n;
        IF walk_n > 0 AND est > 0 AND (count_walk OR sure) THEN
            -- Where the estimate says the hits are many times count_max,
            -- the page's hits first (at least sure_hits): when the rate
            -- they came at says so too (rate * rows >= sure_factor *
            -- (count_max + 1)), there are more than count_max, and the
            -- count stops there without reading on to the 1,001st (two
            -- common words together: 72,000 rows of five million for
            -- the 1,001st, 7,000 for the 100th). Both must agree: the
            -- estimate comes from a sample of the whole table, so a
            -- burst of recent hits of a rare query never passes it, and
            -- the rate from the hits found, so an estimate that
            -- multiplied the shares of two words that never meet never
            -- does. Without a filter of chats, topic, sender, dates, kind
            -- or regex only (a surface's keeping out of the other
            -- sources' chats aside): the rate over the newest messages
            -- says nothing of the rows a filter keeps (a month's hits
            -- are not the archive's). This walk is worth it even where the
            -- count's would not be (est^2 under walk_cost * (count_max +
            -- 1) * rows: two Russian words in 0.9 % of five million
            -- messages, whose 43,000 hits the index would read; the walk
            -- reads 23,000 rows for the newest 200), bounded then by the
            -- rows the estimate says for its own hits. (With the count's
            -- walk to come, the same bound as that: short of the page's
            -- hits there, that walk would fall short too, and the index
            -- counts.)
            IF sure THEN
                EXECUTE stmt INTO n, hit_chats, hit_ids, walk_est
                    USING tsq, pats, terms, pos, p_chat_ids, p_topic, p_sender, p_from_date,
                          p_to_date, p_rx, p_lim, p_off, least(greatest(need, sure_hits), count_max + 1),
                          pairs, negs, qx_rank, rank_window, phr, hit_chats, hit_ids, others,
                          wpairs,
                          ceil(walk_slack * CASE WHEN count_walk THEN count_max + 1
                                                 ELSE least(greatest(need, sure_hits), count_max + 1)
                                            END * walk_n / est)::bigint;
                IF n = least(greatest(need, sure_hits), count_max + 1)
                   AND n * walk_n / walk_est >= sure_factor * (count_max + 1) THEN
                    walked := true;
                ELSIF n < least(greatest(need, sure_hits), count_max + 1) THEN
                    n := 0;
                END IF;
            END IF;
            IF NOT walked AND n IS DISTINCT FROM 0 AND count_walk THEN
                EXECUTE stmt INTO n, hit_chats, hit_ids, walk_est
                    USING tsq, pats, terms, pos, p_chat_ids, p_topic, p_sender, p_from_date,
                          p_to_date, p_rx, p_lim, p_off, count_max + 1, pairs, negs, qx_rank,
                          rank_window, phr, hit_chats, hit_ids, others, wpairs,
                          ceil(walk_slack * (count_max + 1) * walk_n / est)::bigint;
                walked := n > count_max;
            END IF;
            IF walked THEN
                hits_n := n;
                n := greatest(n, count_max + 1);
            ELSE
                n := NULL;
                hit_chats := NULL;
                hit_ids := NULL;
            END IF;
        END IF;
    END IF;
    -- Estimated at more than count_max hits but too few to walk for (the
    -- two words in 0.12 % of the messages that each is in 3.5 % of; up to
    -- read_all_max, or as long as the page would not walk either): every
    -- hit's key read once, newest first, from the index's one bitmap, up
    -- to read_all_cap rows (an estimate can be low); the page is made from
    -- them. Counting to count_max + 1 and then reading the index again for
    -- the page's newest hits read the words' postings twice (at five
    -- million messages, 350,000 of them: twice 25 ms), and sorted the
    -- whole rows of every hit by date (95 ms for 6,000).
    IF n IS NULL AND est > count_max
       AND (est <= read_all_max OR est * est <= walk_cost * need * walk_n) THEN
        EXECUTE format('SELECT count(*), array_agg(chat_id ORDER BY date DESC, id DESC), '
                       'array_agg(id ORDER BY date DESC, id DESC) '
                       'FROM (SELECT m.chat_id, m.id, m.date FROM messages m WHERE %s '
                       'OFFSET 0 LIMIT $13) x', cond)
            INTO n, hit_chats, hit_ids
            USING tsq, pats, terms, pos, p_chat_ids, p_topic, p_sender, p_from_date, p_to_date,
                  p_rx, p_lim, p_off, read_all_cap, pairs, negs, qx_rank, rank_window, phr,
                  hit_chats, hit_ids, others, wpairs;
        IF n >= read_all_cap THEN
            n := NULL;
            hit_chats := NULL;
            hit_ids := NULL;
        ELSE
            read_all := true;
            walked := n > count_max;
            hits_n := n;
        END IF;
    END IF;
    IF n IS NULL OR n <= count_max AND NOT read_all THEN
        EXECUTE format('SELECT count(*), array_agg(chat_id), array_agg(id) '
                       'FROM (SELECT m.chat_id, m.id FROM messages m WHERE %s LIMIT $13) x', cond)
            INTO n, hit_chats, hit_ids
            USING tsq, pats, terms, pos, p_chat_ids, p_topic, p_sender, p_from_date, p_to_date,
                  p_rx, p_lim, p_off, count_max + 1, pairs, negs, qx_rank, rank_window, phr,
                  hit_chats, hit_ids, others, wpairs;
    END IF;
    PERFORM set_config('enable_seqscan', 'off', true);
    -- Past count_max hits, a full-text or fuzzy page: from the walk's hits
    -- when they reach the page's need (they are the newest); else the
    -- same weighing for the page's need: walking the newest messages
    -- (need * rows / est rows, bounded as the count's walk; a phrase
    -- without its pairs, which cost a parse of each row walked) or, when
    -- that reads more or falls short (the hits are old), reading the
    -- index's hits and sorting them by date (est rows: a phrase whose
    -- pairs are rare, 1,977 rows for "search index" in two million
    -- messages, where the walk read 40,000 rows for the newest 200: 110 ms
    -- against 10).
    IF walked AND need <= hits_n THEN
        hit_chats := hit_chats[1:need];
        hit_ids := hit_ids[1:need];
    ELSIF n > count_max AND est IS NOT NULL THEN
        walked := false;
        IF walk_n > 0 AND est > 0 AND est * est > walk_cost * need * walk_n THEN
            EXECUTE stmt INTO hits_n, hit_chats, hit_ids, walk_est
                USING tsq, pats, terms, pos, p_chat_ids, p_topic, p_sender, p_from_date,
                      p_to_date, p_rx, p_lim, p_off, need, pairs, negs, qx_rank, rank_window,
                      phr, hit_chats, hit_ids, others, wpairs,
                      ceil(walk_slack * need * walk_n / est)::bigint;
            walked := hits_n = need;
        END IF;
        page_index := NOT walked;
    END IF;
    -- A common CJK term (more than count_max hits): the planner takes the
    -- pair index's hits for a few times fewer than they are (it multiplies
    -- the pair's share by the share of messages with CJK text, which every
    -- such message has), so it reads and sorts every hit for a page (43,000
    -- for a pair in 4 % of a million messages: 40-60 ms) where walking the
    -- newest messages finds a page in a few thousand rows. The pairs' own
    -- statistics (migration 023) and the table's size say
    -- which reads less: walking reads about need / share rows, the index
    -- share * rows hits. Without other filters only (a chat, a sender or
    -- dates change both sides).
    IF n > count_max AND mode = 'substring' AND cardinality(pairs) > 0
       AND p_chat_ids IS NULL AND p_topic IS NULL AND p_sender IS NULL
       AND p_from_date IS NULL AND p_to_date IS NULL AND p_rx IS NULL
       AND coalesce(p_kind, '') = '' THEN
        SELECT reltuples INTO walk_n FROM pg_class WHERE oid = 'messages'::regclass;
        walk_est := walk_n * parley_cjk_pairs_share(pairs);
        walk := walk_n > 0 AND walk_est > 0
                AND walk_est * walk_est > walk_cost * walk_n
                    * CASE WHEN by_rank THEN greatest(rank_window, p_lim + p_off)
                           ELSE p_lim + p_off END;
        IF walk THEN
            cond := plain || substr(cond, plain_len + 1);
            PERFORM set_config('enable_bitmapscan', 'off', true);
        END IF;
    END IF;
    IF (n <= count_max OR walked) AND mode <> 'filter' THEN
        src := '(SELECT m.* FROM unnest($19::bigint[], $20::bigint[]) AS k(chat_id, id) '
               'JOIN messages m ON m.chat_id = k.chat_id AND m.id = k.id) m';
    ELSIF page_index THEN
        -- (OFFSET 0: planned alone, so the page's order cannot turn it
        -- into a walk of the date index)
        src := '(SELECT * FROM (SELECT * FROM messages m WHERE %s OFFSET 0) m '
               'ORDER BY m.date DESC, m.id DESC LIMIT ' || need || ') m';
    ELSIF by_rank AND mode <> 'filter' THEN
        src := '(SELECT * FROM messages m WHERE %s ORDER BY m.date DESC, m.id DESC '
               'LIMIT greatest($17, $11 + $12)) m';
    END IF;
    stmt := format($f$
        WITH page AS (
            SELECT m.chat_id, m.id, %1$s AS rank
            FROM %7$s
            ORDER BY %3$s
            LIMIT greatest($11, 0) OFFSET greatest($12, 0))
        SELECT jsonb_build_object(
            'results', coalesce((
                SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                           'chat_id', m.chat_id, 'chat_title', c.title, 'id', m.id,
                           'topic_id', m.topic_id, 'date', m.date, 'edit_date', m.edit_date,
                           'sender_id', m.sender_id, 'sender_name', m.sender_name,
                           'text', m.text, 'snippet', %4$s,
                           'rank', round((%5$s)::numeric, 4), 'media_kind', m.media_kind,
                           'has_link', m.has_link, 'kind', m.kind,
                           'reply_to_id', m.reply_to_id))
                       ORDER BY %6$s)
                FROM page JOIN messages m ON m.chat_id = page.chat_id AND m.id = page.id
                LEFT JOIN chats c ON c.id = m.chat_id), '[]'::jsonb))
        $f$,
        CASE WHEN by_rank THEN rank_expr ELSE 'NULL::real' END,
        cond,
        CASE WHEN by_rank THEN 'rank DESC NULLS LAST, m.date DESC, m.id DESC'
             ELSE 'm.date DESC, m.id DESC' END,
        snip_expr,
        CASE WHEN by_rank THEN 'page.rank' ELSE rank_expr END,
        CASE WHEN by_rank THEN 'page.rank DESC NULLS LAST, m.date DESC, m.id DESC'
             ELSE 'm.date DESC, m.id DESC' END,
        format(src, cond));
    EXECUTE stmt INTO res
        USING tsq, pats, terms, pos, p_chat_ids, p_topic, p_sender, p_from_date, p_to_date,
              p_rx, p_lim, p_off, count_max + 1, pairs, negs, qx_rank, rank_window, phr,
              hit_chats, hit_ids, others, wpairs;
    RETURN res || jsonb_build_object(
        'count', least(n, count_max),
        'limit', p_lim, 'offset', p_off,
        'mode', CASE WHEN mode = 'filter' AND p_rx IS NOT NULL THEN 'regex' ELSE mode END)
        || CASE WHEN n > count_max THEN jsonb_build_object('countCapped', true) ELSE '{}' END
        -- By rank past count_max hits: the newest `candidates` matches
        -- were ranked, not all (docs/search.md, "Ranking").
        || CASE WHEN n > count_max AND by_rank AND mode <> 'filter'
                THEN jsonb_build_object('candidatesCapped', true,
                                        'candidates', greatest(rank_window, p_lim + p_off))
                ELSE '{}' END;
END
$$;
