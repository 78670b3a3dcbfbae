-- surfaces: every surface reads its own source's chats only
-- (src/db/sql/sources.sql; docs/architecture.md, "Sources and surfaces").
-- One store holds a chat of each source, each with the word "marmalade"
-- and a word of its own, unread as a Telegram chat would be; the telegram
-- and inline functions see the Telegram chats only and refuse another
-- source's chat by id, naming the tools that read it; the search keeps to
-- a source's chats (and, in a store of one source, to none in particular);
-- chatwise, memory and bluesky read their own kind only.

INSERT INTO users (id, first_name, username) VALUES (7001, 'Tess Telegram', 'tess');
INSERT INTO users (id, external_id, first_name, username)
    VALUES (7002, 'did:plc:bluebird', 'Tess Bluesky', 'tess.bsky.social');
INSERT INTO chats (id, kind, title, external_id, username, last_message_date, read_inbox_max_id) VALUES
    (-100, 'group', 'Tg planted group', NULL, NULL, '2026-03-01 10:00Z', 0),
    (7001, 'private', 'Tess Telegram', NULL, NULL, '2026-03-01 09:00Z', 0),
    (9101, 'ai_chat', 'Cw planted chat', 'cw-chat-1', NULL, '2026-03-02 10:00Z', NULL),
    (9102, 'agent_session', 'Ag planted session', 'ag-session-1', NULL, '2026-03-03 10:00Z', NULL),
    (9103, 'feed', 'Bs planted feed', 'did:plc:bluebird', 'tess_bsky', '2026-03-04 10:00Z', NULL);
INSERT INTO messages (chat_id, id, external_id, sender_id, sender_name, role, date, text) VALUES
    (-100, 1, NULL, 7001, 'Tess Telegram', NULL, '2026-03-01 10:00Z', 'marmalade tgword'),
    (7001, 1, NULL, 7001, 'Tess Telegram', NULL, '2026-03-01 09:00Z', 'hello marmalade'),
    (9101, 1, 'cw-m1', NULL, 'system', 'system', '2026-03-02 10:00Z',
     'You are a helpful assistant. marmalade cwword'),
    (9102, 1, 'ag-m1', NULL, 'user', 'user', '2026-03-03 10:00Z', 'marmalade agword'),
    (9103, 1, 'at://did:plc:bluebird/app.bsky.feed.post/1', 7002, 'tess.bsky.social', NULL,
     '2026-03-04 10:00Z', 'marmalade bsword');
INSERT INTO chat_tags (chat_id, tag) VALUES (-100, 'jam'), (9101, 'jam');
INSERT INTO sync_jobs (class, channel, chat_id, status) VALUES
    ('telegram.sync', '-100', -100, 'error'), ('bluesky.refresh', 'default', NULL, 'error');

CREATE FUNCTION pg_temp.chats_of(r jsonb, key text, id text) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(DISTINCT e ->> id, ',' ORDER BY e ->> id), '')
    FROM jsonb_array_elements(r -> key) AS e
$$;

-- The chats a source's search keeps to.
SELECT pg_temp.expect('telegram chats', parley_source_chats('telegram'), '{-100,7001}'::bigint[]);
SELECT pg_temp.expect('chatwise chats', parley_source_chats('chatwise'), '{9101}'::bigint[]);
SELECT pg_temp.expect('a source without chats keeps to none', parley_source_chats('memory'),
                      '{}'::bigint[]);

SELECT pg_temp.expect('the others of telegram', parley_source_others('telegram'),
                      '{9101,9102,9103}'::bigint[]);
SELECT pg_temp.expect('the others of bluesky', parley_source_others('bluesky'),
                      '{-100,7001,9101,9102}'::bigint[]);

-- parley_search: every chat without a source; the source's chats with one,
-- and of the chats asked for, only those. Run twice: with fewer chats of
-- the source than of the others (it keeps to its own) and with more (it
-- keeps the others out).
CREATE FUNCTION pg_temp.search_checks() RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
PERFORM pg_temp.expect('search: every source without p_source',
    pg_temp.chats_of(parley_search('marmalade', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL,
                                   'time', 50, 0), 'results', 'chat_id'),
    '-100,7001,9101,9102,9103');
PERFORM pg_temp.expect('search: telegram',
    pg_temp.chats_of(parley_search('marmalade', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL,
                                   'rank', 50, 0, 'telegram'), 'results', 'chat_id'),
    '-100,7001');
PERFORM pg_temp.expect('search: telegram, fuzzy',
    pg_temp.chats_of(parley_search('marmelade', NULL, true, NULL, NULL, NULL, NULL, NULL, NULL,
                                   'time', 50, 0, 'telegram'), 'results', 'chat_id'),
    '-100,7001');
PERFORM pg_temp.expect('search: telegram, no query (filter)',
    pg_temp.chats_of(parley_search(NULL, NULL, false, NULL, NULL, NULL, NULL, NULL, NULL,
                                   'time', 50, 0, 'telegram'), 'results', 'chat_id'),
    '-100,7001');
PERFORM pg_temp.expect('search: telegram, count',
    parley_search('marmalade', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, 'time', 50, 0,
                  'telegram') ->> 'count', '2');
PERFORM pg_temp.expect('search: chats asked for of another source find nothing',
    pg_temp.chats_of(parley_search('marmalade', NULL, false, '{9101,-100}', NULL, NULL, NULL,
                                   NULL, NULL, 'time', 50, 0, 'telegram'), 'results', 'chat_id'),
    '-100');
PERFORM pg_temp.expect('search: chatwise',
    pg_temp.chats_of(parley_search('marmalade', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL,
                                   'time', 50, 0, 'chatwise'), 'results', 'chat_id'), '9101');
PERFORM pg_temp.expect('messagesList without a chat',
    pg_temp.chats_of(parley_tg_messages_list('{}', '{}'), 'messages', 'channelId'), '-100,7001');
END
$f$;
SELECT pg_temp.search_checks();
INSERT INTO chats (id, kind, title) SELECT -200 - g, 'channel', 'empty ' || g FROM generate_series(1, 5) g;
SELECT pg_temp.search_checks();
DELETE FROM chats WHERE id < -200;

-- telegram: lists, search, history, figures, contacts, tags and jobs.
SELECT pg_temp.expect('channelsList',
    pg_temp.chats_of(parley_tg_channels_list('{"includeInactive": true}', '{}'), 'channels',
                     'channelId'), '-100,7001');
SELECT pg_temp.expect('messagesSearch',
    pg_temp.chats_of(parley_tg_messages_search('{"query": "marmalade"}', '{}'), 'messages',
                     'channelId'), '-100,7001');
SELECT pg_temp.expect('messagesSearch by tag',
    pg_temp.chats_of(parley_tg_messages_search('{"query": "marmalade", "tags": ["jam"]}', '{}'),
                     'messages', 'channelId'), '-100');
SELECT pg_temp.expect('messagesList without a chat',
    pg_temp.chats_of(parley_tg_messages_list('{}', '{}'), 'messages', 'channelId'), '-100,7001');
SELECT pg_temp.expect('channelsTagsSearch',
    pg_temp.chats_of(parley_tg_channels_tags_search('{"tag": "jam"}', '{}'), 'channels',
                     'channelId'), '-100');
SELECT pg_temp.expect('serverStatus counts Telegram only',
    parley_tg_server_status('{}', '{}') - 'daemon' - 'lastSyncAt' - 'realtimeActive' - 'ftsEnabled',
    '{"chats": 2, "messages": 2, "queueSize": 0, "jobsInProgress": 0, "stagedBatches": 0}'::jsonb);
SELECT pg_temp.expect('syncJobsList: Telegram jobs only',
    pg_temp.chats_of(parley_tg_sync_jobs_list('{}', '{}'), 'jobs', 'channelId'), '-100');
SELECT pg_temp.expect('syncJobsRetry allErrors leaves other jobs',
    parley_tg_sync_jobs_retry('{"allErrors": true}', '{}') ->> 'updated', '1');
SELECT pg_temp.expect('the Bluesky job kept its state',
    (SELECT status FROM sync_jobs WHERE class = 'bluesky.refresh'), 'error');
SELECT pg_temp.expect('contactsSearch: Telegram people only',
    pg_temp.chats_of(parley_tg_contacts_search('{"query": "Tess"}', '{}'), 'contacts', 'userId'),
    '7001');
SELECT pg_temp.expect_error('contactsGet: a Bluesky author is unknown',
    $$SELECT parley_tg_contacts_get('{"userId": 7002}', '{}')$$, 'PT400', 'no user 7002');
SELECT pg_temp.expect_error('channelsGet: an AI-assistant chat',
    $$SELECT parley_tg_channels_get('{"channelId": 9101}', '{}')$$, 'PT400',
    'channelId: chat 9101 is an AI-assistant chat \(ChatWise\).*use the chatwise tools');
SELECT pg_temp.expect_error('messagesList: an agent session',
    $$SELECT parley_tg_messages_list('{"channelId": "9102"}', '{}')$$, 'PT400',
    'chat "9102" is an agent session.*use the memory tools');
SELECT pg_temp.expect_error('messagesSearch: a Bluesky feed among the chats',
    $$SELECT parley_tg_messages_search('{"query": "marmalade", "channelIds": [-100, 9103]}', '{}')$$,
    'PT400', 'chat 9103 is a Bluesky feed.*use the bluesky tools');
SELECT pg_temp.expect_error('a feed by its username',
    $$SELECT parley_tg_groups_info('{"channelId": "@tess_bsky"}', '{}')$$, 'PT400',
    'is a Bluesky feed');
SELECT pg_temp.expect_error('tags are not set on another source''s chat',
    $$SELECT parley_tg_channels_tags_set('{"channelId": 9101, "tags": ["x"]}', '{}')$$, 'PT400',
    'AI-assistant chat');

-- inline: conversations, unread, search, people, resources.
SELECT pg_temp.expect('conversations_list',
    pg_temp.chats_of(parley_inline_conversations_list('{}', '{}'), 'items', 'chatId'),
    '-100,7001');
SELECT pg_temp.expect('conversations_list by a title of another source',
    pg_temp.chats_of(parley_inline_conversations_list('{"query": "planted"}', '{}'), 'items',
                     'chatId'), '-100');
SELECT pg_temp.expect('messages_unread: Telegram messages only',
    pg_temp.chats_of(parley_inline_messages_unread('{}', '{}'), 'items', 'chatId'), '-100,7001');
SELECT pg_temp.expect('messages_unread: the chats scanned',
    parley_inline_messages_unread('{}', '{}') ->> 'scannedChats', '2');
SELECT pg_temp.expect('people_search: Telegram people only',
    pg_temp.chats_of(parley_inline_people_search('{"query": "tess"}', '{}'), 'items', 'userId'),
    '7001');
SELECT pg_temp.expect_error('messages_search in an AI-assistant chat',
    $$SELECT parley_inline_messages_search('{"chatId": 9101, "query": "marmalade"}', '{}')$$,
    'PT400', 'chatId: chat 9101 is an AI-assistant chat.*Find Telegram chats with conversations_list');
SELECT pg_temp.expect('a resource of another source is no resource',
    parley_inline_resource('{"uri": "inline://chat/9102", "vars": {"chatId": "9102"}}', '{}'),
    'null'::jsonb);
SELECT pg_temp.expect('a message resource of another source is none',
    parley_inline_resource('{"uri": "inline://chat/9101/message/1", '
                           '"vars": {"chatId": "9101", "messageId": "1"}}', '{}'), 'null'::jsonb);
SELECT pg_temp.expect('a Telegram resource is one',
    parley_inline_resource('{"uri": "inline://chat/-100", "vars": {"chatId": "-100"}}', '{}')
        IS DISTINCT FROM 'null'::jsonb, true);

-- The other surfaces read their own kind.
SELECT pg_temp.expect('memory: agent sessions only',
    (SELECT string_agg(DISTINCT (x.m).chat_id::text, ',') FROM parley_memory_messages() x), '9102');
SELECT pg_temp.expect('memory search',
    (SELECT string_agg(e ->> 'session_id', ',')
     FROM jsonb_array_elements(parley_memory_search_messages('{"query": "marmalade"}', '{}')
                               -> 'messages') e), 'ag-session-1');
SELECT pg_temp.expect('chatwise chats',
    (SELECT string_agg(id::text, ',') FROM parley_cw_chats()), '9101');
SELECT pg_temp.expect('bluesky archive',
    (SELECT string_agg(e ->> 'text', ',')
     FROM jsonb_array_elements(parley_bsky_archive_search('marmalade', 10)) e), 'marmalade bsword');

-- A store of one source: nothing to keep out.
DELETE FROM chats WHERE NOT kind = ANY (parley_source_kinds('telegram'));
SELECT pg_temp.expect('a store of Telegram only', parley_source_chats('telegram'), NULL::bigint[]);
SELECT pg_temp.expect('search: a store of Telegram only',
    pg_temp.chats_of(parley_search('marmalade', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL,
                                   'time', 50, 0, 'telegram'), 'results', 'chat_id'),
    '-100,7001');
