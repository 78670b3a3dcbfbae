-- search_forms_race: a writer of messages whose transaction spans a
-- change of the word forms' list (src/db/sql/search_forms.sql,
-- parley_search_forms_step and parley_messages_forms_define). The writer
-- runs in a second session (dblink): its row, written with the trigger it
-- read before the change, must still end up with the new forms. Before
-- the step locked messages, the step saw the store empty, called it
-- filled, and the writer's row, committed after, kept no forms: the
-- search never found it by a form.

CREATE EXTENSION IF NOT EXISTS dblink;
CREATE FUNCTION pg_temp.conninfo() RETURNS text LANGUAGE sql AS $$
    SELECT format('host=%s port=%s dbname=%s user=%s',
                  split_part(current_setting('unix_socket_directories'), ',', 1),
                  current_setting('port'), current_database(), current_user)
$$;
SELECT dblink_connect('writer', pg_temp.conninfo());
SELECT dblink_connect('builder', pg_temp.conninfo());

SELECT pg_temp.expect('no list yet', parley_search_languages(), '');

-- The writer stores a message (no forms yet: none asked for) and has not
-- committed when the builder asks for English forms on an empty store.
SELECT dblink_exec('writer', 'BEGIN');
SELECT dblink_exec('writer', $w$INSERT INTO chats (id, kind, title) VALUES (-100, 'group', 'Ops')$w$);
SELECT dblink_exec('writer', $w$INSERT INTO messages (chat_id, id, date, text)
                               VALUES (-100, 1, '2026-01-01 10:00Z', 'the meetings were held')$w$);
SELECT pg_temp.expect('the writer''s row has no forms',
    (SELECT f FROM dblink('writer', 'SELECT forms IS NULL FROM messages') AS t(f boolean)), true);
SELECT dblink_send_query('builder', $b$SELECT parley_search_forms_step('english')::text$b$);
SELECT pg_sleep(0.5);
SELECT pg_temp.expect('the step waits for the writer', dblink_is_busy('builder'), 1);
SELECT dblink_exec('writer', 'COMMIT');
SELECT pg_temp.expect('then sees the row: fill',
    (SELECT r::jsonb ->> 'state' FROM dblink_get_result('builder') AS t(r text)), 'fill');
SELECT r FROM dblink_get_result('builder') AS t(r text); -- the end of the call

SELECT pg_temp.expect('the row filled', parley_search_forms_fill('english', 100) ->> 'rows', '1');
SELECT pg_temp.expect('finished', parley_search_forms_fill('english', 100) ->> 'finished', 'true');
SELECT pg_temp.expect('the row has its forms', (SELECT forms FROM messages WHERE id = 1) @@ 'meet',
                      true);

-- Rows written after the change get the new forms from the trigger.
SELECT dblink_exec('writer', $w$INSERT INTO messages (chat_id, id, date, text)
                               VALUES (-100, 2, '2026-01-02 10:00Z', 'another meeting')$w$);
SELECT pg_temp.expect('a later row has its forms', (SELECT forms FROM messages WHERE id = 2) @@ 'meet',
                      true);

-- A writer that holds messages longer than the step waits (5 s asking
-- without queueing, then 2 s queued): the step fails, changing nothing,
-- and the builder tries again later. Other writers meanwhile do not wait
-- behind the step while it asks without queueing.
SELECT dblink_exec('writer', 'BEGIN');
SELECT dblink_exec('writer', $w$INSERT INTO messages (chat_id, id, date, text)
                               VALUES (-100, 3, '2026-01-03 10:00Z', 'встречи прошли')$w$);
SELECT pg_temp.expect_error('the step gives up after its wait',
    $$SELECT parley_search_forms_step('english,russian')$$, '55P03', 'messages is being written');
SELECT dblink_send_query('builder', $b$SELECT parley_search_forms_step('english,russian')::text$b$);
SELECT pg_sleep(0.3);
SELECT pg_temp.expect('the step polls', dblink_is_busy('builder'), 1);
SET lock_timeout = '1s'; -- a step that queued would hold this INSERT: it fails then, not hangs
INSERT INTO messages (chat_id, id, date, text) VALUES (-100, 4, '2026-01-04 10:00Z', 'not held');
RESET lock_timeout;
SELECT pg_temp.expect_error('the polling step gives up too',
    $$SELECT * FROM dblink_get_result('builder') AS t(r text)$$, '55P03', 'messages is being written');
SELECT r FROM dblink_get_result('builder') AS t(r text); -- the end of the call
SELECT pg_temp.expect('the target unchanged', (SELECT languages FROM search_forms WHERE target),
                      'english');
SELECT dblink_exec('writer', 'COMMIT');
SELECT pg_temp.expect('tried again: fill',
    parley_search_forms_step('english,russian') ->> 'state', 'fill');
SELECT pg_temp.expect('every row filled again',
    parley_search_forms_fill('english,russian', 100) ->> 'rows', '4');
SELECT pg_temp.expect('the Russian row has its forms',
    (SELECT forms FROM messages WHERE id = 3) @@ to_tsquery('russian', 'встреча'), true);

SELECT dblink_disconnect('writer');
SELECT dblink_disconnect('builder');
