-- 003_search: message search for the archive layer (src/archive/search.c).
-- parley_search returns the whole answer as one JSON document, built here.
--
-- Matching, per query:
--   * full text (default): websearch_to_tsquery('simple', q) against
--     messages.tsv: words, "phrases", OR, -exclusion; case-insensitive;
--     any script that separates words with spaces (English, Russian, ...);
--     ranked with ts_rank_cd, snippets by ts_headline;
--   * text in scripts without spaces between words (Chinese, Japanese,
--     Korean, Thai): every term must occur as a substring (case-insensitive),
--     -term must not; ranked by how early the first term occurs;
--   * fuzzy: every term must be similar (pg_trgm word similarity >= 0.5) to
--     a word of the text (misspellings, other word forms); ranked by the
--     mean similarity;
--   * regex: a case-insensitive POSIX regular expression, alone or beside a
--     query.

-- True when s holds characters of scripts written without spaces.
CREATE FUNCTION parley_has_cjk(s text) RETURNS boolean
    LANGUAGE sql IMMUTABLE AS $$
    SELECT s ~ '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f\uf900-\ufaff]'
$$;

-- The terms of a web-search query for substring matching: quotes removed,
-- "OR" dropped, lower case.
CREATE FUNCTION parley_query_terms(q text) RETURNS text[]
    LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(array_agg(lower(w)), '{}')
    FROM regexp_split_to_table(btrim(replace(q, '"', ' ')), '\s+') AS w
    WHERE w <> '' AND w <> 'OR' AND w <> '-'
$$;

CREATE FUNCTION parley_substring_match(t text, terms text[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE AS $$
    SELECT t IS NOT NULL AND coalesce(bool_and(CASE
        WHEN w LIKE '-%' THEN strpos(lower(t), substr(w, 2)) = 0
        ELSE strpos(lower(t), w) > 0 END), true)
    FROM unnest(terms) AS w
$$;

-- About 120 characters of t around the first occurrence of the first
-- positive term, the term between ** marks.
CREATE FUNCTION parley_substring_snippet(t text, terms text[]) RETURNS text
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
CREATE FUNCTION parley_fuzzy_score(t text, terms text[]) RETURNS real
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN t IS NULL THEN NULL
        WHEN bool_or(w LIKE '-%' AND strpos(lower(t), substr(w, 2)) > 0) THEN NULL
        WHEN coalesce(bool_and(w LIKE '-%' OR word_similarity(w, t) >= 0.5), false)
            THEN avg(word_similarity(w, t)) FILTER (WHERE w NOT LIKE '-%')::real
    END
    FROM unnest(terms) AS w
$$;

-- Searches messages. Every filter is optional (NULL). kind: links, media,
-- photos, videos, documents, files. order_by: 'time' (newest first, the
-- default) or 'rank'. Returns {"results": [...], "count": n, "limit": l,
-- "offset": o, "mode": "fulltext"|"substring"|"fuzzy"|"regex"|"filter"}.
CREATE FUNCTION parley_search(p_q text, p_rx text, p_fuzzy boolean, p_chat_ids bigint[],
                              p_topic bigint, p_sender bigint, p_from_date timestamptz,
                              p_to_date timestamptz, p_kind text, p_order_by text, p_lim integer,
                              p_off integer) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    WITH params AS (
        SELECT nullif(btrim(p_q), '') AS q,
               CASE WHEN nullif(btrim(p_q), '') IS NULL THEN 'filter'
                    WHEN coalesce(p_fuzzy, false) THEN 'fuzzy'
                    WHEN parley_has_cjk(p_q) THEN 'substring'
                    ELSE 'fulltext' END AS mode
    ), p AS (
        SELECT params.*,
               CASE WHEN mode = 'fulltext' THEN websearch_to_tsquery('simple', params.q) END AS tsq,
               parley_query_terms(params.q) AS terms
        FROM params
    ), hits AS (
        SELECT m.chat_id, m.id, m.topic_id, m.date, m.edit_date, m.sender_id, m.sender_name,
               m.text, m.media_kind, m.has_link, m.kind, m.reply_to_id,
               CASE p.mode
                   WHEN 'fulltext' THEN ts_rank_cd(m.tsv, p.tsq)
                   WHEN 'fuzzy' THEN parley_fuzzy_score(m.text, p.terms)
                   WHEN 'substring' THEN
                       1.0 / (1 + strpos(lower(m.text), coalesce(p.terms[1], '')))
                   ELSE 0
               END AS rank,
               CASE p.mode
                   WHEN 'fulltext' THEN ts_headline('simple', m.text, p.tsq,
                       'StartSel=**, StopSel=**, MaxWords=35, MinWords=15')
                   WHEN 'substring' THEN parley_substring_snippet(m.text, p.terms)
                   WHEN 'fuzzy' THEN left(m.text, 160)
                   ELSE left(m.text, 160)
               END AS snippet,
               p.mode
        FROM messages m, p
        WHERE (p_chat_ids IS NULL OR m.chat_id = ANY (p_chat_ids))
          AND (p_topic IS NULL OR m.topic_id = p_topic)
          AND (p_sender IS NULL OR m.sender_id = p_sender)
          AND (p_from_date IS NULL OR m.date >= p_from_date)
          AND (p_to_date IS NULL OR m.date <= p_to_date)
          AND (p_rx IS NULL OR m.text ~* p_rx)
          AND CASE p_kind
                  WHEN 'links' THEN m.has_link
                  WHEN 'media' THEN m.media_kind IS NOT NULL
                  WHEN 'photos' THEN m.media_kind = 'photo'
                  WHEN 'videos' THEN m.media_kind IN ('video', 'animation', 'video_note')
                  WHEN 'documents' THEN m.media_kind = 'document'
                  WHEN 'files' THEN EXISTS (SELECT 1 FROM media f
                                            WHERE f.chat_id = m.chat_id AND f.message_id = m.id)
                  ELSE true
              END
          AND CASE p.mode
                  WHEN 'fulltext' THEN m.tsv @@ p.tsq
                  WHEN 'substring' THEN parley_substring_match(m.text, p.terms)
                  WHEN 'fuzzy' THEN parley_fuzzy_score(m.text, p.terms) IS NOT NULL
                  ELSE true
              END
    ), counted AS (
        SELECT count(*) AS n FROM hits
    ), page AS (
        SELECT * FROM hits
        ORDER BY CASE WHEN p_order_by = 'rank' THEN rank END DESC NULLS LAST, date DESC, id DESC
        LIMIT greatest(p_lim, 0) OFFSET greatest(p_off, 0)
    )
    SELECT jsonb_build_object(
        'results', coalesce((
            SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                       'chat_id', page.chat_id, 'chat_title', c.title, 'id', page.id,
                       'topic_id', page.topic_id, 'date', page.date, 'edit_date', page.edit_date,
                       'sender_id', page.sender_id, 'sender_name', page.sender_name,
                       'text', page.text, 'snippet', page.snippet,
                       'rank', round(page.rank::numeric, 4), 'media_kind', page.media_kind,
                       'has_link', page.has_link, 'kind', page.kind,
                       'reply_to_id', page.reply_to_id))
                   ORDER BY CASE WHEN p_order_by = 'rank' THEN page.rank END DESC NULLS LAST,
                            page.date DESC, page.id DESC)
            FROM page LEFT JOIN chats c ON c.id = page.chat_id), '[]'::jsonb),
        'count', (SELECT n FROM counted),
        'limit', p_lim, 'offset', p_off,
        'mode', CASE WHEN (SELECT mode FROM params) = 'filter' AND p_rx IS NOT NULL THEN 'regex'
                     ELSE (SELECT mode FROM params) END)
$$;
