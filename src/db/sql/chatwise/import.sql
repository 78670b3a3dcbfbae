-- chatwise/import: ChatWise's chats (its SQLite app.db, read by
-- src/import/chatwise_import.c) into the store: each chat a chat of kind
-- ai_chat under an account of kind chatwise named by the file's path, each
-- message a message with its role, its text id as external id and a
-- numeric id assigned in the order rows are read; tool calls and results
-- (meta.toolCall, meta.toolResult) kept structured, the results' text in
-- tool_text. Rows stored unchanged are not written again.

-- The account of a ChatWise file.
CREATE OR REPLACE FUNCTION parley_chatwise_account(p_file text) RETURNS bigint
    LANGUAGE sql AS $$
    SELECT parley_account_ensure('chatwise', p_file, 'ChatWise')
$$;

-- A ChatWise time: epoch seconds in some databases, milliseconds in others
-- (decided per value: above 10^11 is milliseconds, i.e. after 1973 in ms
-- and after 5138 in seconds); a numeric string likewise; other text as a
-- timestamp. NULL when absent, unreadable or not within the years 1 to
-- 9999 (-1e15 ms, 1e20, 'infinity').
CREATE OR REPLACE FUNCTION parley_chatwise_time(v jsonb) RETURNS timestamptz
    LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    n numeric;
    t timestamptz;
BEGIN
    IF jsonb_typeof(v) = 'number' THEN
        n := v::numeric;
    ELSIF jsonb_typeof(v) = 'string' AND (v #>> '{}') ~ '^\s*-?\d+(\.\d+)?\s*$' THEN
        n := (v #>> '{}')::numeric;
    ELSIF jsonb_typeof(v) = 'string' THEN
        BEGIN
            t := (v #>> '{}')::timestamptz;
        EXCEPTION WHEN others THEN
            RETURN NULL;
        END;
        RETURN CASE WHEN t BETWEEN '0001-01-01 00:00:00+00' AND '9999-12-31 23:59:59+00' THEN t END;
    ELSE
        RETURN NULL;
    END IF;
    IF abs(n) >= 1e11 THEN
        n := n / 1000;
    END IF;
    IF n < -62135596800 OR n > 253402300799 THEN -- outside the years 1 to 9999
        RETURN NULL;
    END IF;
    RETURN to_timestamp(n::double precision);
END
$$;

-- meta.toolCall ({callId: {server_name|server, tool_name|tool,
-- arguments|args}}) as [{id, server, tool, arguments}], NULL when none.
CREATE OR REPLACE FUNCTION parley_chatwise_tool_calls(meta jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_agg(jsonb_build_object(
               'id', c.key,
               'server', coalesce(c.value ->> 'server_name', c.value ->> 'server'),
               'tool', coalesce(c.value ->> 'tool_name', c.value ->> 'tool'),
               'arguments', coalesce(c.value -> 'arguments', c.value -> 'args'))
           ORDER BY c.key)
    FROM jsonb_each(CASE WHEN jsonb_typeof(meta -> 'toolCall') = 'object'
                         THEN meta -> 'toolCall' END) c
    WHERE jsonb_typeof(c.value) = 'object'
$$;

-- meta.toolResult as a list of results: one result ({content: [...]}), or
-- an object of results keyed by call id, or text.
CREATE OR REPLACE FUNCTION parley_chatwise_tool_results(meta jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN meta -> 'toolResult' IS NULL OR meta -> 'toolResult' = 'null' THEN NULL
        WHEN jsonb_typeof(meta -> 'toolResult') = 'object'
             AND (meta -> 'toolResult' ? 'content' OR meta -> 'toolResult' ? 'isError')
            THEN jsonb_build_array(meta -> 'toolResult')
        WHEN jsonb_typeof(meta -> 'toolResult') = 'object'
            THEN (SELECT jsonb_agg(r.value || jsonb_build_object('id', r.key) ORDER BY r.key)
                  FROM jsonb_each(meta -> 'toolResult') r WHERE jsonb_typeof(r.value) = 'object')
        WHEN jsonb_typeof(meta -> 'toolResult') = 'array' THEN meta -> 'toolResult'
        ELSE jsonb_build_array(jsonb_build_object('text', meta -> 'toolResult'))
    END
$$;

-- The plain text of tool results: their content[].text (and a result that
-- is text), joined by blank lines; no deeper flattening.
CREATE OR REPLACE FUNCTION parley_chatwise_tool_text(results jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT nullif(string_agg(t, E'\n\n' ORDER BY o, i), '')
    FROM (SELECT r.o, c.i, c.value ->> 'text' AS t
          FROM jsonb_array_elements(coalesce(results, '[]')) WITH ORDINALITY r(value, o)
          CROSS JOIN LATERAL jsonb_array_elements(
              CASE WHEN jsonb_typeof(r.value -> 'content') = 'array' THEN r.value -> 'content'
                   ELSE '[]' END) WITH ORDINALITY c(value, i)
          WHERE c.value ->> 'text' IS NOT NULL
          UNION ALL
          SELECT r.o, 0, r.value #>> '{text}'
          FROM jsonb_array_elements(coalesce(results, '[]')) WITH ORDINALITY r(value, o)
          WHERE jsonb_typeof(r.value -> 'text') = 'string') s
$$;

-- Applies rows of one batch (see parley_chatwise_ingest) at once.
CREATE OR REPLACE FUNCTION parley_chatwise_ingest_rows(p_file text, what text, rows jsonb)
    RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    acc bigint := parley_chatwise_account(p_file);
    n_chats bigint := 0;
    n_msgs bigint := 0;
    n_tools bigint := 0;
    n_orphans bigint := 0;
BEGIN
    -- One import of a file at a time assigns message ids.
    PERFORM pg_advisory_xact_lock(hashtext('parley_chatwise:' || p_file));
    IF what = 'chats' THEN
        WITH src AS (
            SELECT r ->> 'id' AS ext, coalesce(r ->> 'title', '') AS title,
                   parley_chatwise_time(r -> 'created') AS created,
                   parley_chatwise_time(r -> 'updated') AS updated,
                   r -> 'truncated' AS truncated
            FROM jsonb_array_elements(rows) r WHERE r ->> 'id' IS NOT NULL),
        up AS (
            INSERT INTO chats (account_id, kind, external_id, title, extra)
            SELECT acc, 'ai_chat', ext, title,
                   jsonb_build_object('source', 'chatwise',
                                      'createdAt', (extract(epoch FROM created) * 1000)::bigint,
                                      'updatedAt', (extract(epoch FROM updated) * 1000)::bigint)
                   || CASE WHEN truncated IS NOT NULL
                           THEN jsonb_build_object('truncated', truncated) ELSE '{}' END
            FROM src
            ON CONFLICT (account_id, external_id) WHERE external_id IS NOT NULL DO UPDATE
                SET title = EXCLUDED.title, extra = chats.extra || EXCLUDED.extra,
                    updated_at = now()
                WHERE chats.title IS DISTINCT FROM EXCLUDED.title
                   OR chats.extra -> 'updatedAt' IS DISTINCT FROM EXCLUDED.extra -> 'updatedAt'
                   OR chats.extra -> 'createdAt' IS DISTINCT FROM EXCLUDED.extra -> 'createdAt'
            RETURNING 1)
        SELECT count(*) INTO n_chats FROM up;
    ELSIF what = 'messages' THEN
        WITH b AS MATERIALIZED (
            SELECT c.id AS chat_id, r.value ->> 'id' AS ext, r.value ->> 'role' AS role,
                   CASE WHEN r.value ->> 'role' IN ('user', 'assistant', 'system', 'tool')
                        THEN r.value ->> 'role' END AS known_role,
                   CASE WHEN jsonb_typeof(r.value -> 'content') = 'string' THEN r.value ->> 'content'
                        WHEN coalesce(r.value -> 'content', 'null') = 'null' THEN ''
                        ELSE (r.value -> 'content')::text END AS text,
                   coalesce(parley_chatwise_time(r.value -> 'at'),
                            to_timestamp((c.extra ->> 'createdAt')::numeric / 1000),
                            'epoch'::timestamptz) AS at,
                   parley_chatwise_tool_calls(r.value -> 'meta') AS tool_calls,
                   parley_chatwise_tool_results(r.value -> 'meta') AS tool_results,
                   jsonb_strip_nulls(jsonb_build_object(
                       'source', 'chatwise',
                       'role', CASE WHEN r.value ->> 'role' NOT IN ('user', 'assistant', 'system',
                                                                    'tool')
                                    THEN r.value ->> 'role' END,
                       'meta', nullif(r.value -> 'meta', 'null'),
                       'generatedFiles', nullif(r.value -> 'files', 'null'),
                       'truncated', r.value -> 'truncated')) AS extra,
                   r.o AS ord
            FROM jsonb_array_elements(rows) WITH ORDINALITY r(value, o)
            JOIN chats c ON c.account_id = acc AND c.external_id = r.value ->> 'chat'
            WHERE r.value ->> 'id' IS NOT NULL),
        upd AS (
            UPDATE messages m
            SET text = b.text, date = b.at, role = b.known_role,
                outgoing = b.role IS NOT DISTINCT FROM 'user',
                sender_name = b.role, tool_calls = b.tool_calls, tool_results = b.tool_results,
                tool_text = parley_chatwise_tool_text(b.tool_results), extra = b.extra,
                updated_at = now()
            FROM b
            WHERE m.chat_id = b.chat_id AND m.external_id = b.ext
              AND (m.text, m.date, m.sender_name, m.tool_calls, m.tool_results, m.extra)
                  IS DISTINCT FROM (b.text, b.at, b.role, b.tool_calls, b.tool_results, b.extra)
            RETURNING 1),
        ins AS (
            INSERT INTO messages (chat_id, id, external_id, sender_name, date, text, kind, role,
                                  outgoing, tool_calls, tool_results, tool_text, extra)
            SELECT b.chat_id,
                   coalesce((SELECT max(id) FROM messages x WHERE x.chat_id = b.chat_id), 0)
                       + row_number() OVER (PARTITION BY b.chat_id ORDER BY b.ord),
                   b.ext, b.role, b.at, b.text, 'message', b.known_role,
                   b.role IS NOT DISTINCT FROM 'user',
                   b.tool_calls, b.tool_results, parley_chatwise_tool_text(b.tool_results),
                   b.extra
            FROM b
            WHERE NOT EXISTS (SELECT 1 FROM messages x
                              WHERE x.chat_id = b.chat_id AND x.external_id = b.ext)
            RETURNING 1)
        SELECT (SELECT count(*) FROM upd) + (SELECT count(*) FROM ins),
               (SELECT count(*) FROM b WHERE tool_calls IS NOT NULL),
               jsonb_array_length(rows) - (SELECT count(*) FROM b)
        INTO n_msgs, n_tools, n_orphans;
        UPDATE chats c
        SET last_message_id = s.id, last_message_date = s.date, updated_at = now()
        FROM (SELECT DISTINCT ON (m.chat_id) m.chat_id, m.id, m.date
              FROM messages m
              WHERE m.chat_id IN (SELECT c2.id FROM chats c2
                                  WHERE c2.account_id = acc AND c2.external_id IN
                                        (SELECT DISTINCT r ->> 'chat'
                                         FROM jsonb_array_elements(rows) r))
              ORDER BY m.chat_id, m.date DESC, m.id DESC) s
        WHERE c.id = s.chat_id
          AND (c.last_message_id, c.last_message_date) IS DISTINCT FROM (s.id, s.date);
    ELSE
        RAISE EXCEPTION 'parley_chatwise_ingest: what is chats or messages, not %', what
            USING ERRCODE = 'PT400';
    END IF;
    RETURN jsonb_build_object('chatsWritten', n_chats, 'written', n_msgs, 'toolCalls', n_tools,
                              'orphans', n_orphans);
END
$$;

-- Applies one batch read from the file p_file: what 'chats' (rows {id,
-- title, created, updated[, truncated]}) or 'messages' (rows {id, chat,
-- role, content, at, meta, files[, truncated]}; truncated: {column: its
-- bytes in the file} for a value the importer cut). Answers {chatsWritten,
-- written, toolCalls, orphans[, badTimes][, refused]}: chats and messages
-- new or changed, messages with tool calls, messages whose chat is not in
-- the file (skipped), the ids of rows whose time is there but not a time
-- (stored without it: a message then dated as its chat), and the rows
-- PostgreSQL refused ([{id, error}], skipped: the batch is then applied
-- row by row, so one bad row never fails the others); the last two only
-- when there are some.
CREATE OR REPLACE FUNCTION parley_chatwise_ingest(p_file text, what text, rows jsonb)
    RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    r jsonb;
    r1 jsonb;
    x jsonb;
    refused jsonb := '[]';
    bad_times jsonb;
BEGIN
    IF what IS DISTINCT FROM 'chats' AND what IS DISTINCT FROM 'messages' THEN
        RAISE EXCEPTION 'parley_chatwise_ingest: what is chats or messages, not %', what
            USING ERRCODE = 'PT400';
    END IF;
    SELECT coalesce(jsonb_agg(x.value ->> 'id' ORDER BY o), '[]') INTO bad_times
    FROM jsonb_array_elements(rows) WITH ORDINALITY x(value, o)
    WHERE EXISTS (SELECT 1 FROM unnest(CASE WHEN what = 'chats'
                                            THEN ARRAY[x.value -> 'created', x.value -> 'updated']
                                            ELSE ARRAY[x.value -> 'at'] END) t
                  WHERE t IS NOT NULL AND t <> 'null' AND parley_chatwise_time(t) IS NULL);
    BEGIN
        r := parley_chatwise_ingest_rows(p_file, what, rows);
    EXCEPTION WHEN others THEN
        r := jsonb_build_object('chatsWritten', 0, 'written', 0, 'toolCalls', 0, 'orphans', 0);
        FOR x IN SELECT value FROM jsonb_array_elements(rows) WITH ORDINALITY a(value, o) ORDER BY o
        LOOP
            BEGIN
                r1 := parley_chatwise_ingest_rows(p_file, what, jsonb_build_array(x));
                r := jsonb_build_object(
                    'chatsWritten', (r ->> 'chatsWritten')::bigint + (r1 ->> 'chatsWritten')::bigint,
                    'written', (r ->> 'written')::bigint + (r1 ->> 'written')::bigint,
                    'toolCalls', (r ->> 'toolCalls')::bigint + (r1 ->> 'toolCalls')::bigint,
                    'orphans', (r ->> 'orphans')::bigint + (r1 ->> 'orphans')::bigint);
            EXCEPTION WHEN others THEN
                refused := refused || jsonb_build_object('id', x -> 'id', 'error', SQLERRM);
            END;
        END LOOP;
    END;
    RETURN r || CASE WHEN bad_times <> '[]' THEN jsonb_build_object('badTimes', bad_times) ELSE '{}' END
             || CASE WHEN refused <> '[]' THEN jsonb_build_object('refused', refused) ELSE '{}' END;
END
$$;
