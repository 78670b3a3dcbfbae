-- tg_live: the live reads' answers (src/db/sql/telegram/live.sql): what
-- TDLib returned is stored (chats, messages; local ids never) and answered
-- from the stored rows of exactly those ids, in the archive's shape;
-- "both" merges the archive's answer without duplicates; a message
-- Telegram does not have is a PT400 for the model, or the archive's copy
-- with "both".

CREATE FUNCTION pg_temp.tdmsg(chat bigint, server_id bigint, d bigint, body text) RETURNS jsonb
    LANGUAGE sql AS $$
    SELECT jsonb_build_object('@type', 'message', 'id', server_id * 1048576, 'chat_id', chat,
               'sender_id', jsonb_build_object('@type', 'messageSenderUser', 'user_id', 42),
               'is_outgoing', false, 'date', d, 'edit_date', 0, 'message_thread_id', 0,
               'content', jsonb_build_object('@type', 'messageText', 'text',
                   jsonb_build_object('@type', 'formattedText', 'text', body, 'entities', '[]'::jsonb)))
$$;

SELECT parley_tdu_account('+100', '{"@type": "user", "id": 42, "first_name": "Ann"}', NULL, NULL);
CREATE TEMP TABLE acc AS SELECT id FROM accounts WHERE kind = 'telegram_user';

-- channelsSearch: a chat not in the store is stored, answered as channelsList does, in order.
SELECT pg_temp.expect('channels', parley_tg_live_channels(jsonb_build_object(
    'query', 'news', 'live', jsonb_build_object('account', (SELECT id FROM acc), 'chats', jsonb_build_array(
        '{"@type": "chat", "id": -1009, "title": "News", "type": {"@type": "chatTypeSupergroup", "is_channel": true}}'::jsonb,
        '{"@type": "chat", "id": -1008, "title": "Other", "type": {"@type": "chatTypeSupergroup", "is_channel": false}}'::jsonb))), '{}')
    -> 'channels', '[{"channelId": -1009, "title": "News", "type": "channel", "active": true, "unreadCount": 0, "syncEnabled": false},
                     {"channelId": -1008, "title": "Other", "type": "supergroup", "active": true, "unreadCount": 0, "syncEnabled": false}]'::jsonb);
SELECT pg_temp.expect('chat stored', (SELECT title FROM chats WHERE id = -1009), 'News');

-- The archive holds message 1 of -1009 (as an older text) and 5.
SELECT parley_tdu_messages((SELECT id FROM acc), jsonb_build_array(
    pg_temp.tdmsg(-1009, 1, 1700000060, 'one'), pg_temp.tdmsg(-1009, 5, 1700000300, 'five')));

-- Live: 3 and 2 (and a local id, never stored), stored and answered newest first.
CREATE TEMP TABLE live AS SELECT jsonb_build_object('account', (SELECT id FROM acc), 'messages', jsonb_build_array(
    pg_temp.tdmsg(-1009, 3, 1700000180, 'three'), pg_temp.tdmsg(-1009, 2, 1700000120, 'two'),
    pg_temp.tdmsg(-1009, 4, 1700000240, 'local') || '{"id": 4194305}')) AS l;
SELECT pg_temp.expect('list live', (SELECT jsonb_path_query_array(parley_tg_live_messages(
    jsonb_build_object('tool', 'messagesList', 'channelId', -1009, 'source', 'live', 'live', l), '{}'),
    '$.messages[*].messageId') FROM live), '[3, 2]'::jsonb);
SELECT pg_temp.expect('stored', (SELECT string_agg(id || '=' || text, ',' ORDER BY id) FROM messages
                                 WHERE chat_id = -1009), '1=one,2=two,3=three,5=five');
SELECT pg_temp.expect('archive shape', (SELECT parley_tg_live_messages(
    jsonb_build_object('tool', 'messagesList', 'channelId', -1009, 'source', 'live', 'live', l), '{}') -> 'messages' -> 0
    FROM live), (SELECT parley_tg_message_json(m) FROM messages m WHERE chat_id = -1009 AND id = 3));
-- both: the archive's and Telegram's, each once, newest first, at most limit.
SELECT pg_temp.expect('list both', (SELECT jsonb_path_query_array(parley_tg_live_messages(
    jsonb_build_object('tool', 'messagesList', 'channelId', -1009, 'source', 'both', 'limit', 3, 'live', l), '{}'),
    '$.messages[*].messageId') FROM live), '[5, 3, 2]'::jsonb);
SELECT pg_temp.expect('merge first wins', parley_tg_live_merge(
    '[{"channelId": 1, "messageId": 1, "date": "2026-01-01T00:00:00Z", "text": "live"}]',
    '[{"channelId": 1, "messageId": 1, "date": "2026-01-01T00:00:00Z", "text": "archive"},
      {"channelId": 1, "messageId": 2, "date": "2026-01-02T00:00:00Z"}]', 10),
    '[{"channelId": 1, "messageId": 2, "date": "2026-01-02T00:00:00Z"},
      {"channelId": 1, "messageId": 1, "date": "2026-01-01T00:00:00Z", "text": "live"}]'::jsonb);

-- messagesGet: Telegram has none; both answers the archive's copy.
SELECT pg_temp.expect_error('get live missing', $$SELECT parley_tg_live_messages(
    '{"tool": "messagesGet", "channelId": -1009, "messageId": 5, "source": "live"}', '{}')$$,
    'PT400', 'Telegram has no message 5 in chat -1009');
SELECT pg_temp.expect('get both', parley_tg_live_messages(
    '{"tool": "messagesGet", "channelId": -1009, "messageId": 5, "source": "both"}', '{}') #>> '{message,text}', 'five');

-- messagesContext live: only what Telegram returned around the target.
SELECT pg_temp.expect('context live', (SELECT jsonb_path_query_array(r, '$.before[*].messageId') || jsonb_path_query_array(r, '$.after[*].messageId')
    FROM (SELECT parley_tg_live_messages(jsonb_build_object('tool', 'messagesContext', 'channelId', -1009,
            'messageId', 2, 'source', 'live', 'live', l), '{}') AS r FROM live) x), '[3]'::jsonb);

-- messagesSearch live: hits in the search's shape, filtered by regex.
SELECT pg_temp.expect('search live', (SELECT parley_tg_live_messages(jsonb_build_object('tool', 'messagesSearch',
    'query', 't', 'regex', '^th', 'source', 'live', 'live', l || '{"total": 2}'), '{}') - 'limit' - 'limitCapped' FROM live),
    '{"mode": "live", "source": "live", "total": 1, "upstreamTotal": 2, "totalCapped": false,
      "messages": [{"channelId": -1009, "channelTitle": "News", "messageId": 3, "date": "2023-11-14T22:16:20+00:00",
                    "senderId": 42, "senderName": "Ann", "text": "three", "hasLink": false, "match": "live"}]}'::jsonb);

-- The plan before the read: the one chat named, dates as unix seconds (0: open).
SELECT pg_temp.expect('plan', parley_tg_live_plan('{"channelIds": [-1009], "toDate": "1700000300"}', '{}'),
                      '{"channelId": -1009, "minDate": 0, "maxDate": 1700000300}'::jsonb);
SELECT pg_temp.expect('plan none', parley_tg_live_plan('{"channelIds": [-1009, -1008]}', '{}'),
                      '{"channelId": 0, "minDate": 0, "maxDate": 0}'::jsonb);
SELECT pg_temp.expect_error('plan unknown chat', $$SELECT parley_tg_live_plan('{"channelId": -5}', '{}')$$,
                            'PT400', 'no chat -5 in the archive');
