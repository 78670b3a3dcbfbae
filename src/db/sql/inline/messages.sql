-- inline/messages: a chat's history (messages_list), search within one
-- chat (messages_search), unread messages across chats (messages_unread),
-- the messages around one (messages_context), and moving a chat's read
-- marker (messages_mark_read).

CREATE OR REPLACE FUNCTION parley_inline_check_enum(a jsonb, key text, allowed text[])
    RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF a ? key AND NOT (a ->> key) = ANY (allowed) THEN
        PERFORM parley_tg_bad(format('%s: %s is not one of %s', key, (a -> key)::text,
                                     array_to_string(allowed, ', ')));
    END IF;
    RETURN a ->> key;
END
$$;

-- The content argument (parley_tg_content's filter), checked.
CREATE OR REPLACE FUNCTION parley_inline_content_arg(a jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT parley_inline_check_enum(a, 'content', '{all,links,media,photos,videos,documents,files}')
$$;

-- The filters every message tool takes: limit (1-200, default 50), the
-- content (checked), since and until (parley_inline_time), and the
-- account's own ids (me: parley_inline_me), in that order.
CREATE OR REPLACE FUNCTION parley_inline_filters(a jsonb, ctx jsonb, OUT lim integer,
                                                 OUT content text, OUT since timestamptz,
                                                 OUT until timestamptz, OUT me bigint[])
    LANGUAGE sql STABLE AS $$
    SELECT parley_inline_limit(a, 50, 200), parley_inline_content_arg(a),
           parley_inline_time(a, 'since', ctx), parley_inline_time(a, 'until', ctx),
           parley_inline_me()
$$;

-- messages_list: newest first, paging backwards: offsetId gives the page
-- below that message; nextOffsetId is where the next page starts (absent
-- on the last page).
CREATE OR REPLACE FUNCTION parley_inline_messages_list(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    chat bigint := parley_inline_chat(a);
    direction text := coalesce(parley_inline_check_enum(a, 'direction', '{sent,received,all}'),
                               'all');
    f record := parley_inline_filters(a, ctx);
    unread_only boolean := coalesce((a ->> 'unreadOnly')::boolean, false);
    marker bigint := (SELECT coalesce(read_inbox_max_id, 0) FROM chats WHERE id = chat);
    items jsonb;
    n integer;
    last_id bigint;
BEGIN
    SELECT coalesce(jsonb_agg(parley_inline_message_json(m, f.me, NULL) ORDER BY m.id DESC), '[]'),
           count(*), min(m.id)
    INTO items, n, last_id
    FROM (SELECT * FROM messages m
          WHERE m.chat_id = chat
            AND (a ->> 'offsetId' IS NULL OR m.id < (a ->> 'offsetId')::bigint)
            AND (direction = 'all'
                 OR (direction = 'sent')
                    = (m.outgoing OR coalesce(m.sender_id = ANY (f.me), false)))
            AND (f.since IS NULL OR m.date >= f.since) AND (f.until IS NULL OR m.date < f.until)
            AND (NOT unread_only OR (m.id > marker AND NOT m.outgoing
                                     AND NOT coalesce(m.sender_id = ANY (f.me), false)))
            AND parley_tg_content(m, f.content)
          ORDER BY m.id DESC LIMIT f.lim) m;
    RETURN jsonb_strip_nulls(jsonb_build_object(
        'chatId', chat, 'items', items, 'limit', f.lim,
        'nextOffsetId', CASE WHEN n = f.lim THEN last_id END));
END
$$;

-- messages_search: one chat; the query through the archive search (web
-- syntax, CJK substrings); without a query, the filtered history.
CREATE OR REPLACE FUNCTION parley_inline_messages_search(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    chat bigint := parley_inline_chat(a);
    f record := parley_inline_filters(a, ctx);
    r jsonb;
BEGIN
    IF nullif(btrim(a ->> 'query'), '') IS NULL THEN
        RETURN parley_inline_messages_list(a - 'query', ctx) - 'nextOffsetId';
    END IF;
    r := parley_search(a ->> 'query', NULL, false, ARRAY[chat], NULL, NULL, f.since,
                       f.until - interval '1 microsecond',
                       CASE WHEN f.content IN ('links', 'media', 'photos', 'videos', 'documents',
                                               'files') THEN f.content END,
                       'time', f.lim, 0);
    RETURN jsonb_build_object(
        'chatId', chat, 'mode', r -> 'mode', 'total', r -> 'count',
        'totalCapped', coalesce(r -> 'countCapped', 'false'), 'limit', f.lim,
        'items', coalesce((SELECT jsonb_agg(parley_inline_message_json(m, f.me, h ->> 'snippet')
                                            || CASE WHEN (h ->> 'near')::boolean
                                                    THEN '{"near": true}'::jsonb
                                                    ELSE '{}' END
                                            ORDER BY ord)
                           FROM jsonb_array_elements(r -> 'results') WITH ORDINALITY AS x(h, ord)
                           JOIN messages m ON m.chat_id = (h ->> 'chat_id')::bigint
                                          AND m.id = (h ->> 'id')::bigint), '[]'))
        || jsonb_strip_nulls(jsonb_build_object('corrections', r -> 'corrections',
                                                'formsPending', r -> 'formsPending',
                                                'notes', r -> 'notes'));
END
$$;

-- messages_unread: messages others sent above each chat's read marker,
-- newest first, across the Telegram chats (an AI-assistant chat's or an
-- agent session's messages are never unread mail).
CREATE OR REPLACE FUNCTION parley_inline_messages_unread(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    f record := parley_inline_filters(a, ctx);
    scanned integer;
    items jsonb;
BEGIN
    SELECT count(*) INTO scanned FROM chats c
    WHERE c.active AND c.kind = ANY (parley_source_kinds('telegram'))
      AND EXISTS (SELECT 1 FROM messages m
                               WHERE m.chat_id = c.id AND m.id > coalesce(c.read_inbox_max_id, 0));
    SELECT coalesce(jsonb_agg(parley_inline_message_json(x.m, f.me, NULL) || jsonb_build_object(
                                  'chatTitle', x.title)
                              ORDER BY (x.m).date DESC, (x.m).chat_id, (x.m).id DESC), '[]')
    INTO items
    FROM (SELECT m, c.title FROM chats c
          JOIN messages m ON m.chat_id = c.id AND m.id > coalesce(c.read_inbox_max_id, 0)
          WHERE c.active AND c.kind = ANY (parley_source_kinds('telegram'))
            AND m.kind = 'message' AND NOT m.outgoing
            AND NOT coalesce(m.sender_id = ANY (f.me), false)
            AND (f.since IS NULL OR m.date >= f.since) AND (f.until IS NULL OR m.date < f.until)
            AND parley_tg_content(m, f.content)
          ORDER BY m.date DESC, m.chat_id, m.id DESC LIMIT f.lim) x;
    RETURN jsonb_build_object('scannedChats', scanned, 'items', items, 'limit', f.lim);
END
$$;

-- One side of a context (parley_tg_context's before or after, a list of
-- chat chat's messages by messageId): those messages as the inline tools
-- answer them, in the list's order; '[]' when none.
CREATE OR REPLACE FUNCTION parley_inline_context_side(chat bigint, side jsonb, me bigint[])
    RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(parley_inline_message_json(m, me, NULL) ORDER BY o), '[]')
    FROM jsonb_array_elements(side) WITH ORDINALITY x(e, o)
    JOIN messages m ON m.chat_id = chat AND m.id = (e ->> 'messageId')::bigint
$$;

-- messages_context: up to before/after messages around one, in order.
CREATE OR REPLACE FUNCTION parley_inline_messages_context(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    chat bigint := parley_inline_chat(a);
    me bigint[] := parley_inline_me();
    r jsonb;
BEGIN
    r := parley_tg_context(chat, (a ->> 'messageId')::bigint,
                           least(greatest(coalesce((a ->> 'before')::integer, 10), 0), 100),
                           least(greatest(coalesce((a ->> 'after')::integer, 10), 0), 100));
    RETURN jsonb_build_object(
        'chatId', chat,
        'before', parley_inline_context_side(chat, r -> 'before', me),
        'target', (SELECT parley_inline_message_json(m, me, NULL) FROM messages m
                   WHERE m.chat_id = chat AND m.id = (a ->> 'messageId')::bigint),
        'after', parley_inline_context_side(chat, r -> 'after', me));
END
$$;

-- messages_mark_read: the read marker moves up to maxId (default: the
-- newest message); it never moves back.
CREATE OR REPLACE FUNCTION parley_inline_messages_mark_read(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint := parley_inline_chat(a);
    upto bigint := coalesce((a ->> 'maxId')::bigint,
                            (SELECT max(id) FROM messages WHERE chat_id = chat), 0);
    me bigint[] := parley_inline_me();
    c chats;
BEGIN
    UPDATE chats SET read_inbox_max_id = greatest(coalesce(read_inbox_max_id, 0), upto),
                     updated_at = now()
    WHERE id = chat RETURNING * INTO c;
    RETURN jsonb_build_object('chatId', chat, 'readMaxId', c.read_inbox_max_id,
                              'unreadCount', parley_inline_unread(c, me));
END
$$;

-- The chat a send goes to (chatId, or userId for the direct chat), for the
-- connector's tools (internal).
CREATE OR REPLACE FUNCTION parley_inline_resolve(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('chatId', parley_inline_chat(a))
$$;

-- messages_send and messages_send_batch without a connector.
CREATE OR REPLACE FUNCTION parley_inline_messages_send(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM parley_inline_chat(a);
    RETURN parley_tg_cannot_send('messages_send');
END
$$;

CREATE OR REPLACE FUNCTION parley_inline_messages_send_batch(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_cannot_send('messages_send_batch');
END
$$;

-- files_get: an uploaded file's record.
CREATE OR REPLACE FUNCTION parley_inline_files_get(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT parley_upload_get(a, ctx) - 'localPath'
$$;

-- The chat and the stored file of messages_send_media (internal).
CREATE OR REPLACE FUNCTION parley_inline_media_target(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('chatId', parley_inline_chat(a)) || parley_upload_get(a, ctx)
$$;

-- messages_send_media without a connector.
CREATE OR REPLACE FUNCTION parley_inline_messages_send_media(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM parley_inline_media_target(a, ctx);
    RETURN parley_tg_cannot_send('messages_send_media');
END
$$;
