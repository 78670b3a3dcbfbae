-- 012_search_plans: parley_search with plans that use the indexes. The
-- version of migration 003 chose the matching mode inside one statement
-- (CASE), so no index could serve it, and it built the ranking and the
-- snippet of every hit before taking a page: seconds on a million
-- messages. Here each mode becomes its own parameterised statement
-- (EXECUTE ... USING: values are never spliced into the text):
--   * fulltext: m.tsv @@ query (GIN index on tsv);
--   * substring (CJK): the pairs of adjacent CJK characters of the terms
--     must all be in the message (a GIN index of each CJK message's pairs:
--     Chinese and Japanese words are mostly two characters, too short for
--     a trigram), then one ILIKE per term (the trigram index serves terms
--     of three characters or more), and one NOT ILIKE per -term;
--   * fuzzy: term <% text (trigram index, word similarity >= 0.5), checked
--     again with parley_fuzzy_score;
--   * regex: text ~* pattern (trigram index);
--   and only the filters given are added. The page is chosen first (rank
--   computed for every hit only when ordering by rank), and snippets are
--   made for the page alone. "count" is exact up to 1,000; past it the
--   answer says "countCapped": true (counting every hit of a common word,
--   or of a two-character CJK term no index can serve, costs more than the
--   page itself).
-- Results, modes, ranks and snippets are as before.
-- The distinct pairs of adjacent characters of t that are both of a script
-- written without spaces (lower case).
CREATE FUNCTION parley_cjk_bigrams(t text) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT b), '{}')
    FROM (SELECT substr(lower(t), i, 2) AS b FROM generate_series(1, length(t) - 1) AS i) x
    WHERE b ~ '^[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f\uf900-\ufaff]{2}$'
$$;

CREATE INDEX messages_cjk_bigrams_idx ON messages USING gin (parley_cjk_bigrams(text))
    WHERE parley_has_cjk(text);

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
        tsq := websearch_to_tsquery('simple', q);
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

-- messagesSearch as in migration 005, saying when "total" is capped.
CREATE OR REPLACE FUNCTION parley_tg_messages_search(a jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    chats bigint[];
    lim integer := parley_tg_limit(a, 100, 500);
    rx text := a ->> 'regex';
    r jsonb;
BEGIN
    IF jsonb_typeof(a -> 'channelIds') = 'array' AND jsonb_array_length(a -> 'channelIds') > 0 THEN
        SELECT array_agg(parley_tg_chat(jsonb_build_object('channelIds', e), 'channelIds'))
        INTO chats FROM jsonb_array_elements(a -> 'channelIds') AS e;
    END IF;
    IF jsonb_typeof(a -> 'tags') = 'array' AND jsonb_array_length(a -> 'tags') > 0 THEN
        SELECT coalesce(array_agg(DISTINCT t.chat_id), '{}') INTO chats
        FROM chat_tags t
        WHERE t.tag IN (SELECT lower(x) FROM jsonb_array_elements_text(a -> 'tags') x)
          AND (chats IS NULL OR t.chat_id = ANY (chats));
    END IF;
    IF rx IS NOT NULL AND NOT coalesce((a ->> 'caseInsensitive')::boolean, true) THEN
        rx := '(?c)' || rx;
    END IF;
    BEGIN
        r := parley_search(a ->> 'query', rx, coalesce((a ->> 'fuzzy')::boolean, false), chats,
                           (a ->> 'topicId')::bigint, NULL, parley_tg_time(a, 'fromDate'),
                           parley_tg_time(a, 'toDate'), a ->> 'kind',
                           coalesce(a ->> 'orderBy', 'time'), lim, 0);
    EXCEPTION WHEN invalid_regular_expression THEN
        PERFORM parley_tg_bad(format('regex: %s is not a valid regular expression (%s)',
                                     to_jsonb(a ->> 'regex')::text, SQLERRM));
    END;
    RETURN parley_tg_page(a, 100, 500) || jsonb_build_object(
        'mode', r -> 'mode', 'total', r -> 'count',
        'totalCapped', coalesce(r -> 'countCapped', 'false'),
        'messages', coalesce((SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
            'channelId', h -> 'chat_id', 'channelTitle', h -> 'chat_title',
            'messageId', h -> 'id', 'topicId', h -> 'topic_id', 'date', h -> 'date',
            'senderId', h -> 'sender_id', 'senderName', h -> 'sender_name', 'text', h -> 'text',
            'snippet', h -> 'snippet', 'rank', h -> 'rank', 'mediaKind', h -> 'media_kind',
            'hasLink', h -> 'has_link', 'match', r -> 'mode')) ORDER BY ord)
            FROM jsonb_array_elements(r -> 'results') WITH ORDINALITY AS x(h, ord)), '[]'));
END
$$;
