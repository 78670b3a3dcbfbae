-- recall: the recall toolset's answers (src/toolsets/recall/): one search
-- over every source in the store, and what happened in a window across
-- sources. parley_recall_<tool>(a jsonb, ctx jsonb): a holds the
-- validated arguments; ctx what the daemon knows: "timezone" (as the
-- inline tools take it, src/db/sql/inline/common.sql), and "next", the
-- tool that opens a hit of each source in its own surface for this
-- caller (a tool the caller may call; absent: none):
--   {"telegram": "messagesContext" | "messages_context",
--    "chatwise": "gather_chats", "agents": "get_message_by_id",
--    "bluesky": "search"}
-- Sources are named as src/db/sql/sources.sql names them.

-- The store's sources a asks for ("sources": absent or empty for all),
-- each checked.
CREATE OR REPLACE FUNCTION parley_recall_sources(a jsonb) RETURNS text[]
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    known constant text[] := ARRAY['telegram', 'chatwise', 'agents', 'memory', 'bluesky'];
    s text;
    out text[] := '{}';
BEGIN
    IF jsonb_typeof(a -> 'sources') IS DISTINCT FROM 'array'
       OR jsonb_array_length(a -> 'sources') = 0 THEN
        RETURN known;
    END IF;
    FOR s IN SELECT jsonb_array_elements_text(a -> 'sources') LOOP
        IF NOT s = ANY (known) THEN
            PERFORM parley_tg_bad(format('sources: %s is not a source; use some of %s',
                                         to_jsonb(s)::text, array_to_string(known, ', ')));
        END IF;
        out := out || s;
    END LOOP;
    RETURN out;
END
$$;

-- What the caller may recall of srcs (parley_recall_sources(a)): ctx's
-- "allowed" (the sources of the toolsets its token names; absent for a
-- caller without a token or a token of recall alone, which recall from
-- every source; src/toolsets/recall/recall.c, docs/recall.md). A source
-- asked by name that the caller may not recall from is an error that
-- says which it may; asked for all, it gets those it may.
CREATE OR REPLACE FUNCTION parley_recall_allowed(srcs text[], a jsonb, ctx jsonb) RETURNS text[]
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    allowed text[];
    denied text[];
BEGIN
    IF jsonb_typeof(ctx -> 'allowed') IS DISTINCT FROM 'array' THEN
        RETURN srcs;
    END IF;
    allowed := ARRAY(SELECT jsonb_array_elements_text(ctx -> 'allowed'));
    IF jsonb_typeof(a -> 'sources') = 'array' AND jsonb_array_length(a -> 'sources') > 0 THEN
        denied := ARRAY(SELECT s FROM unnest(srcs) s WHERE NOT s = ANY (allowed));
        IF cardinality(denied) > 0 THEN
            PERFORM parley_tg_bad(format(
                'sources: %s is not open to this caller (its token names other toolsets); '
                'it may recall from %s', array_to_string(denied, ', '),
                array_to_string(allowed, ', ')));
        END IF;
    END IF;
    RETURN ARRAY(SELECT s FROM unnest(srcs) s WHERE s = ANY (allowed));
END
$$;

-- The call that opens message (p_chat, p_id) of source p_src in its own
-- surface, as {tool, arguments}; NULL when the caller has no such tool.
CREATE OR REPLACE FUNCTION parley_recall_next(p_src text, p_chat bigint, p_id bigint,
                                              p_chat_ext text, p_msg_ext text, ctx jsonb)
    RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN p_src = 'telegram' AND ctx #>> '{next,telegram_takes}' = 'channelId' THEN
            jsonb_build_object('tool', ctx #>> '{next,telegram}', 'arguments', jsonb_build_object(
                'channelId', p_chat, 'messageId', p_id, 'before', 3, 'after', 3))
        WHEN p_src = 'telegram' AND ctx #>> '{next,telegram_takes}' = 'chatId' THEN
            jsonb_build_object('tool', ctx #>> '{next,telegram}', 'arguments', jsonb_build_object(
                'chatId', p_chat, 'messageId', p_id, 'before', 3, 'after', 3))
        WHEN p_src = 'chatwise' AND ctx #>> '{next,chatwise}' IS NOT NULL
             AND p_chat_ext IS NOT NULL THEN
            jsonb_build_object('tool', ctx #>> '{next,chatwise}', 'arguments',
                               jsonb_build_object('chatIds', jsonb_build_array(p_chat_ext),
                                                  'includeTools', false))
        WHEN p_src = 'agents' AND ctx #>> '{next,agents}' IS NOT NULL
             AND p_msg_ext IS NOT NULL THEN
            jsonb_build_object('tool', ctx #>> '{next,agents}', 'arguments',
                               jsonb_build_object('message_id', p_msg_ext))
        WHEN p_src = 'bluesky' AND ctx #>> '{next,bluesky}' IS NOT NULL
             AND p_msg_ext LIKE 'at://%' THEN
            jsonb_build_object('tool', ctx #>> '{next,bluesky}', 'arguments',
                               jsonb_build_object('query', p_msg_ext))
    END
$$;

-- An ISO 8601 time in UTC, as every answer gives times.
CREATE OR REPLACE FUNCTION parley_recall_iso(t timestamptz) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
$$;

-- The arguments every recall tool reads, in this order: the sources
-- (parley_recall_sources, parley_recall_allowed), limit (1 to cap,
-- default dflt), since and until (as the inline tools read them; NULL
-- when absent).
CREATE OR REPLACE FUNCTION parley_recall_args(a jsonb, ctx jsonb, dflt integer, cap integer,
                                              OUT srcs text[], OUT lim integer,
                                              OUT since_ timestamptz, OUT until_ timestamptz)
    LANGUAGE sql STABLE AS $$
    SELECT parley_recall_allowed(parley_recall_sources(a), a, ctx),
           least(greatest(coalesce((a ->> 'limit')::numeric, dflt), 1), cap)::integer,
           parley_inline_time(a, 'since', ctx), parley_inline_time(a, 'until', ctx)
$$;

-- recall {query, limit (1-100, default 20), sources, since, until}: the
-- hits of every asked source in one list, ranked as every search ranks
-- (parley_search, docs/search.md: the same words, forms and score), each
-- {source, title, date, snippet, ref, rank, next}. "text" is the answer
-- to read (the toolset makes it the content).
CREATE OR REPLACE FUNCTION parley_recall_recall(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    f record := parley_recall_args(a, ctx, 20, 100);
    kinds text[];
    store_srcs text[];
    one_src text;
    chat_ids bigint[];
    r jsonb;
    hits jsonb;
    lane_n integer := 0;
BEGIN
    IF nullif(btrim(a ->> 'query'), '') IS NULL THEN
        PERFORM parley_tg_bad('query: give the words to recall, e.g. "invoice march"');
    END IF;
    SELECT coalesce(array_agg(k), '{}') INTO kinds
    FROM unnest(f.srcs) s, unnest(parley_source_kinds(s)) k;
    -- Every store source asked: no filter (the search's own plans); one:
    -- the search keeps to it (p_source); else the chats of those asked.
    store_srcs := ARRAY(SELECT s FROM unnest(f.srcs) s WHERE s = ANY (parley_sources()));
    IF cardinality(store_srcs) = 1 THEN
        one_src := store_srcs[1];
    ELSIF NOT parley_sources() <@ store_srcs THEN
        SELECT coalesce(array_agg(id), '{}') INTO chat_ids FROM chats WHERE kind = ANY (kinds);
    END IF;
    r := parley_search(a ->> 'query', NULL, false, chat_ids, NULL, NULL, f.since_, f.until_, NULL,
                       'rank', f.lim, 0, one_src);
    SELECT coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               'source', parley_source_of(c.kind),
               'title', coalesce(c.title, c.username, c.external_id, c.id::text),
               'date', parley_recall_iso((h ->> 'date')::timestamptz),
               'snippet', h ->> 'snippet',
               'sender', h ->> 'sender_name',
               'ref', parley_source_of(c.kind) || ':' || c.id || '/' || m.id,
               'rank', h -> 'rank', 'near', h -> 'near',
               'next', parley_recall_next(parley_source_of(c.kind), c.id, m.id, c.external_id,
                                          m.external_id, ctx))) ORDER BY ord), '[]')
    INTO hits
    FROM jsonb_array_elements(r -> 'results') WITH ORDINALITY AS x(h, ord)
    JOIN messages m ON m.chat_id = (h ->> 'chat_id')::bigint AND m.id = (h ->> 'id')::bigint
    JOIN chats c ON c.id = m.chat_id;
    -- A memory-lane database's hits (the toolset asked it first): the two
    -- lists are fused by reciprocal rank (1 / (60 + position)), as their
    -- scores are not on one scale.
    IF jsonb_typeof(a -> '_lane') = 'array' AND 'memory' = ANY (f.srcs) THEN
        SELECT coalesce(jsonb_agg(h ORDER BY score DESC, h ->> 'date' DESC), '[]') INTO hits
        FROM (SELECT h, score FROM (
                  SELECT h, 1.0 / (60 + ord) AS score
                  FROM jsonb_array_elements(hits) WITH ORDINALITY AS x(h, ord)
                  UNION ALL
                  SELECT jsonb_strip_nulls(jsonb_build_object(
                             'source', 'memory',
                             'title', coalesce(l ->> 'era_name', 'memory-lane'),
                             'date', parley_recall_iso((l ->> 'created_at')::timestamptz),
                             'snippet', coalesce(l ->> 'snippet', left(l ->> 'content', 160)),
                             'sender', l ->> 'sender_id',
                             'ref', 'memory:' || (l ->> 'id'),
                             'rank', l -> 'relevance_score',
                             'next', CASE WHEN ctx #>> '{next,memory}' IS NOT NULL THEN
                                 jsonb_build_object('tool', ctx #>> '{next,memory}',
                                     'arguments', jsonb_build_object('message_id', l ->> 'id'))
                                 END)),
                         1.0 / (60 + ord)
                  FROM jsonb_array_elements(a -> '_lane') WITH ORDINALITY AS y(l, ord)
                  WHERE (f.since_ IS NULL OR (l ->> 'created_at')::timestamptz >= f.since_)
                    AND (f.until_ IS NULL OR (l ->> 'created_at')::timestamptz < f.until_)) u
              ORDER BY score DESC, h ->> 'date' DESC LIMIT f.lim) v;
        lane_n := jsonb_array_length(a -> '_lane');
    END IF;
    RETURN jsonb_build_object(
        'query', a ->> 'query', 'sources', to_jsonb(f.srcs), 'mode', r -> 'mode',
        'total', (r ->> 'count')::integer + lane_n,
        'totalCapped', coalesce(r -> 'countCapped', 'false'),
        'limit', f.lim, 'hits', hits,
        'text', concat_ws(E'\n', (SELECT string_agg(x, E'\n')
                                  FROM jsonb_array_elements_text(r -> 'notes') x),
                          parley_recall_text(a ->> 'query', hits,
                                             (r ->> 'count')::integer + lane_n,
                                             coalesce((r ->> 'countCapped')::boolean, false))))
        || jsonb_strip_nulls(jsonb_build_object('corrections', r -> 'corrections',
                                                'formsPending', r -> 'formsPending',
                                                'candidatesCapped', r -> 'candidatesCapped',
                                                'candidates', r -> 'candidates',
                                                'notes', r -> 'notes'))
        || CASE WHEN a ? '_laneError' AND 'memory' = ANY (f.srcs) THEN jsonb_build_object(
               'memoryError', 'the memory-lane database did not answer: ' || (a ->> '_laneError'))
           ELSE '{}' END;
END
$$;

-- The hits as text for the model: one block a hit, the call that opens it
-- under it.
CREATE OR REPLACE FUNCTION parley_recall_text(q text, hits jsonb, total integer, capped boolean)
    RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_array_length(hits) = 0 THEN
               format('No hits for %s in any source asked.', to_jsonb(q)::text)
           ELSE format('%s hit(s) for %s, best first:',
                       CASE WHEN capped THEN format('%s of more than %s', count(*), total)
                            WHEN count(*) < total THEN format('%s of %s', count(*), total)
                            ELSE count(*)::text END, to_jsonb(q)::text)
                || E'\n' ||
                string_agg(format(E'%s. [%s] %s, %s: %s\n   ref %s%s', ord, h ->> 'source',
                                  h ->> 'title', h ->> 'date',
                                  replace(coalesce(h ->> 'snippet', ''), E'\n', ' '),
                                  h ->> 'ref',
                                  CASE WHEN h ? 'next' THEN format('; open: %s %s',
                                           h #>> '{next,tool}', h #>> '{next,arguments}')
                                       ELSE '' END), E'\n' ORDER BY ord)
           END
    FROM jsonb_array_elements(hits) WITH ORDINALITY AS x(h, ord)
$$;

-- recall_timeline {since (required), until (default now), sources, limit
-- (chats a source, 1-50, default 10)}: what happened in the window, by
-- source: its messages, and its most active chats with their first and
-- last message in the window and the last message's start.
CREATE OR REPLACE FUNCTION parley_recall_timeline(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    f record := parley_recall_args(a, ctx, 10, 50);
    until_ timestamptz := coalesce(f.until_, parley_inline_now(ctx));
    groups jsonb;
BEGIN
    IF f.since_ IS NULL THEN
        PERFORM parley_tg_bad('since: say where the window starts, e.g. "yesterday", "7d ago" '
                              'or 2026-01-31');
    END IF;
    IF until_ <= f.since_ THEN
        PERFORM parley_tg_bad(format('until (%s) is not after since (%s): give a later until',
                                     parley_recall_iso(until_), parley_recall_iso(f.since_)));
    END IF;
    WITH per_chat AS (
        SELECT m.chat_id, count(*) AS n, min(m.date) AS first_at, max(m.date) AS last_at
        FROM messages m
        WHERE m.date >= f.since_ AND m.date < until_ AND m.kind <> 'service'
        GROUP BY m.chat_id),
    ranked AS (
        SELECT parley_source_of(c.kind) AS src, c, p.n, p.first_at, p.last_at,
               row_number() OVER (PARTITION BY parley_source_of(c.kind)
                                  ORDER BY p.n DESC, p.last_at DESC) AS ord,
               sum(p.n) OVER (PARTITION BY parley_source_of(c.kind)) AS src_n,
               count(*) OVER (PARTITION BY parley_source_of(c.kind)) AS src_chats
        FROM per_chat p JOIN chats c ON c.id = p.chat_id
        WHERE parley_source_of(c.kind) = ANY (f.srcs))
    SELECT coalesce(jsonb_agg(g ORDER BY g ->> 'source'), '[]') INTO groups
    FROM (SELECT jsonb_build_object(
                     'source', src, 'messages', max(src_n), 'chats', max(src_chats),
                     'top', jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                         'title', coalesce((c).title, (c).username, (c).external_id,
                                           (c).id::text),
                         'ref', src || ':' || (c).id,
                         'messages', n,
                         'first', parley_recall_iso(first_at),
                         'last', parley_recall_iso(last_at),
                         'lastText', (SELECT left(m.text, 160) FROM messages m
                                      WHERE m.chat_id = (c).id AND m.date = last_at
                                        AND m.kind <> 'service'
                                      ORDER BY m.id DESC LIMIT 1)))
                         ORDER BY ord)) AS g
          FROM ranked WHERE ord <= f.lim GROUP BY src) x;
    RETURN jsonb_build_object('since', parley_recall_iso(f.since_),
                              'until', parley_recall_iso(until_), 'sources', groups,
                              'text', parley_recall_timeline_text(f.since_, until_, groups));
END
$$;

CREATE OR REPLACE FUNCTION parley_recall_timeline_text(since_ timestamptz, until_ timestamptz,
                                                       groups jsonb)
    RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT format('From %s to %s:', parley_recall_iso(since_), parley_recall_iso(until_)) ||
           coalesce((SELECT string_agg(format(E'\n[%s] %s message(s) in %s chat(s)%s',
                                              g ->> 'source', g ->> 'messages', g ->> 'chats',
                                              (SELECT string_agg(format(E'\n  - %s: %s message(s), '
                                                                        '%s to %s; last: %s',
                                                                        t ->> 'title',
                                                                        t ->> 'messages',
                                                                        t ->> 'first',
                                                                        t ->> 'last',
                                                                        replace(coalesce(t ->> 'lastText', ''),
                                                                                E'\n', ' ')), '')
                                               FROM jsonb_array_elements(g -> 'top') t)), '')
                     FROM jsonb_array_elements(groups) g),
                    E'\nNothing in any source asked.')
$$;
