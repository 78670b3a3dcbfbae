-- telegram_import: parley_tg_import_chat (src/db/sql/telegram/import.sql)
-- keeps each message's newest version by its edit date. An older export
-- imported after a newer one takes back no edit, no text and no reaction;
-- fields it lacks erase nothing (it only fills what the stored copy lacks);
-- a newer export applies its edit; the bot's copy is treated alike (an
-- older export never replaces a bot update, a newer one does); the same
-- export twice writes nothing.

CREATE FUNCTION pg_temp.stage(id bigint, edit bigint, body text, extra jsonb, reply bigint DEFAULT NULL)
    RETURNS void LANGUAGE sql AS $$
    INSERT INTO import_rows (id, sender_id, sender_name, date, edit_date, text, has_link, kind,
                             reply_to_id, extra)
    VALUES (id, 1001, 'Ann', to_timestamp(1700000000 + id),
            CASE WHEN edit IS NOT NULL THEN to_timestamp(edit) END, body, false, 'message',
            reply, extra)
$$;

CREATE FUNCTION pg_temp.import() RETURNS jsonb LANGUAGE sql AS $$
    SELECT parley_tg_import_chat('{"name": "Group", "type": "private_group", "id": 900}', false,
                                 false, -900)
$$;

CREATE FUNCTION pg_temp.msg(id bigint) RETURNS text LANGUAGE sql AS $$
    SELECT concat_ws('|', text, extract(epoch FROM edit_date)::bigint, extra::text, reply_to_id)
    FROM messages WHERE chat_id = -900 AND id = $1
$$;

-- The newer export: message 1 edited, with a reaction; message 2 unedited.
SELECT pg_temp.stage(1, 1700000100, 'edited', '{"reactions": [{"emoji": "👍", "count": 2}]}');
SELECT pg_temp.stage(2, NULL, 'plain', NULL, 1);
SELECT pg_temp.expect('newer export', pg_temp.import() ->> 'written', '2');

-- The older export after it: message 1 as first sent, no reaction; message
-- 2 with a reaction but without its reply.
SELECT pg_temp.stage(1, NULL, 'original', NULL);
SELECT pg_temp.stage(2, NULL, 'plain (older)', '{"reactions": [{"emoji": "🔥", "count": 1}]}');
SELECT pg_temp.expect('older export: only the missing reaction is written', pg_temp.import() ->> 'written', '1');
SELECT pg_temp.expect('the edit stays', pg_temp.msg(1),
                      'edited|1700000100|{"reactions": [{"count": 2, "emoji": "👍"}]}');
SELECT pg_temp.expect('unedited: stored text and reply stay, the missing reaction is filled', pg_temp.msg(2),
                      'plain|{"reactions": [{"count": 1, "emoji": "🔥"}]}|1');

-- An older export with an older edit of message 1: still the newest stays.
SELECT pg_temp.stage(1, 1700000050, 'first edit', '{"reactions": []}');
SELECT pg_temp.expect('older edit: nothing written', pg_temp.import() ->> 'written', '0');
SELECT pg_temp.expect('older edit refused', pg_temp.msg(1),
                      'edited|1700000100|{"reactions": [{"count": 2, "emoji": "👍"}]}');

-- A newer export with a later edit: its text, edit date and reactions.
SELECT pg_temp.stage(1, 1700000200, 'edited again', '{"reactions": [{"emoji": "🎉", "count": 5}], "signature": "A"}');
SELECT pg_temp.expect('newer edit written', pg_temp.import() ->> 'written', '1');
SELECT pg_temp.expect('newer edit applied', pg_temp.msg(1),
                      'edited again|1700000200|{"reactions": [{"count": 5, "emoji": "🎉"}], "signature": "A"}');

-- The same export again: nothing written.
SELECT pg_temp.stage(1, 1700000200, 'edited again', '{"reactions": [{"emoji": "🎉", "count": 5}], "signature": "A"}');
SELECT pg_temp.stage(2, NULL, 'plain', NULL, 1);
SELECT pg_temp.expect('same export twice', pg_temp.import() ->> 'written', '0');

-- The bot's copy: an edit the bot received is not taken back by an older
-- export; an export edited after it replaces it.
INSERT INTO accounts (id, kind, handle) VALUES (7, 'telegram_bot', 'bot7');
SELECT parley_bot_ingest(7, jsonb_build_array(jsonb_build_object('update_id', 1, 'edited_message',
    jsonb_build_object('message_id', 3, 'date', 1700000003, 'edit_date', 1700000300,
                       'text', 'bot edit', 'chat', jsonb_build_object('id', -900, 'type', 'group'),
                       'from', jsonb_build_object('id', 1001, 'first_name', 'Ann')))));
SELECT pg_temp.stage(3, 1700000250, 'export edit', NULL);
SELECT pg_temp.expect('older export than the bot: nothing written', pg_temp.import() ->> 'written', '0');
SELECT pg_temp.expect('the bot''s edit stays', pg_temp.msg(3), 'bot edit|1700000300');
SELECT pg_temp.stage(3, 1700000400, 'export edit, later', '{"reactions": [{"emoji": "👀", "count": 1}]}');
SELECT pg_temp.expect('newer export than the bot: written', pg_temp.import() ->> 'written', '1');
SELECT pg_temp.expect('the newer export wins', pg_temp.msg(3),
                      'export edit, later|1700000400|{"reactions": [{"count": 1, "emoji": "👀"}]}');

-- Nothing staged is left behind.
SELECT pg_temp.expect('staging emptied', (SELECT count(*) FROM import_rows), 0::bigint);
