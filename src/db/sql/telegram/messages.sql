-- telegram/messages: the telegram toolset's message tools (list, get,
-- context, search, send) and the media record behind mediaDownload.

CREATE OR REPLACE FUNCTION parley_tg_messages_list(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
    lim integer;
    others bigint[];
BEGIN
    PERFORM parley_tg_archive_only(a, 'messagesList');
    chat := parley_tg_chat(a, 'channelId');
    lim := parley_tg_limit(a, 50, 500);
    IF chat IS NULL THEN
        others := parley_source_others('telegram'); -- the chats to keep out (as parley_search)
    END IF;
    RETURN parley_tg_page(a, 50, 500) || jsonb_build_object('messages', coalesce((
        SELECT jsonb_agg(parley_tg_message_json(m) ORDER BY m.date DESC, m.id DESC)
        FROM (SELECT * FROM messages m
              WHERE (chat IS NULL OR m.chat_id = chat)
                AND (others IS NULL OR m.chat_id <> ALL (others))
                AND (a ->> 'topicId' IS NULL OR m.topic_id = (a ->> 'topicId')::bigint)
                AND (a ->> 'fromDate' IS NULL OR m.date >= parley_tg_time(a, 'fromDate', ctx))
                AND (a ->> 'toDate' IS NULL OR m.date <= parley_tg_time(a, 'toDate', ctx))
              ORDER BY m.date DESC, m.id DESC LIMIT lim) m), '[]'));
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_messages_get(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
    res jsonb;
BEGIN
    PERFORM parley_tg_archive_only(a, 'messagesGet');
    chat := parley_tg_chat(a, 'channelId');
    res := (SELECT parley_tg_message_json(m) FROM messages m
            WHERE m.chat_id = chat AND m.id = (a ->> 'messageId')::bigint);
    IF res IS NULL THEN
        PERFORM parley_tg_bad(format('messageId: no message %s in chat %s; list messages '
                                     'with messagesList or find them with messagesSearch',
                                     a ->> 'messageId', chat));
    END IF;
    RETURN jsonb_build_object('message', res);
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_messages_context(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
BEGIN
    PERFORM parley_tg_archive_only(a, 'messagesContext');
    chat := parley_tg_chat(a, 'channelId');
    RETURN parley_tg_context(chat, (a ->> 'messageId')::bigint,
                             least(greatest(coalesce((a ->> 'before')::integer, 20), 0), 200),
                             least(greatest(coalesce((a ->> 'after')::integer, 20), 0), 200));
END
$$;

-- messagesContext: up to `before` messages before the target and `after`
-- after it, all in time order.
CREATE OR REPLACE FUNCTION parley_tg_context(chat bigint, target bigint, nbefore integer, nafter integer)
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

-- messagesSearch: parley_search over the chats, tags, topic and dates the
-- arguments name, in Telegram's chats only; "total" says when it is
-- capped; a near reading's "corrections" and "notes" are passed on, its
-- hits "match": "near".
CREATE OR REPLACE FUNCTION parley_tg_messages_search(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    chats bigint[];
    lim integer := parley_tg_limit(a, 100, 500);
    rx text := parley_tg_regex(a);
    r jsonb;
BEGIN
    PERFORM parley_tg_archive_only(a, 'messagesSearch');
    chats := parley_tg_search_chats(a);
    BEGIN
        r := parley_search(a ->> 'query', rx, coalesce((a ->> 'fuzzy')::boolean, false), chats,
                           (a ->> 'topicId')::bigint, NULL, parley_tg_time(a, 'fromDate', ctx),
                           parley_tg_time(a, 'toDate', ctx), a ->> 'kind',
                           coalesce(a ->> 'orderBy', 'time'), lim, 0, 'telegram');
    EXCEPTION WHEN invalid_regular_expression THEN
        PERFORM parley_tg_bad_regex(a, SQLERRM);
    END;
    RETURN parley_tg_page(a, 100, 500) || jsonb_strip_nulls(jsonb_build_object(
        'mode', r -> 'mode', 'total', r -> 'count',
        'totalCapped', coalesce(r -> 'countCapped', 'false'),
        'candidatesCapped', r -> 'candidatesCapped', 'candidates', r -> 'candidates',
        'corrections', r -> 'corrections', 'formsPending', r -> 'formsPending',
        'notes', r -> 'notes')) || jsonb_build_object(
        'messages', coalesce((SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
            'channelId', h -> 'chat_id', 'channelTitle', h -> 'chat_title',
            'messageId', h -> 'id', 'topicId', h -> 'topic_id', 'date', h -> 'date',
            'senderId', h -> 'sender_id', 'senderName', h -> 'sender_name', 'text', h -> 'text',
            'snippet', h -> 'snippet', 'rank', h -> 'rank', 'mediaKind', h -> 'media_kind',
            'hasLink', h -> 'has_link',
            'match', CASE WHEN (h ->> 'near')::boolean THEN to_jsonb('near'::text)
                          ELSE r -> 'mode' END)) ORDER BY ord)
            FROM jsonb_array_elements(r -> 'results') WITH ORDINALITY AS x(h, ord)), '[]'));
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_messages_send(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_cannot_send('messagesSend');
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_messages_send_file(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_cannot_send('messagesSendFile');
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_media_download(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
    res jsonb;
BEGIN
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
END
$$;
