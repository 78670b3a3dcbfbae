-- inline_tools: the inline toolset's SQL functions (src/db/sql/inline/) on
-- fixed data: conversation ranking (the spec's Dena case), relative times
-- in a timezone with a pinned clock, history paging and direction, unread
-- state and the read marker, search within one chat, people.

INSERT INTO users (id, first_name, last_name, username, extra) VALUES
    (1000, 'Sam', 'Me', 'sam', '{"is_self": true}'),
    (2001, 'Dena', 'Karimi', 'dkarimi', NULL),
    (2002, 'Zoë', 'Ångström', NULL, NULL),
    (2003, 'Mo', 'Reza', 'mo', NULL);
UPDATE users SET alias = 'boss' WHERE id = 2003;
INSERT INTO chats (id, kind, title, last_message_date, read_inbox_max_id) VALUES
    (2001, 'private', 'Dena Karimi', '2026-03-10 09:00Z', 3),
    (2002, 'private', 'Zoë Ångström', '2026-03-01 09:00Z', NULL),
    (-300, 'group', 'Dena X Mo', '2026-03-11 09:00Z', 0),
    (-400, 'channel', 'News about Dena', '2026-03-12 09:00Z', 0),
    (-500, 'supergroup', 'Marketing', '2026-03-09 09:00Z', 2),
    (2003, 'private', 'Mo Reza', '2026-02-01 09:00Z', 0);
UPDATE chats SET active = false WHERE id = 2003;
INSERT INTO messages (chat_id, id, sender_id, sender_name, date, text, has_link, outgoing) VALUES
    (2001, 1, 2001, 'Dena Karimi', '2026-03-08 10:00Z', 'hi Sam', false, false),
    (2001, 2, 1000, 'Sam Me', '2026-03-08 11:00Z', 'hello Dena, see you tomorrow', false, false),
    (2001, 3, 2001, 'Dena Karimi', '2026-03-09 08:00Z', 'ok', false, false),
    (2001, 4, 1000, 'Sam Me', '2026-03-09 21:30Z', 'the last one I sent', false, false),
    (2001, 5, 2001, 'Dena Karimi', '2026-03-10 09:00Z', 'unread reply', false, false),
    (-500, 1, 2003, 'Mo Reza', '2026-03-08 23:30Z', 'plan at https://example.org/plan', true, false),
    (-500, 2, 2003, 'Mo Reza', '2026-03-09 10:00Z', 'campaign draft https://example.org/draft', true, false),
    (-500, 3, 2002, 'Zoë', '2026-03-09 12:00Z', 'no link here', false, false),
    (-500, 4, 2002, 'Zoë', '2026-03-09 23:30Z', 'late link https://example.org/late', true, false);

CREATE FUNCTION pg_temp.ids(r jsonb, key text, id text) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(e ->> id, ',' ORDER BY o), '')
    FROM jsonb_array_elements(r -> key) WITH ORDINALITY AS x(e, o)
$$;
-- "Now" is 2026-03-10 12:00 in Berlin (11:00 UTC).
CREATE FUNCTION pg_temp.ctx() RETURNS jsonb LANGUAGE sql AS $$
    SELECT '{"now": "2026-03-10T11:00:00Z", "timezone": "Europe/Berlin"}'::jsonb
$$;

-- The spec's case: "Dena" is the DM, "Dena X" the group.
SELECT pg_temp.expect('Dena: best match is the DM',
    parley_inline_conversations_list('{"query": "Dena"}', pg_temp.ctx()) ->> 'bestMatch', '2001');
SELECT pg_temp.expect('Dena: DM first, then the others by recency',
    pg_temp.ids(parley_inline_conversations_list('{"query": "Dena"}', pg_temp.ctx()), 'items', 'chatId'),
    '2001,-400,-300');
SELECT pg_temp.expect('Dena X: the group',
    parley_inline_conversations_list('{"query": "Dena X"}', pg_temp.ctx()) ->> 'bestMatch', '-300');
SELECT pg_temp.expect('reasons',
    parley_inline_conversations_list('{"query": "Dena"}', pg_temp.ctx()) #> '{items,0,match,reasons}',
    '["displayName:wordPrefix", "title:wordPrefix", "directChat"]'::jsonb);
SELECT pg_temp.expect('username exact beats a name',
    parley_inline_conversations_list('{"query": "@dkarimi"}', pg_temp.ctx()) #>> '{items,0,match,score}',
    '115.0');
SELECT pg_temp.expect('accents and case do not matter',
    parley_inline_conversations_list('{"query": "zoe angstrom"}', pg_temp.ctx()) ->> 'bestMatch', '2002');
SELECT pg_temp.expect('a chat id above all',
    parley_inline_conversations_list('{"query": "-500"}', pg_temp.ctx()) #>> '{items,0,match,score}',
    '1000');
SELECT pg_temp.expect('the alias finds a person, an inactive chat pays',
    parley_inline_conversations_list('{"query": "boss"}', pg_temp.ctx()) #> '{items,0,match}',
    '{"score": 70.0, "reasons": ["alias:exact", "directChat", "inactive"]}'::jsonb);
SELECT pg_temp.expect('an exact username leads even from a left chat',
    parley_inline_conversations_list('{"query": "mo"}', pg_temp.ctx()) ->> 'bestMatch', '2003');
SELECT pg_temp.expect('close scores: no best match',
    parley_inline_conversations_list('{"query": "e"}', pg_temp.ctx()) ->> 'bestMatch', NULL);
SELECT pg_temp.expect('no query: recent active chats',
    pg_temp.ids(parley_inline_conversations_list('{"limit": 3}', pg_temp.ctx()), 'items', 'chatId'),
    '-400,-300,2001');
SELECT pg_temp.expect('unread only, by unread count',
    pg_temp.ids(parley_inline_conversations_list('{"unreadOnly": true, "sort": "unread"}', pg_temp.ctx()),
                'items', 'chatId'), '-500,2001');
SELECT pg_temp.expect('unread count of the DM',
    parley_inline_conversations_get('{"chatId": 2001}', pg_temp.ctx()) ->> 'unreadCount', '1');

-- "last message I sent to Dena": two calls.
SELECT pg_temp.expect('last sent',
    parley_inline_messages_list('{"userId": 2001, "direction": "sent", "limit": 1}', pg_temp.ctx())
        #>> '{items,0,text}', 'the last one I sent');
SELECT pg_temp.expect('received, paged',
    (SELECT pg_temp.ids(r, 'items', 'messageId') || '|' || (r ->> 'nextOffsetId')
     FROM parley_inline_messages_list('{"chatId": 2001, "direction": "received", "limit": 2}',
                                      pg_temp.ctx()) r), '5,3|3');
SELECT pg_temp.expect('next page',
    pg_temp.ids(parley_inline_messages_list('{"chatId": 2001, "direction": "received", "limit": 2, "offsetId": 3}',
                                            pg_temp.ctx()), 'items', 'messageId'), '1');
SELECT pg_temp.expect('out flag from the self user',
    parley_inline_messages_list('{"chatId": 2001, "limit": 2}', pg_temp.ctx()) #>> '{items,1,out}', 'true');
SELECT pg_temp.expect_error('neither chatId nor userId',
    $$SELECT parley_inline_messages_list('{}', '{}')$$, 'PT400', 'give chatId');
SELECT pg_temp.expect_error('no DM with that user',
    $$SELECT parley_inline_messages_list('{"userId": 9}', '{}')$$, 'PT400', 'no direct chat with user 9');

-- Times: "yesterday" is 2026-03-09 in Berlin: 03-08 23:00Z to 03-09 23:00Z.
SELECT pg_temp.expect('yesterday since', parley_inline_time('{"since": "yesterday"}', 'since', pg_temp.ctx()),
                      '2026-03-08 23:00Z'::timestamptz);
SELECT pg_temp.expect('yesterday until', parley_inline_time('{"until": "yesterday"}', 'until', pg_temp.ctx()),
                      '2026-03-09 23:00Z'::timestamptz);
SELECT pg_temp.expect('3d ago', parley_inline_time('{"since": "3d ago"}', 'since', pg_temp.ctx()),
                      '2026-03-07 11:00Z'::timestamptz);
SELECT pg_temp.expect('12h', parley_inline_time('{"since": "12h"}', 'since', pg_temp.ctx()),
                      '2026-03-09 23:00Z'::timestamptz);
SELECT pg_temp.expect('a local date-time', parley_inline_time('{"since": "2026-03-01T10:00"}', 'since', pg_temp.ctx()),
                      '2026-03-01 09:00Z'::timestamptz);
SELECT pg_temp.expect('epoch seconds', parley_inline_time('{"since": "1773100800"}', 'since', pg_temp.ctx()),
                      to_timestamp(1773100800));
SELECT pg_temp.expect_error('a bad time', $$SELECT parley_inline_time('{"since": "soon"}', 'since', '{}')$$,
                            'PT400', 'since: "soon" is not a time');

-- "find links in marketing thread from yesterday": two calls.
SELECT pg_temp.expect('marketing is the best match',
    parley_inline_conversations_list('{"query": "marketing"}', pg_temp.ctx()) ->> 'bestMatch', '-500');
SELECT pg_temp.expect('links from yesterday',
    pg_temp.ids(parley_inline_messages_search('{"chatId": -500, "content": "links", "since": "yesterday", "until": "yesterday"}',
                                              pg_temp.ctx()), 'items', 'messageId'), '2,1');
SELECT pg_temp.expect('search with a query',
    pg_temp.ids(parley_inline_messages_search('{"chatId": -500, "query": "campaign"}', pg_temp.ctx()), 'items', 'messageId'), '2');
SELECT pg_temp.expect_error('a bad content',
    $$SELECT parley_inline_messages_search('{"chatId": -500, "content": "gifs"}', '{}')$$, 'PT400',
    'content: "gifs" is not one of');

-- "list unread messages from yesterday".
SELECT pg_temp.expect('unread from yesterday',
    (SELECT (r ->> 'scannedChats') || '|' || pg_temp.ids(r, 'items', 'messageId')
     FROM parley_inline_messages_unread('{"since": "yesterday", "until": "yesterday"}', pg_temp.ctx()) r),
    '2|3');
-- The read marker moves up, never back.
SELECT pg_temp.expect('mark read',
    parley_inline_messages_mark_read('{"chatId": -500}', pg_temp.ctx()), '{"chatId": -500, "readMaxId": 4, "unreadCount": 0}'::jsonb);
SELECT pg_temp.expect('never back',
    parley_inline_messages_mark_read('{"chatId": -500, "maxId": 1}', pg_temp.ctx()) ->> 'readMaxId', '4');

-- People and the account.
SELECT pg_temp.expect('people by name',
    (SELECT (r #>> '{items,0,name}') || '|' || (r #>> '{items,0,chatId}')
     FROM parley_inline_people_search('{"query": "dena"}', pg_temp.ctx()) r), 'Dena Karimi|2001');
SELECT pg_temp.expect('me', parley_inline_account_me('{}', pg_temp.ctx()) #>> '{user,userId}', '1000');

-- Context around a message.
SELECT pg_temp.expect('context',
    (SELECT pg_temp.ids(r, 'before', 'messageId') || '|' || (r #>> '{target,messageId}') || '|' || pg_temp.ids(r, 'after', 'messageId')
     FROM parley_inline_messages_context('{"chatId": 2001, "messageId": 3, "before": 1, "after": 1}', pg_temp.ctx()) r),
    '2|3|4');

-- Uploads: one record per content; a new name and type on the same bytes.
SELECT pg_temp.expect('upload stored',
    parley_upload_store('{"sha256": "abc123", "localPath": "ab/abc123", "kind": "document", "mimeType": "application/pdf", "fileName": "a.pdf", "size": 3, "source": "base64"}', '{}') ->> 'fileId',
    'fabc123');
SELECT pg_temp.expect('same bytes, same file',
    parley_upload_store('{"sha256": "abc123", "localPath": "ab/abc123", "kind": "document", "mimeType": "text/plain", "fileName": "b.txt", "size": 3, "source": "https://example.org"}', '{}') ->> 'fileName',
    'b.txt');
SELECT pg_temp.expect('one row', (SELECT count(*) FROM uploads), 1::bigint);
SELECT pg_temp.expect('files_get hides the local path',
    parley_inline_files_get('{"fileId": "fabc123"}', '{}') ? 'localPath', false);
SELECT pg_temp.expect('file resource',
    parley_inline_resource('{"uri": "inline://file/fabc123", "vars": {"fileId": "fabc123"}}', '{}') #>> '{contents,0,mimeType}',
    'application/json');
SELECT pg_temp.expect('unknown file resource', parley_inline_resource('{"uri": "x", "vars": {"fileId": "zz"}}', '{}'), 'null'::jsonb);
SELECT pg_temp.expect_error('send_media checks the file first',
    $$SELECT parley_inline_messages_send_media('{"chatId": 2001, "fileId": "zz"}', '{}')$$, 'PT400', 'fileId: no file');
SELECT pg_temp.expect_error('then says a connector is needed',
    $$SELECT parley_inline_messages_send_media('{"chatId": 2001, "fileId": "fabc123"}', '{}')$$, 'PT501', 'messages_send_media needs');
