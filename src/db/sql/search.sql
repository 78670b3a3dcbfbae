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

CREATE OR REPLACE FUNCTION parley_search(p_q text, p_rx text, p_fuzzy boolean,
                                         p_chat_ids bigint[], p_topic bigint, p_sender bigint,
                                         p_from_date timestamptz, p_to_date timestamptz,
                                         p_kind text, p_order_by text, p_lim integer,
                                         p_off integer) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET pg_trgm.word_similarity_threshold = 0.5
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
    stmt text;
    res jsonb;
    n bigint;
BEGIN
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
        -- A run of exclusions counts as one ("--x", "- - x" and "-!-x" as
        -- "-x"): PostgreSQL's websearch parser stacks each and fails past
        -- 32 ("tsquery stack too small", an internal error).
        tsq := websearch_to_tsquery('simple', regexp_replace(q, '-([^[:alnum:]_"]*-)+', '-', 'g'));
        cond := 'm.tsv @@ $1';
        rank_expr := 'ts_rank_cd(m.tsv, $1)';
        snip_expr := 'ts_headline(''simple'', m.text, $1, '
                     '''StartSel=**, StopSel=**, MaxWords=35, MinWords=15'')';
    ELSIF mode = 'substring' THEN
        FOR i IN 1 .. coalesce(array_length(pats, 1), 0) LOOP
            cond := cond || format(' AND m.text ILIKE $2[%s]', i);
        END LOOP;
        SELECT coalesce(array_agg(DISTINCT b), '{}') INTO pairs
        FROM unnest(pos) AS t, unnest(parley_cjk_bigrams(t)) AS b;
        IF cardinality(pairs) > 0 THEN
            cond := cond || ' AND parley_has_cjk(m.text) AND parley_cjk_bigrams(m.text) @> $14';
        END IF;
        FOR i IN 1 .. coalesce(array_length(negs, 1), 0) LOOP
            cond := cond || format(' AND m.text NOT ILIKE $15[%s]', i);
        END LOOP;
        IF cardinality(pats) = 0 THEN
            cond := cond || ' AND m.text IS NOT NULL';
        END IF;
        rank_expr := '(1.0 / (1 + strpos(lower(m.text), coalesce($3[1], ''''))))::real';
        snip_expr := 'parley_substring_snippet(m.text, $3)';
    ELSIF mode = 'fuzzy' THEN
        FOR i IN 1 .. coalesce(array_length(pos, 1), 0) LOOP
            cond := cond || format(' AND $4[%s] <%% m.text', i);
        END LOOP;
        cond := cond || ' AND parley_fuzzy_score(m.text, $3) IS NOT NULL';
        rank_expr := 'parley_fuzzy_score(m.text, $3)';
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
    stmt := format($f$
        WITH page AS (
            SELECT m.chat_id, m.id, %1$s AS rank
            FROM messages m WHERE %2$s
            ORDER BY %3$s
            LIMIT greatest($11, 0) OFFSET greatest($12, 0)),
        counted AS (
            SELECT count(*) AS n FROM (SELECT 1 FROM messages m WHERE %2$s LIMIT $13) x)
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
                LEFT JOIN chats c ON c.id = m.chat_id), '[]'::jsonb),
            'count', (SELECT n FROM counted))
        $f$,
        CASE WHEN by_rank THEN rank_expr ELSE 'NULL::real' END,
        cond,
        CASE WHEN by_rank THEN 'rank DESC NULLS LAST, m.date DESC, m.id DESC'
             ELSE 'm.date DESC, m.id DESC' END,
        snip_expr,
        CASE WHEN by_rank THEN 'page.rank' ELSE rank_expr END,
        CASE WHEN by_rank THEN 'page.rank DESC NULLS LAST, m.date DESC, m.id DESC'
             ELSE 'm.date DESC, m.id DESC' END);
    EXECUTE stmt INTO res
        USING tsq, pats, terms, pos, p_chat_ids, p_topic, p_sender, p_from_date, p_to_date,
              p_rx, p_lim, p_off, count_max + 1, pairs, negs;
    n := (res ->> 'count')::bigint;
    RETURN res || jsonb_build_object(
        'count', least(n, count_max),
        'limit', p_lim, 'offset', p_off,
        'mode', CASE WHEN mode = 'filter' AND p_rx IS NOT NULL THEN 'regex' ELSE mode END)
        || CASE WHEN n > count_max THEN jsonb_build_object('countCapped', true) ELSE '{}' END;
END
$$;
