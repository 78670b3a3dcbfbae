-- chatwise/tools: the chatwise toolset's answers over the imported
-- AI-assistant chats (chats of kind ai_chat): parley_cw_<tool>(a jsonb,
-- ctx jsonb). Ids are ChatWise's own text ids. Times are answered as the
-- tools' spec fixes them, epoch milliseconds (createdAt, timeRange.from
-- and .to), each with an ISO 8601 copy beside it for a reader
-- (createdAtIso, timeRange.fromIso and .toIso). A caller's mistake raises
-- SQLSTATE PT400 with what to change.

-- A time as epoch milliseconds.
CREATE OR REPLACE FUNCTION parley_cw_ms(t timestamptz) RETURNS bigint
    LANGUAGE sql IMMUTABLE AS $$
    SELECT (extract(epoch FROM t) * 1000)::bigint
$$;

-- A time as ISO 8601 in UTC with milliseconds (2024-05-01T10:00:00.123Z).
CREATE OR REPLACE FUNCTION parley_cw_iso(t timestamptz) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- A chat's timeRange: {from, to} in epoch milliseconds, {fromIso, toIso}.
CREATE OR REPLACE FUNCTION parley_cw_range(t_from timestamptz, t_to timestamptz) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('from', parley_cw_ms(t_from), 'to', parley_cw_ms(t_to),
                              'fromIso', parley_cw_iso(t_from), 'toIso', parley_cw_iso(t_to))
$$;

-- Where word occurs in txt (1-based characters), or NULL. basic: a Latin
-- word matches at a word start, case-insensitively (rust: Rust, rusty, not
-- trust); a CJK word as a substring. fuzzy as well: a close spelling (a
-- word of txt with trigram word similarity at least 0.5) or, for CJK, most
-- of the word's character pairs; the position is then the best guess.
CREATE OR REPLACE FUNCTION parley_cw_word_pos(txt text, word text, fuzzy boolean)
    RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    lt text := lower(coalesce(txt, ''));
    lw text := lower(word);
    p integer;
    grams text[];
    hit integer;
BEGIN
    IF lw = '' OR lt = '' THEN
        RETURN NULL;
    END IF;
    IF parley_has_cjk(lw) THEN
        p := strpos(lt, lw);
        IF p > 0 THEN
            RETURN p;
        END IF;
        IF fuzzy AND length(lw) >= 3 THEN
            grams := parley_cjk_bigrams(lw);
            SELECT count(*), min(nullif(strpos(lt, g), 0)) INTO hit, p
            FROM unnest(grams) g WHERE strpos(lt, g) > 0;
            IF cardinality(grams) > 0 AND hit::numeric / cardinality(grams) >= 0.6 THEN
                RETURN p;
            END IF;
        END IF;
        RETURN NULL;
    END IF;
    -- Most texts do not contain the word at all, or have it at a word start
    -- the first time: answered without a regular expression.
    p := strpos(lt, lw);
    IF p = 0 THEN
        IF fuzzy AND length(lw) >= 3 AND word_similarity(lw, lt) >= 0.5 THEN
            RETURN greatest(strpos(lt, left(lw, 3)), 1);
        END IF;
        RETURN NULL;
    END IF;
    IF p = 1 OR substr(lt, p - 1, 1) !~ '[[:alnum:]_]' THEN
        RETURN p;
    END IF;
    p := (SELECT min(length(m[1]) + 1)
          FROM regexp_matches(lt, '^(.*?(?:^|[^[:alnum:]_]))' ||
                                  regexp_replace(lw, '([.^$*+?()\[\]{}|\\-])', '\\\1', 'g'),
                              '') AS m);
    IF p IS NOT NULL THEN
        RETURN p;
    END IF;
    IF fuzzy AND length(lw) >= 3 AND word_similarity(lw, lt) >= 0.5 THEN
        RETURN greatest(strpos(lt, left(lw, 3)), 1);
    END IF;
    RETURN NULL;
END
$$;

-- The terms of intent_query: a string split at / , ， 、 | ; ；, or an
-- array of strings; each term its words (split at white space).
CREATE OR REPLACE FUNCTION parley_cw_terms(q jsonb) RETURNS text[]
    LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(array_agg(DISTINCT t ORDER BY t), '{}')
    FROM (SELECT btrim(regexp_replace(x, '\s+', ' ', 'g')) AS t
          FROM (SELECT regexp_split_to_table(q #>> '{}', '[/,，、|;；]') AS x
                WHERE jsonb_typeof(q) = 'string'
                UNION ALL
                SELECT e FROM jsonb_array_elements_text(
                    CASE WHEN jsonb_typeof(q) = 'array' THEN q ELSE '[]' END) e) s) s2
    WHERE t <> ''
$$;

-- Where every word of term occurs in txt: the first word's position, or NULL.
CREATE OR REPLACE FUNCTION parley_cw_term_pos(txt text, term text, fuzzy boolean)
    RETURNS integer LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN bool_and(p IS NOT NULL) THEN min(p) END
    FROM (SELECT parley_cw_word_pos(txt, w, fuzzy) AS p
          FROM regexp_split_to_table(term, '\s+') w WHERE w <> '') s
$$;

-- About window characters of txt around position pos, cut on character
-- boundaries, with … where it was cut.
CREATE OR REPLACE FUNCTION parley_cw_snippet(txt text, pos integer, len integer, win integer)
    RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN s > 1 THEN '…' ELSE '' END
           || substr(txt, s, win + len)
           || CASE WHEN s + win + len <= length(txt) THEN '…' ELSE '' END
    FROM (SELECT greatest(1, coalesce(pos, 1) - win / 2) AS s) x
$$;

-- The bounds of time_window: '7d' '30d' '60d' '90d' 'all', any other
-- time parley_when reads (today, yesterday, last week, 3 days ago, a date:
-- from then on), or {start, end}, each a time parley_when reads (epoch
-- seconds or milliseconds, dates, date words; a day given as end is
-- included whole). ctx: the daemon's timezone and clock.
CREATE OR REPLACE FUNCTION parley_cw_window_in(w jsonb, ctx jsonb,
                                               OUT w_from timestamptz, OUT w_to timestamptz)
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    now_ts timestamptz := coalesce((ctx ->> 'now')::timestamptz, now());
BEGIN
    w_to := 'infinity';
    IF w IS NULL OR w = 'null' OR w = '"all"' THEN
        w_from := '-infinity';
    ELSIF jsonb_typeof(w) = 'string' AND (w #>> '{}') IN ('7d', '30d', '60d', '90d') THEN
        w_from := now_ts - make_interval(days => rtrim(w #>> '{}', 'd')::integer);
    ELSIF jsonb_typeof(w) = 'string' THEN
        BEGIN
            w_from := parley_when(w, 'time_window', false, ctx);
        EXCEPTION WHEN SQLSTATE 'PT400' THEN
            RAISE EXCEPTION 'time_window: one of 7d, 30d, 60d, 90d, all, a time (%), or {"start": time, "end": time}; got %',
                parley_when_forms(), w USING ERRCODE = 'PT400';
        END;
    ELSIF jsonb_typeof(w) = 'object' AND (w ? 'start' OR w ? 'end') THEN
        w_from := coalesce(parley_when(w -> 'start', 'time_window.start', false, ctx), '-infinity');
        w_to := coalesce(parley_when(w -> 'end', 'time_window.end', true, ctx), 'infinity');
        IF w_from > w_to THEN
            RAISE EXCEPTION 'time_window: {start, end} with start before end'
                USING ERRCODE = 'PT400';
        END IF;
    ELSE
        RAISE EXCEPTION 'time_window: one of 7d, 30d, 60d, 90d, all, a time (%), or {"start": time, "end": time}; got %',
            parley_when_forms(), w USING ERRCODE = 'PT400';
    END IF;
END
$$;

-- The same at now_ts in UTC (kept for callers of the first version).
CREATE OR REPLACE FUNCTION parley_cw_window(w jsonb, now_ts timestamptz,
                                            OUT w_from timestamptz, OUT w_to timestamptz)
    LANGUAGE sql STABLE AS $$
    SELECT * FROM parley_cw_window_in(w, jsonb_build_object('now', now_ts))
$$;

-- The ChatWise chats the tools see: a chat imported from several files (a
-- copy of app.db) once, its most recently written copy.
CREATE OR REPLACE FUNCTION parley_cw_chats() RETURNS SETOF chats
    LANGUAGE sql STABLE AS $$
    SELECT DISTINCT ON (external_id) *
    FROM chats WHERE kind = ANY (parley_source_kinds('chatwise')) AND external_id IS NOT NULL
    ORDER BY external_id, updated_at DESC, id DESC
$$;

-- The texts search_conversations searches in the window: contents, tool
-- text (tools), titles, as scope says; roles NULL for any; of the chats in
-- only_chats (NULL: all).
CREATE OR REPLACE FUNCTION parley_cw_texts(scope text, tools boolean, roles text[],
                                           w_from timestamptz, w_to timestamptz, only_chats bigint[])
    RETURNS TABLE (chat_id bigint, msg text, role text, at timestamptz, source text, txt text)
    LANGUAGE sql STABLE AS $$
    SELECT m.chat_id, m.external_id, coalesce(m.role, m.sender_name), m.date, 'content', m.text
    FROM messages m JOIN parley_cw_chats() c ON c.id = m.chat_id
    WHERE scope IN ('content', 'both') AND m.date >= w_from AND m.date <= w_to
      AND (only_chats IS NULL OR m.chat_id = ANY (only_chats))
      AND (roles IS NULL OR lower(coalesce(m.role, m.sender_name)) = ANY (roles))
      AND coalesce(m.text, '') <> ''
    UNION ALL
    SELECT m.chat_id, m.external_id, coalesce(m.role, m.sender_name), m.date, 'tool', m.tool_text
    FROM messages m JOIN parley_cw_chats() c ON c.id = m.chat_id
    WHERE tools AND scope IN ('content', 'both') AND m.tool_text IS NOT NULL
      AND m.date >= w_from AND m.date <= w_to AND (only_chats IS NULL OR m.chat_id = ANY (only_chats))
      AND (roles IS NULL OR lower(coalesce(m.role, m.sender_name)) = ANY (roles))
    UNION ALL
    SELECT c.id, NULL, NULL, coalesce(c.last_message_date, c.created_at), 'title', c.title
    FROM parley_cw_chats() c
    WHERE scope IN ('title', 'both') AND coalesce(c.title, '') <> ''
      AND roles IS NULL -- a title has no role
      AND (only_chats IS NULL OR c.id = ANY (only_chats))
      AND EXISTS (SELECT 1 FROM messages m WHERE m.chat_id = c.id AND m.date >= w_from
                  AND m.date <= w_to)
$$;

-- The chats that may match words (a superset), found through the indexes:
-- each Latin word by the trigram indexes on text and tool_text (ILIKE, and
-- <% for fuzzy), each CJK word by the index of CJK character pairs, titles
-- by a scan of the chats; NULL when a word cannot use an index (a Latin
-- word under three characters, a single CJK character): then every chat
-- is searched.
CREATE OR REPLACE FUNCTION parley_cw_candidates(words text[], fuzzy boolean, tools boolean,
                                                w_from timestamptz, w_to timestamptz)
    RETURNS bigint[] LANGUAGE plpgsql STABLE SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    preds text[] := '{}';
    latin text[] := '{}';
    plain text[] := '{}';
    grams text[] := '{}';
    w text;
    i integer;
    found_ids bigint[];
BEGIN
    FOREACH w IN ARRAY words LOOP
        IF parley_has_cjk(w) THEN
            IF cardinality(parley_cjk_bigrams(w)) = 0 THEN
                RETURN NULL;
            END IF;
            grams := grams || parley_cjk_bigrams(w)::text;
            i := cardinality(grams);
            preds := preds || format('(parley_has_cjk(m.text) AND parley_cjk_bigrams(m.text) %s ($3)[%s]::text[])',
                                     CASE WHEN fuzzy THEN '&&' ELSE '@>' END, i);
        ELSE
            IF length(w) < 3 THEN
                RETURN NULL;
            END IF;
            latin := latin || ('%' || replace(replace(replace(lower(w), '\', '\\'), '%', '\%'), '_', '\_') || '%');
            plain := plain || lower(w);
            i := cardinality(latin);
            preds := preds || format('m.text ILIKE ($1)[%s]', i);
            IF tools THEN
                preds := preds || format('m.tool_text ILIKE ($1)[%s]', i);
            END IF;
            IF fuzzy THEN
                preds := preds || format('($2)[%s] <%% m.text', i);
            END IF;
        END IF;
    END LOOP;
    IF cardinality(preds) = 0 THEN
        RETURN NULL;
    END IF;
    IF fuzzy THEN
        PERFORM set_config('pg_trgm.word_similarity_threshold', '0.5', true);
    END IF;
    -- The statement's shape comes from the words' kinds and count only;
    -- the words themselves are parameters.
    EXECUTE 'SELECT array_agg(DISTINCT m.chat_id) FROM messages m WHERE m.date >= $4 AND m.date <= $5 AND ('
            || array_to_string(preds, ' OR ') || ')'
        INTO found_ids USING latin, plain, grams, w_from, w_to;
    RETURN ARRAY(SELECT c.id FROM parley_cw_chats() c
                 WHERE c.id = ANY (coalesce(found_ids, '{}'))
                    OR EXISTS (SELECT 1 FROM unnest(words) x
                               WHERE parley_cw_word_pos(c.title, x, fuzzy) IS NOT NULL));
END
$$;

-- parley_cw_candidates of the words of terms (a term may be several words).
CREATE OR REPLACE FUNCTION parley_cw_term_candidates(terms text[], fuzzy boolean, tools boolean,
                                                     w_from timestamptz, w_to timestamptz)
    RETURNS bigint[] LANGUAGE sql STABLE AS $$
    SELECT parley_cw_candidates(
        ARRAY(SELECT DISTINCT w FROM unnest(terms) t, regexp_split_to_table(t, '\s+') w
              WHERE w <> ''),
        fuzzy, tools, w_from, w_to)
$$;

-- search_conversations' answer as text to read: the chats with their
-- snippets, then the guidance.
CREATE OR REPLACE FUNCTION parley_cw_search_text(terms text[], conf numeric, results jsonb,
                                                 next_actions jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT format(E'%s chat(s) for %s; confidence %s\n', jsonb_array_length(results),
                  array_to_string(terms, ' / '), conf)
        || coalesce((SELECT string_agg(format(E'\n%s. %s [%s]: %s hit(s), %s to %s\n%s', o,
                                              r ->> 'title', r ->> 'chatId', r ->> 'hits',
                                              left(r #>> '{timeRange,fromIso}', 10),
                                              left(r #>> '{timeRange,toIso}', 10),
                                              (SELECT string_agg(format(E'   - %s (%s, %s): %s',
                                                                        sn ->> 'role', sn ->> 'source',
                                                                        sn ->> 'messageId', sn ->> 'text'), E'\n')
                                               FROM jsonb_array_elements(r -> 'snippets') sn)), '' ORDER BY o)
                     FROM jsonb_array_elements(results) WITH ORDINALITY x(r, o)), '')
        || E'\n\nGuidance: stop if confidence >= 0.75 or at most 2 top chats.'
        || coalesce((SELECT string_agg(format(E'\n- %s %s: %s', n ->> 'tool', n -> 'args', n ->> 'why'), '')
                     FROM jsonb_array_elements(next_actions) n), '')
$$;

-- search_conversations: the spec's intent search, aggregated per chat.
-- Score of a chat: coverage (the share of the query's terms it has
-- anywhere searched, a term or one of its expansions) times 1 + ln(1 + hits), plus 0.5 when a term is in the
-- title. confidence: the top chat's coverage times how far it stands out,
-- 0.5 + 0.5 * (1 - second score / top score); 0 without results.
-- topChatIds: the chats scoring at least 60% of the top (at most 3).
-- Plans are made for each call's values (force_custom_plan): a plan made
-- once for any set of candidate chats would scan every message.
CREATE OR REPLACE FUNCTION parley_cw_search_conversations(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    now_ts timestamptz := coalesce((ctx ->> 'now')::timestamptz, now());
    terms text[] := parley_cw_terms(a -> 'intent_query');
    fuzzy boolean;
    expand boolean;
    tools boolean := coalesce((a ->> 'include_tools_in_search')::boolean, true);
    scope text := coalesce(a ->> 'scope', 'both');
    roles text[];
    excludes text[] := coalesce((SELECT array_agg(lower(e)) FROM jsonb_array_elements_text(
                                    coalesce(a -> 'exclude_terms', '[]')) e WHERE e <> ''), '{}');
    match_all boolean;
    lim integer := coalesce((a ->> 'limit_chats')::integer, 10);
    lim_snip integer := coalesce((a ->> 'limit_snippets_per_chat')::integer, 3);
    win integer := coalesce((a ->> 'snippet_window')::integer, 64);
    w_from timestamptz;
    w_to timestamptz;
    expanded jsonb := '{}';
    all_terms text[];
    all_srcs text[];
    cands bigint[];
    results jsonb;
    top jsonb;
    conf numeric := 0;
    s1 numeric;
    s2 numeric;
    top_ids jsonb;
    iterations integer := 1;
    next_actions jsonb := '[]';
    near jsonb;
    retry jsonb;
    -- The near reading's own call (below): it reads no further.
    near_pass boolean := a ? '_near';
BEGIN
    a := a - '_near';
    IF cardinality(terms) = 0 THEN
        RAISE EXCEPTION 'intent_query: give words or a phrase to look for (a string, or an array of strings)'
            USING ERRCODE = 'PT400';
    END IF;
    IF coalesce(a ->> 'precision_mode', 'basic') NOT IN ('basic', 'fuzzy') THEN
        RAISE EXCEPTION 'precision_mode: basic or fuzzy' USING ERRCODE = 'PT400';
    END IF;
    fuzzy := coalesce(a ->> 'precision_mode' = 'fuzzy', false);
    IF coalesce(a ->> 'expand', 'off') NOT IN ('off', 'auto') THEN
        RAISE EXCEPTION 'expand: off or auto' USING ERRCODE = 'PT400';
    END IF;
    expand := coalesce(a ->> 'expand' = 'auto', false);
    IF scope NOT IN ('content', 'title', 'both') THEN
        RAISE EXCEPTION 'scope: content, title or both' USING ERRCODE = 'PT400';
    END IF;
    IF coalesce(a ->> 'match', 'any') NOT IN ('any', 'all') THEN
        RAISE EXCEPTION 'match: any or all' USING ERRCODE = 'PT400';
    END IF;
    match_all := coalesce(a ->> 'match' = 'all', false);
    IF lim NOT BETWEEN 1 AND 50 OR lim_snip NOT BETWEEN 0 AND 20 OR win NOT BETWEEN 8 AND 1000 THEN
        RAISE EXCEPTION 'limit_chats is 1 to 50, limit_snippets_per_chat 0 to 20, snippet_window 8 to 1000'
            USING ERRCODE = 'PT400';
    END IF;
    IF jsonb_typeof(a -> 'role_filter') = 'array' AND jsonb_array_length(a -> 'role_filter') > 0 THEN
        SELECT array_agg(lower(r)) INTO roles FROM jsonb_array_elements_text(a -> 'role_filter') r;
    END IF;
    SELECT * INTO w_from, w_to
    FROM parley_cw_window_in(a -> 'time_window', coalesce(ctx, '{}') || jsonb_build_object('now', now_ts));

    -- expand: auto adds, per term, up to three words of the chats the term
    -- matches that are specific to them (at least 3/4 of the chats having
    -- the word are among those; not English stop words), most widespread
    -- first, and the two closest spellings of the term (trigram similarity
    -- at least 0.3) among the words of the texts the trigram index finds
    -- similar to it. Words come from the messages' stored tsvector; every
    -- step goes through an index.
    IF expand THEN
        iterations := 2;
        PERFORM set_config('pg_trgm.word_similarity_threshold', '0.5', true);
        cands := parley_cw_term_candidates(terms, fuzzy, tools AND scope IN ('content', 'both'),
                                           w_from, w_to);
        WITH texts AS MATERIALIZED (SELECT * FROM parley_cw_texts(scope, tools, roles, w_from, w_to,
                                                                  cands)),
        hit_chats AS (
            SELECT DISTINCT q, t.chat_id FROM texts t, unnest(terms) q
            WHERE parley_cw_term_pos(t.txt, q, fuzzy) IS NOT NULL),
        words AS MATERIALIZED (
            SELECT DISTINCT h.q, m.chat_id, w AS word
            FROM hit_chats h
            JOIN messages m ON m.chat_id = h.chat_id AND m.date >= w_from AND m.date <= w_to,
                 unnest(tsvector_to_array(m.tsv)) w
            WHERE length(w) >= 4 AND w !~ '^[0-9]'),
        co AS (
            SELECT q, word, count(*) AS n_hit,
                   row_number() OVER (PARTITION BY q ORDER BY count(*) DESC, word) AS r
            FROM words
            WHERE strpos(lower(q), word) = 0 AND strpos(word, lower(q)) = 0
              AND to_tsvector('english', word) <> ''::tsvector -- not a stop word
            GROUP BY q, word),
        spread AS (
            SELECT q, word, n_hit,
                   (SELECT count(DISTINCT m.chat_id)
                    FROM messages m JOIN chats c ON c.id = m.chat_id
                                                  AND c.kind = ANY (parley_source_kinds('chatwise'))
                    WHERE m.tsv @@ to_tsquery('simple', quote_literal(word))
                      AND m.date >= w_from AND m.date <= w_to) AS n_all
            FROM co WHERE r <= 20),
        related AS (
            SELECT q, word, row_number() OVER (PARTITION BY q ORDER BY n_hit DESC, word) AS rank
            FROM spread WHERE n_hit::numeric / greatest(n_all, 1) >= 0.75),
        spell AS (
            SELECT q, word FROM (
                SELECT q, word, row_number() OVER (PARTITION BY q
                                                   ORDER BY similarity(word, lower(q)) DESC, word) AS n
                FROM (SELECT DISTINCT q, w AS word
                      FROM unnest(terms) q,
                           LATERAL (SELECT m.tsv FROM messages m
                                    JOIN chats c ON c.id = m.chat_id
                                                  AND c.kind = ANY (parley_source_kinds('chatwise'))
                                    WHERE lower(q) <% m.text AND m.date >= w_from
                                      AND m.date <= w_to
                                    LIMIT 200) s,
                           unnest(tsvector_to_array(s.tsv)) w
                      WHERE NOT parley_has_cjk(q) AND position(' ' IN q) = 0
                        AND length(q) >= 4 AND w <> lower(q)
                        AND similarity(w, lower(q)) >= 0.3) c) r
            WHERE n <= 2)
        SELECT coalesce(jsonb_object_agg(q, words), '{}') INTO expanded
        FROM (SELECT q, jsonb_agg(word ORDER BY rank, word) AS words
              FROM (SELECT q, word, rank FROM related WHERE rank <= 3
                    UNION
                    SELECT q, word, 10 FROM spell) x
              GROUP BY q) y;
    END IF;
    -- Each searched word with the term it stands for.
    SELECT array_agg(t ORDER BY src, t), array_agg(src ORDER BY src, t) INTO all_terms, all_srcs
    FROM (SELECT t, t AS src FROM unnest(terms) t
          UNION SELECT jsonb_array_elements_text(v), k FROM jsonb_each(expanded) e(k, v)) s;

    -- Only the chats the indexes say may match are searched.
    cands := parley_cw_term_candidates(all_terms, fuzzy, tools AND scope IN ('content', 'both'),
                                       w_from, w_to);
    WITH texts AS MATERIALIZED (SELECT * FROM parley_cw_texts(scope, tools, roles, w_from, w_to,
                                                              cands)),
    hits AS (
        SELECT t.*, q.term, q.src, q.term = q.src AS asked,
               parley_cw_term_pos(t.txt, q.term, fuzzy) AS pos
        FROM texts t, unnest(all_terms, all_srcs) q(term, src)),
    matched AS (SELECT * FROM hits WHERE pos IS NOT NULL),
    excluded AS (
        SELECT DISTINCT t.chat_id FROM texts t, unnest(excludes) x
        WHERE strpos(lower(t.txt), x) > 0),
    per_chat AS (
        SELECT f.chat_id,
               count(DISTINCT (f.msg, f.source)) AS hits,
               count(DISTINCT f.src)::numeric / cardinality(terms) AS coverage,
               bool_or(f.source = 'title') AS in_title,
               min(f.at) AS t_from, max(f.at) AS t_to
        FROM matched f
        WHERE f.chat_id NOT IN (SELECT chat_id FROM excluded)
        GROUP BY f.chat_id),
    scored AS (
        SELECT p.*, p.coverage * (1 + ln(1 + p.hits::numeric)) + CASE WHEN p.in_title THEN 0.5 ELSE 0 END
                    AS score
        FROM per_chat p
        WHERE NOT match_all OR p.coverage = 1),
    ranked AS (
        SELECT s.*, row_number() OVER (ORDER BY s.score DESC, s.t_to DESC, s.chat_id) AS rank
        FROM scored s),
    snippets AS (
        SELECT chat_id, jsonb_agg(jsonb_build_object(
                   'messageId', msg, 'role', role, 'createdAt', parley_cw_ms(at),
                   'createdAtIso', parley_cw_iso(at),
                   'text', parley_cw_snippet(txt, pos, length(term), win), 'source', source,
                   'term', term) ORDER BY n) AS snips
        FROM (SELECT f.*, row_number() OVER (PARTITION BY f.chat_id
                                             ORDER BY f.asked DESC, f.source = 'title' DESC,
                                                      f.at DESC, f.msg) AS n
              FROM (SELECT DISTINCT ON (chat_id, coalesce(msg, ''), source) *
                    FROM matched ORDER BY chat_id, coalesce(msg, ''), source, asked DESC, pos) f) x
        WHERE n <= lim_snip
        GROUP BY chat_id)
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'chatId', c.external_id, 'title', c.title, 'hits', r.hits,
               'score', round(r.score, 3), 'coverage', round(r.coverage, 2),
               'timeRange', parley_cw_range(r.t_from, r.t_to),
               'snippets', coalesce(s.snips, '[]')) ORDER BY r.rank), '[]')
    INTO results
    FROM ranked r JOIN chats c ON c.id = r.chat_id LEFT JOIN snippets s USING (chat_id)
    WHERE r.rank <= lim;

    IF jsonb_array_length(results) > 0 THEN
        top := results -> 0;
        s1 := (top ->> 'score')::numeric;
        s2 := coalesce((results -> 1 ->> 'score')::numeric, 0);
        conf := round((top ->> 'coverage')::numeric * (0.5 + 0.5 * (1 - s2 / nullif(s1, 0))), 2);
        SELECT jsonb_agg(r ->> 'chatId' ORDER BY o) INTO top_ids
        FROM jsonb_array_elements(results) WITH ORDINALITY x(r, o)
        WHERE (r ->> 'score')::numeric >= 0.6 * s1 AND o <= 3;
    END IF;
    top_ids := coalesce(top_ids, '[]');

    -- Nothing: a word found nowhere may be a slip of one the chats have
    -- (src/db/sql/search_near.sql); the search is asked again with the
    -- near words, once, and answers that reading, marked, if it finds any.
    IF jsonb_array_length(results) = 0 AND NOT fuzzy AND NOT near_pass THEN
        near := parley_search_near(
            (SELECT string_agg(parley_tsquery_lexeme(lower(w)), ' | ')::tsquery
             FROM unnest(terms) t, regexp_split_to_table(t, '\s+') w
             WHERE w <> '' AND NOT parley_has_cjk(w) AND parley_tsquery_lexeme(lower(w)) IS NOT NULL),
            parley_search_languages(), 'chatwise', NULL, 0);
        IF near IS NOT NULL THEN
            retry := parley_cw_search_conversations(
                a || jsonb_build_object('_near', true, 'intent_query', (
                    SELECT jsonb_agg((SELECT string_agg(coalesce(
                                          (SELECT x ->> 'to' FROM jsonb_array_elements(
                                               near -> 'corrections') x
                                           WHERE x ->> 'from' = lower(w)), w), ' ' ORDER BY o)
                                      FROM regexp_split_to_table(t, '\s+') WITH ORDINALITY
                                           AS y(w, o)
                                      WHERE w <> ''))
                    FROM unnest(terms) t)),
                ctx);
            IF jsonb_array_length(retry -> 'results') > 0 THEN
                RETURN jsonb_set(retry, '{results}', (
                           SELECT jsonb_agg(r || '{"near": true}' ORDER BY o)
                           FROM jsonb_array_elements(retry -> 'results') WITH ORDINALITY x(r, o)))
                       || jsonb_build_object('corrections', near -> 'corrections',
                                             'notes', jsonb_build_array(parley_search_near_note(
                                                 array_to_string(terms, ', '),
                                                 near -> 'corrections', 0)));
            END IF;
        END IF;
    END IF;

    -- Guidance: what to do next, with ready arguments.
    IF jsonb_array_length(results) = 0 THEN
        IF NOT fuzzy OR NOT expand THEN
            next_actions := next_actions || jsonb_build_object('tool', 'search_conversations',
                'args', a || '{"precision_mode": "fuzzy", "expand": "auto"}',
                'why', 'nothing matched exactly: allow close spellings and related words');
        END IF;
        IF coalesce(a ->> 'time_window', 'all') <> 'all' THEN
            next_actions := next_actions || jsonb_build_object('tool', 'search_conversations',
                'args', a || '{"time_window": "all"}',
                'why', 'nothing in this time window: search all time');
        END IF;
        IF cardinality(excludes) > 0 OR roles IS NOT NULL OR match_all OR scope <> 'both' THEN
            next_actions := next_actions || jsonb_build_object('tool', 'search_conversations',
                'args', (a - '{exclude_terms,role_filter,match,scope}'::text[]),
                'why', 'the filters may hide the chat: search without them');
        END IF;
    ELSE
        IF conf < 0.75 AND jsonb_array_length(top_ids) > 2 THEN
            IF cardinality(terms) > 1 AND NOT match_all THEN
                next_actions := next_actions || jsonb_build_object('tool', 'search_conversations',
                    'args', a || '{"match": "all"}',
                    'why', 'many chats match some of the terms: keep the chats that have all of them');
            END IF;
            IF NOT fuzzy THEN
                next_actions := next_actions || jsonb_build_object('tool', 'search_conversations',
                    'args', a || '{"precision_mode": "fuzzy"}',
                    'why', 'no chat stands out: include close spellings to separate them');
            END IF;
            IF NOT expand THEN
                next_actions := next_actions || jsonb_build_object('tool', 'search_conversations',
                    'args', a || '{"expand": "auto"}',
                    'why', 'no chat stands out: add related words drawn from the matching chats');
            END IF;
        END IF;
        next_actions := next_actions || jsonb_build_object('tool', 'gather_chats',
            'args', jsonb_build_object('chatIds', top_ids, 'includeTools', tools),
            'why', CASE WHEN conf >= 0.75 OR jsonb_array_length(top_ids) <= 2
                        THEN 'the top chats stand out: read them in full'
                        ELSE 'read the top chats to decide between them' END);
    END IF;

    IF coalesce(a ->> 'response_mode', 'json') NOT IN ('json', 'text') THEN
        RAISE EXCEPTION 'response_mode: json or text' USING ERRCODE = 'PT400';
    END IF;
    RETURN jsonb_strip_nulls(jsonb_build_object('text', CASE WHEN a ->> 'response_mode' = 'text' THEN
        parley_cw_search_text(terms, conf, results, next_actions) END)) || jsonb_build_object(
        'status', 'ok', 'iterations_used', iterations, 'confidence', conf,
        'topChatIds', top_ids, 'results', results,
        'guidance', jsonb_build_object(
            'stopIf', 'confidence >= 0.75 || topChatIds.length <= 2',
            'nextActions', next_actions,
            'state', jsonb_build_object('expandedTerms', expanded, 'excludes', to_jsonb(excludes),
                                        'iteration', iterations, 'terms', to_jsonb(terms),
                                        'timeWindow', jsonb_build_object(
                                            'from', CASE WHEN w_from > '-infinity' THEN parley_cw_iso(w_from) END,
                                            'to', CASE WHEN w_to < 'infinity' THEN parley_cw_iso(w_to) END))));
END
$$;

-- A LIKE pattern for the strings starting with p.
CREATE OR REPLACE FUNCTION parley_cw_like_prefix(p text) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT replace(replace(replace(p, '\', '\\'), '%', '\%'), '_', '\_') || '%'
$$;

-- One message as gather_chats answers it.
CREATE OR REPLACE FUNCTION parley_cw_message_json(m messages, include_tools boolean) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('messageId', m.external_id, 'createdAt', parley_cw_ms(m.date),
                              'createdAtIso', parley_cw_iso(m.date),
                              'role', coalesce(m.role, m.sender_name), 'content', coalesce(m.text, ''))
        || CASE WHEN include_tools AND (m.tool_calls IS NOT NULL OR m.tool_results IS NOT NULL) THEN
               jsonb_build_object('tools', jsonb_strip_nulls(jsonb_build_object(
                   'calls', (SELECT jsonb_agg(jsonb_build_object('server', c ->> 'server',
                                                                 'tool', c ->> 'tool',
                                                                 'args', c -> 'arguments'))
                             FROM jsonb_array_elements(m.tool_calls) c),
                   'results', (SELECT jsonb_agg(CASE
                                   WHEN parley_chatwise_tool_text(jsonb_build_array(r)) IS NOT NULL
                                   THEN jsonb_build_object('text', parley_chatwise_tool_text(jsonb_build_array(r)))
                                   ELSE jsonb_build_object('json', r) END)
                               FROM jsonb_array_elements(m.tool_results) r))))
           ELSE '{}' END
$$;

-- gather_chats: one chat's timeline, or several with their common
-- alignment (the messages, by normalised role and content, present in
-- every requested chat).
CREATE OR REPLACE FUNCTION parley_cw_gather_chats(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    ids text[];
    tools boolean := coalesce((a ->> 'includeTools')::boolean, true);
    missing text[];
    chat_ids bigint[] := '{}';
    got bigint[];
    r jsonb;
BEGIN
    IF jsonb_typeof(a -> 'chatIds') IS DISTINCT FROM 'array' OR jsonb_array_length(a -> 'chatIds') = 0 THEN
        RAISE EXCEPTION 'chatIds: give one or more chat ids (topChatIds of search_conversations)'
            USING ERRCODE = 'PT400';
    END IF;
    SELECT array_agg(x ORDER BY o) INTO ids
    FROM (SELECT DISTINCT ON (x) x, o FROM jsonb_array_elements_text(a -> 'chatIds')
          WITH ORDINALITY e(x, o) ORDER BY x, o) s;
    IF cardinality(ids) > 20 THEN
        RAISE EXCEPTION 'chatIds: at most 20 chats at a time' USING ERRCODE = 'PT400';
    END IF;
    -- Each id: a whole id, or a prefix of exactly one chat.
    FOR i IN 1 .. cardinality(ids) LOOP
        SELECT array_agg(id) INTO got
        FROM (SELECT c.id FROM parley_cw_chats() c
              WHERE c.external_id = ids[i]
                 OR (c.external_id LIKE parley_cw_like_prefix(ids[i])
                     AND NOT EXISTS (SELECT 1 FROM chats c2 WHERE c2.kind = 'ai_chat'
                                     AND c2.external_id = ids[i]))
              LIMIT 2) s;
        IF cardinality(got) = 1 THEN
            chat_ids := chat_ids || got[1];
        ELSE
            missing := missing || ids[i];
        END IF;
    END LOOP;
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'chatIds: no single chat for %; use resolve_ids or the chatId of search_conversations',
            array_to_string(missing, ', ') USING ERRCODE = 'PT400';
    END IF;
    IF cardinality(ids) = 1 THEN
        SELECT jsonb_build_object(
                   'chat', jsonb_build_object('id', c.external_id, 'title', c.title,
                       'messageCount', (SELECT count(*) FROM messages m WHERE m.chat_id = c.id),
                       'timeRange', (SELECT parley_cw_range(min(m.date), max(m.date))
                                     FROM messages m WHERE m.chat_id = c.id)),
                   'messages', coalesce((SELECT jsonb_agg(parley_cw_message_json(m, tools)
                                                          ORDER BY m.date, m.id)
                                         FROM messages m WHERE m.chat_id = c.id), '[]'))
        INTO r
        FROM unnest(chat_ids) WITH ORDINALITY g(chat_id, o) JOIN chats c ON c.id = g.chat_id;
        RETURN r;
    END IF;
    WITH msgs AS (
        SELECT g.idx, m, row_number() OVER (PARTITION BY g.idx ORDER BY m.date, m.id) - 1 AS n,
               lower(coalesce(m.role, m.sender_name, '')) AS nrole,
               regexp_replace(btrim(coalesce(m.text, '')), '\s+', ' ', 'g') AS ncontent
        FROM (SELECT chat_id, o - 1 AS idx FROM unnest(chat_ids) WITH ORDINALITY u(chat_id, o)) g
        JOIN messages m ON m.chat_id = g.chat_id),
    common AS (
        SELECT nrole, ncontent,
               jsonb_agg(jsonb_build_object('chatIdx', idx, 'index', n,
                                            'messageIdPrefix', left((m).external_id, 8))
                         ORDER BY idx, n) AS refs,
               min(n) AS first_n
        FROM msgs WHERE ncontent <> ''
        GROUP BY nrole, ncontent
        HAVING count(DISTINCT idx) = cardinality(ids))
    SELECT jsonb_build_object(
        'meta', (SELECT jsonb_agg(jsonb_build_object('chatIdx', g.o - 1, 'id', c.external_id,
                     'title', c.title,
                     'timeRange', (SELECT parley_cw_range(min(m.date), max(m.date))
                                   FROM messages m WHERE m.chat_id = c.id)) ORDER BY g.o)
                 FROM unnest(chat_ids) WITH ORDINALITY g(chat_id, o) JOIN chats c ON c.id = g.chat_id),
        'narrative', coalesce((SELECT jsonb_agg(jsonb_build_object('chatIdx', idx, 'index', n)
                                                || parley_cw_message_json(m, tools)
                                                ORDER BY idx, n) FROM msgs), '[]'),
        'commonAlignment', coalesce((SELECT jsonb_agg(jsonb_build_object('role', nrole,
                                                                          'content', ncontent,
                                                                          'refs', refs)
                                                      ORDER BY first_n, ncontent)
                                     FROM common), '[]'))
    INTO r;
    RETURN r;
END
$$;

-- resolve_ids: the chats and messages whose ids start with the prefixes
-- given (every candidate when a prefix is ambiguous; at most 50 each).
CREATE OR REPLACE FUNCTION parley_cw_resolve_ids(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    cp text := nullif(a ->> 'chatIdPrefix', '');
    mp text := nullif(a ->> 'messageIdPrefix', '');
    chats_j jsonb;
    msgs_j jsonb;
BEGIN
    IF cp IS NULL AND mp IS NULL THEN
        RAISE EXCEPTION 'give chatIdPrefix or messageIdPrefix (or both)' USING ERRCODE = 'PT400';
    END IF;
    IF cp IS NOT NULL THEN
        SELECT coalesce(jsonb_agg(jsonb_build_object('id', external_id, 'title', title)
                                  ORDER BY external_id), '[]')
        INTO chats_j
        FROM (SELECT external_id, title FROM parley_cw_chats()
              WHERE external_id LIKE parley_cw_like_prefix(cp)
              ORDER BY external_id LIMIT 50) s;
    END IF;
    IF mp IS NOT NULL THEN
        SELECT coalesce(jsonb_agg(jsonb_build_object('id', mid, 'chatId', cid, 'role', role,
                                                     'createdAt', parley_cw_ms(date),
                                                     'createdAtIso', parley_cw_iso(date))
                                  ORDER BY mid), '[]')
        INTO msgs_j
        FROM (SELECT m.external_id AS mid, c.external_id AS cid, coalesce(m.role, m.sender_name) AS role,
                     m.date
              FROM messages m JOIN parley_cw_chats() c ON c.id = m.chat_id
              WHERE m.external_id LIKE parley_cw_like_prefix(mp)
                AND (cp IS NULL OR c.external_id LIKE parley_cw_like_prefix(cp))
              ORDER BY m.external_id LIMIT 50) s;
    END IF;
    RETURN jsonb_strip_nulls(jsonb_build_object(
        'chats', chats_j, 'messages', msgs_j,
        'ambiguous', (coalesce(jsonb_array_length(chats_j), 0) > 1
                      OR coalesce(jsonb_array_length(msgs_j), 0) > 1)));
END
$$;
