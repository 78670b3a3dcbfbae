-- chatwise_import: the ChatWise import's SQL functions
-- (src/db/sql/chatwise/import.sql): times in seconds or milliseconds, tool
-- calls and results in the shapes the app writes, a batch applied twice.

SELECT pg_temp.expect('seconds', parley_chatwise_time('1700000000'), '2023-11-14 22:13:20Z'::timestamptz);
SELECT pg_temp.expect('milliseconds', parley_chatwise_time('1700000000123'),
                      '2023-11-14 22:13:20.123Z'::timestamptz);
SELECT pg_temp.expect('a numeric string', parley_chatwise_time('"1700000000000"'),
                      '2023-11-14 22:13:20Z'::timestamptz);
SELECT pg_temp.expect('ISO text', parley_chatwise_time('"2024-05-01T10:00:00Z"'),
                      '2024-05-01 10:00:00Z'::timestamptz);
SELECT pg_temp.expect('unreadable text', parley_chatwise_time('"soon"'), NULL::timestamptz);
SELECT pg_temp.expect('absent', parley_chatwise_time(NULL), NULL::timestamptz);

SELECT pg_temp.expect('tool calls, both shapes',
    parley_chatwise_tool_calls('{"toolCall": {
        "b": {"server": "docs", "tool": "search", "args": {"q": 1}},
        "a": {"server_name": "shell", "tool_name": "run", "arguments": "not json"}}}'),
    '[{"id": "a", "server": "shell", "tool": "run", "arguments": "not json"},
      {"id": "b", "server": "docs", "tool": "search", "arguments": {"q": 1}}]'::jsonb);
SELECT pg_temp.expect('no tool calls', parley_chatwise_tool_calls('{"other": 1}'), NULL::jsonb);
SELECT pg_temp.expect('one result',
    parley_chatwise_tool_text(parley_chatwise_tool_results(
        '{"toolResult": {"content": [{"type": "text", "text": "a"}, {"type": "image"},
                                     {"type": "text", "text": "b"}]}}')),
    E'a\n\nb');
SELECT pg_temp.expect('results keyed by call',
    parley_chatwise_tool_text(parley_chatwise_tool_results(
        '{"toolResult": {"c2": {"content": [{"text": "two"}]}, "c1": {"content": [{"text": "one"}]}}}')),
    E'one\n\ntwo');
SELECT pg_temp.expect('a result that is text',
    parley_chatwise_tool_text(parley_chatwise_tool_results('{"toolResult": "plain"}')), 'plain');
SELECT pg_temp.expect('no result', parley_chatwise_tool_results('{}'), NULL::jsonb);

SELECT pg_temp.expect('chats',
    parley_chatwise_ingest('/t/app.db', 'chats',
        '[{"id": "c1", "title": "One", "created": 1700000000, "updated": 1700000100}]'),
    '{"chatsWritten": 1, "written": 0, "toolCalls": 0, "orphans": 0}'::jsonb);
SELECT pg_temp.expect('messages',
    parley_chatwise_ingest('/t/app.db', 'messages',
        '[{"id": "m1", "chat": "c1", "role": "user", "content": "hi", "at": 1700000001},
          {"id": "m2", "chat": "c1", "role": "assistant", "content": "yo", "at": 1700000002,
           "meta": {"toolCall": {"x": {"server": "s", "tool": "t", "args": {}}}}},
          {"id": "m3", "chat": "gone", "role": "user", "content": "?", "at": 1}]'),
    '{"chatsWritten": 0, "written": 2, "toolCalls": 1, "orphans": 1}'::jsonb);
SELECT pg_temp.expect('the same batch again writes nothing',
    parley_chatwise_ingest('/t/app.db', 'messages',
        '[{"id": "m1", "chat": "c1", "role": "user", "content": "hi", "at": 1700000001}]') ->> 'written',
    '0');
SELECT pg_temp.expect('an edit is written',
    parley_chatwise_ingest('/t/app.db', 'messages',
        '[{"id": "m1", "chat": "c1", "role": "user", "content": "hello", "at": 1700000001}]') ->> 'written',
    '1');
SELECT pg_temp.expect('ids in order, text edited',
    (SELECT string_agg(id || '=' || text, ',' ORDER BY id) FROM messages WHERE external_id IN ('m1', 'm2')),
    '1=hello,2=yo');
SELECT pg_temp.expect('the same ids in another file are another chat',
    parley_chatwise_ingest('/other/app.db', 'chats', '[{"id": "c1", "title": "One"}]') ->> 'chatsWritten',
    '1');
SELECT pg_temp.expect_error('a bad batch kind',
    $$SELECT parley_chatwise_ingest('/t/app.db', 'users', '[]')$$, 'PT400', 'chats or messages');
SELECT pg_temp.expect('a time beyond timestamps is no time', parley_chatwise_time('1e20'), NULL::timestamptz);
SELECT pg_temp.expect('-1e15 ms is no time', parley_chatwise_time('-1e15'), NULL::timestamptz);
SELECT pg_temp.expect('infinity is no time', parley_chatwise_time('"infinity"'), NULL::timestamptz);
SELECT pg_temp.expect('a chat dated -1e15 is stored, its time named',
    parley_chatwise_ingest('/t/app.db', 'chats', '[{"id": "c-far", "title": "Far", "created": -1e15}]')
        - '{refused}'::text[],
    '{"chatsWritten": 1, "written": 0, "toolCalls": 0, "orphans": 0, "badTimes": ["c-far"]}'::jsonb);
SELECT pg_temp.expect('a refused row is named, the others stored',
    parley_chatwise_ingest('/t/app.db', 'messages',
        jsonb_build_array(jsonb_build_object('id', 'x-' || (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 3000) i), 'chat', 'c-far', 'content', 'big id', 'at', 1),
                          '{"id": "m-far", "chat": "c-far", "content": "fine", "at": 1}'::jsonb))
        #>> '{refused,0,error}' LIKE 'index row%',
    true);
SELECT pg_temp.expect('the other row stored',
    (SELECT text FROM messages WHERE external_id = 'm-far'), 'fine');
SELECT pg_temp.expect('a message without a role',
    parley_chatwise_ingest('/t/app.db', 'messages',
        '[{"id": "m9", "chat": "c1", "role": null, "content": "who?", "at": 1e20}]') ->> 'written',
    '1');
SELECT pg_temp.expect('no role: not outgoing, dated by its chat',
    (SELECT outgoing::text || ' ' || (date = '2023-11-14 22:13:20Z')::text FROM messages WHERE external_id = 'm9'),
    'false true');
-- The same chat from two files: the tools see it once (the copy written last).
SELECT pg_temp.expect('one copy seen',
    (SELECT count(*) FROM parley_cw_chats() WHERE external_id = 'c1'), 1::bigint);
SELECT pg_temp.expect('gather by the shared id',
    parley_cw_gather_chats('{"chatIds": ["c1"]}', '{}') #>> '{chat,id}', 'c1');
