-- memory/agent_import: agents' session transcripts into the store
-- (src/import/agent_import.c). A transcript is JSON Lines, one event per
-- line (type user, assistant, summary or system; uuid, parentUuid,
-- sessionId, timestamp, cwd, gitBranch, version, isSidechain, message:
-- {role, content: a string or text, thinking, tool_use and tool_result
-- blocks}). Each session is a chat of kind agent_session; each block a
-- message (kind message, thought, tool_use or tool_result); a compaction
-- (a system event with subtype compact_boundary) opens a context heap of
-- type POST_COMPACTING whose first message, the summary (isCompactSummary),
-- is its continuation message; eras group sessions by project.
--
-- Codex CLI's rollouts (parleyd import codex) arrive as the same events
-- (src/import/codex_events.c makes them): f.source "codex", their own
-- account, their eras keyed by the session's working directory
-- ("codex:CWD"), a compaction one system compact_boundary event that
-- carries its summary as its message.

-- The account agents' sessions belong to.
CREATE OR REPLACE FUNCTION parley_agent_account() RETURNS bigint
    LANGUAGE sql AS $$
    SELECT parley_account_ensure('agent', 'claude-code', 'Claude Code')
$$;

-- The account of a source's sessions: claude-code or codex.
CREATE OR REPLACE FUNCTION parley_agent_account_of(p_source text) RETURNS bigint
    LANGUAGE sql AS $$
    SELECT CASE p_source WHEN 'codex' THEN parley_account_ensure('agent', 'codex', 'Codex CLI')
                         ELSE parley_agent_account() END
$$;

-- A block (or a string content) as text, in full.
CREATE OR REPLACE FUNCTION parley_agent_block_text(b jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN jsonb_typeof(b) = 'string' THEN b #>> '{}'
        WHEN b ->> 'type' = 'text' THEN b ->> 'text'
        WHEN b ->> 'type' = 'thinking' THEN coalesce(b ->> 'thinking', b ->> 'text')
        WHEN b ->> 'type' = 'tool_use' THEN coalesce(b ->> 'name', '') || ' '
                                           || coalesce((b -> 'input')::text, '')
        WHEN b ->> 'type' = 'tool_result' THEN CASE jsonb_typeof(b -> 'content')
            WHEN 'string' THEN b ->> 'content'
            WHEN 'array' THEN (SELECT string_agg(coalesce(x ->> 'text', x::text), E'\n')
                               FROM jsonb_array_elements(b -> 'content') x)
            ELSE (b -> 'content')::text END
        ELSE b::text END
$$;

-- Stores events ([{line, event}], in line order) of the era v_era (named
-- v_name) of the source v_source (claude-code, codex: the sessions'
-- extra.source); answers {messages, heaps, newSessions}. A message's key is
-- (session, event uuid#block), an event without a uuid keyed by the md5 of
-- its text: reading lines again (a transcript that shrank is read from its
-- start) stores nothing twice. A timestamp must be an ISO time (the
-- importer skips a line whose timestamp is not); none means now.
CREATE OR REPLACE FUNCTION parley_agent_store_events(v_source text, acc bigint, v_era bigint,
                                                     v_name text, events jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    e jsonb;
    ev record;
    v_chat bigint;
    v_heap bigint;
    v_sid text;
    v_key text;
    v_next bigint;
    blocks jsonb;
    b jsonb;
    i integer;
    kind text;
    n_msgs bigint := 0;
    n_heaps bigint := 0;
    sessions text[] := '{}';
    at_ts timestamptz;
BEGIN
    FOR ev IN SELECT x.value AS e FROM jsonb_array_elements(events) AS x ORDER BY (x.value ->> 'line')::bigint
    LOOP
        e := ev.e -> 'event';
        v_sid := e ->> 'sessionId';
        IF v_sid IS NULL THEN
            CONTINUE;
        END IF;
        v_key := coalesce(e ->> 'uuid', 'md5:' || md5(e::text));
        at_ts := coalesce((e ->> 'timestamp')::timestamptz, now());
        SELECT id INTO v_chat FROM chats WHERE account_id = acc AND external_id = v_sid;
        IF v_chat IS NULL THEN
            INSERT INTO chats (account_id, kind, external_id, title, extra)
            VALUES (acc, 'agent_session', v_sid, v_name,
                    jsonb_build_object('source', v_source, 'project', v_name,
                                       'cwd', e ->> 'cwd'))
            RETURNING id INTO v_chat;
            sessions := sessions || v_sid;
        END IF;
        IF e ->> 'type' = 'summary' THEN
            UPDATE chats SET about = e ->> 'summary', updated_at = now() WHERE id = v_chat;
            CONTINUE;
        END IF;
        SELECT id INTO v_heap FROM context_heaps WHERE chat_id = v_chat ORDER BY id DESC LIMIT 1;
        IF v_heap IS NULL OR (e ->> 'type' = 'system' AND e ->> 'subtype' = 'compact_boundary') THEN
            INSERT INTO context_heaps (chat_id, era_id, type, external_id, started_at)
            VALUES (v_chat, v_era, CASE WHEN v_heap IS NULL THEN 'FRESH' ELSE 'POST_COMPACTING' END,
                    v_key, at_ts)
            ON CONFLICT (chat_id, external_id) WHERE external_id IS NOT NULL DO NOTHING
            RETURNING id INTO v_heap;
            IF v_heap IS NULL THEN
                SELECT id INTO v_heap FROM context_heaps WHERE chat_id = v_chat
                ORDER BY id DESC LIMIT 1;
            ELSE
                n_heaps := n_heaps + 1;
            END IF;
            -- A boundary is no message, unless it carries one (Codex's
            -- compaction: its summary).
            IF e ->> 'type' = 'system' AND e -> 'message' IS NULL THEN
                CONTINUE;
            END IF;
        END IF;
        IF e ->> 'type' NOT IN ('user', 'assistant', 'system') THEN
            -- An unknown event type is kept as it is: a service row with the
            -- event in extra (the memory tools leave it out).
            blocks := jsonb_build_array(jsonb_build_object('type', 'event'));
        ELSIF jsonb_typeof(e #> '{message,content}') = 'array' THEN
            blocks := e #> '{message,content}';
        ELSE
            blocks := jsonb_build_array(coalesce(e #> '{message,content}', e -> 'content',
                                                 to_jsonb(''::text)));
        END IF;
        SELECT coalesce(max(id), 0) INTO v_next FROM messages WHERE chat_id = v_chat;
        i := 0;
        FOR b IN SELECT value FROM jsonb_array_elements(blocks) LOOP
            kind := CASE b ->> 'type' WHEN 'thinking' THEN 'thought' WHEN 'tool_use' THEN 'tool_use'
                                      WHEN 'tool_result' THEN 'tool_result' WHEN 'event' THEN 'service'
                                      ELSE 'message' END;
            INSERT INTO messages (chat_id, id, external_id, heap_id, sender_name, date, text, kind,
                                  role, outgoing, tool_calls, tool_results, continuation, extra)
            VALUES (v_chat, v_next + 1, v_key || '#' || i, v_heap,
                    coalesce(e #>> '{message,role}', e ->> 'type'), at_ts,
                    CASE WHEN kind = 'service' THEN NULL ELSE parley_agent_block_text(b) END, kind,
                    CASE WHEN coalesce(e #>> '{message,role}', e ->> 'type') IN
                              ('user', 'assistant', 'system') THEN coalesce(e #>> '{message,role}', e ->> 'type')
                         ELSE 'system' END,
                    coalesce(e #>> '{message,role}', e ->> 'type') = 'assistant',
                    CASE WHEN kind = 'tool_use' THEN b END,
                    CASE WHEN kind = 'tool_result' THEN b END,
                    coalesce((e ->> 'isCompactSummary')::boolean, false) AND i = 0,
                    jsonb_strip_nulls(jsonb_build_object(
                        'uuid', e ->> 'uuid', 'parentUuid', e ->> 'parentUuid',
                        'isSidechain', e -> 'isSidechain', 'cwd', e ->> 'cwd',
                        'gitBranch', e ->> 'gitBranch', 'version', e ->> 'version',
                        'model', e #>> '{message,model}', 'type', e ->> 'type',
                        'block', CASE WHEN kind = 'message' AND jsonb_typeof(b) = 'object'
                                           AND b ->> 'type' NOT IN ('text') THEN b END,
                        'event', CASE WHEN kind = 'service' THEN e END,
                        'other', nullif(e - '{type,uuid,parentUuid,sessionId,timestamp,cwd,gitBranch,version,isSidechain,message,isCompactSummary,userType,requestId}'::text[], '{}'::jsonb))))
            ON CONFLICT (chat_id, external_id) WHERE external_id IS NOT NULL DO NOTHING;
            IF FOUND THEN
                v_next := v_next + 1;
                n_msgs := n_msgs + 1;
            END IF;
            i := i + 1;
        END LOOP;
        UPDATE chats SET last_message_id = v_next, last_message_date = at_ts, updated_at = now()
        WHERE id = v_chat AND (last_message_date IS NULL OR last_message_date <= at_ts);
        UPDATE context_heaps SET ended_at = at_ts WHERE chat_id = v_chat AND id = v_heap;
    END LOOP;
    RETURN jsonb_build_object('messages', n_msgs, 'heaps', n_heaps, 'newSessions', to_jsonb(sessions));
END
$$;

-- Claude Code's events (parley_agent_store_events).
CREATE OR REPLACE FUNCTION parley_agent_events(acc bigint, v_era bigint, v_name text,
                                               events jsonb) RETURNS jsonb
    LANGUAGE sql AS $$
    SELECT parley_agent_store_events('claude-code', acc, v_era, v_name, events)
$$;

-- Applies one piece of a transcript file: f = {source, path, folder,
-- project, from, to, lines, eras, restart}, events = [{line, event}];
-- source claude-code (the default) or codex. A Claude Code file's era is
-- its project folder's ("claude-code:FOLDER"), a Codex file's its
-- session's working directory's ("codex:CWD": the first event's that has
-- one, else the one stored with the session, else "codex:" f.folder); it
-- is named by f.eras (keyed by the folder or by a session's working
-- directory) when that names it, else after the working directory's last
-- component, else f.project. Only when the file's recorded offset is
-- f.from (so a piece is applied once, even by two imports at a time), or
-- when f.from is 0 and the recorded offset is f.restart (a file that shrank,
-- read again from its start); the offset moves to f.to with it. An event
-- that cannot be stored (a value PostgreSQL refuses) does not stop the
-- others: the piece is then stored event by event, and those events are
-- answered in badLines [{line, error}] and skipped. Answers what it did
-- ({messages, heaps, newSessions, readTo[, badLines][, restarted]}, or
-- {skipped, readTo}).
CREATE OR REPLACE FUNCTION parley_agent_ingest(f jsonb, events jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    v_source text := coalesce(f ->> 'source', 'claude-code');
    acc bigint := parley_agent_account_of(v_source);
    v_era bigint;
    v_key text;
    cur bigint;
    restarted boolean := false;
    r jsonb;
    r1 jsonb;
    x jsonb;
    bad jsonb := '[]';
    v_cwd text := (SELECT x.value -> 'event' ->> 'cwd' FROM jsonb_array_elements(events) AS x
                   WHERE x.value -> 'event' ->> 'cwd' <> '' ORDER BY (x.value ->> 'line')::bigint
                   LIMIT 1);
    v_named text;
    v_name text;
BEGIN
    IF v_cwd IS NULL THEN
        -- A later piece of a session whose working directory came before.
        SELECT nullif(c.extra ->> 'cwd', '') INTO v_cwd FROM chats c
        WHERE c.account_id = acc AND c.kind = 'agent_session'
          AND c.external_id = (SELECT x.value -> 'event' ->> 'sessionId'
                               FROM jsonb_array_elements(events) AS x
                               WHERE x.value -> 'event' ->> 'sessionId' IS NOT NULL LIMIT 1);
    END IF;
    v_named := coalesce(f -> 'eras' ->> (f ->> 'folder'), f -> 'eras' ->> v_cwd);
    v_name := coalesce(v_named, nullif(regexp_replace(v_cwd, '^.*/', ''), ''), f ->> 'project');
    v_key := CASE WHEN v_source = 'codex' THEN 'codex:' || coalesce(v_cwd, f ->> 'folder')
                  ELSE 'claude-code:' || (f ->> 'folder') END;
    INSERT INTO agent_files (path, project) VALUES (f ->> 'path', v_name)
    ON CONFLICT (path) DO NOTHING;
    SELECT read_to INTO cur FROM agent_files WHERE path = f ->> 'path' FOR UPDATE;
    IF (f ->> 'from')::bigint = 0 AND cur = (f ->> 'restart')::bigint THEN
        restarted := true;
    ELSIF cur <> (f ->> 'from')::bigint THEN
        RETURN jsonb_build_object('skipped', true, 'readTo', cur);
    END IF;
    INSERT INTO eras (external_id, name) VALUES (v_key, v_name)
    ON CONFLICT (external_id) DO UPDATE SET name = v_named
        WHERE v_named IS NOT NULL AND eras.name IS DISTINCT FROM v_named;
    SELECT id INTO v_era FROM eras WHERE external_id = v_key;
    BEGIN
        r := parley_agent_store_events(v_source, acc, v_era, v_name, events);
    EXCEPTION WHEN others THEN
        -- One event PostgreSQL refuses: each event alone, the bad skipped.
        r := jsonb_build_object('messages', 0, 'heaps', 0, 'newSessions', '[]'::jsonb);
        FOR x IN SELECT value FROM jsonb_array_elements(events) ORDER BY (value ->> 'line')::bigint
        LOOP
            BEGIN
                r1 := parley_agent_store_events(v_source, acc, v_era, v_name, jsonb_build_array(x));
                r := jsonb_build_object(
                    'messages', (r ->> 'messages')::bigint + (r1 ->> 'messages')::bigint,
                    'heaps', (r ->> 'heaps')::bigint + (r1 ->> 'heaps')::bigint,
                    'newSessions', (r -> 'newSessions') || (r1 -> 'newSessions'));
            EXCEPTION WHEN others THEN
                bad := bad || jsonb_build_object('line', (x ->> 'line')::bigint, 'error', SQLERRM);
            END;
        END LOOP;
    END;
    UPDATE agent_files SET read_to = (f ->> 'to')::bigint,
                           ident = coalesce(f ->> 'ident', ident),
                           lines = CASE WHEN restarted THEN 0 ELSE lines END
                                   + coalesce((f ->> 'lines')::bigint, 0),
                           updated_at = now()
    WHERE path = f ->> 'path';
    RETURN r || jsonb_build_object('readTo', (f ->> 'to')::bigint)
             || CASE WHEN bad <> '[]' THEN jsonb_build_object('badLines', bad) ELSE '{}' END
             || CASE WHEN restarted THEN jsonb_build_object('restarted', true) ELSE '{}' END;
END
$$;

-- Where an import of path resumes: {"readTo": the byte offset (0 for a
-- file never read), "lines": the lines read up to it, "ident": the file
-- that was ("dev:ino"; absent when not known)}.
CREATE OR REPLACE FUNCTION parley_agent_file_state(p_path text) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('readTo', coalesce(max(read_to), 0), 'lines', coalesce(max(lines), 0))
        || coalesce((SELECT jsonb_build_object('ident', ident) FROM agent_files
                     WHERE path = p_path AND ident IS NOT NULL), '{}')
    FROM agent_files WHERE path = p_path
$$;

-- Where an import of path resumes (0 for a file never read).
CREATE OR REPLACE FUNCTION parley_agent_file_offset(p_path text) RETURNS bigint
    LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT read_to FROM agent_files WHERE path = p_path), 0)
$$;

-- Names the imported eras an eras file names (see parley_agent_ingest):
-- keys are project folders or sessions' working directories (a Codex era
-- is a working directory's). Answers how many eras were renamed.
CREATE OR REPLACE FUNCTION parley_agent_name_eras(names jsonb) RETURNS integer
    LANGUAGE plpgsql AS $$
DECLARE
    n integer;
    m integer;
BEGIN
    UPDATE eras e SET name = x.value
    FROM jsonb_each_text(names) x
    WHERE e.external_id IN ('claude-code:' || x.key, 'codex:' || x.key) AND e.name <> x.value;
    GET DIAGNOSTICS n = ROW_COUNT;
    UPDATE eras e SET name = x.value
    FROM jsonb_each_text(names) x,
         (SELECT DISTINCT h.era_id, c.extra ->> 'cwd' AS cwd
          FROM chats c JOIN context_heaps h ON h.chat_id = c.id
          WHERE c.kind = 'agent_session' AND c.extra ->> 'source' = 'claude-code') s
    WHERE s.era_id = e.id AND s.cwd = x.key AND e.name <> x.value
      AND NOT names ? substr(e.external_id, length('claude-code:') + 1);
    GET DIAGNOSTICS m = ROW_COUNT;
    RETURN n + m;
END
$$;
