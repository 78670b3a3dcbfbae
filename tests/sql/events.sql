-- events: the triggers that tell the daemons what changed
-- (parley_messages_notify, src/db/sql/events.sql). A write of any size
-- goes through them; edits are counted per transaction, so that past 50
-- only chats are named (NOTIFY sends one of identical payloads).

INSERT INTO chats (id, kind, title) VALUES (1, 'group', 'one'), (2, 'group', 'two');
INSERT INTO messages (chat_id, id, date, text)
SELECT 1 + g % 2, g, now(), 'message ' || g FROM generate_series(1, 300) g;
SELECT pg_temp.expect('inserted', (SELECT count(*) FROM messages), 300::bigint);

BEGIN;
UPDATE messages SET text = text || ' (edited)', edit_date = now();
SELECT pg_temp.expect('every edit counted', current_setting('parley.notify_edits')::integer, 300);
COMMIT;
SELECT pg_temp.expect('a new transaction counts afresh',
                      coalesce(nullif(current_setting('parley.notify_edits', true), ''), '0'), '0');
-- An update that changes neither text nor edit_date is not an edit.
BEGIN;
UPDATE messages SET has_link = true WHERE chat_id = 1;
SELECT pg_temp.expect('not counted', coalesce(nullif(current_setting('parley.notify_edits', true), ''), '0'), '0');
COMMIT;
