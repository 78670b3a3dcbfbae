-- telegram_bot_staged: getUpdates batches staged before they are applied
-- (parley_bot_stage, parley_bot_apply_staged, src/db/sql/telegram/bot.sql):
-- staging stores the batch and advances the offset without touching the
-- archive; updates already staged or applied are not staged again; staged
-- batches are applied oldest first, several at a time, with what applying
-- every update one by one in update_id order gives (an edit in a later
-- batch wins, an older edit in a later batch does not), and each exactly
-- once; parley_bot_ingest applies batches left staged before its own.

INSERT INTO accounts (id, kind, handle) VALUES (8, 'telegram_bot', 'bot8');

CREATE FUNCTION pg_temp.msg(upd bigint, kind text, id bigint, d bigint, body jsonb)
    RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('update_id', upd, kind,
        jsonb_build_object('message_id', id, 'date', d,
                           'chat', jsonb_build_object('id', -1001, 'type', 'supergroup', 'title', 'Staged'),
                           'from', jsonb_build_object('id', 200, 'first_name', 'S' || upd)) || body)
$$;

SELECT pg_temp.expect('batch A staged',
    parley_bot_stage(8, jsonb_build_array(pg_temp.msg(100, 'message', 1, 1000, '{"text": "v1"}'))),
    '{"staged": 1, "offset": 101, "pending": 1}'::jsonb);
SELECT pg_temp.expect('batch B staged',
    parley_bot_stage(8, jsonb_build_array(
        pg_temp.msg(101, 'edited_message', 1, 1000, '{"text": "v2", "edit_date": 1005}'),
        pg_temp.msg(102, 'message', 2, 1001, '{"text": "two"}'))),
    '{"staged": 2, "offset": 103, "pending": 2}'::jsonb);
-- A retry of B's request after a lost answer: nothing staged twice.
SELECT pg_temp.expect('replay not staged',
    parley_bot_stage(8, jsonb_build_array(pg_temp.msg(102, 'message', 2, 1001, '{"text": "two"}'))),
    '{"staged": 0, "offset": 103, "pending": 2}'::jsonb);
SELECT pg_temp.expect('batch C staged',
    parley_bot_stage(8, jsonb_build_array(
        pg_temp.msg(103, 'edited_message', 1, 1000, '{"text": "stale", "edit_date": 1003}'),
        pg_temp.msg(104, 'edited_message', 2, 1001, '{"text": "two, edited", "edit_date": 1008}'))),
    '{"staged": 2, "offset": 105, "pending": 3}'::jsonb);
SELECT pg_temp.expect('the offset is the staged one', parley_bot_offset(8), 105::bigint);
SELECT pg_temp.expect('nothing applied yet', (SELECT count(*) FROM messages WHERE chat_id = -1001), 0::bigint);

SELECT pg_temp.expect('two oldest applied', parley_bot_apply_staged(8, 2),
                      '{"applied": 3, "pending": 1}'::jsonb);
SELECT pg_temp.expect('A and B, B''s edit winning',
    (SELECT string_agg(id || ':' || text, ',' ORDER BY id) FROM messages WHERE chat_id = -1001), '1:v2,2:two');
SELECT pg_temp.expect('C left', (SELECT string_agg(first_update_id::text, ',') FROM bot_update_batches), '103');
SELECT pg_temp.expect('the rest applied', parley_bot_apply_staged(8, 8), '{"applied": 2, "pending": 0}'::jsonb);
SELECT pg_temp.expect('the older edit ignored, the newer applied',
    (SELECT string_agg(id || ':' || text, ',' ORDER BY id) FROM messages WHERE chat_id = -1001), '1:v2,2:two, edited');
SELECT pg_temp.expect('applied once', parley_bot_apply_staged(8, 8), '{"applied": 0, "pending": 0}'::jsonb);
SELECT pg_temp.expect('last message', (SELECT last_message_id FROM chats WHERE id = -1001), 2::bigint);

-- Several batches in one apply: a message and its edits across them.
SELECT parley_bot_stage(8, jsonb_build_array(pg_temp.msg(105, 'message', 3, 1100, '{"text": "w1"}')));
SELECT parley_bot_stage(8, jsonb_build_array(pg_temp.msg(106, 'edited_message', 3, 1100, '{"text": "w3", "edit_date": 1103}')));
SELECT parley_bot_stage(8, jsonb_build_array(pg_temp.msg(107, 'edited_message', 3, 1100, '{"text": "w2", "edit_date": 1102}'),
                                             pg_temp.msg(108, 'message', 4, 1104, '{"text": "four"}')));
SELECT pg_temp.expect('three batches at once', parley_bot_apply_staged(8, 8), '{"applied": 4, "pending": 0}'::jsonb);
SELECT pg_temp.expect('newest edit across batches',
    (SELECT string_agg(id || ':' || text, ',' ORDER BY id) FROM messages WHERE chat_id = -1001 AND id >= 3), '3:w3,4:four');

-- A batch left staged (a crash before it was applied): parley_bot_ingest
-- applies it before its own batch.
SELECT parley_bot_stage(8, jsonb_build_array(pg_temp.msg(109, 'message', 5, 1200, '{"text": "left staged"}')));
SELECT pg_temp.expect('ingest after a staged batch',
    parley_bot_ingest(8, jsonb_build_array(pg_temp.msg(110, 'edited_message', 5, 1200, '{"text": "edited after", "edit_date": 1201}'))),
    '{"applied": 1, "offset": 111}'::jsonb);
SELECT pg_temp.expect('both applied, in order', (SELECT text FROM messages WHERE chat_id = -1001 AND id = 5), 'edited after');
SELECT pg_temp.expect('none left staged', (SELECT count(*) FROM bot_update_batches), 0::bigint);

-- Reactions and members in a later batch of one apply than the message
-- they concern (whether a pass is needed is asked of every batch), and a
-- photo's file: the batches are applied as staged, not joined.
SELECT parley_bot_stage(8, jsonb_build_array(pg_temp.msg(111, 'message', 6, 1300,
    '{"caption": "a photo", "photo": [{"file_id": "s6", "file_unique_id": "us6", "width": 90},
                                      {"file_id": "b6", "file_unique_id": "ub6", "width": 900, "file_size": 7}]}')));
SELECT parley_bot_stage(8, jsonb_build_array(
    jsonb_build_object('update_id', 112, 'message_reaction', jsonb_build_object(
        'chat', jsonb_build_object('id', -1001), 'message_id', 6,
        'new_reaction', '[{"type": "emoji", "emoji": "🎉"}]'::jsonb)),
    jsonb_build_object('update_id', 113, 'chat_member', jsonb_build_object(
        'chat', jsonb_build_object('id', -1001, 'type', 'supergroup', 'title', 'Staged'),
        'new_chat_member', jsonb_build_object('status', 'member',
            'user', jsonb_build_object('id', 556, 'first_name', 'Bo'))))));
SELECT pg_temp.expect('message, reaction and member at once', parley_bot_apply_staged(8, 8),
                      '{"applied": 3, "pending": 0}'::jsonb);
SELECT pg_temp.expect('the reaction on the message of the batch before',
    (SELECT extra -> 'reactions' FROM messages WHERE chat_id = -1001 AND id = 6),
    '[{"type": "emoji", "emoji": "🎉"}]'::jsonb);
SELECT pg_temp.expect('the member', (SELECT status FROM chat_members WHERE chat_id = -1001 AND user_id = 556), 'member');
SELECT pg_temp.expect('the photo queued', (SELECT file_id || ':' || file_size FROM media WHERE chat_id = -1001 AND message_id = 6), 'b6:7');
