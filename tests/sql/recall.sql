-- recall: parley_recall_recall over chats of every source (one word in
-- each), its source filter and its calls to open a hit; the timeline's
-- groups and its checks.
INSERT INTO chats (id, kind, title, external_id) VALUES
    (1, 'group', 'Family', NULL), (2, 'ai_chat', 'Trip planning', 'cw-1'),
    (3, 'agent_session', 'website', 'sess-1'), (4, 'feed', 'Ann', 'did:plc:ann');
INSERT INTO messages (chat_id, id, external_id, date, text) VALUES
    (1, 10, NULL, '2026-03-01T10:00:00Z', 'the wombat picnic is on sunday'),
    (2, 1, 'cw-m1', '2026-03-02T10:00:00Z', 'pack for the wombat picnic'),
    (3, 1, 'uuid-1#0', '2026-03-03T10:00:00Z', 'add a wombat banner'),
    (4, 1, 'at://did:plc:ann/app.bsky.feed.post/1', '2026-03-04T10:00:00Z', 'wombat photos'),
    (1, 11, NULL, '2026-03-05T10:00:00Z', 'unrelated words');

SELECT pg_temp.expect('every source',
    (SELECT array_agg(h ->> 'source' ORDER BY h ->> 'source')
     FROM jsonb_array_elements(parley_recall_recall('{"query": "wombat"}', '{}') -> 'hits') h),
    ARRAY['agents', 'bluesky', 'chatwise', 'telegram']);
SELECT pg_temp.expect('no next without the tools',
    (SELECT count(*) FROM jsonb_array_elements(
         parley_recall_recall('{"query": "wombat"}', '{}') -> 'hits') h WHERE h ? 'next'), 0::bigint);
SELECT pg_temp.expect('next calls',
    (SELECT jsonb_object_agg(h ->> 'source', h -> 'next')
     FROM jsonb_array_elements(parley_recall_recall('{"query": "wombat"}',
         '{"next": {"telegram": "telegram_open", "telegram_takes": "chatId",
                    "chatwise": "gather_chats", "agents": "get_message_by_id",
                    "bluesky": "search"}}') -> 'hits') h),
    '{"telegram": {"tool": "telegram_open", "arguments": {"chatId": 1, "messageId": 10, "before": 3, "after": 3}},
      "chatwise": {"tool": "gather_chats", "arguments": {"chatIds": ["cw-1"], "includeTools": false}},
      "agents": {"tool": "get_message_by_id", "arguments": {"message_id": "uuid-1#0"}},
      "bluesky": {"tool": "search", "arguments": {"query": "at://did:plc:ann/app.bsky.feed.post/1"}}}'::jsonb);
SELECT pg_temp.expect('next call of the telegram toolset, under the name given',
    (SELECT h -> 'next' FROM jsonb_array_elements(parley_recall_recall('{"query": "wombat"}',
         '{"next": {"telegram": "messagesContext", "telegram_takes": "channelId"}}') -> 'hits') h
     WHERE h ->> 'source' = 'telegram'),
    '{"tool": "messagesContext", "arguments": {"channelId": 1, "messageId": 10, "before": 3, "after": 3}}'::jsonb);
SELECT pg_temp.expect('the text counts what it shows',
    (SELECT split_part(parley_recall_recall('{"query": "wombat", "limit": 1}', '{}') ->> 'text',
                       E'\n', 1)),
    '1 of 4 hit(s) for "wombat", best first:');
SELECT pg_temp.expect('the text counts every hit when it shows them all',
    (SELECT split_part(parley_recall_recall('{"query": "wombat"}', '{}') ->> 'text', E'\n', 1)),
    '4 hit(s) for "wombat", best first:');
SELECT pg_temp.expect('sources narrow',
    (SELECT array_agg(h ->> 'ref' ORDER BY h ->> 'ref')
     FROM jsonb_array_elements(parley_recall_recall('{"query": "wombat", "sources": ["telegram", "bluesky"]}',
                                                    '{}') -> 'hits') h),
    ARRAY['bluesky:4/1', 'telegram:1/10']);
SELECT pg_temp.expect('dates narrow',
    (SELECT array_agg(h ->> 'source')
     FROM jsonb_array_elements(parley_recall_recall(
         '{"query": "wombat", "since": "2026-03-02", "until": "2026-03-02"}', '{}') -> 'hits') h),
    ARRAY['chatwise']);
SELECT pg_temp.expect('ISO dates', parley_recall_recall('{"query": "photos"}', '{}') #>> '{hits,0,date}',
                      '2026-03-04T10:00:00Z');
SELECT pg_temp.expect_error('unknown source',
    $$SELECT parley_recall_recall('{"query": "wombat", "sources": ["email"]}', '{}')$$,
    'PT400', 'sources: "email" is not a source; use some of telegram, chatwise, agents, memory, bluesky');
SELECT pg_temp.expect_error('no query', $$SELECT parley_recall_recall('{"query": " "}', '{}')$$,
    'PT400', '^query: give the words');
-- A memory-lane database's hits are fused with the store's by position.
SELECT pg_temp.expect('fused',
    (SELECT array_agg(h ->> 'ref' ORDER BY ord) FROM jsonb_array_elements(parley_recall_recall(
         '{"query": "picnic", "_lane": [{"id": "42", "content": "picnic notes", "created_at": "2026-03-09T00:00:00Z", "relevance_score": 0.06}]}',
         '{"next": {"memory": "get_message_by_id"}}') -> 'hits') WITH ORDINALITY x(h, ord)),
    ARRAY['memory:42', 'chatwise:2/1', 'telegram:1/10']);

SELECT pg_temp.expect('timeline groups',
    (SELECT jsonb_agg(jsonb_build_array(g ->> 'source', g -> 'messages', g -> 'chats'))
     FROM jsonb_array_elements(parley_recall_timeline('{"since": "2026-03-01", "until": "2026-03-06"}',
                                                      '{}') -> 'sources') g),
    '[["agents", 1, 1], ["bluesky", 1, 1], ["chatwise", 1, 1], ["telegram", 2, 1]]'::jsonb);
SELECT pg_temp.expect('timeline last text',
    parley_recall_timeline('{"since": "2026-03-01", "until": "2026-03-06", "sources": ["telegram"]}',
                           '{}') #>> '{sources,0,top,0,lastText}', 'unrelated words');
SELECT pg_temp.expect_error('since required', $$SELECT parley_recall_timeline('{}', '{}')$$, 'PT400',
                            '^since: say where the window starts');
