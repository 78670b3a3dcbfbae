-- tg_user: the TDLib user connector's store side (src/db/sql/telegram/
-- user.sql and what it changes in jobs.sql, telegram/common.sql and
-- telegram/sync.sql): the account; users and chats upserted, a chat of
-- another source left alone; one message seen through an export, the bot
-- and the account stored once (TDLib id = server id * 2^20, local ids
-- never stored); an edit newer wins, an older one never replaces it; media,
-- replies, topics, service messages; deletions only when permanent and not
-- from the cache; a history page's cursor, count and lease; a FloodWait
-- pause; syncJobsAdd with and without a user account; authStatus; a sent
-- message's final form.

CREATE FUNCTION pg_temp.tdmsg(chat bigint, server_id bigint, d bigint, body text,
                              more jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('@type', 'message', 'id', server_id * 1048576, 'chat_id', chat,
               'sender_id', jsonb_build_object('@type', 'messageSenderUser', 'user_id', 42),
               'is_outgoing', false, 'date', d, 'edit_date', 0, 'reply_to', NULL,
               'message_thread_id', 0, 'forward_info', NULL,
               'content', jsonb_build_object('@type', 'messageText', 'text',
                   jsonb_build_object('@type', 'formattedText', 'text', body, 'entities', '[]'::jsonb)))
           || more
$$;

-- The account: signed in as +100, its user stored, the default.
SELECT pg_temp.expect('account', parley_tdu_account('+100',
    '{"@type": "user", "id": 42, "first_name": "Ann", "last_name": "Lee", "phone_number": "100",
      "usernames": {"active_usernames": ["ann"]}, "type": {"@type": "userTypeRegular"}}',
    '{"session_path": "/data/telegram/42"}', '\x0102'::bytea) > 0, true);
SELECT pg_temp.expect('account row', (SELECT concat_ws('|', kind, handle, external_id, display_name, is_default,
                                                      extra ->> 'phone', extra ->> 'session_path')
                                      FROM accounts WHERE kind = 'telegram_user'),
                      'telegram_user|+100|42|Ann Lee|t|100|/data/telegram/42');
SELECT pg_temp.expect('me stored', (SELECT concat_ws('|', first_name, username, phone) FROM users WHERE id = 42),
                      'Ann|ann|100');
-- Signing in again keeps the credentials when none are given and merges extra.
SELECT parley_tdu_account('+100', NULL, '{"dc": 2}', NULL);
SELECT pg_temp.expect('account get', parley_tdu_account_get('+100') - 'id' - 'last_login_at',
                      '{"handle": "+100", "external_id": "42", "default": true, "credentials": "AQI=",
                        "extra": {"phone": "100", "session_path": "/data/telegram/42", "dc": 2}}'::jsonb);
SELECT pg_temp.expect('default account', parley_tdu_account_get(NULL) ->> 'handle', '+100');
SELECT parley_tdu_account('+200', '{"id": 43, "first_name": "Bo"}', NULL, NULL);
SELECT pg_temp.expect('accounts, default first', (SELECT string_agg(e ->> 'handle' || ':' || (e ->> 'default') || ':' || coalesce(e ->> 'credentials', '-'), ',')
                                                  FROM jsonb_array_elements(parley_tdu_accounts()) e),
                      '+100:true:AQI=,+200:false:-');
-- Credentials longer than a base64 line come back on one line.
SELECT parley_tdu_account('+200', NULL, NULL, decode(repeat('ab', 100), 'hex'));
SELECT pg_temp.expect('long credentials, one line', parley_tdu_account_get('+200') ->> 'credentials',
                      translate(encode(decode(repeat('ab', 100), 'hex'), 'base64'), E'\n', ''));
SELECT pg_temp.expect('no newline', strpos(parley_tdu_account_get('+200') ->> 'credentials', E'\n'), 0);
UPDATE accounts SET enabled = false WHERE handle = '+200';
SELECT pg_temp.expect('disabled accounts not listed', jsonb_array_length(parley_tdu_accounts()), 1);

-- Users: inserted, then only changed rows touched.
SELECT pg_temp.expect('users', parley_tdu_users('[
    {"@type": "user", "id": 50, "first_name": "Cy", "last_name": "", "usernames": {"active_usernames": ["cy", "cy2"]},
     "phone_number": "", "type": {"@type": "userTypeRegular"}, "is_contact": true},
    {"@type": "user", "id": 51, "first_name": "Helper", "type": {"@type": "userTypeBot"}},
    {"@type": "user", "id": 52, "first_name": "", "type": {"@type": "userTypeDeleted"}}]'), 3);
SELECT pg_temp.expect('users mapped', (SELECT string_agg(concat_ws(':', id, first_name, last_name, username, is_bot, is_contact, is_deleted), ',' ORDER BY id)
                                       FROM users WHERE id BETWEEN 50 AND 52),
                      '50:Cy:cy:f:t:f,51:Helper:t:f:f,52:f:f:t');
SELECT pg_temp.expect('unchanged users untouched', parley_tdu_users('[{"id": 50, "first_name": "Cy", "usernames": {"active_usernames": ["cy"]},
    "type": {"@type": "userTypeRegular"}, "is_contact": true}, {"id": 51, "first_name": "Helper2", "type": {"@type": "userTypeBot"}}]'), 1);

-- Chats: each type; the last message stored with them; a chat of another
-- source with the same id is left alone.
INSERT INTO chats (id, kind, title) VALUES (-1007, 'ai_chat', 'not telegram');
SELECT pg_temp.expect('chats', parley_tdu_chats(1, jsonb_build_array(
    jsonb_build_object('@type', 'chat', 'id', 50, 'type', '{"@type": "chatTypePrivate", "user_id": 50}'::jsonb, 'title', 'Cy',
                       'unread_count', 2, 'last_read_inbox_message_id', 3 * 1048576, 'last_read_outbox_message_id', 4 * 1048576,
                       'last_message', pg_temp.tdmsg(50, 9, 1700000009, 'latest in Cy')),
    jsonb_build_object('@type', 'chat', 'id', -300, 'type', '{"@type": "chatTypeBasicGroup", "basic_group_id": 300}'::jsonb, 'title', 'Basic'),
    jsonb_build_object('@type', 'chat', 'id', -1001000, 'type', '{"@type": "chatTypeSupergroup", "is_channel": false}'::jsonb, 'title', 'Super'),
    jsonb_build_object('@type', 'chat', 'id', -1002000, 'type', '{"@type": "chatTypeSupergroup", "is_channel": true}'::jsonb, 'title', 'News'),
    jsonb_build_object('@type', 'chat', 'id', -1007, 'type', '{"@type": "chatTypeBasicGroup"}'::jsonb, 'title', 'clash'))), 4);
SELECT pg_temp.expect('chats mapped', (SELECT string_agg(concat_ws(':', id, account_id, kind, title, unread_count, read_inbox_max_id, read_outbox_max_id, extra ->> 'source'), ',' ORDER BY id)
                                       FROM chats),
                      '-1002000:1:channel:News:0:telegram_user,-1001000:1:supergroup:Super:0:telegram_user,-1007:ai_chat:not telegram:0,-300:1:group:Basic:0:telegram_user,50:1:private:Cy:2:3:4:telegram_user');
SELECT pg_temp.expect('last message stored', (SELECT concat_ws('|', id, text, sender_id, sender_name) FROM messages WHERE chat_id = 50), '9|latest in Cy|42|Ann Lee');
SELECT pg_temp.expect('chat last message', (SELECT last_message_id FROM chats WHERE id = 50), 9::bigint);
SELECT pg_temp.expect('same chats again: nothing changes', parley_tdu_chats(1, '[{"@type": "chat", "id": -300, "type": {"@type": "chatTypeBasicGroup"}, "title": "Basic"}]'), 0);
SELECT pg_temp.expect('a partial chat changes what it has', parley_tdu_chats(1, '[{"id": 50, "title": "Cy Z"}, {"id": -300, "unread_count": 5, "last_read_inbox_message_id": 7340032}]'), 2);
SELECT pg_temp.expect('partial chats', (SELECT string_agg(concat_ws(':', id, kind, title, unread_count, read_inbox_max_id), ',' ORDER BY id) FROM chats WHERE id IN (50, -300)),
                      '-300:group:Basic:5:7,50:private:Cy Z:2:3');
UPDATE chats SET kind = 'forum' WHERE id = -1001000;
SELECT parley_tdu_chats(1, '[{"@type": "chat", "id": -1001000, "type": {"@type": "chatTypeSupergroup", "is_channel": false}, "title": "Super 2"}]');
SELECT pg_temp.expect('a forum stays a forum', (SELECT kind || ':' || title FROM chats WHERE id = -1001000), 'forum:Super 2');
SELECT pg_temp.expect('messages of another source''s chat are not stored',
                      parley_tdu_messages(1, jsonb_build_array(pg_temp.tdmsg(-1007, 1, 1700000000, 'x'))), 0);

-- One message through an export, the bot and the account: one row.
INSERT INTO import_rows (id, sender_id, sender_name, date, text, has_link, kind)
VALUES (5, 42, 'Ann Lee', to_timestamp(1700000005), 'one message', false, 'message');
SELECT parley_tg_import_chat('{"name": "Shared", "type": "public_supergroup", "id": 5000}', false, false, -1000000005000);
INSERT INTO accounts (id, kind, handle) VALUES (7, 'telegram_bot', 'bot7');
SELECT parley_bot_store_message(7, '{"message_id": 5, "date": 1700000005, "text": "one message",
    "chat": {"id": -1000000005000, "type": "supergroup", "title": "Shared"}, "from": {"id": 42, "first_name": "Ann"}}', false);
SELECT pg_temp.expect('the account sees it: nothing new',
                      parley_tdu_messages(1, jsonb_build_array(pg_temp.tdmsg(-1000000005000, 5, 1700000005, 'one message'))), 0);
SELECT pg_temp.expect('stored once', (SELECT count(*) FROM messages WHERE chat_id = -1000000005000), 1::bigint);
SELECT pg_temp.expect('a local (pending) id is never stored',
                      parley_tdu_messages(1, jsonb_build_array(pg_temp.tdmsg(-1000000005000, 6, 1700000006, 'pending') || '{"id": 6291457}')), 0);

-- Edits: the newer wins; an older one never replaces it; searchable.
SELECT pg_temp.expect('edit applied', parley_tdu_messages(1, jsonb_build_array(
    pg_temp.tdmsg(-1000000005000, 5, 1700000005, 'one message, edited', '{"edit_date": 1700000100}'))), 1);
SELECT pg_temp.expect('older edit ignored', parley_tdu_messages(1, jsonb_build_array(
    pg_temp.tdmsg(-1000000005000, 5, 1700000005, 'an older edit', '{"edit_date": 1700000050}'),
    pg_temp.tdmsg(-1000000005000, 5, 1700000005, 'one message'))), 0);
SELECT pg_temp.expect('newest version', (SELECT text || '|' || extract(epoch FROM edit_date)::bigint FROM messages WHERE chat_id = -1000000005000 AND id = 5),
                      'one message, edited|1700000100');
SELECT pg_temp.expect('search vector follows the edit', (SELECT tsv @@ to_tsquery('simple', 'edited') FROM messages WHERE chat_id = -1000000005000 AND id = 5), true);

-- Mapping: media with caption, entities, replies (same chat and another),
-- forum topics, service messages, unknown content, a chat not stored yet.
SELECT pg_temp.expect('mapped batch', parley_tdu_messages(1, jsonb_build_array(
    pg_temp.tdmsg(-1001000, 20, 1700000020, '') || jsonb_build_object('content', jsonb_build_object(
        '@type', 'messagePhoto', 'caption', jsonb_build_object('@type', 'formattedText', 'text', 'see https://x.example',
            'entities', '[{"@type": "textEntity", "offset": 4, "length": 17, "type": {"@type": "textEntityTypeUrl"}},
                          {"@type": "textEntity", "offset": 0, "length": 3, "type": {"@type": "textEntityTypeTextUrl", "url": "https://y.example"}}]'::jsonb),
        'photo', '{"sizes": [{"type": "s", "width": 90, "height": 90, "photo": {"id": 1, "size": 10, "remote": {"id": "small", "unique_id": "us"}}},
                             {"type": "y", "width": 800, "height": 600, "photo": {"id": 2, "size": 5000, "remote": {"id": "big", "unique_id": "ub"}}}]}'::jsonb),
        'message_thread_id', 19 * 1048576,
        'reply_to', jsonb_build_object('@type', 'messageReplyToMessage', 'chat_id', -1001000, 'message_id', 19 * 1048576)),
    pg_temp.tdmsg(-1001000, 19, 1700000019, '') || '{"content": {"@type": "messageForumTopicCreated", "name": "Ideas", "icon": {"color": 7322096}}}',
    pg_temp.tdmsg(-1001000, 21, 1700000021, '') || '{"content": {"@type": "messageChatAddMembers", "member_user_ids": [50]}}',
    pg_temp.tdmsg(-1001000, 22, 1700000022, 'quoting') || jsonb_build_object('reply_to',
        jsonb_build_object('@type', 'messageReplyToMessage', 'chat_id', -1002000, 'message_id', 3 * 1048576)),
    pg_temp.tdmsg(-1001000, 23, 1700000023, '') || '{"content": {"@type": "messageSomethingNew"}, "sender_id": {"@type": "messageSenderChat", "chat_id": -1002000}}',
    pg_temp.tdmsg(-4000, 1, 1700000001, 'in a chat not stored yet'),
    pg_temp.tdmsg(-1000000009999, 1, 1700000001, 'in a supergroup not stored yet'),
    pg_temp.tdmsg(77, 1, 1700000001, 'in a private chat not stored yet'))), 8);
SELECT pg_temp.expect('photo', (SELECT concat_ws('|', text, media_kind, has_link, entities::text, topic_id, reply_to_id, reply_to_chat_id)
                                FROM messages WHERE chat_id = -1001000 AND id = 20),
                      'see https://x.example|photo|t|[{"type": "url", "length": 17, "offset": 4}, {"url": "https://y.example", "type": "text_link", "length": 3, "offset": 0}]|19|19');
SELECT pg_temp.expect('largest photo queued', (SELECT concat_ws(':', kind, file_id, file_unique_id, file_size, width, state) FROM media WHERE chat_id = -1001000),
                      'photo:big:ub:5000:800:remote');
SELECT pg_temp.expect('topic', (SELECT title || ':' || icon_color FROM topics WHERE chat_id = -1001000 AND id = 19), 'Ideas:7322096');
SELECT pg_temp.expect('service', (SELECT concat_ws('|', kind, action::text, media_kind) FROM messages WHERE chat_id = -1001000 AND id = 21),
                      'service|{"type": "messageChatAddMembers"}');
SELECT pg_temp.expect('reply into another chat', (SELECT reply_to_id || ':' || reply_to_chat_id FROM messages WHERE chat_id = -1001000 AND id = 22), '3:-1002000');
SELECT pg_temp.expect('unknown content, a chat as sender', (SELECT concat_ws('|', media_kind, kind, sender_id, sender_name) FROM messages WHERE chat_id = -1001000 AND id = 23),
                      'other|message|-1002000|News');
SELECT pg_temp.expect('chats made for unknown ones', (SELECT string_agg(id || ':' || kind || ':' || account_id, ',' ORDER BY id) FROM chats WHERE id IN (-4000, -1000000009999, 77)),
                      '-1000000009999:supergroup:1,-4000:group:1,77:private:1');
SELECT pg_temp.expect('forum last message', (SELECT last_message_id FROM chats WHERE id = -1001000), 23::bigint);

-- Deletions: only permanent ones that are not TDLib's cache eviction.
SELECT pg_temp.expect('from cache: kept', parley_tdu_delete(-1001000, jsonb_build_array(20 * 1048576, 23 * 1048576), true, true), 0);
SELECT pg_temp.expect('not permanent: kept', parley_tdu_delete(-1001000, jsonb_build_array(20 * 1048576), false, false), 0);
SELECT pg_temp.expect('permanent: deleted', parley_tdu_delete(-1001000, jsonb_build_array(20 * 1048576, 23 * 1048576, 3), true, false), 2);
SELECT pg_temp.expect('gone with its file', (SELECT count(*) FROM messages WHERE chat_id = -1001000 AND id IN (20, 23))
                                            + (SELECT count(*) FROM media WHERE chat_id = -1001000), 0::bigint);
SELECT pg_temp.expect('last message moves back', (SELECT last_message_id FROM chats WHERE id = -1001000), 22::bigint);

-- syncJobsAdd: a user account queues telegram.history under it.
SELECT pg_temp.expect('history job', parley_tg_sync_jobs_add('{"channelId": "-1002000", "depth": 3}', '{}') -> 'job' ->> 'depth', '3');
SELECT pg_temp.expect('history job row', (SELECT concat_ws('|', class, account_id, channel, chat_id, status) FROM sync_jobs),
                      'telegram.history|1|-1002000|-1002000|pending');
SELECT pg_temp.expect_error('unknown account', $$SELECT parley_tg_sync_jobs_add('{"channelId": "-1002000", "account": "+999"}', '{}')$$,
                            'PT400', 'no signed-in Telegram user account');

-- Claim: the cursor, min date and count come with the job.
UPDATE sync_jobs SET min_date = to_timestamp(1700000000), cursor = '{"from": 0}';
SELECT pg_temp.expect('claimed', (SELECT e - 'id' FROM jsonb_array_elements(parley_jobs_claim('d1', 'telegram.history', 5, 60)) e),
                      '{"class": "telegram.history", "channel": "-1002000", "chat_id": -1002000, "account_id": 1, "depth": 3, "attempts": 1,
                        "realtime": true, "cursor": {"from": 0}, "min_date": 1700000000, "fetched": 0}'::jsonb);

-- A history page: stored, cursor and count set, lease extended.
UPDATE sync_jobs SET lease_expires_at = now() + interval '5 seconds';
SELECT pg_temp.expect('page', parley_tdu_history_page((SELECT id FROM sync_jobs), 'd1', 1, jsonb_build_array(
    pg_temp.tdmsg(-1002000, 3, 1700000003, 'third'), pg_temp.tdmsg(-1002000, 2, 1700000002, 'second')),
    '{"from": 2097152, "oldest": 2, "done": false}'),
    '{"stored": 2, "fetched": 2, "active": true}'::jsonb);
SELECT pg_temp.expect('cursor and lease', (SELECT cursor::text || '|' || (lease_expires_at > now() + interval '100 seconds') FROM sync_jobs),
                      '{"done": false, "from": 2097152, "oldest": 2}|true');
SELECT pg_temp.expect('progress shown', (SELECT parley_tg_job_json(j) ->> 'oldestMessageId' || ':' || (parley_tg_job_json(j) ->> 'complete') FROM sync_jobs j), '2:false');
SELECT pg_temp.expect('another daemon''s page: stored, job untouched', parley_tdu_history_page((SELECT id FROM sync_jobs), 'd2', 1,
    jsonb_build_array(pg_temp.tdmsg(-1002000, 1, 1700000001, 'first')), '{"from": 1048576, "oldest": 1, "done": true}'),
    '{"stored": 1, "fetched": 2, "active": false}'::jsonb);

-- FloodWait: back to pending until it is over, the attempt not counted.
SELECT parley_jobs_finish(jsonb_build_object('id', (SELECT id FROM sync_jobs), 'owner', 'd1', 'status', 'wait', 'wait_s', 30));
SELECT pg_temp.expect('paused', (SELECT concat_ws('|', status, attempts, next_attempt_at BETWEEN now() + interval '29 seconds' AND now() + interval '31 seconds',
                                                  error LIKE 'Telegram asked to wait (FloodWait): resumes at 20%Z') FROM sync_jobs),
                      'pending|0|t|t');
SELECT pg_temp.expect('shown waiting', (SELECT (parley_tg_job_json(j) ->> 'waiting') || '|' || (parley_tg_job_json(j) ? 'resumesAt') FROM sync_jobs j), 'floodWait|true');
SELECT pg_temp.expect('not claimed while paused', parley_jobs_claim('d1', 'telegram.history', 5, 60), '[]'::jsonb);
-- Added again: the new depth, the cursor kept, the pause kept.
SELECT parley_tg_sync_jobs_add('{"channelId": "-1002000", "depth": 10}', '{}');
SELECT pg_temp.expect('re-added', (SELECT concat_ws('|', depth, cursor ->> 'oldest', status, next_attempt_at > now() + interval '20 seconds', fetched) FROM sync_jobs),
                      '10|2|pending|t|2');
-- Over: claimed again and resumed.
UPDATE sync_jobs SET next_attempt_at = now();
SELECT pg_temp.expect('resumed', (SELECT e -> 'cursor' ->> 'oldest' FROM jsonb_array_elements(parley_jobs_claim('d1', 'telegram.history', 5, 60)) e), '2');
-- Added while in progress: keeps running.
SELECT parley_tg_sync_jobs_add('{"channelId": "-1002000", "depth": 20}', '{}');
SELECT pg_temp.expect('in progress kept', (SELECT status || ':' || lease_owner || ':' || depth FROM sync_jobs), 'in_progress:d1:20');
-- Canceled: the executor's next page says to stop.
SELECT parley_tg_sync_jobs_cancel('{"channelId": "-1002000"}', '{}');
SELECT pg_temp.expect('canceled', parley_tdu_history_page((SELECT id FROM sync_jobs), 'd1', 1, '[]', '{"from": 1}') ->> 'active', 'false');

-- authStatus: the user account first, with its session's state.
SELECT pg_temp.expect('auth user', parley_tg_auth_status('{}', '{}') - 'lastLoginAt',
                      '{"authenticated": true, "kind": "user", "userId": "42", "phone": "100", "sessionPath": "/data/telegram/42", "account": "+100"}'::jsonb);
SELECT pg_temp.expect('auth ready', parley_tg_auth_status('{}', '{"telegramUser": {"state": "authorizationStateReady"}}') ->> 'authenticated', 'true');
SELECT pg_temp.expect('auth session gone', parley_tg_auth_status('{}', '{"telegramUser": {"state": "loggedOut", "error": "the session was terminated from another device"}}')
                                           - 'lastLoginAt' - 'sessionPath' - 'phone' - 'userId',
                      '{"authenticated": false, "kind": "user", "account": "+100", "state": "loggedOut", "reason": "the session was terminated from another device"}'::jsonb);

-- A sent message's final form: stored as outgoing, answered as the bot's.
SELECT pg_temp.expect('sent', parley_tdu_sent(1, 12345, pg_temp.tdmsg(50, 10, 1700000010, 'hi there')),
                      '{"message_id": 10, "chat": {"id": 50}, "date": 1700000010, "text": "hi there"}'::jsonb);
SELECT pg_temp.expect('sent stored outgoing', (SELECT outgoing::text || ':' || (SELECT last_message_id FROM chats WHERE id = 50) FROM messages WHERE chat_id = 50 AND id = 10), 'true:10');
SELECT pg_temp.expect('a pending one is not', parley_tdu_sent(1, 12345, pg_temp.tdmsg(50, 10, 1700000010, 'x') || '{"id": 12345}'), NULL::jsonb);

-- Without a user account: syncJobsAdd queues telegram.sync (the bot's) and
-- authStatus reports the bot.
UPDATE accounts SET enabled = false WHERE kind = 'telegram_user';
SELECT parley_tg_sync_jobs_add('{"channelId": "-1002000"}', '{}');
SELECT pg_temp.expect('sync job without an account', (SELECT count(*) FROM sync_jobs WHERE class = 'telegram.sync' AND account_id IS NULL), 1::bigint);
SELECT pg_temp.expect('auth bot', parley_tg_auth_status('{}', '{}') ->> 'kind', 'bot');

-- The connector's operations in their order (parley_tdu_apply): a chat, its
-- message, an edit of it, another message, then a deletion of the first.
UPDATE accounts SET enabled = true WHERE kind = 'telegram_user';
SELECT pg_temp.expect('apply', parley_tdu_apply(1, jsonb_build_array(
    jsonb_build_object('op', 'chats', 'chats', jsonb_build_array(
        '{"@type": "chat", "id": -1007000, "type": {"@type": "chatTypeSupergroup", "is_channel": false}, "title": "Ops"}'::jsonb)),
    jsonb_build_object('op', 'messages', 'messages', jsonb_build_array(pg_temp.tdmsg(-1007000, 1, 1700000100, 'first'))),
    jsonb_build_object('op', 'messages', 'messages', jsonb_build_array(pg_temp.tdmsg(-1007000, 1, 1700000100, 'first, edited', '{"edit_date": 1700000200}'),
                                                                       pg_temp.tdmsg(-1007000, 2, 1700000300, 'second'))),
    '{"op": "delete", "chat_id": -1007000, "message_ids": [1048576], "is_permanent": true, "from_cache": false}'::jsonb,
    '{"op": "users", "users": [{"@type": "user", "id": 77, "first_name": "Zed"}]}'::jsonb)) > 0, true);
SELECT pg_temp.expect('applied in order', (SELECT string_agg(id || ':' || text, ',' ORDER BY id) FROM messages WHERE chat_id = -1007000), '2:second');
SELECT pg_temp.expect('applied chat and user', (SELECT title FROM chats WHERE id = -1007000) || ':' || (SELECT first_name FROM users WHERE id = 77), 'Ops:Zed');
SELECT pg_temp.expect('signed out', parley_tg_auth_status('{}', '{"telegramUser": {"state": "signedOut", "error": ""}}') ->> 'authenticated', 'false');

-- A private chat numbers its messages per account: a bot's chat with a
-- person and an account's chat with the same person share the chat id, not
-- their messages. The first to store it keeps it; the other's messages and
-- deletions there are not applied. A supergroup's ids are shared by all.
SELECT parley_bot_account('{"id": 900900, "username": "clash_bot", "first_name": "Clash"}', 'http://x') AS clash_bot \gset
SELECT id AS clash_user FROM accounts WHERE kind = 'telegram_user' ORDER BY id LIMIT 1 \gset
SELECT parley_bot_store_message(:clash_bot, '{"message_id": 1, "chat": {"id": 5555, "type": "private", "first_name": "Pat"}, "from": {"id": 5555, "first_name": "Pat"}, "date": 1700000000, "text": "to the bot"}', false);
SELECT pg_temp.expect('the account does not write into the bot''s private chat',
    parley_tdu_messages(:clash_user, jsonb_build_array(pg_temp.tdmsg(5555, 1, 1800000000, 'to the account'))), 0);
SELECT pg_temp.expect('a page of both chats: the account''s own one stored',
    parley_tdu_messages(:clash_user, jsonb_build_array(pg_temp.tdmsg(5555, 2, 1800000000, 'to the account too'),
                                                       pg_temp.tdmsg(6668, 1, 1800000000, 'own chat'))), 1);
SELECT pg_temp.expect('... and only that one', (SELECT string_agg(chat_id || ':' || text, ',' ORDER BY chat_id)
                                                FROM messages WHERE chat_id IN (5555, 6668)),
                      '5555:to the bot,6668:own chat');
SELECT pg_temp.expect('nor delete there',
    parley_tdu_apply(:clash_user, '[{"op": "delete", "chat_id": 5555, "message_ids": [1048576], "is_permanent": true, "from_cache": false}]'), 0);
SELECT pg_temp.expect('the bot''s message kept', (SELECT text FROM messages WHERE chat_id = 5555 AND id = 1), 'to the bot');
SELECT parley_bot_store_message(:clash_bot, '{"message_id": 1, "chat": {"id": -1009990000000, "type": "supergroup", "title": "Shared"}, "from": {"id": 5555, "first_name": "Pat"}, "date": 1700000000, "text": "shared, first"}', false);
SELECT pg_temp.expect('a supergroup''s messages are shared',
    parley_tdu_messages(:clash_user, jsonb_build_array(pg_temp.tdmsg(-1009990000000, 1, 1700000000, 'shared, edited', '{"edit_date": 1700000500}'))), 1);
SELECT pg_temp.expect('the newer version', (SELECT text FROM messages WHERE chat_id = -1009990000000 AND id = 1), 'shared, edited');
-- The other way, through the bot's staged batches: a private chat the
-- account stored first keeps the account's messages; the bot's messages of
-- it in a batch are left out, the rest of the batch (a chat of the bot's
-- own) is stored.
SELECT parley_tdu_chats(:clash_user, jsonb_build_array(
    '{"@type": "chat", "id": 6666, "type": {"@type": "chatTypePrivate", "user_id": 6666}, "title": "Quinn"}'::jsonb)) IS NOT NULL;
SELECT pg_temp.expect('the account''s message there',
    parley_tdu_messages(:clash_user, jsonb_build_array(pg_temp.tdmsg(6666, 1, 1800000000, 'to the account'))), 1);
SELECT parley_bot_stage(:clash_bot, jsonb_build_array(
    jsonb_build_object('update_id', 500, 'message', '{"message_id": 1, "chat": {"id": 6666, "type": "private", "first_name": "Quinn"}, "from": {"id": 6666, "first_name": "Quinn"}, "date": 1800000100, "text": "to the bot"}'::jsonb),
    jsonb_build_object('update_id', 501, 'message', '{"message_id": 2, "chat": {"id": 7777, "type": "private", "first_name": "Rae"}, "from": {"id": 7777, "first_name": "Rae"}, "date": 1800000200, "text": "to the bot, own chat"}'::jsonb)));
SELECT pg_temp.expect('the batch applied', parley_bot_apply_staged(:clash_bot, 8) ->> 'applied', '2');
SELECT pg_temp.expect('the account''s private chat unchanged',
    (SELECT string_agg(id || ':' || text, ',' ORDER BY id) FROM messages WHERE chat_id = 6666), '1:to the account');
SELECT pg_temp.expect('the bot''s own chat stored', (SELECT text FROM messages WHERE chat_id = 7777 AND id = 2), 'to the bot, own chat');
