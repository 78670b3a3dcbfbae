-- telegram_bot: applying getUpdates batches (parley_bot_ingest, src/db/sql/
-- telegram/bot.sql) set by set gives what applying them one by one in
-- update_id order gives: updates before the stored offset are skipped; a
-- message takes its newest version and never goes back to an older one;
-- chats and senders take their latest form; files are queued once;
-- reactions and memberships apply; a chat's last message is its newest;
-- malformed updates are passed over without stopping the stream; one
-- message parley sent (parley_bot_store_message) is stored as outgoing.

INSERT INTO accounts (id, kind, handle) VALUES (7, 'telegram_bot', 'bot7');

CREATE FUNCTION pg_temp.msg(upd bigint, kind text, chat bigint, id bigint, d bigint, body jsonb)
    RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('update_id', upd, kind,
        jsonb_build_object('message_id', id, 'date', d,
                           'chat', jsonb_build_object('id', chat, 'type', 'supergroup', 'title', 'Chat ' || chat),
                           'from', jsonb_build_object('id', 100 + chat, 'first_name', 'U' || upd)) || body)
$$;

-- A batch: two chats, a message then its edit, an edit older than the
-- message (sent late), a photo, a reaction and a membership update.
SELECT pg_temp.expect('first batch',
    parley_bot_ingest(7, jsonb_build_array(
        pg_temp.msg(10, 'message', 1, 1, 1000, '{"text": "hello"}'),
        pg_temp.msg(11, 'message', 1, 2, 1001, '{"text": "second", "reply_markup": {"k": 1}}'),
        pg_temp.msg(12, 'edited_message', 1, 1, 1000, '{"text": "hello, edited", "edit_date": 1005}'),
        pg_temp.msg(13, 'edited_message', 1, 1, 1000, '{"text": "an old edit", "edit_date": 1003}'),
        pg_temp.msg(14, 'channel_post', 2, 1, 1002,
                    '{"caption": "a photo https://x.example", "photo": [{"file_id": "s", "file_unique_id": "us", "width": 90},
                                                                         {"file_id": "b", "file_unique_id": "ub", "width": 900, "file_size": 5}]}'),
        jsonb_build_object('update_id', 15, 'message_reaction', jsonb_build_object(
            'chat', jsonb_build_object('id', 1), 'message_id', 2,
            'new_reaction', '[{"type": "emoji", "emoji": "👍"}]'::jsonb)),
        jsonb_build_object('update_id', 16, 'chat_member', jsonb_build_object(
            'chat', jsonb_build_object('id', 3, 'type', 'group', 'title', 'Members'),
            'new_chat_member', jsonb_build_object('status', 'administrator',
                'user', jsonb_build_object('id', 555, 'first_name', 'Ann'))))
    )),
    '{"applied": 7, "offset": 17}'::jsonb);
SELECT pg_temp.expect('newest version wins', (SELECT text || '|' || edit_date::text FROM messages WHERE chat_id = 1 AND id = 1),
                      'hello, edited|' || to_timestamp(1005)::text);
SELECT pg_temp.expect('extra and reactions', (SELECT extra FROM messages WHERE chat_id = 1 AND id = 2),
                      '{"reply_markup": {"k": 1}, "reactions": [{"type": "emoji", "emoji": "👍"}]}'::jsonb);
SELECT pg_temp.expect('largest photo queued', (SELECT string_agg(kind || ':' || file_id || ':' || state || ':' || file_size, ',') FROM media),
                      'photo:b:remote:5');
SELECT pg_temp.expect('caption with a link', (SELECT text || '|' || has_link || '|' || media_kind FROM messages WHERE chat_id = 2),
                      'a photo https://x.example|true|photo');
SELECT pg_temp.expect('chats', (SELECT string_agg(id || ':' || kind || ':' || title || ':' || account_id, ',' ORDER BY id) FROM chats),
                      '1:supergroup:Chat 1:7,2:supergroup:Chat 2:7,3:group:Members:7');
SELECT pg_temp.expect('last message', (SELECT last_message_id || '@' || extract(epoch FROM last_message_date)::bigint FROM chats WHERE id = 1), '2@1001');
SELECT pg_temp.expect('senders, latest form', (SELECT string_agg(id || ':' || first_name, ',' ORDER BY id) FROM users),
                      '101:U13,102:U14,555:Ann');
SELECT pg_temp.expect('member', (SELECT status FROM chat_members WHERE chat_id = 3 AND user_id = 555), 'administrator');

-- The same batch again (a retry after a lost answer): nothing applies twice.
SELECT pg_temp.expect('replayed batch skipped',
    parley_bot_ingest(7, jsonb_build_array(pg_temp.msg(12, 'edited_message', 1, 1, 1000, '{"text": "replayed", "edit_date": 1009}'))),
    '{"applied": 0, "offset": 17}'::jsonb);
SELECT pg_temp.expect('not replayed', (SELECT text FROM messages WHERE chat_id = 1 AND id = 1), 'hello, edited');

-- A later batch: an edit older than the stored version is ignored; a
-- newer one applies; a malformed update is passed over; members change.
SELECT pg_temp.expect('second batch',
    parley_bot_ingest(7, jsonb_build_array(
        pg_temp.msg(17, 'edited_message', 1, 1, 1000, '{"text": "stale", "edit_date": 1004}'),
        pg_temp.msg(18, 'edited_message', 1, 2, 1001, '{"text": "second, edited", "edit_date": 1010}'),
        '{"update_id": 19, "message": {"text": "no chat"}}'::jsonb,
        jsonb_build_object('update_id', 20, 'chat_member', jsonb_build_object(
            'chat', jsonb_build_object('id', 3, 'type', 'group', 'title', 'Members'),
            'new_chat_member', jsonb_build_object('status', 'left',
                'user', jsonb_build_object('id', 555, 'first_name', 'Ann'))))
    )),
    '{"applied": 4, "offset": 21}'::jsonb);
SELECT pg_temp.expect('stale edit ignored', (SELECT text FROM messages WHERE chat_id = 1 AND id = 1), 'hello, edited');
SELECT pg_temp.expect('newer edit applied, extra kept', (SELECT text || '|' || (extra ? 'reactions') FROM messages WHERE chat_id = 1 AND id = 2),
                      'second, edited|true');
SELECT pg_temp.expect('member left', (SELECT status FROM chat_members WHERE chat_id = 3 AND user_id = 555), 'left');
SELECT pg_temp.expect('stored offset', parley_bot_offset(7), 21::bigint);
SELECT pg_temp.expect('an empty batch keeps the offset', parley_bot_ingest(7, '[]'), '{"applied": 0, "offset": 21}'::jsonb);

-- Forum topics: the service message creates the topic; its messages carry it.
SELECT parley_bot_ingest(7, jsonb_build_array(
    jsonb_build_object('update_id', 21, 'message', jsonb_build_object('message_id', 50, 'date', 2000,
        'chat', jsonb_build_object('id', 4, 'type', 'supergroup', 'is_forum', true, 'title', 'Forum'),
        'forum_topic_created', jsonb_build_object('name', 'Ideas', 'icon_color', 1))),
    jsonb_build_object('update_id', 22, 'message', jsonb_build_object('message_id', 51, 'date', 2001,
        'chat', jsonb_build_object('id', 4, 'type', 'supergroup', 'is_forum', true, 'title', 'Forum'),
        'is_topic_message', true, 'message_thread_id', 50, 'text', 'in the topic'))));
SELECT pg_temp.expect('topic', (SELECT title FROM topics WHERE chat_id = 4 AND id = 50), 'Ideas');
SELECT pg_temp.expect('forum kind', (SELECT kind FROM chats WHERE id = 4), 'forum');
SELECT pg_temp.expect('service and topic', (SELECT string_agg(id || ':' || kind || ':' || topic_id, ',' ORDER BY id) FROM messages WHERE chat_id = 4),
                      '50:service:50,51:message:50');

-- What parley sends is stored the same way, as outgoing.
SELECT pg_temp.expect('sent message', parley_bot_store_message(7,
    jsonb_build_object('message_id', 3, 'date', 1020, 'text', 'sent by parley',
                       'chat', jsonb_build_object('id', 1, 'type', 'supergroup', 'title', 'Chat 1')), true), 1::bigint);
SELECT pg_temp.expect('outgoing', (SELECT outgoing FROM messages WHERE chat_id = 1 AND id = 3), true);
SELECT pg_temp.expect('incoming', (SELECT bool_or(outgoing) FROM messages WHERE chat_id = 1 AND id < 3), false);
SELECT pg_temp.expect('offset unchanged by a send', parley_bot_offset(7), 23::bigint);

-- Media retries: a passing failure (retry_ms given) is claimed again once
-- its wait is over, however many attempts it took; a refusal (no retry_ms)
-- at most five times.
SELECT pg_temp.expect('claimed with its attempts', (parley_bot_media_claim(7, 10, 'd1') -> 0 ->> 'attempts')::int, 1);
UPDATE media SET attempts = 9;
SELECT parley_bot_media_done(jsonb_build_object('chat_id', chat_id, 'message_id', message_id, 'ordinal', ordinal,
                                                'state', 'error', 'error', 'no answer', 'retry_ms', 60000)) FROM media;
SELECT pg_temp.expect('waits for its next attempt', jsonb_array_length(parley_bot_media_claim(7, 10, 'd1')), 0);
UPDATE media SET next_attempt_at = now() - interval '1 second';
SELECT pg_temp.expect('claimed after the wait, at any attempt', (parley_bot_media_claim(7, 10, 'd1') -> 0 ->> 'attempts')::int, 10);
SELECT parley_bot_media_done(jsonb_build_object('chat_id', chat_id, 'message_id', message_id, 'ordinal', ordinal,
                                                'state', 'error', 'error', 'refused')) FROM media;
UPDATE media SET updated_at = now() - interval '1 day';
SELECT pg_temp.expect('a refusal is not retried past five attempts', jsonb_array_length(parley_bot_media_claim(7, 10, 'd1')), 0);

-- A download claimed by a daemon that died is claimed again at once; one
-- of a live daemon waits for its 10 minutes.
SELECT pg_advisory_lock(hashtextextended('parley_daemon:d1', 0));
UPDATE media SET state = 'downloading', claimed_by = 'd1', updated_at = now(), attempts = 1;
SELECT pg_temp.expect('a live daemon''s download is left to it', jsonb_array_length(parley_bot_media_claim(7, 10, 'd2')), 0);
SELECT pg_advisory_unlock(hashtextextended('parley_daemon:d1', 0));
SELECT pg_temp.expect('a dead daemon''s download is taken over', jsonb_array_length(parley_bot_media_claim(7, 10, 'd2')) > 0, true);
SELECT pg_temp.expect('now d2''s', (SELECT string_agg(DISTINCT claimed_by, ',') FROM media WHERE state = 'downloading'), 'd2');
