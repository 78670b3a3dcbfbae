-- 005_telegram_tools: the archive side of the telegram toolset
-- (src/toolsets/telegram.c). Every tool is one call of
-- parley_tg_tool(tool, args, ctx): args are the tool's validated arguments,
-- ctx what only the daemon knows (its queue, its connector); the answer is
-- the tool's JSON result, built here. A mistake of the caller (an unknown
-- chat, a bad date) raises SQLSTATE PT400 with a message for the model;
-- a tool that needs the upstream connector raises PT501 saying what to use
-- instead.

-- ---- argument helpers -------------------------------------------------------

CREATE FUNCTION parley_tg_bad(msg text) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = msg;
END
$$;

-- A chat by numeric id or @username; NULL when the argument is absent.
CREATE FUNCTION parley_tg_chat(args jsonb, key text) RETURNS bigint
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    v jsonb := args -> key;
    s text;
    id bigint;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    s := btrim(v #>> '{}');
    IF s ~ '^-?[0-9]+$' THEN
        SELECT c.id INTO id FROM chats c WHERE c.id = s::bigint;
    ELSIF s ~ '^@?[A-Za-z0-9_]{3,}$' THEN
        SELECT c.id INTO id FROM chats c WHERE lower(c.username) = lower(ltrim(s, '@'))
        ORDER BY c.active DESC, c.id LIMIT 1;
    END IF;
    IF id IS NULL THEN
        PERFORM parley_tg_bad(format('%s: no chat %s in the archive; find chats with channelsList '
                                     '(or channelsSearch once a Telegram account is connected)',
                                     key, v::text));
    END IF;
    RETURN id;
END
$$;

CREATE FUNCTION parley_tg_user(args jsonb, key text) RETURNS bigint
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    v jsonb := args -> key;
    s text;
    id bigint;
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    s := btrim(v #>> '{}');
    IF s ~ '^-?[0-9]+$' THEN
        SELECT u.id INTO id FROM users u WHERE u.id = s::bigint;
    ELSIF s ~ '^@?[A-Za-z0-9_]{3,}$' THEN
        SELECT u.id INTO id FROM users u WHERE lower(u.username) = lower(ltrim(s, '@'))
        ORDER BY u.id LIMIT 1;
    END IF;
    IF id IS NULL THEN
        PERFORM parley_tg_bad(format('%s: no user %s in the archive; find people with '
                                     'contactsSearch', key, v::text));
    END IF;
    RETURN id;
END
$$;

-- An ISO-8601 time argument; NULL when absent.
CREATE FUNCTION parley_tg_time(args jsonb, key text) RETURNS timestamptz
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    s text := args ->> key;
BEGIN
    IF s IS NULL THEN
        RETURN NULL;
    END IF;
    IF s !~ '^\d{4}-\d\d-\d\d([T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d(:?\d\d)?)?)?$' THEN
        PERFORM parley_tg_bad(format('%s: %s is not an ISO-8601 date or time (e.g. 2026-01-31 '
                                     'or 2026-01-31T18:00:00Z)', key, to_jsonb(s)::text));
    END IF;
    RETURN s::timestamptz;
EXCEPTION WHEN datetime_field_overflow OR invalid_datetime_format THEN
    PERFORM parley_tg_bad(format('%s: %s is not a valid date', key, to_jsonb(s)::text));
    RETURN NULL;
END
$$;

-- limit with its default and cap; the applied value and whether it was
-- capped go into the answer.
CREATE FUNCTION parley_tg_limit(args jsonb, dflt integer, cap integer) RETURNS integer
    LANGUAGE sql IMMUTABLE AS $$
    SELECT least(greatest(coalesce((args ->> 'limit')::integer, dflt), 1), cap)
$$;

CREATE FUNCTION parley_tg_page(args jsonb, dflt integer, cap integer) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('limit', parley_tg_limit(args, dflt, cap),
                              'limitCapped', coalesce((args ->> 'limit')::integer, dflt) > cap)
$$;

-- ---- records ---------------------------------------------------------------

CREATE FUNCTION parley_tg_chat_json(c chats) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'channelId', c.id, 'title', c.title, 'type', c.kind,
        'username', CASE WHEN c.username IS NOT NULL THEN '@' || c.username END,
        'about', c.about, 'memberCount', c.member_count, 'syncEnabled', c.sync_enabled,
        'active', c.active, 'lastMessageId', c.last_message_id,
        'lastMessageDate', c.last_message_date, 'unreadCount', c.unread_count,
        'metadataUpdatedAt', c.metadata_updated_at,
        'tags', (SELECT jsonb_agg(DISTINCT t.tag) FROM chat_tags t WHERE t.chat_id = c.id)))
$$;

CREATE FUNCTION parley_tg_message_json(m messages) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'channelId', m.chat_id, 'messageId', m.id, 'topicId', m.topic_id, 'date', m.date,
        'editDate', m.edit_date, 'senderId', m.sender_id, 'senderName', m.sender_name,
        'text', m.text, 'entities', m.entities, 'replyToMessageId', m.reply_to_id,
        'replyToChannelId', m.reply_to_chat_id, 'forwardFromName', m.forward_from_name,
        'mediaKind', m.media_kind, 'hasLink', m.has_link, 'kind', m.kind,
        'action', m.action, 'extra', m.extra))
$$;

CREATE FUNCTION parley_tg_user_json(u users) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'userId', u.id, 'firstName', u.first_name, 'lastName', u.last_name,
        'username', CASE WHEN u.username IS NOT NULL THEN '@' || u.username END,
        'phone', u.phone, 'about', u.about, 'isBot', u.is_bot, 'isContact', u.is_contact,
        'alias', u.alias, 'notes', u.notes, 'tags', to_jsonb(u.tags),
        'isSelf', (u.extra ->> 'is_self')::boolean))
$$;

CREATE FUNCTION parley_tg_job_json(j sync_jobs) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'jobId', j.id, 'channelId', coalesce(j.chat_id::text, j.channel), 'status', j.status,
        'depth', j.depth, 'minDate', j.min_date, 'realtime', j.realtime, 'fetched', j.fetched,
        'attempts', j.attempts, 'error', j.error, 'lastRunAt', j.last_run_at,
        'createdAt', j.created_at, 'updatedAt', j.updated_at))
$$;

-- ---- the tools -----------------------------------------------------------------

CREATE FUNCTION parley_tg_needs_connector(tool text, instead text) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'PT501', MESSAGE = format(
        '%s needs a connected Telegram account, and none is configured; %s', tool, instead);
END
$$;

CREATE FUNCTION parley_tg_tool(tool text, args jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    a jsonb := coalesce(args, '{}');
    chat bigint;
    uid bigint;
    lim integer;
    res jsonb;
    -- source (archive|live|both) of the message tools; the tag tools' own
    -- "source" (manual|auto) is another thing.
    live boolean := tool IN ('messagesList', 'messagesGet', 'messagesContext', 'messagesSearch')
                    AND coalesce(a ->> 'source', 'archive') <> 'archive';
BEGIN
    IF live THEN
        RETURN parley_tg_needs_connector(tool || ' with source "' || (a ->> 'source') || '"',
            'use source "archive" to read what is stored');
    END IF;
    CASE tool
    -- internal: the chat a channelId names (for tools the connector runs)
    WHEN 'resolveChannel' THEN
        RETURN jsonb_build_object('channelId', parley_tg_chat(a, 'channelId'),
                                  'userIds', (SELECT jsonb_agg(parley_tg_user(
                                                  jsonb_build_object('userIds', e), 'userIds'))
                                              FROM jsonb_array_elements(a -> 'userIds') AS e));
    -- auth / health
    WHEN 'authStatus' THEN
        RETURN (SELECT coalesce(
            (SELECT jsonb_strip_nulls(jsonb_build_object('authenticated', true,
                        'userId', ac.external_id, 'lastLoginAt', ac.last_login_at))
             FROM accounts ac WHERE ac.kind IN ('telegram_bot', 'telegram_user') AND ac.enabled
             ORDER BY ac.is_default DESC, ac.id LIMIT 1),
            jsonb_build_object('authenticated', false, 'reason',
                'no Telegram account is connected; the archive (imports) is available')));
    WHEN 'serverStatus' THEN
        RETURN jsonb_strip_nulls(jsonb_build_object(
            'realtimeActive', coalesce((ctx ->> 'realtimeActive')::boolean, false),
            'queueSize', (SELECT count(*) FROM sync_jobs WHERE status = 'pending'),
            'jobsInProgress', (SELECT count(*) FROM sync_jobs WHERE status = 'in_progress'),
            'ftsEnabled', true,
            'lastSyncAt', (SELECT max(last_run_at) FROM sync_jobs),
            'chats', (SELECT count(*) FROM chats),
            'messages', (SELECT count(*) FROM messages),
            'daemon', ctx -> 'daemon'));
    -- sync jobs
    WHEN 'syncJobsList' THEN
        lim := parley_tg_limit(a, 50, 500);
        chat := parley_tg_chat(a, 'channelId');
        RETURN parley_tg_page(a, 50, 500) || jsonb_build_object('jobs', coalesce((
            SELECT jsonb_agg(parley_tg_job_json(j) ORDER BY j.id) FROM (
                SELECT * FROM sync_jobs j
                WHERE (a ->> 'status' IS NULL OR j.status = a ->> 'status')
                  AND (chat IS NULL OR j.chat_id = chat)
                ORDER BY j.id LIMIT lim) j), '[]'));
    WHEN 'syncJobsAdd' THEN
        chat := parley_tg_chat(a, 'channelId');
        INSERT INTO sync_jobs AS j (class, channel, chat_id, depth, min_date, realtime)
        VALUES ('sync', a ->> 'channelId', chat, coalesce((a ->> 'depth')::integer, 1000),
                parley_tg_time(a, 'minDate'), coalesce((a ->> 'enableRealtime')::boolean, true))
        ON CONFLICT (account_id, class, channel) DO UPDATE
            SET depth = EXCLUDED.depth, min_date = EXCLUDED.min_date,
                realtime = EXCLUDED.realtime, status = 'pending', error = NULL,
                next_attempt_at = now(), updated_at = now()
        RETURNING parley_tg_job_json(j) INTO res;
        RETURN jsonb_build_object('job', res);
    WHEN 'syncJobsRetry' THEN
        chat := parley_tg_chat(a, 'channelId');
        IF a ->> 'jobId' IS NULL AND chat IS NULL AND NOT coalesce((a ->> 'allErrors')::boolean, false) THEN
            PERFORM parley_tg_bad('give jobId, channelId, or allErrors: true');
        END IF;
        WITH u AS (
            UPDATE sync_jobs SET status = 'pending', error = NULL, next_attempt_at = now(),
                                 updated_at = now()
            WHERE (a ->> 'jobId' IS NULL OR id = (a ->> 'jobId')::bigint)
              AND (chat IS NULL OR chat_id = chat)
              AND (NOT coalesce((a ->> 'allErrors')::boolean, false) OR status = 'error')
              AND status <> 'in_progress'
            RETURNING id)
        SELECT jsonb_build_object('updated', count(*), 'jobIds', coalesce(jsonb_agg(id ORDER BY id), '[]'))
        INTO res FROM u;
        RETURN res;
    WHEN 'syncJobsCancel' THEN
        chat := parley_tg_chat(a, 'channelId');
        IF a ->> 'jobId' IS NULL AND chat IS NULL THEN
            PERFORM parley_tg_bad('give jobId or channelId');
        END IF;
        WITH d AS (
            UPDATE sync_jobs SET status = 'idle', realtime = false, updated_at = now(),
                                 error = 'canceled'
            WHERE (a ->> 'jobId' IS NULL OR id = (a ->> 'jobId')::bigint)
              AND (chat IS NULL OR chat_id = chat) AND status <> 'idle'
            RETURNING id)
        SELECT jsonb_build_object('canceled', count(*), 'jobIds', coalesce(jsonb_agg(id ORDER BY id), '[]'))
        INTO res FROM d;
        RETURN res;
    WHEN 'syncRealtimeSet' THEN
        RETURN parley_tg_needs_connector('syncRealtimeSet',
            'the archive is served from imports; import newer exports to update it');
    -- channels
    WHEN 'channelsList' THEN
        lim := parley_tg_limit(a, 50, 500);
        RETURN parley_tg_page(a, 50, 500) || jsonb_build_object('channels', coalesce((
            SELECT jsonb_agg(parley_tg_chat_json(c) ORDER BY c.last_message_date DESC NULLS LAST, c.id)
            FROM (SELECT * FROM chats c
                  WHERE coalesce((a ->> 'includeInactive')::boolean, false) OR c.active
                  ORDER BY c.last_message_date DESC NULLS LAST, c.id LIMIT lim) c), '[]'));
    WHEN 'channelsSearch' THEN
        RETURN parley_tg_needs_connector('channelsSearch',
            'channelsList lists the chats in the archive, groupsList filters them by title');
    WHEN 'channelsGet', 'channelsMetadataGet' THEN
        chat := parley_tg_chat(a, 'channelId');
        IF tool = 'channelsMetadataGet' THEN
            RETURN (SELECT jsonb_strip_nulls(jsonb_build_object('channelId', c.id,
                        'peerTitle', c.title,
                        'username', CASE WHEN c.username IS NOT NULL THEN '@' || c.username END,
                        'about', c.about, 'metadataUpdatedAt', c.metadata_updated_at))
                    FROM chats c WHERE c.id = chat);
        END IF;
        RETURN (SELECT parley_tg_chat_json(c) || jsonb_build_object(
                    'messageCount', (SELECT count(*) FROM messages m WHERE m.chat_id = c.id),
                    'firstMessageDate', (SELECT min(date) FROM messages m WHERE m.chat_id = c.id),
                    'syncJobs', coalesce((SELECT jsonb_agg(parley_tg_job_json(j))
                                          FROM sync_jobs j WHERE j.chat_id = c.id), '[]'))
                FROM chats c WHERE c.id = chat);
    WHEN 'channelsSetSync' THEN
        chat := parley_tg_chat(a, 'channelId');
        UPDATE chats SET sync_enabled = (a ->> 'enabled')::boolean, updated_at = now()
        WHERE id = chat;
        RETURN jsonb_build_object('channelId', chat, 'syncEnabled', (a ->> 'enabled')::boolean);
    WHEN 'channelsMetadataRefresh' THEN
        RETURN parley_tg_needs_connector('channelsMetadataRefresh',
            'channelsMetadataGet returns the metadata stored in the archive');
    WHEN 'channelsTagsSet' THEN
        chat := parley_tg_chat(a, 'channelId');
        DELETE FROM chat_tags WHERE chat_id = chat AND source = coalesce(a ->> 'source', 'manual');
        INSERT INTO chat_tags (chat_id, tag, source)
        SELECT DISTINCT chat, lower(btrim(t)), coalesce(a ->> 'source', 'manual')
        FROM jsonb_array_elements_text(a -> 'tags') AS t WHERE btrim(t) <> '';
        RETURN jsonb_build_object('channelId', chat, 'tags', coalesce((
            SELECT jsonb_agg(tag ORDER BY tag) FROM chat_tags
            WHERE chat_id = chat AND source = coalesce(a ->> 'source', 'manual')), '[]'));
    WHEN 'channelsTagsList' THEN
        chat := parley_tg_chat(a, 'channelId');
        RETURN jsonb_build_object('channelId', chat, 'tags', coalesce((
            SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object('tag', t.tag, 'source', t.source,
                                                                  'confidence', t.confidence))
                             ORDER BY t.source, t.confidence DESC NULLS FIRST, t.tag)
            FROM chat_tags t
            WHERE t.chat_id = chat AND (a ->> 'source' IS NULL OR t.source = a ->> 'source')), '[]'));
    WHEN 'channelsTagsSearch' THEN
        lim := parley_tg_limit(a, 100, 500);
        RETURN parley_tg_page(a, 100, 500) || jsonb_build_object('tag', lower(a ->> 'tag'),
            'channels', coalesce((
            SELECT jsonb_agg(parley_tg_chat_json(c) || jsonb_build_object('confidence', x.confidence,
                                                                          'source', x.source)
                             ORDER BY x.confidence DESC NULLS FIRST, c.id)
            FROM (SELECT DISTINCT ON (t.chat_id) t.chat_id, t.confidence, t.source
                  FROM chat_tags t
                  WHERE t.tag = lower(a ->> 'tag')
                    AND (a ->> 'source' IS NULL OR t.source = a ->> 'source')
                  ORDER BY t.chat_id, t.confidence DESC NULLS FIRST LIMIT lim) x
            JOIN chats c ON c.id = x.chat_id), '[]'));
    WHEN 'channelsTagsAuto' THEN
        RETURN parley_tg_tags_auto(a);
    -- topics
    WHEN 'topicsList', 'topicsSearch' THEN
        chat := parley_tg_chat(a, 'channelId');
        lim := parley_tg_limit(a, 100, 500);
        RETURN parley_tg_page(a, 100, 500) || jsonb_build_object('channelId', chat, 'topics', coalesce((
            SELECT jsonb_agg(x.j ORDER BY x.last DESC NULLS LAST, x.id) FROM (
                SELECT t.id, coalesce(t.last_message_date, t.created_date) AS last,
                       jsonb_strip_nulls(jsonb_build_object('topicId', t.id, 'title', t.title,
                           'closed', t.closed, 'createdDate', t.created_date,
                           'creatorId', t.creator_id,
                           'messageCount', (SELECT count(*) FROM messages m
                                            WHERE m.chat_id = t.chat_id AND m.topic_id = t.id),
                           'lastMessageDate', (SELECT max(date) FROM messages m
                                               WHERE m.chat_id = t.chat_id AND m.topic_id = t.id))) AS j
                FROM topics t
                WHERE t.chat_id = chat
                  AND (tool = 'topicsList' OR t.title ILIKE '%' || (a ->> 'query') || '%'
                       OR t.title % (a ->> 'query'))
                ORDER BY coalesce(t.last_message_date, t.created_date) DESC NULLS LAST, t.id
                LIMIT lim) x), '[]'));
    -- messages
    WHEN 'messagesList' THEN
        chat := parley_tg_chat(a, 'channelId');
        lim := parley_tg_limit(a, 50, 500);
        RETURN parley_tg_page(a, 50, 500) || jsonb_build_object('messages', coalesce((
            SELECT jsonb_agg(parley_tg_message_json(m) ORDER BY m.date DESC, m.id DESC)
            FROM (SELECT * FROM messages m
                  WHERE (chat IS NULL OR m.chat_id = chat)
                    AND (a ->> 'topicId' IS NULL OR m.topic_id = (a ->> 'topicId')::bigint)
                    AND (a ->> 'fromDate' IS NULL OR m.date >= parley_tg_time(a, 'fromDate'))
                    AND (a ->> 'toDate' IS NULL OR m.date <= parley_tg_time(a, 'toDate'))
                  ORDER BY m.date DESC, m.id DESC LIMIT lim) m), '[]'));
    WHEN 'messagesGet' THEN
        chat := parley_tg_chat(a, 'channelId');
        res := (SELECT parley_tg_message_json(m) FROM messages m
                WHERE m.chat_id = chat AND m.id = (a ->> 'messageId')::bigint);
        IF res IS NULL THEN
            PERFORM parley_tg_bad(format('messageId: no message %s in chat %s; list messages '
                                         'with messagesList or find them with messagesSearch',
                                         a ->> 'messageId', chat));
        END IF;
        RETURN jsonb_build_object('message', res);
    WHEN 'messagesContext' THEN
        chat := parley_tg_chat(a, 'channelId');
        RETURN parley_tg_context(chat, (a ->> 'messageId')::bigint,
                                 least(greatest(coalesce((a ->> 'before')::integer, 20), 0), 200),
                                 least(greatest(coalesce((a ->> 'after')::integer, 20), 0), 200));
    WHEN 'messagesSearch' THEN
        RETURN parley_tg_messages_search(a);
    WHEN 'messagesSend', 'messagesSendFile' THEN
        RETURN parley_tg_needs_connector(tool, 'nothing can be sent from the archive alone');
    WHEN 'mediaDownload' THEN
        chat := parley_tg_chat(a, 'channelId');
        res := (SELECT jsonb_strip_nulls(jsonb_build_object('channelId', f.chat_id,
                    'messageId', f.message_id, 'state', f.state, 'localPath', f.local_path,
                    'mimeType', f.mime_type, 'fileName', f.file_name, 'bytes', f.file_size,
                    'sha256', f.sha256, 'exportPath', f.export_path, 'kind', f.kind))
                FROM media f WHERE f.chat_id = chat AND f.message_id = (a ->> 'messageId')::bigint
                ORDER BY f.ordinal LIMIT 1);
        IF res IS NULL THEN
            PERFORM parley_tg_bad(format('messageId: message %s of chat %s has no file',
                                         a ->> 'messageId', chat));
        END IF;
        RETURN res;
    -- contacts
    WHEN 'contactsSearch' THEN
        lim := parley_tg_limit(a, 50, 500);
        RETURN parley_tg_page(a, 50, 500) || jsonb_build_object('contacts', coalesce((
            SELECT jsonb_agg(parley_tg_user_json(u) ORDER BY x.score DESC, u.id) FROM (
                SELECT u.id, greatest(similarity(u.search_text, a ->> 'query'),
                                      word_similarity(a ->> 'query', u.search_text),
                                      CASE WHEN u.search_text ILIKE '%' || (a ->> 'query') || '%'
                                           THEN 1 ELSE 0 END,
                                      CASE WHEN u.phone IS NOT NULL AND
                                                regexp_replace(u.phone, '\D', '', 'g') LIKE
                                                '%' || nullif(regexp_replace(a ->> 'query', '\D', '', 'g'), '') || '%'
                                           THEN 1 ELSE 0 END) AS score
                FROM users u) x
            JOIN users u ON u.id = x.id
            WHERE x.score >= 0.3
            LIMIT lim), '[]'));
    WHEN 'contactsGet' THEN
        uid := parley_tg_user(a, 'userId');
        RETURN (SELECT parley_tg_user_json(u) || jsonb_build_object(
                    'messageCount', (SELECT count(*) FROM messages m WHERE m.sender_id = u.id),
                    'lastMessageDate', (SELECT max(date) FROM messages m WHERE m.sender_id = u.id),
                    'chats', coalesce((SELECT jsonb_agg(DISTINCT m.chat_id) FROM messages m
                                       WHERE m.sender_id = u.id), '[]'))
                FROM users u WHERE u.id = uid);
    WHEN 'contactsAliasSet' THEN
        uid := parley_tg_user(a, 'userId');
        UPDATE users SET alias = nullif(btrim(a ->> 'alias'), ''), updated_at = now() WHERE id = uid;
        RETURN jsonb_build_object('userId', uid, 'alias', nullif(btrim(a ->> 'alias'), ''));
    WHEN 'contactsAliasRemove' THEN
        uid := parley_tg_user(a, 'userId');
        UPDATE users SET alias = NULL, updated_at = now() WHERE id = uid;
        RETURN jsonb_build_object('userId', uid, 'removed', true);
    WHEN 'contactsTagsAdd', 'contactsTagsRemove' THEN
        uid := parley_tg_user(a, 'userId');
        UPDATE users u SET tags = CASE WHEN tool = 'contactsTagsAdd' THEN
                (SELECT coalesce(array_agg(DISTINCT t ORDER BY t), '{}') FROM (
                    SELECT unnest(u.tags) AS t
                    UNION SELECT lower(btrim(x)) FROM jsonb_array_elements_text(a -> 'tags') x
                    WHERE btrim(x) <> '') s)
            ELSE (SELECT coalesce(array_agg(t ORDER BY t), '{}') FROM unnest(u.tags) t
                  WHERE t NOT IN (SELECT lower(btrim(x)) FROM jsonb_array_elements_text(a -> 'tags') x))
            END, updated_at = now()
        WHERE u.id = uid;
        RETURN (SELECT jsonb_build_object('userId', u.id, 'tags', to_jsonb(u.tags))
                FROM users u WHERE u.id = uid);
    WHEN 'contactsNotesSet' THEN
        uid := parley_tg_user(a, 'userId');
        UPDATE users SET notes = nullif(a ->> 'notes', ''), updated_at = now() WHERE id = uid;
        RETURN jsonb_build_object('userId', uid, 'notes', nullif(a ->> 'notes', ''));
    -- groups
    WHEN 'groupsList' THEN
        lim := parley_tg_limit(a, 100, 500);
        RETURN parley_tg_page(a, 100, 500) || jsonb_build_object('groups', coalesce((
            SELECT jsonb_agg(parley_tg_chat_json(c) ORDER BY c.last_message_date DESC NULLS LAST, c.id)
            FROM (SELECT * FROM chats c
                  WHERE c.kind IN ('group', 'supergroup', 'forum', 'channel')
                    AND (a ->> 'query' IS NULL OR c.title ILIKE '%' || (a ->> 'query') || '%'
                         OR c.title % (a ->> 'query'))
                  ORDER BY c.last_message_date DESC NULLS LAST, c.id LIMIT lim) c), '[]'));
    WHEN 'groupsInfo' THEN
        chat := parley_tg_chat(a, 'channelId');
        RETURN (SELECT parley_tg_chat_json(c) || jsonb_build_object(
                    'messageCount', (SELECT count(*) FROM messages m WHERE m.chat_id = c.id),
                    'topicCount', (SELECT count(*) FROM topics t WHERE t.chat_id = c.id),
                    'members', coalesce((SELECT jsonb_agg(jsonb_build_object('userId', cm.user_id,
                                             'status', cm.status) ORDER BY cm.user_id)
                                         FROM chat_members cm WHERE cm.chat_id = c.id), '[]'),
                    'activeSenders', coalesce((
                        SELECT jsonb_agg(jsonb_build_object('senderId', s.sender_id, 'name', s.name,
                                                            'messages', s.n) ORDER BY s.n DESC)
                        FROM (SELECT m.sender_id, max(m.sender_name) AS name, count(*) AS n
                              FROM messages m WHERE m.chat_id = c.id AND m.sender_id IS NOT NULL
                              GROUP BY m.sender_id ORDER BY count(*) DESC LIMIT 20) s), '[]'))
                FROM chats c WHERE c.id = chat);
    WHEN 'groupsRename', 'groupsMembersAdd', 'groupsMembersRemove', 'groupsInviteLinkGet',
         'groupsInviteLinkRevoke', 'groupsJoin', 'groupsLeave' THEN
        RETURN parley_tg_needs_connector(tool,
            'groupsInfo and groupsList show what the archive holds about groups');
    ELSE
        PERFORM parley_tg_bad(format('unknown tool %s', tool));
        RETURN NULL;
    END CASE;
END
$$;

-- messagesContext: up to `before` messages before the target and `after`
-- after it, all in time order.
CREATE FUNCTION parley_tg_context(chat bigint, target bigint, nbefore integer, nafter integer)
    RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    t messages;
BEGIN
    SELECT * INTO t FROM messages WHERE chat_id = chat AND id = target;
    IF NOT FOUND THEN
        PERFORM parley_tg_bad(format('messageId: no message %s in chat %s; find messages with '
                                     'messagesSearch or messagesList', target, chat));
    END IF;
    RETURN jsonb_build_object(
        'before', coalesce((SELECT jsonb_agg(parley_tg_message_json(m) ORDER BY m.date, m.id)
                            FROM (SELECT * FROM messages m
                                  WHERE m.chat_id = chat AND (m.date, m.id) < (t.date, t.id)
                                  ORDER BY m.date DESC, m.id DESC LIMIT nbefore) m), '[]'),
        'target', parley_tg_message_json(t),
        'after', coalesce((SELECT jsonb_agg(parley_tg_message_json(m) ORDER BY m.date, m.id)
                           FROM (SELECT * FROM messages m
                                 WHERE m.chat_id = chat AND (m.date, m.id) > (t.date, t.id)
                                 ORDER BY m.date, m.id LIMIT nafter) m), '[]'));
END
$$;

-- messagesSearch over parley_search: channelIds and tags narrow the chats;
-- caseInsensitive false makes the regex case-sensitive.
CREATE FUNCTION parley_tg_messages_search(a jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    chats bigint[];
    lim integer := parley_tg_limit(a, 100, 500);
    rx text := a ->> 'regex';
    r jsonb;
BEGIN
    IF jsonb_typeof(a -> 'channelIds') = 'array' AND jsonb_array_length(a -> 'channelIds') > 0 THEN
        SELECT array_agg(parley_tg_chat(jsonb_build_object('channelIds', e), 'channelIds'))
        INTO chats FROM jsonb_array_elements(a -> 'channelIds') AS e;
    END IF;
    IF jsonb_typeof(a -> 'tags') = 'array' AND jsonb_array_length(a -> 'tags') > 0 THEN
        SELECT coalesce(array_agg(DISTINCT t.chat_id), '{}') INTO chats
        FROM chat_tags t
        WHERE t.tag IN (SELECT lower(x) FROM jsonb_array_elements_text(a -> 'tags') x)
          AND (chats IS NULL OR t.chat_id = ANY (chats));
    END IF;
    IF rx IS NOT NULL AND NOT coalesce((a ->> 'caseInsensitive')::boolean, true) THEN
        rx := '(?c)' || rx;
    END IF;
    BEGIN
        r := parley_search(a ->> 'query', rx, coalesce((a ->> 'fuzzy')::boolean, false), chats,
                           (a ->> 'topicId')::bigint, NULL, parley_tg_time(a, 'fromDate'),
                           parley_tg_time(a, 'toDate'), a ->> 'kind',
                           coalesce(a ->> 'orderBy', 'time'), lim, 0);
    EXCEPTION WHEN invalid_regular_expression THEN
        PERFORM parley_tg_bad(format('regex: %s is not a valid regular expression (%s)',
                                     to_jsonb(a ->> 'regex')::text, SQLERRM));
    END;
    RETURN parley_tg_page(a, 100, 500) || jsonb_build_object(
        'mode', r -> 'mode', 'total', r -> 'count',
        'messages', coalesce((SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
            'channelId', h -> 'chat_id', 'channelTitle', h -> 'chat_title',
            'messageId', h -> 'id', 'topicId', h -> 'topic_id', 'date', h -> 'date',
            'senderId', h -> 'sender_id', 'senderName', h -> 'sender_name', 'text', h -> 'text',
            'snippet', h -> 'snippet', 'rank', h -> 'rank', 'mediaKind', h -> 'media_kind',
            'hasLink', h -> 'has_link', 'match', r -> 'mode')) ORDER BY ord)
            FROM jsonb_array_elements(r -> 'results') WITH ORDINALITY AS x(h, ord)), '[]'));
END
$$;

-- channelsTagsAuto: a chat's most distinctive words against the whole
-- archive (ts_stat document frequencies: share of the chat's messages with
-- the word, divided by the share of all messages with it), words of three
-- letters or more that are not English or Russian stop words, at least
-- three occurrences; the top five become tags
-- with source "auto" and a confidence in 0..1 (the score over the best
-- score of the chat).
CREATE FUNCTION parley_tg_tags_auto(a jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    lim integer := parley_tg_limit(a, 50, 200);
    total bigint;
    ids bigint[];
    c bigint;
    out jsonb := '[]';
    chat_n bigint;
BEGIN
    SELECT count(*) INTO total FROM messages WHERE text IS NOT NULL;
    IF jsonb_typeof(a -> 'channelIds') = 'array' AND jsonb_array_length(a -> 'channelIds') > 0 THEN
        SELECT array_agg(parley_tg_chat(jsonb_build_object('channelIds', e), 'channelIds'))
        INTO ids FROM jsonb_array_elements(a -> 'channelIds') AS e;
    ELSE
        SELECT array_agg(id) INTO ids FROM (SELECT id FROM chats WHERE active
                                            ORDER BY last_message_date DESC NULLS LAST
                                            LIMIT lim) s;
    END IF;
    FOREACH c IN ARRAY coalesce(ids, '{}') LOOP
        SELECT count(*) INTO chat_n FROM messages WHERE chat_id = c AND text IS NOT NULL;
        CONTINUE WHEN chat_n = 0;
        DELETE FROM chat_tags WHERE chat_id = c AND source = 'auto';
        WITH g AS (SELECT word, ndoc FROM ts_stat('SELECT tsv FROM messages')),
             l AS (SELECT word, ndoc FROM ts_stat(format(
                       'SELECT tsv FROM messages WHERE chat_id = %s', c))),
             s AS (SELECT l.word, (l.ndoc::float8 / chat_n) / (g.ndoc::float8 / greatest(total, 1))
                              * ln(1 + l.ndoc) AS score
                   FROM l JOIN g USING (word)
                   WHERE length(l.word) >= 3 AND l.word !~ '^[0-9]+$' AND l.ndoc >= 3
                     -- not a stop word of the languages PostgreSQL knows best
                     AND length(to_tsvector('english', l.word)) > 0
                     AND length(to_tsvector('russian', l.word)) > 0),
             top AS (SELECT word, score, max(score) OVER () AS best FROM s
                     ORDER BY score DESC, word LIMIT 5)
        INSERT INTO chat_tags (chat_id, tag, source, confidence)
        SELECT c, word, 'auto', round((score / best)::numeric, 3) FROM top;
        out := out || jsonb_build_array(jsonb_build_object(
            'channelId', c, 'title', (SELECT title FROM chats WHERE id = c),
            'tags', coalesce((SELECT jsonb_agg(jsonb_build_object('tag', tag, 'confidence', confidence,
                                                                   'source', 'auto')
                                               ORDER BY confidence DESC, tag)
                              FROM chat_tags WHERE chat_id = c AND source = 'auto'), '[]')));
    END LOOP;
    RETURN jsonb_build_object('channels', out, 'method',
        'words of the chat that are most over-represented against the whole archive '
        '(ts_stat document frequency ratio times log frequency; top 5, confidence relative to '
        'the best)');
END
$$;
