-- telegram_tools: the telegram toolset's SQL functions (src/db/sql/telegram/)
-- on fixed data, as the toolset calls them: parley_tg_<tool>(args, ctx).
-- Answers, limits, the caller's mistakes (PT400) and what needs a connector
-- (PT501).

INSERT INTO chats (id, kind, title, username, last_message_date, about) VALUES
    (-100, 'supergroup', 'Ops', 'ops_team', '2026-01-03', 'operations'),
    (-200, 'forum', 'Forum', NULL, '2026-01-05', NULL),
    (42, 'private', 'Alice', 'alice', '2026-01-01', NULL);
UPDATE chats SET active = false WHERE id = 42;
INSERT INTO users (id, first_name, last_name, username, phone) VALUES
    (7, 'Alice', 'Smith', 'alice', '+1 555 0100'), (8, 'Boris', 'Ivanov', 'boris', NULL);
INSERT INTO topics (chat_id, id, title, created_date) VALUES
    (-200, 1, 'General', '2026-01-01'), (-200, 2, 'Releases', '2026-01-02');
INSERT INTO messages (chat_id, id, topic_id, sender_id, sender_name, date, text) VALUES
    (-100, 1, NULL, 7, 'Alice', '2026-01-01 10:00Z', 'first'),
    (-100, 2, NULL, 8, 'Boris', '2026-01-02 10:00Z', 'second'),
    (-100, 3, NULL, 7, 'Alice', '2026-01-03 10:00Z', 'third'),
    (-200, 1, 2, 8, 'Boris', '2026-01-05 10:00Z', 'release notes');
INSERT INTO chat_members (chat_id, user_id, status) VALUES (-100, 7, 'administrator'), (-100, 8, 'member');

CREATE FUNCTION pg_temp.ids(r jsonb, key text, id text) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(e ->> id, ',' ORDER BY o), '')
    FROM jsonb_array_elements(r -> key) WITH ORDINALITY AS x(e, o)
$$;

-- channels: active ones by recent activity; limits capped and said.
SELECT pg_temp.expect('channelsList', pg_temp.ids(parley_tg_channels_list('{}', '{}'), 'channels', 'channelId'), '-200,-100');
SELECT pg_temp.expect('channelsList inactive',
    pg_temp.ids(parley_tg_channels_list('{"includeInactive": true}', '{}'), 'channels', 'channelId'), '-200,-100,42');
SELECT pg_temp.expect('limit capped', parley_tg_channels_list('{"limit": 9999}', '{}') ->> 'limitCapped', 'true');
SELECT pg_temp.expect('limit applied', parley_tg_channels_list('{"limit": 9999}', '{}') ->> 'limit', '500');
SELECT pg_temp.expect('channelsGet by @username',
    parley_tg_channels_get('{"channelId": "@ops_team"}', '{}') ->> 'messageCount', '3');
SELECT pg_temp.expect('channelsMetadataGet',
    parley_tg_channels_metadata_get('{"channelId": -100}', '{}'),
    '{"channelId": -100, "peerTitle": "Ops", "username": "@ops_team", "about": "operations"}'::jsonb);
SELECT pg_temp.expect_error('unknown chat', $$SELECT parley_tg_channels_get('{"channelId": 5}', '{}')$$,
                            'PT400', 'channelId: no chat 5 in the archive');

-- tags: set (lower case, deduplicated), list, search.
SELECT pg_temp.expect('channelsTagsSet',
    parley_tg_channels_tags_set('{"channelId": -100, "tags": ["Work", "work", " infra "]}', '{}') -> 'tags',
    '["infra", "work"]'::jsonb);
SELECT pg_temp.expect('channelsTagsList',
    pg_temp.ids(parley_tg_channels_tags_list('{"channelId": -100}', '{}'), 'tags', 'tag'), 'infra,work');
SELECT pg_temp.expect('channelsTagsSearch',
    pg_temp.ids(parley_tg_channels_tags_search('{"tag": "WORK"}', '{}'), 'channels', 'channelId'), '-100');

-- topics: listed by activity; searched by title.
SELECT pg_temp.expect('topicsList',
    pg_temp.ids(parley_tg_topics_list('{"channelId": -200}', '{}'), 'topics', 'topicId'), '2,1');
SELECT pg_temp.expect('topicsSearch',
    pg_temp.ids(parley_tg_topics_search('{"channelId": -200, "query": "releas"}', '{}'), 'topics', 'topicId'), '2');

-- messages: list (newest first, by date range), get, context, search.
SELECT pg_temp.expect('messagesList',
    pg_temp.ids(parley_tg_messages_list('{"channelId": -100}', '{}'), 'messages', 'messageId'), '3,2,1');
SELECT pg_temp.expect('messagesList dates',
    pg_temp.ids(parley_tg_messages_list('{"channelId": -100, "fromDate": "2026-01-02", "toDate": "2026-01-02T23:00:00Z"}', '{}'),
                'messages', 'messageId'), '2');
SELECT pg_temp.expect('messagesList date words (yesterday, whole)',
    pg_temp.ids(parley_tg_messages_list('{"channelId": -100, "fromDate": "yesterday", "toDate": "yesterday"}',
                                        '{"now": "2026-01-03T12:00:00Z", "timezone": "UTC"}'),
                'messages', 'messageId'), '2');
SELECT pg_temp.expect('messagesSearch date words',
    jsonb_array_length(parley_tg_messages_search('{"channelIds": [-100], "fromDate": "yesterday", "toDate": "yesterday"}',
                                                 '{"now": "2026-01-03T12:00:00Z"}') -> 'messages'), 1);
SELECT pg_temp.expect_error('bad date', $$SELECT parley_tg_messages_list('{"fromDate": "soon"}', '{}')$$,
                            'PT400', 'fromDate: "soon" is not a time; use now, today, yesterday');
SELECT pg_temp.expect('messagesGet',
    parley_tg_messages_get('{"channelId": -100, "messageId": 2}', '{}') #>> '{message,text}', 'second');
SELECT pg_temp.expect_error('missing message',
    $$SELECT parley_tg_messages_get('{"channelId": -100, "messageId": 99}', '{}')$$, 'PT400', 'no message 99');
SELECT pg_temp.expect('messagesContext',
    (SELECT pg_temp.ids(r, 'before', 'messageId') || '|' || (r #>> '{target,messageId}') || '|' || pg_temp.ids(r, 'after', 'messageId')
     FROM parley_tg_messages_context('{"channelId": -100, "messageId": 2, "before": 5, "after": 5}', '{}') r),
    '1|2|3');
SELECT pg_temp.expect('messagesSearch',
    pg_temp.ids(parley_tg_messages_search('{"query": "release"}', '{}'), 'messages', 'messageId'), '1');
SELECT pg_temp.expect_error('live source needs a connector',
    $$SELECT parley_tg_messages_list('{"source": "live"}', '{}')$$, 'PT501',
    'messagesList with source "live" needs a connected Telegram account');

-- contacts: fuzzy search, tags, alias, notes.
SELECT pg_temp.expect('contactsSearch', pg_temp.ids(parley_tg_contacts_search('{"query": "alise"}', '{}'), 'contacts', 'userId'), '7');
SELECT pg_temp.expect('contactsSearch by phone', pg_temp.ids(parley_tg_contacts_search('{"query": "5550100"}', '{}'), 'contacts', 'userId'), '7');
SELECT pg_temp.expect('contactsTagsAdd',
    parley_tg_contacts_tags_add('{"userId": "@boris", "tags": ["VIP", "team"]}', '{}') -> 'tags', '["team", "vip"]'::jsonb);
SELECT pg_temp.expect('contactsTagsRemove',
    parley_tg_contacts_tags_remove('{"userId": 8, "tags": ["Team"]}', '{}') -> 'tags', '["vip"]'::jsonb);
SELECT pg_temp.expect('contactsAliasSet', parley_tg_contacts_alias_set('{"userId": 8, "alias": "Bob"}', '{}') ->> 'alias', 'Bob');
SELECT pg_temp.expect('alias is searched', pg_temp.ids(parley_tg_contacts_search('{"query": "Bob"}', '{}'), 'contacts', 'userId'), '8');
SELECT pg_temp.expect('contactsAliasRemove', parley_tg_contacts_alias_remove('{"userId": 8}', '{}') ->> 'removed', 'true');
SELECT pg_temp.expect('contactsGet', parley_tg_contacts_get('{"userId": 7}', '{}') ->> 'messageCount', '2');
SELECT pg_temp.expect_error('unknown user', $$SELECT parley_tg_contacts_get('{"userId": "@nobody"}', '{}')$$,
                            'PT400', 'no user "@nobody"');

-- groups: list by title, info with members and active senders.
SELECT pg_temp.expect('groupsList', pg_temp.ids(parley_tg_groups_list('{"query": "op"}', '{}'), 'groups', 'channelId'), '-100');
SELECT pg_temp.expect('groupsInfo members',
    pg_temp.ids(parley_tg_groups_info('{"channelId": -100}', '{}'), 'members', 'userId'), '7,8');
SELECT pg_temp.expect('groupsInfo senders',
    pg_temp.ids(parley_tg_groups_info('{"channelId": -100}', '{}'), 'activeSenders', 'senderId'), '7,8');
SELECT pg_temp.expect_error('groupsRename needs a connector',
    $$SELECT parley_tg_groups_rename('{"channelId": -100, "name": "x"}', '{}')$$, 'PT501', 'groupsRename needs');

-- sync jobs: add (namespaced class), list, retry, cancel; status.
SELECT pg_temp.expect('syncJobsAdd',
    parley_tg_sync_jobs_add('{"channelId": -100, "depth": 10}', '{}') #>> '{job,status}', 'pending');
SELECT pg_temp.expect('job class', (SELECT class FROM sync_jobs), 'telegram.sync');
SELECT pg_temp.expect('a job names its chat by the integer id',
    parley_tg_sync_jobs_add('{"channelId": "-100", "depth": 10}', '{}') #> '{job,channelId}', '-100'::jsonb);
SELECT pg_temp.expect('syncJobsList', jsonb_array_length(parley_tg_sync_jobs_list('{"status": "pending"}', '{}') -> 'jobs'), 1);
SELECT pg_temp.expect('syncJobsCancel', parley_tg_sync_jobs_cancel('{"channelId": -100}', '{}') ->> 'canceled', '1');
SELECT pg_temp.expect('syncJobsRetry', parley_tg_sync_jobs_retry('{"channelId": -100}', '{}') ->> 'updated', '1');
SELECT pg_temp.expect_error('syncJobsRetry needs a target', $$SELECT parley_tg_sync_jobs_retry('{}', '{}')$$,
                            'PT400', 'give jobId, channelId, or allErrors');
SELECT pg_temp.expect('serverStatus',
    (SELECT r ->> 'queueSize' || '|' || (r ->> 'messages') || '|' || (r #>> '{daemon,sessions}')
            || '|' || (r ->> 'upstream') || '|' || (r ->> 'stagedBatches')
     FROM parley_tg_server_status('{}', '{"daemon": {"sessions": 3}, "realtimeActive": false,
                                           "upstream": "standby"}') r),
    '1|4|3|standby|0');
SELECT pg_temp.expect('authStatus', parley_tg_auth_status('{}', '{}') ->> 'authenticated', 'false');

-- resolveChannel (internal, for the connector's tools).
SELECT pg_temp.expect('resolveChannel',
    parley_tg_resolve_channel('{"channelId": "@ops_team", "userIds": ["@alice", 8]}', '{}'),
    '{"channelId": -100, "userIds": [7, 8]}'::jsonb);
