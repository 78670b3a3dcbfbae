-- memory/store: the memory toolset's answers over parley's own store (the
-- agents' sessions parleyd import claude-code brought in), in the same
-- shape as over a memory-lane database (src/archive/memory_django.c):
-- parley_memory_<what>(a jsonb, ctx jsonb). Ids are the transcript's
-- (a message: its event's uuid and block index; a heap: "chat:heap"; an
-- era: its number); times are when things were said.

-- A message as the list tools answer it.
CREATE OR REPLACE FUNCTION parley_memory_message_json(m messages, h context_heaps, e eras)
    RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'id', m.external_id, 'sender_id', m.role,
        'content', CASE m.kind
            WHEN 'thought' THEN '[thinking] ' || coalesce(m.text, '')
            WHEN 'tool_use' THEN '[tool_use ' || split_part(coalesce(m.text, ''), ' ', 1) || '] '
                                 || substr(coalesce(m.text, ''), strpos(coalesce(m.text, ''), ' ') + 1)
            WHEN 'tool_result' THEN '[tool_result] ' || coalesce(m.text, '')
            ELSE coalesce(m.text, '') END,
        'message_number', m.id, 'context_heap_id', CASE WHEN h.id IS NOT NULL THEN h.chat_id || ':' || h.id END,
        'era_name', e.name,
        'created_at', to_char(m.date AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'message_type', CASE m.kind WHEN 'thought' THEN 'thought' WHEN 'tool_use' THEN 'tool_use'
                                    WHEN 'tool_result' THEN 'tool_result' ELSE 'text' END,
        'is_continuation_message', CASE WHEN m.continuation THEN true END,
        'session_id', (SELECT c.external_id FROM chats c WHERE c.id = m.chat_id),
        'is_sidechain', CASE WHEN (m.extra ->> 'isSidechain')::boolean THEN true END)
$$;

-- The agents' messages (not the kept unknown events), with heap and era,
-- of one project's sessions only (a session's project is its
-- working directory, chats.extra.cwd, as its transcript recorded it;
-- trailing slashes aside); every project's when project is NULL.
-- bootstrap_memory's steps take it as the argument "project" (parleyd
-- bootstrap --project DIR).
CREATE OR REPLACE FUNCTION parley_memory_messages_in(project text)
    RETURNS TABLE (m messages, h context_heaps, e eras, at timestamptz, mid text)
    LANGUAGE sql STABLE AS $$
    SELECT m, h, e, m.date AS at, m.external_id AS mid
    FROM messages m
    JOIN chats c ON c.id = m.chat_id AND c.kind = ANY (parley_source_kinds('agents'))
    LEFT JOIN context_heaps h ON h.chat_id = m.chat_id AND h.id = m.heap_id
    LEFT JOIN eras e ON e.id = h.era_id
    WHERE m.kind <> 'service'
      AND (project IS NULL OR rtrim(c.extra ->> 'cwd', '/') = rtrim(project, '/'))
$$;

-- The agents' messages (not the kept unknown events), with heap and era:
-- every project's.
CREATE OR REPLACE FUNCTION parley_memory_messages()
    RETURNS TABLE (m messages, h context_heaps, e eras, at timestamptz, mid text)
    LANGUAGE sql STABLE AS $$
    SELECT * FROM parley_memory_messages_in(NULL)
$$;

CREATE OR REPLACE FUNCTION parley_memory_limit(a jsonb, dflt integer) RETURNS integer
    LANGUAGE sql IMMUTABLE AS $$
    -- numeric first: a limit past 2^31 (1e12) is capped, not an error.
    SELECT least(greatest(coalesce((a ->> 'limit')::numeric, dflt), 1), 1000)::integer
$$;

-- A page of messages (newest first unless ascending) as the list tools
-- answer it.
CREATE OR REPLACE FUNCTION parley_memory_page(rows jsonb, a jsonb, dflt integer) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('messages', rows, 'count', jsonb_array_length(rows),
                              'limit', parley_memory_limit(a, dflt),
                              'limit_capped', coalesce((a ->> 'limit')::numeric, dflt) > 1000)
$$;

-- A page of messages rows that the tools walk by a message id (cursor:
-- next_reference_id, next_after_id): parley_memory_page with, under key,
-- last (the id to go on from) when the page is full, else NULL.
CREATE OR REPLACE FUNCTION parley_memory_cursor_page(rows jsonb, a jsonb, dflt integer, key text,
                                                     last text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT parley_memory_page(rows, a, dflt) || jsonb_build_object(
        key, CASE WHEN jsonb_array_length(rows) = parley_memory_limit(a, dflt) THEN last END)
$$;

-- The offset argument of the paged tools (era_summary,
-- get_context_heap): 0 or more.
CREATE OR REPLACE FUNCTION parley_memory_offset(a jsonb) RETURNS integer
    LANGUAGE sql IMMUTABLE AS $$
    SELECT greatest(coalesce((a ->> 'offset')::integer, 0), 0)
$$;

-- A page of messages rows at offset off of total, as the paged tools
-- answer it: parley_memory_page with the total and where the next page
-- starts (next_offset, NULL on the last page).
CREATE OR REPLACE FUNCTION parley_memory_offset_page(rows jsonb, a jsonb, dflt integer,
                                                     off integer, total bigint) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT parley_memory_page(rows, a, dflt) || jsonb_build_object(
        'total', total,
        'next_offset', CASE WHEN off + jsonb_array_length(rows) < total
                            THEN off + jsonb_array_length(rows) END)
$$;

-- JSON null when there is none yet.
CREATE OR REPLACE FUNCTION parley_memory_latest_continuation(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT jsonb_build_object('message_id', j ->> 'id', 'content', j ->> 'content',
                                      'timestamp', j ->> 'created_at',
                                      'context_heap_id', j ->> 'context_heap_id',
                                      'era_name', j ->> 'era_name',
                                      'message_number', (j ->> 'message_number')::bigint,
                                      'sender_id', j ->> 'sender_id')
            FROM (SELECT parley_memory_message_json(x.m, x.h, x.e) AS j
                  FROM parley_memory_messages_in(a ->> 'project') x WHERE (x.m).continuation
                  ORDER BY x.at DESC, x.mid DESC LIMIT 1) s), 'null'::jsonb)
$$;

CREATE OR REPLACE FUNCTION parley_memory_messages_before(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    ref_at timestamptz;
    ref_id text := a ->> 'reference_id';
    lim integer := parley_memory_limit(a, 300);
    rows jsonb;
    oldest text;
BEGIN
    IF ref_id IS NOT NULL THEN
        SELECT x.at INTO ref_at FROM parley_memory_messages_in(a ->> 'project') x
        WHERE x.mid = ref_id;
        IF ref_at IS NULL THEN
            RETURN jsonb_build_object('error', 'reference_id: no message ' || ref_id
                || '; take ids from get_latest_continuation or get_recent_work');
        END IF;
    ELSE
        ref_at := parley_when(a -> 'reference_timestamp', 'reference_timestamp', false, NULL);
    END IF;
    SELECT coalesce(jsonb_agg(parley_memory_message_json(x.m, x.h, x.e)
                              ORDER BY x.at DESC, x.mid DESC), '[]'),
           (array_agg(x.mid ORDER BY x.at, x.mid))[1]
    INTO rows, oldest
    FROM (SELECT * FROM parley_memory_messages_in(a ->> 'project') x
          WHERE x.at < ref_at OR (ref_id IS NOT NULL AND x.at = ref_at AND x.mid < ref_id)
          ORDER BY x.at DESC, x.mid DESC LIMIT lim) x;
    RETURN parley_memory_cursor_page(rows, a, 300, 'next_reference_id', oldest);
END
$$;

CREATE OR REPLACE FUNCTION parley_memory_era_summary(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    era eras;
    lim integer := parley_memory_limit(a, 500);
    off integer := parley_memory_offset(a);
    rows jsonb;
    total bigint;
BEGIN
    SELECT * INTO era FROM eras
    WHERE id::text = a ->> 'era_id' OR name = a ->> 'era_name' ORDER BY id LIMIT 1;
    -- "foundational" (bootstrap_memory without era_name): the earliest era
    -- of the project worked on last (an import makes one era a project
    -- folder, claude-code:FOLDER; --eras may name more).
    IF era.id IS NULL AND (a ->> 'foundational')::boolean THEN
        SELECT e.* INTO era FROM eras e
        WHERE e.external_id = (SELECT le.external_id FROM parley_memory_messages_in(a ->> 'project') x
                               JOIN eras le ON le.id = (x.e).id
                               ORDER BY x.at DESC LIMIT 1)
           OR e.id = (SELECT min((x.e).id) FROM parley_memory_messages_in(a ->> 'project') x
                      WHERE (x.m).chat_id IN (SELECT (y.m).chat_id
                                              FROM parley_memory_messages_in(a ->> 'project') y
                                              ORDER BY y.at DESC LIMIT 1))
        ORDER BY e.id LIMIT 1;
    END IF;
    IF era.id IS NULL THEN
        RETURN jsonb_build_object('error', 'no era ' || coalesce(a ->> 'era_name', a ->> 'era_id',
            '(give era_id or era_name)') || '; eras: '
            || coalesce((SELECT string_agg(name, ', ' ORDER BY id) FROM eras), 'none'));
    END IF;
    SELECT count(*) INTO total FROM parley_memory_messages() x WHERE (x.e).id = era.id;
    SELECT coalesce(jsonb_agg(parley_memory_message_json(x.m, x.h, x.e)
                              ORDER BY x.at, x.mid), '[]')
    INTO rows
    FROM (SELECT * FROM parley_memory_messages() x WHERE (x.e).id = era.id
          ORDER BY x.at, x.mid OFFSET off LIMIT lim) x;
    RETURN parley_memory_offset_page(rows, a, 500, off, total) || jsonb_build_object(
        'era', jsonb_build_object('id', era.id::text, 'name', era.name));
END
$$;

CREATE OR REPLACE FUNCTION parley_memory_context_heap(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    hid text := a ->> 'heap_id';
    heap context_heaps;
    lim integer := parley_memory_limit(a, 500);
    off integer := parley_memory_offset(a);
    rows jsonb;
    total bigint;
BEGIN
    IF hid ~ '^-?\d+:\d+$' THEN
        SELECT * INTO heap FROM context_heaps
        WHERE chat_id = split_part(hid, ':', 1)::bigint AND id = split_part(hid, ':', 2)::bigint;
    END IF;
    IF heap.id IS NULL THEN
        RETURN jsonb_build_object('error', 'heap_id: no context heap ' || coalesce(hid, '')
                                           || '; messages carry their context_heap_id');
    END IF;
    SELECT count(*) INTO total FROM parley_memory_messages() x
    WHERE (x.h).chat_id = heap.chat_id AND (x.h).id = heap.id;
    SELECT coalesce(jsonb_agg(parley_memory_message_json(x.m, x.h, x.e)
                              ORDER BY (x.m).id), '[]')
    INTO rows
    FROM (SELECT * FROM parley_memory_messages() x
          WHERE (x.h).chat_id = heap.chat_id AND (x.h).id = heap.id
          ORDER BY (x.m).id OFFSET off LIMIT lim) x;
    RETURN parley_memory_offset_page(rows, a, 500, off, total) || jsonb_build_object(
        'heap', jsonb_build_object('id', hid, 'type', heap.type, 'created_at', heap.started_at,
                                   'era_name', (SELECT name FROM eras WHERE id = heap.era_id)));
END
$$;

CREATE OR REPLACE FUNCTION parley_memory_search_messages(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    -- The archive search's words, forms, rank and near spellings
    -- (src/db/sql/search.sql, search_near.sql).
    langs text := parley_search_languages();
    qx0 tsquery := parley_search_exact_query(coalesce(a ->> 'query', ''));
    q0 tsquery := parley_forms_query(qx0, langs);
    qx tsquery := qx0;
    q tsquery;
    lim integer := parley_memory_limit(a, 50);
    rows jsonb;
    have integer;
    near jsonb;
    extra jsonb := '{}';
    note text := parley_search_forms_note();
BEGIN
    FOR pass IN 1 .. 2 LOOP
        q := parley_forms_query(qx, langs);
        SELECT coalesce(jsonb_agg(parley_memory_message_json(x.m, x.h, x.e)
                                  || jsonb_build_object('relevance_score', round(x.rank::numeric, 4),
                                                        'snippet', ts_headline(
                                                            parley_search_headline_config(langs),
                                                            (x.m).text, q,
                                                            'StartSel=**, StopSel=**, MaxWords=30, MinWords=10'))
                                  || CASE WHEN pass = 2 AND NOT x.v @@ q0
                                          THEN '{"near": true}'::jsonb ELSE '{}' END
                                  ORDER BY x.rank DESC, x.at DESC), '[]')
        INTO rows
        -- The exact term of the rank is the query's as asked: in a near
        -- reading, the messages holding its words as written come first.
        FROM (SELECT x.*, parley_search_score((x.m).tsv, x.v, qx0, q, x.at) AS rank
              FROM (SELECT y.*, CASE WHEN langs = '' THEN (y.m).tsv
                                     ELSE setweight((y.m).tsv, 'A') || (y.m).forms END AS v
                    FROM parley_memory_messages() y) x
              WHERE x.v @@ q ORDER BY rank DESC, x.at DESC LIMIT lim) x;
        EXIT WHEN pass = 2;
        -- Few or none: a word in few messages may be a slip of one the
        -- archive has.
        have := jsonb_array_length(rows);
        EXIT WHEN have >= least(lim, (parley_search_near_limits() ->> 'few')::integer);
        near := parley_search_near(qx0, langs, 'agents', NULL, have);
        EXIT WHEN near IS NULL;
        qx := (near ->> 'query')::tsquery;
    END LOOP;
    IF near IS NOT NULL AND jsonb_array_length(rows) > have THEN
        extra := jsonb_build_object('corrections', near -> 'corrections', 'notes',
                                    jsonb_build_array(parley_search_near_note(
                                        a ->> 'query', near -> 'corrections', have)));
    ELSIF near IS NOT NULL THEN
        rows := (SELECT coalesce(jsonb_agg(r - 'near'), '[]') FROM jsonb_array_elements(rows) r);
    END IF;
    IF note IS NOT NULL AND qx0 IS NOT NULL THEN
        extra := extra || jsonb_build_object('notes', coalesce(extra -> 'notes', '[]') || to_jsonb(note));
    END IF;
    RETURN parley_memory_page(rows, a, 50) || jsonb_build_object('scan', 'index') || extra;
END
$$;

CREATE OR REPLACE FUNCTION parley_memory_recent_work(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    lim integer := parley_memory_limit(a, 50);
    rows jsonb;
    oldest text;
BEGIN
    SELECT coalesce(jsonb_agg(parley_memory_message_json(x.m, x.h, x.e)
                              ORDER BY x.at DESC, x.mid DESC), '[]'),
           (array_agg(x.mid ORDER BY x.at, x.mid))[1]
    INTO rows, oldest
    FROM (SELECT * FROM parley_memory_messages() x ORDER BY x.at DESC, x.mid DESC LIMIT lim) x;
    RETURN parley_memory_cursor_page(rows, a, 50, 'next_reference_id', oldest);
END
$$;

CREATE OR REPLACE FUNCTION parley_memory_compacting_actions(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('compacting_actions', coalesce(jsonb_agg(r ORDER BY at DESC), '[]'),
                              'count', count(*), 'limit', parley_memory_limit(a, 50))
    FROM (SELECT jsonb_build_object('id', h.chat_id || ':' || h.id,
                                    'context_heap_id', h.chat_id || ':' || h.id,
                                    'continuation_message_id', m.external_id,
                                    'timestamp', to_char(coalesce(m.date, h.started_at) AT TIME ZONE 'UTC',
                                                         'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                    'summary', m.text) AS r,
                 coalesce(m.date, h.started_at) AS at
          FROM context_heaps h
          JOIN chats c ON c.id = h.chat_id AND c.kind = ANY (parley_source_kinds('agents'))
          LEFT JOIN LATERAL (SELECT * FROM messages m WHERE m.chat_id = h.chat_id
                             AND m.heap_id = h.id AND m.continuation ORDER BY m.id LIMIT 1) m ON true
          WHERE h.type = 'POST_COMPACTING'
          ORDER BY coalesce(m.date, h.started_at) DESC LIMIT parley_memory_limit(a, 50)) s
$$;

CREATE OR REPLACE FUNCTION parley_memory_timeline(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    lim integer := parley_memory_limit(a, 300);
    t0 timestamptz := (a ->> 'from')::timestamptz;
    t1 timestamptz := (a ->> 'to')::timestamptz;
    after_at timestamptz;
    rows jsonb;
    newest text;
BEGIN
    IF a ? 'from_block' OR a ? 'to_block' THEN
        RETURN jsonb_build_object('error', 'from_block/to_block: this source has no block '
                                           'heights; give from/to (ISO times)');
    END IF;
    IF a ? 'after_id' THEN
        SELECT x.at INTO after_at FROM parley_memory_messages() x WHERE x.mid = a ->> 'after_id';
    END IF;
    SELECT coalesce(jsonb_agg(parley_memory_message_json(x.m, x.h, x.e)
                              ORDER BY x.at, x.mid), '[]'),
           (array_agg(x.mid ORDER BY x.at DESC, x.mid DESC))[1]
    INTO rows, newest
    FROM (SELECT * FROM parley_memory_messages() x
          WHERE (t0 IS NULL OR x.at >= t0) AND (t1 IS NULL OR x.at < t1)
            AND (after_at IS NULL OR (x.at, x.mid) > (after_at, a ->> 'after_id'))
          ORDER BY x.at, x.mid LIMIT lim) x;
    RETURN parley_memory_cursor_page(rows, a, 300, 'next_after_id', newest);
END
$$;

CREATE OR REPLACE FUNCTION parley_memory_message_by_id(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        (SELECT parley_memory_message_json(x.m, x.h, x.e)
                || jsonb_build_object('extra', (x.m).extra)
         FROM parley_memory_messages() x WHERE x.mid = a ->> 'message_id'),
        jsonb_build_object('error', 'message_id: no message ' || coalesce(a ->> 'message_id', '')
                                    || '; take ids from get_recent_work or search_messages'))
$$;
