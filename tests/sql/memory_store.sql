-- memory_store: the agent-transcript importer (src/db/sql/memory/agent_import.sql)
-- and the memory tools over the store (src/db/sql/memory/store.sql) on fixed
-- events: a piece is applied once, compaction opens a POST_COMPACTING heap
-- whose summary is the continuation, answers follow when things were said
-- (two sessions applied newest first), eras are named by the working
-- directory or an eras map.

CREATE FUNCTION pg_temp.ev(line integer, e jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('line', line, 'event', e)
$$;
CREATE FUNCTION pg_temp.msg(sid text, uuid text, ts text, role text, content jsonb,
                            extra jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('type', role, 'uuid', uuid, 'sessionId', sid, 'timestamp', ts,
                              'cwd', '/home/dev/my-app', 'message',
                              jsonb_build_object('role', role, 'content', content)) || extra
$$;

-- Session B (said later) is applied first; session A after it.
SELECT pg_temp.expect('session B applied',
    parley_agent_ingest('{"path": "/t/-home-dev-my-app/b.jsonl", "folder": "-home-dev-my-app",
                          "project": "app", "from": "0", "to": "300", "lines": "4"}',
        jsonb_build_array(
            pg_temp.ev(1, pg_temp.msg('B', 'b1', '2026-02-01T10:00:00Z', 'user', '"Build search."')),
            pg_temp.ev(2, '{"type": "system", "subtype": "compact_boundary", "uuid": "b2",
                            "sessionId": "B", "timestamp": "2026-02-01T11:00:00Z"}'),
            pg_temp.ev(3, pg_temp.msg('B', 'b3', '2026-02-01T11:00:01Z', 'user',
                                      '"This session is being continued: search."',
                                      '{"isCompactSummary": true}')),
            pg_temp.ev(4, pg_temp.msg('B', 'b4', '2026-02-01T11:05:00Z', 'assistant',
                '[{"type": "thinking", "thinking": "Rank first."},
                  {"type": "tool_use", "name": "Bash", "input": {"command": "make"}}]'))))
        - 'newSessions',
    '{"messages": 4, "heaps": 2, "readTo": 300}'::jsonb);
SELECT pg_temp.expect('the same piece again is skipped',
    parley_agent_ingest('{"path": "/t/-home-dev-my-app/b.jsonl", "folder": "-home-dev-my-app",
                          "project": "app", "from": "0", "to": "300", "lines": "4"}',
        jsonb_build_array(pg_temp.ev(1, pg_temp.msg('B', 'b1', '2026-02-01T10:00:00Z', 'user',
                                                    '"Build search."')))),
    '{"skipped": true, "readTo": 300}'::jsonb);
SELECT pg_temp.expect('the offset', parley_agent_file_offset('/t/-home-dev-my-app/b.jsonl'), 300::bigint);
SELECT pg_temp.expect('an unknown file starts at 0', parley_agent_file_offset('/nope'), 0::bigint);
SELECT pg_temp.expect('the state: offset and lines', parley_agent_file_state('/t/-home-dev-my-app/b.jsonl'),
    '{"readTo": 300, "lines": 4}'::jsonb);

SELECT pg_temp.expect('session A applied',
    parley_agent_ingest('{"path": "/t/-home-dev-my-app/a.jsonl", "folder": "-home-dev-my-app",
                          "project": "app", "from": "0", "to": "200", "lines": "3"}',
        jsonb_build_array(
            pg_temp.ev(1, pg_temp.msg('A', 'a1', '2026-01-01T10:00:00Z', 'user', '"Start the archive."')),
            pg_temp.ev(2, pg_temp.msg('A', 'a2', '2026-01-01T10:01:00Z', 'assistant',
                                      '[{"type": "text", "text": "Archive started."}]')),
            pg_temp.ev(3, '{"type": "future-event", "uuid": "a3", "sessionId": "A",
                            "timestamp": "2026-01-01T10:02:00Z", "payload": 7}')))
        ->> 'messages',
    '3');

-- Answers follow the transcripts' times, not the order they were applied.
SELECT pg_temp.expect('the continuation',
    parley_memory_latest_continuation('{}', '{}') - '{context_heap_id,message_number}'::text[],
    '{"message_id": "b3#0", "content": "This session is being continued: search.",
      "timestamp": "2026-02-01T11:00:01.000Z", "era_name": "my-app", "sender_id": "user"}'::jsonb);
SELECT pg_temp.expect('before the continuation, newest first',
    (SELECT string_agg(m ->> 'content', ' | ')
     FROM jsonb_array_elements(parley_memory_messages_before('{"reference_id": "b3#0"}', '{}')
                               -> 'messages') m),
    'Build search. | Archive started. | Start the archive.');
SELECT pg_temp.expect('the era in message order, the unknown event left out',
    (SELECT string_agg(m ->> 'message_type', ',')
     FROM jsonb_array_elements(parley_memory_era_summary('{"era_name": "my-app"}', '{}')
                               -> 'messages') m),
    'text,text,text,text,thought,tool_use');
SELECT pg_temp.expect('the heap after the compaction',
    parley_memory_context_heap(jsonb_build_object('heap_id',
        parley_memory_latest_continuation('{}', '{}') ->> 'context_heap_id'), '{}') #>> '{heap,type}',
    'POST_COMPACTING');
SELECT pg_temp.expect('tool use rendered',
    parley_memory_recent_work('{"limit": 1}', '{}') #>> '{messages,0,content}',
    '[tool_use Bash] {"command": "make"}');
SELECT pg_temp.expect('the unknown event kept',
    (SELECT extra #>> '{event,payload}' FROM messages WHERE external_id = 'a3#0'), '7');
SELECT pg_temp.expect('limit capped',
    parley_memory_recent_work('{"limit": 5000}', '{}') -> 'limit_capped', 'true'::jsonb);
SELECT pg_temp.expect('a limit past 32 bits capped',
    parley_memory_recent_work('{"limit": 1000000000000}', '{}') -> 'limit', '1000'::jsonb);
SELECT pg_temp.expect('a bad heap id says where ids come from',
    parley_memory_context_heap('{"heap_id": "x"}', '{}') ->> 'error',
    'heap_id: no context heap x; messages carry their context_heap_id');

-- Eras: named by a map keyed by folder or working directory.
SELECT pg_temp.expect('renamed by the working directory',
    parley_agent_name_eras('{"/home/dev/my-app": "The app"}'), 1);
SELECT pg_temp.expect('the new name answers',
    parley_memory_latest_continuation('{}', '{}') ->> 'era_name', 'The app');
SELECT pg_temp.expect('the folder key wins',
    parley_agent_name_eras('{"/home/dev/my-app": "The app", "-home-dev-my-app": "App"}'), 1);
SELECT pg_temp.expect('unchanged names change nothing',
    parley_agent_name_eras('{"-home-dev-my-app": "App"}'), 0);

-- A file that shrank is read again from 0, replacing the offset it had;
-- what is stored again is not doubled; an event PostgreSQL refuses is
-- answered by line and the others stored.
SELECT pg_temp.expect('session R applied',
    parley_agent_ingest('{"path": "/t/-home-dev-zz/r.jsonl", "folder": "-home-dev-zz",
                          "project": "zz", "from": "0", "to": "300", "lines": "2"}',
        jsonb_build_array(
            pg_temp.ev(1, pg_temp.msg('R', 'r1', '2025-02-01T10:00:00Z', 'user', '"One."')),
            pg_temp.ev(2, pg_temp.msg('R', 'r2', '2025-02-01T10:01:00Z', 'user', '"Two."'))))
        ->> 'messages',
    '2');
SELECT pg_temp.expect('from 0 is refused without restart',
    parley_agent_ingest('{"path": "/t/-home-dev-zz/r.jsonl", "folder": "-home-dev-zz",
                          "project": "zz", "from": "0", "to": "100", "lines": "2"}', '[]') ->> 'skipped',
    'true');
SELECT pg_temp.expect('read again from the start',
    parley_agent_ingest('{"path": "/t/-home-dev-zz/r.jsonl", "folder": "-home-dev-zz",
                          "project": "zz", "from": "0", "to": "150", "lines": "3", "restart": "300"}',
        jsonb_build_array(
            pg_temp.ev(1, pg_temp.msg('R', 'r1', '2025-02-01T10:00:00Z', 'user', '"One."')),
            pg_temp.ev(2, pg_temp.msg('R', 'r9', '2025-02-01T10:06:00Z', 'user', '"refused"',
                                      '{"isCompactSummary": "perhaps"}')),
            pg_temp.ev(3, pg_temp.msg('R', 'r5', '2025-02-01T10:07:00Z', 'user', '"New after the cut."'))))
        - 'newSessions',
    '{"messages": 1, "heaps": 0, "readTo": 150, "restarted": true,
      "badLines": [{"line": 2, "error": "invalid input syntax for type boolean: \"perhaps\""}]}'::jsonb);
SELECT pg_temp.expect('its state', parley_agent_file_state('/t/-home-dev-zz/r.jsonl'),
    '{"readTo": 150, "lines": 3}'::jsonb);
SELECT pg_temp.expect('nothing twice',
    (SELECT string_agg(m.external_id, ',' ORDER BY m.id) FROM messages m JOIN chats c ON c.id = m.chat_id
     WHERE c.external_id = 'R'), 'r1#0,r2#0,r5#0');

-- A project (the sessions' working directory) as bootstrap_memory's steps
-- take it: only its sessions answer; another project's never.
CREATE TEMP TABLE app_cont AS
    SELECT parley_memory_latest_continuation('{}', '{}') AS c;
SELECT pg_temp.expect('every session so far is my-app''s (a trailing slash aside)',
    parley_memory_latest_continuation('{"project": "/home/dev/my-app/"}', '{}'), (SELECT c FROM app_cont));
SELECT pg_temp.expect('session O (another project, said last) applied',
    parley_agent_ingest('{"path": "/t/-home-dev-other/o.jsonl", "folder": "-home-dev-other",
                          "project": "other", "from": "0", "to": "90", "lines": "3"}',
        jsonb_build_array(
            pg_temp.ev(1, pg_temp.msg('O', 'o1', '2027-01-01T10:00:00Z', 'user', '"Other work."',
                                      '{"cwd": "/home/dev/other"}')),
            pg_temp.ev(2, '{"type": "system", "subtype": "compact_boundary", "uuid": "o2",
                            "sessionId": "O", "cwd": "/home/dev/other", "timestamp": "2027-01-01T11:00:00Z"}'),
            pg_temp.ev(3, pg_temp.msg('O', 'o3', '2027-01-01T11:00:01Z', 'user', '"Continued: other."',
                                      '{"isCompactSummary": true, "cwd": "/home/dev/other"}'))))
        ->> 'messages', '2');
SELECT pg_temp.expect('without a project: the latest of all',
    parley_memory_latest_continuation('{}', '{}') ->> 'content', 'Continued: other.');
SELECT pg_temp.expect('with one: its own latest',
    parley_memory_latest_continuation('{"project": "/home/dev/my-app"}', '{}'), (SELECT c FROM app_cont));
SELECT pg_temp.expect('the other project''s',
    parley_memory_latest_continuation('{"project": "/home/dev/other"}', '{}') ->> 'content', 'Continued: other.');
SELECT pg_temp.expect('a project with nothing: none',
    parley_memory_latest_continuation('{"project": "/home/dev/none"}', '{}'), 'null'::jsonb);
SELECT pg_temp.expect('the work before, of the project only',
    (SELECT string_agg(x ->> 'content', '|') FROM jsonb_array_elements(
        parley_memory_messages_before('{"project": "/home/dev/other",
                                        "reference_timestamp": "9999-12-31T00:00:00Z"}', '{}') -> 'messages') x),
    'Continued: other.|Other work.');
SELECT pg_temp.expect('a reference of another project is no message of this one',
    parley_memory_messages_before(jsonb_build_object('project', '/home/dev/none', 'reference_id',
        (SELECT c ->> 'message_id' FROM app_cont)), '{}') ->> 'error' LIKE 'reference_id: no message%', true);
SELECT pg_temp.expect('nothing before in a project with nothing',
    parley_memory_messages_before('{"project": "/home/dev/none",
                                    "reference_timestamp": "9999-12-31T00:00:00Z"}', '{}') ->> 'count', '0');
SELECT pg_temp.expect('the foundational era of the project',
    parley_memory_era_summary('{"foundational": true, "project": "/home/dev/other"}', '{}') #>> '{era,name}', 'other');
SELECT pg_temp.expect('the foundational era of my-app, though another was worked on last',
    parley_memory_era_summary('{"foundational": true, "project": "/home/dev/my-app"}', '{}') #>> '{era,name}',
    (SELECT c ->> 'era_name' FROM app_cont));
SELECT pg_temp.expect('no era for a project with nothing',
    parley_memory_era_summary('{"foundational": true, "project": "/home/dev/none"}', '{}') ? 'error', true);

-- Codex CLI's sessions (source codex): their own account, their era the
-- session's working directory's, also for a later piece that names none;
-- a compaction is one boundary event carrying its summary, the
-- continuation.
SELECT pg_temp.expect('a Codex rollout applied',
    parley_agent_ingest('{"source": "codex", "path": "/c/2026/03/01/rollout-x-C.jsonl",
                          "folder": "2026/03/01", "project": "codex", "from": "0", "to": "100", "lines": "2"}',
        jsonb_build_array(
            pg_temp.ev(1, '{"type": "session_meta", "sessionId": "C", "timestamp": "2026-03-01T09:00:00Z",
                            "cwd": "/home/dev/atlas", "version": "0.46.0"}'),
            pg_temp.ev(2, '{"type": "user", "sessionId": "C", "timestamp": "2026-03-01T09:01:00Z",
                            "message": {"role": "user", "content": [{"type": "text", "text": "Move billing."}]}}')))
        - 'newSessions',
    '{"messages": 2, "heaps": 1, "readTo": 100}'::jsonb);
SELECT pg_temp.expect('its session: the codex account, source and project',
    (SELECT a.handle || ' ' || (c.extra ->> 'source') || ' ' || c.title || ' ' || (c.extra ->> 'cwd')
     FROM chats c JOIN accounts a ON a.id = c.account_id WHERE c.external_id = 'C'),
    'codex codex atlas /home/dev/atlas');
SELECT pg_temp.expect('a later piece: the compaction, in the era of the session''s working directory',
    parley_agent_ingest('{"source": "codex", "path": "/c/2026/03/01/rollout-x-C.jsonl",
                          "folder": "2026/03/01", "project": "codex", "from": "100", "to": "150", "lines": "1"}',
        jsonb_build_array(
            pg_temp.ev(3, '{"type": "system", "subtype": "compact_boundary", "sessionId": "C",
                            "timestamp": "2026-03-01T09:05:00Z", "isCompactSummary": true,
                            "message": {"role": "assistant", "content": [{"type": "text", "text": "Summary: billing moved."}]}}')))
        - 'newSessions',
    '{"messages": 1, "heaps": 1, "readTo": 150}'::jsonb);
SELECT pg_temp.expect('the compaction''s summary is its project''s latest continuation',
    parley_memory_latest_continuation('{"project": "/home/dev/atlas"}', '{}') - '{context_heap_id,message_number,message_id}'::text[],
    '{"content": "Summary: billing moved.", "timestamp": "2026-03-01T09:05:00.000Z",
      "era_name": "atlas", "sender_id": "assistant"}'::jsonb);
SELECT pg_temp.expect('both heaps in the one era',
    (SELECT string_agg(h.type || ' ' || e.external_id, ', ' ORDER BY h.id)
     FROM context_heaps h JOIN eras e ON e.id = h.era_id JOIN chats c ON c.id = h.chat_id
     WHERE c.external_id = 'C'),
    'FRESH codex:/home/dev/atlas, POST_COMPACTING codex:/home/dev/atlas');
SELECT pg_temp.expect('a Codex era named by its working directory',
    parley_agent_name_eras('{"/home/dev/atlas": "Atlas"}'), 1);
SELECT pg_temp.expect('the new name answers',
    parley_memory_latest_continuation('{"project": "/home/dev/atlas"}', '{}') ->> 'era_name', 'Atlas');
