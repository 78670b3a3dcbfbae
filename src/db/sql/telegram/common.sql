-- telegram/common: what the telegram toolset's tool functions share
-- (src/toolsets/telegram/). Every tool is one function
-- parley_tg_<tool>(a jsonb, ctx jsonb) named in the toolset's table: a holds
-- the tool's validated arguments, ctx what only the daemon knows (its
-- figures, its connector); the answer is the tool's JSON result, built
-- here. A mistake of the caller (an unknown chat, a bad date) raises
-- SQLSTATE PT400 with a message for the model; a tool that needs the
-- upstream connector raises PT501 saying what to use instead.

CREATE OR REPLACE FUNCTION parley_tg_bad(msg text) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = msg;
END
$$;

-- The telegram and inline toolsets read the message services' chats only
-- (source "telegram", src/db/sql/sources.sql): a chat of another source
-- asked for by id is refused like an unknown one, saying which tools read
-- it. key: the argument; chat: as given; kind: the chat's; finder: the
-- tool that lists this surface's chats.
CREATE OR REPLACE FUNCTION parley_tg_other_source(key text, chat text, kind text, finder text)
    RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM parley_tg_bad(format('%s: chat %s is %s, not a chat of a message service; %s. '
                                 'Find Telegram chats with %s', key, chat,
        CASE parley_source_of(kind)
            WHEN 'chatwise' THEN 'an AI-assistant chat (ChatWise)'
            WHEN 'agents' THEN 'an agent session (an imported transcript)'
            WHEN 'bluesky' THEN 'a Bluesky feed'
            ELSE 'of another source' END,
        CASE parley_source_of(kind)
            WHEN 'chatwise' THEN 'use the chatwise tools (search_conversations, gather_chats)'
            WHEN 'agents' THEN 'use the memory tools (search_messages, get_recent_work)'
            WHEN 'bluesky' THEN 'use the bluesky tools (search)'
            ELSE 'no tool of this toolset reads it' END,
        finder));
END
$$;

-- What a chat or person argument (args -> key) names: given, false when
-- it is absent (or JSON null); num, a numeric one as written (the
-- look-up casts it: one past bigint fails there or finds nothing, as the
-- look-up's plan has it); uname, the @username of another (lower case,
-- without the @), when it can be one. Both NULL: it names nothing.
-- parley_tg_chat and parley_tg_user look the two up.
CREATE OR REPLACE FUNCTION parley_tg_ref(args jsonb, key text, OUT given boolean, OUT num text,
                                         OUT uname text)
    LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(jsonb_typeof(args -> key) <> 'null', false),
           CASE WHEN s ~ '^-?[0-9]+$' THEN s END,
           CASE WHEN s !~ '^-?[0-9]+$' AND s ~ '^@?[A-Za-z0-9_]{3,}$' THEN lower(ltrim(s, '@')) END
    FROM (SELECT btrim((args -> key) #>> '{}') AS s) x
$$;

-- A chat by numeric id or @username; NULL when the argument is absent. A
-- chat of another source than Telegram is refused (parley_tg_other_source).
CREATE OR REPLACE FUNCTION parley_tg_chat(args jsonb, key text) RETURNS bigint
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    r record := parley_tg_ref(args, key);
    id bigint;
    k text;
BEGIN
    IF NOT r.given THEN
        RETURN NULL;
    END IF;
    IF r.num IS NOT NULL THEN
        SELECT c.id, c.kind INTO id, k FROM chats c WHERE c.id = r.num::bigint;
    ELSIF r.uname IS NOT NULL THEN
        SELECT c.id, c.kind INTO id, k FROM chats c WHERE lower(c.username) = r.uname
        ORDER BY c.kind = ANY (parley_source_kinds('telegram')) DESC, c.active DESC, c.id LIMIT 1;
    END IF;
    IF id IS NULL THEN
        PERFORM parley_tg_bad(format('%s: no chat %s in the archive; find chats with channelsList '
                                     '(or channelsSearch once a Telegram account is connected)',
                                     key, (args -> key)::text));
    ELSIF NOT k = ANY (parley_source_kinds('telegram')) THEN
        PERFORM parley_tg_other_source(key, (args -> key)::text, k, 'channelsList');
    END IF;
    RETURN id;
END
$$;

-- A person by numeric id or @username; NULL when the argument is absent.
-- Telegram's people are the users under their Telegram ids: a user with an
-- external_id is another source's (a Bluesky author under its DID) and is
-- unknown here, as in every people tool of the telegram and inline
-- toolsets.
CREATE OR REPLACE FUNCTION parley_tg_user(args jsonb, key text) RETURNS bigint
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    r record := parley_tg_ref(args, key);
    id bigint;
BEGIN
    IF NOT r.given THEN
        RETURN NULL;
    END IF;
    IF r.num IS NOT NULL THEN
        SELECT u.id INTO id FROM users u WHERE u.id = r.num::bigint AND u.external_id IS NULL;
    ELSIF r.uname IS NOT NULL THEN
        SELECT u.id INTO id FROM users u WHERE lower(u.username) = r.uname AND u.external_id IS NULL
        ORDER BY u.id LIMIT 1;
    END IF;
    IF id IS NULL THEN
        PERFORM parley_tg_bad(format('%s: no user %s in the archive; find people with '
                                     'contactsSearch', key, (args -> key)::text));
    END IF;
    RETURN id;
END
$$;

-- The chats a list argument (args -> key: channelIds) names, each read
-- as parley_tg_chat reads one, in its order; NULL when it is absent or
-- empty.
CREATE OR REPLACE FUNCTION parley_tg_chats(args jsonb, key text) RETURNS bigint[]
    LANGUAGE sql STABLE AS $$
    SELECT array_agg(parley_tg_chat(jsonb_build_object(key, e), key))
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(args -> key) = 'array' THEN args -> key END) AS e
$$;

-- The chats a search keeps to (messagesSearch, archive and live): those of
-- channelIds, narrowed to the chats tagged with any of tags ('{}' when
-- none is); NULL for every chat.
CREATE OR REPLACE FUNCTION parley_tg_search_chats(a jsonb) RETURNS bigint[]
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    chats bigint[] := parley_tg_chats(a, 'channelIds');
BEGIN
    IF jsonb_typeof(a -> 'tags') = 'array' AND jsonb_array_length(a -> 'tags') > 0 THEN
        SELECT coalesce(array_agg(DISTINCT t.chat_id), '{}') INTO chats
        FROM chat_tags t
        WHERE t.tag IN (SELECT lower(x) FROM jsonb_array_elements_text(a -> 'tags') x)
          AND (chats IS NULL OR t.chat_id = ANY (chats));
    END IF;
    RETURN chats;
END
$$;

-- A search's regex argument as the search reads it: case-insensitive
-- unless caseInsensitive is false ((?c) then); NULL when absent.
CREATE OR REPLACE FUNCTION parley_tg_regex(a jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN a ->> 'regex' IS NOT NULL
                     AND NOT coalesce((a ->> 'caseInsensitive')::boolean, true)
                THEN '(?c)' || (a ->> 'regex') ELSE a ->> 'regex' END
$$;

-- The caller's mistake of a regex PostgreSQL cannot read (err: its
-- message, SQLERRM of invalid_regular_expression).
CREATE OR REPLACE FUNCTION parley_tg_bad_regex(a jsonb, err text) RETURNS void
    LANGUAGE sql AS $$
    SELECT parley_tg_bad(format('regex: %s is not a valid regular expression (%s)',
                                to_jsonb(a ->> 'regex')::text, err))
$$;

-- Does message m pass the content filter (all or NULL, links, media,
-- photos, videos, documents, files: the kind of messagesSearch, the
-- content of the inline tools)?
CREATE OR REPLACE FUNCTION parley_tg_content(m messages, content text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT CASE coalesce(content, 'all')
        WHEN 'all' THEN true
        WHEN 'links' THEN m.has_link
        WHEN 'media' THEN m.media_kind IS NOT NULL
        WHEN 'photos' THEN m.media_kind = 'photo'
        WHEN 'videos' THEN m.media_kind IN ('video', 'animation', 'video_note')
        WHEN 'documents' THEN m.media_kind = 'document'
        WHEN 'files' THEN EXISTS (SELECT 1 FROM media f WHERE f.chat_id = m.chat_id
                                                          AND f.message_id = m.id)
        ELSE false END
$$;

-- A date argument (fromDate, toDate, minDate) as a time: anything
-- parley_when reads (today, yesterday, last week, 3 days ago, ISO dates and
-- date-times, epoch seconds), days local to ctx's timezone. An upper bound
-- (toDate) is inclusive: a day given there is included whole. NULL when
-- absent.
CREATE OR REPLACE FUNCTION parley_tg_time(args jsonb, key text, ctx jsonb) RETURNS timestamptz
    LANGUAGE sql STABLE AS $$
    -- toDate is inclusive: an instant stays itself, a day ends a moment
    -- before the next one starts.
    SELECT CASE WHEN key = 'toDate' AND t <> parley_when(args -> key, key, false, ctx)
                THEN t - interval '1 microsecond' ELSE t END
    FROM parley_when(args -> key, key, key = 'toDate', ctx) AS t
$$;

-- The same without the daemon's context (days in UTC).
CREATE OR REPLACE FUNCTION parley_tg_time(args jsonb, key text) RETURNS timestamptz
    LANGUAGE sql STABLE AS $$
    SELECT parley_tg_time(args, key, NULL)
$$;

-- limit with its default and cap; the applied value and whether it was
-- capped go into the answer.
CREATE OR REPLACE FUNCTION parley_tg_limit(args jsonb, dflt integer, cap integer) RETURNS integer
    LANGUAGE sql IMMUTABLE AS $$
    SELECT least(greatest(coalesce((args ->> 'limit')::integer, dflt), 1), cap)
$$;

CREATE OR REPLACE FUNCTION parley_tg_page(args jsonb, dflt integer, cap integer) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('limit', parley_tg_limit(args, dflt, cap),
                              'limitCapped', coalesce((args ->> 'limit')::integer, dflt) > cap)
$$;

CREATE OR REPLACE FUNCTION parley_tg_chat_json(c chats) RETURNS jsonb
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

-- A chat as the tools about one chat answer it (channelsGet, groupsInfo):
-- parley_tg_chat_json with its messageCount; each tool adds its own
-- figures.
CREATE OR REPLACE FUNCTION parley_tg_chat_info_json(c chats) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT parley_tg_chat_json(c) || jsonb_build_object(
        'messageCount', (SELECT count(*) FROM messages m WHERE m.chat_id = c.id))
$$;

-- A page of chats (channelsList, groupsList): under key, those of the
-- kinds, only the active ones unless inactive, with query (when not NULL)
-- in or like their title, the newest last message first.
CREATE OR REPLACE FUNCTION parley_tg_chats_page(a jsonb, dflt integer, cap integer, key text,
                                                kinds text[], inactive boolean, query text)
    RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT parley_tg_page(a, dflt, cap) || jsonb_build_object(key, coalesce((
        SELECT jsonb_agg(parley_tg_chat_json(c) ORDER BY c.last_message_date DESC NULLS LAST, c.id)
        FROM (SELECT * FROM chats c
              WHERE (inactive OR c.active) AND c.kind = ANY (kinds)
                AND (query IS NULL OR c.title ILIKE '%' || query || '%' OR c.title % query)
              ORDER BY c.last_message_date DESC NULLS LAST, c.id
              LIMIT parley_tg_limit(a, dflt, cap)) c), '[]'))
$$;

CREATE OR REPLACE FUNCTION parley_tg_message_json(m messages) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'channelId', m.chat_id, 'messageId', m.id, 'topicId', m.topic_id, 'date', m.date,
        'editDate', m.edit_date, 'senderId', m.sender_id, 'senderName', m.sender_name,
        'text', m.text, 'entities', m.entities, 'replyToMessageId', m.reply_to_id,
        'replyToChannelId', m.reply_to_chat_id, 'forwardFromName', m.forward_from_name,
        'mediaKind', m.media_kind, 'hasLink', m.has_link, 'kind', m.kind,
        'action', m.action, 'extra', m.extra))
$$;

CREATE OR REPLACE FUNCTION parley_tg_user_json(u users) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'userId', u.id, 'firstName', u.first_name, 'lastName', u.last_name,
        'username', CASE WHEN u.username IS NOT NULL THEN '@' || u.username END,
        'phone', u.phone, 'about', u.about, 'isBot', u.is_bot, 'isContact', u.is_contact,
        'alias', u.alias, 'notes', u.notes, 'tags', to_jsonb(u.tags),
        'isSelf', (u.extra ->> 'is_self')::boolean))
$$;

-- A sync job as syncJobsList shows it: when it waits (a FloodWait pause,
-- parley_jobs_finish's 'wait', or a retry's backoff) resumesAt says until
-- when, and a history backfill's cursor ({"from", "oldest", "done"}, the
-- user connector's) shows as oldestMessageId and reachedStart.
CREATE OR REPLACE FUNCTION parley_tg_job_json(j sync_jobs) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'jobId', j.id, 'channelId', coalesce(to_jsonb(j.chat_id), to_jsonb(j.channel)), 'status', j.status,
        'depth', j.depth, 'minDate', j.min_date, 'realtime', j.realtime, 'fetched', j.fetched,
        'attempts', j.attempts, 'error', j.error, 'lastRunAt', j.last_run_at,
        'createdAt', j.created_at, 'updatedAt', j.updated_at,
        'resumesAt', CASE WHEN j.status = 'pending' AND j.next_attempt_at > now()
                          THEN j.next_attempt_at END,
        'waiting', CASE WHEN j.status = 'pending' AND j.error LIKE 'Telegram asked to wait (FloodWait)%' THEN 'floodWait' END,
        'oldestMessageId', parley_tdu_int(j.cursor -> 'oldest'),
        'complete', CASE WHEN jsonb_typeof(j.cursor -> 'done') = 'boolean'
                             THEN (j.cursor ->> 'done')::boolean END))
$$;

CREATE OR REPLACE FUNCTION parley_tg_needs_connector(tool text, instead text) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'PT501', MESSAGE = format(
        '%s needs a connected Telegram account, and none is configured; %s', tool, instead);
END
$$;

-- What a send tool answers without a connector (messagesSend,
-- messagesSendFile; the inline toolset's messages_send...): PT501.
CREATE OR REPLACE FUNCTION parley_tg_cannot_send(tool text) RETURNS jsonb
    LANGUAGE sql AS $$
    SELECT parley_tg_needs_connector(tool, 'nothing can be sent from the archive alone')
$$;

-- resolveChannel (internal): the chat a channelId names, and the users of userIds, for the tools the
-- connector runs.
CREATE OR REPLACE FUNCTION parley_tg_resolve_channel(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN jsonb_strip_nulls(jsonb_build_object(
        'channelId', parley_tg_chat(a, 'channelId'),
        -- the account the chat was stored under: its connector acts on it
        'accountId', (SELECT account_id FROM chats WHERE id = parley_tg_chat(a, 'channelId')),
        'userIds', (SELECT jsonb_agg(parley_tg_user(jsonb_build_object('userIds', e), 'userIds'))
                    FROM jsonb_array_elements(a -> 'userIds') AS e)));
END
$$;

-- The message tools read the archive: source "live" or "both" needs the
-- connector. (The tag tools' own "source", manual or auto, is another
-- thing.)
CREATE OR REPLACE FUNCTION parley_tg_archive_only(a jsonb, tool text) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(a ->> 'source', 'archive') <> 'archive' THEN
        PERFORM parley_tg_needs_connector(tool || ' with source "' || (a ->> 'source') || '"',
                                          'use source "archive" to read what is stored');
    END IF;
END
$$;
