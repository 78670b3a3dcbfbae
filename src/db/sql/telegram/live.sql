-- telegram/live: the answers of the tools that read through the Telegram
-- user account (channelsSearch; messagesList, messagesGet, messagesContext
-- and messagesSearch with source "live" or "both"). The connector read
-- TDLib's own objects (src/upstream/telegram/user/tg_user_live.c); here they are stored
-- by the same operations the account's updates go through
-- (parley_tdu_apply: chats, messages) and then answered from the archive's
-- rows for exactly those ids, with the archive's JSON (parley_tg_chat_json,
-- parley_tg_message_json, the search hits' fields): a live answer has the
-- archive's shape, and what was read stays in the archive. Storing and
-- answering in one statement means the answer sees what was stored. "both"
-- merges the archive's own answer, deduplicated by (chat, id).
--
-- a: the tool's arguments plus "tool" (its name) and "live" (the
-- connector's answer: {"account", "chats" | "messages", "total"}).

-- The store's (chat, id) of TDLib messages, in their order; local and
-- pending ones (no server id) are left out.
CREATE OR REPLACE FUNCTION parley_tg_live_ids(msgs jsonb)
    RETURNS TABLE (chat_id bigint, id bigint, ord bigint)
    LANGUAGE sql IMMUTABLE AS $$
    SELECT parley_tdu_int(e.m -> 'chat_id'), parley_tdu_server_id(e.m -> 'id'), e.o
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(msgs) = 'array' THEN msgs ELSE '[]' END)
         WITH ORDINALITY AS e(m, o)
    WHERE parley_tdu_int(e.m -> 'chat_id') IS NOT NULL
      AND parley_tdu_server_id(e.m -> 'id') IS NOT NULL
$$;

-- channelsSearch: the chats found, stored (a chat not in the store yet
-- gets its row), in the connector's order (the account's chats, then
-- public ones).
CREATE OR REPLACE FUNCTION parley_tg_live_channels(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chats jsonb := coalesce(a -> 'live' -> 'chats', '[]');
BEGIN
    PERFORM parley_tdu_apply((a -> 'live' ->> 'account')::bigint,
                             jsonb_build_array(jsonb_build_object('op', 'chats', 'chats', chats)));
    RETURN parley_tg_page(a, 100, 100) || jsonb_build_object('source', 'live', 'channels', coalesce((
        SELECT jsonb_agg(parley_tg_chat_json(c) ORDER BY e.o)
        FROM jsonb_array_elements(chats) WITH ORDINALITY AS e(x, o)
        JOIN chats c ON c.id = parley_tdu_int(e.x -> 'id')
        WHERE c.kind = ANY (parley_source_kinds('telegram'))), '[]'));
END
$$;

-- The messages read, stored; then the tool's answer.
CREATE OR REPLACE FUNCTION parley_tg_live_messages(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    tool text := a ->> 'tool';
    args jsonb := a - 'live' - 'tool';
    arch jsonb := a - 'live' - 'tool' || '{"source": "archive"}';
    merged boolean := a ->> 'source' = 'both';
    msgs jsonb := coalesce(a -> 'live' -> 'messages', '[]');
BEGIN
    PERFORM parley_tdu_apply((a -> 'live' ->> 'account')::bigint,
                             jsonb_build_array(jsonb_build_object('op', 'messages',
                                                                  'messages', msgs)));
    RETURN CASE tool
        WHEN 'messagesList' THEN parley_tg_live_list(args, arch, merged, msgs, ctx)
        WHEN 'messagesGet' THEN parley_tg_live_get(args, arch, merged, msgs, ctx)
        WHEN 'messagesContext' THEN parley_tg_live_context(args, arch, merged, msgs, ctx)
        WHEN 'messagesSearch' THEN parley_tg_live_search(args, arch, merged, msgs, ctx,
                                                         a -> 'live' -> 'total')
        END;
END
$$;

-- The stored rows of the messages read, in the connector's order.
CREATE OR REPLACE FUNCTION parley_tg_live_rows(msgs jsonb) RETURNS SETOF messages
    LANGUAGE sql STABLE AS $$
    SELECT m.* FROM parley_tg_live_ids(msgs) l
    JOIN messages m ON m.chat_id = l.chat_id AND m.id = l.id
    ORDER BY l.ord
$$;

-- Message JSON items merged without duplicates ((channelId, messageId):
-- the first wins), newest first, at most lim.
CREATE OR REPLACE FUNCTION parley_tg_live_merge(x jsonb, y jsonb, lim integer) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(jsonb_agg(j ORDER BY (j ->> 'date')::timestamptz DESC,
                                          (j ->> 'messageId')::bigint DESC), '[]')
    FROM (SELECT j FROM (SELECT DISTINCT ON (j ->> 'channelId', j ->> 'messageId') j
                         FROM (SELECT j, 1 AS s, o FROM jsonb_array_elements(x)
                                   WITH ORDINALITY AS e(j, o)
                               UNION ALL
                               SELECT j, 2, o FROM jsonb_array_elements(y)
                                   WITH ORDINALITY AS e(j, o)) u
                         ORDER BY j ->> 'channelId', j ->> 'messageId', s, o) d
          ORDER BY (j ->> 'date')::timestamptz DESC, (j ->> 'messageId')::bigint DESC
          LIMIT lim) t
$$;

-- messagesList: the chat's history as Telegram has it now (newest first),
-- with the archive's filters (topic, dates) applied.
CREATE OR REPLACE FUNCTION parley_tg_live_list(args jsonb, arch jsonb, merged boolean, msgs jsonb,
                                               ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    lim integer := parley_tg_limit(args, 50, 500);
    live jsonb;
BEGIN
    live := coalesce((SELECT jsonb_agg(parley_tg_message_json(m))
                      FROM parley_tg_live_rows(msgs) m
                      WHERE (args ->> 'topicId' IS NULL OR m.topic_id = (args ->> 'topicId')::bigint)
                        AND (args ->> 'fromDate' IS NULL
                             OR m.date >= parley_tg_time(args, 'fromDate', ctx))
                        AND (args ->> 'toDate' IS NULL
                             OR m.date <= parley_tg_time(args, 'toDate', ctx))), '[]');
    RETURN parley_tg_page(args, 50, 500) || jsonb_build_object(
        'source', args ->> 'source',
        'messages', parley_tg_live_merge(live, CASE WHEN merged
            THEN parley_tg_messages_list(arch, ctx) -> 'messages' ELSE '[]' END, lim));
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_live_get(args jsonb, arch jsonb, merged boolean, msgs jsonb,
                                              ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint := parley_tg_chat(args, 'channelId');
    res jsonb;
BEGIN
    res := (SELECT parley_tg_message_json(m) FROM parley_tg_live_rows(msgs) m
            WHERE m.chat_id = chat AND m.id = (args ->> 'messageId')::bigint);
    IF res IS NOT NULL THEN
        RETURN jsonb_build_object('message', res, 'source', 'live');
    ELSIF merged THEN
        RETURN parley_tg_messages_get(arch, ctx) || '{"source": "archive"}';
    END IF;
    PERFORM parley_tg_bad(format('messageId: Telegram has no message %s in chat %s (deleted, or '
                                 'never there); use source "both" to read the archive''s copy',
                                 args ->> 'messageId', chat));
    RETURN NULL;
END
$$;

-- messagesContext: live, the messages Telegram has around the target; both,
-- the archive's context once they are stored (it holds them then).
CREATE OR REPLACE FUNCTION parley_tg_live_context(args jsonb, arch jsonb, merged boolean,
                                                  msgs jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint := parley_tg_chat(args, 'channelId');
    target bigint := (args ->> 'messageId')::bigint;
    nbefore integer := least(greatest(coalesce((args ->> 'before')::integer, 20), 0), 200);
    nafter integer := least(greatest(coalesce((args ->> 'after')::integer, 20), 0), 200);
    t messages;
BEGIN
    IF merged THEN
        RETURN parley_tg_context(chat, target, nbefore, nafter);
    END IF;
    SELECT * INTO t FROM parley_tg_live_rows(msgs) m WHERE m.chat_id = chat AND m.id = target;
    IF NOT FOUND THEN
        PERFORM parley_tg_bad(format('messageId: Telegram has no message %s in chat %s; use '
                                     'source "both" to read the archive''s copy', target, chat));
    END IF;
    RETURN jsonb_build_object(
        'before', coalesce((SELECT jsonb_agg(parley_tg_message_json(m) ORDER BY m.date, m.id)
                            FROM (SELECT * FROM parley_tg_live_rows(msgs) m
                                  WHERE m.chat_id = chat AND (m.date, m.id) < (t.date, t.id)
                                  ORDER BY m.date DESC, m.id DESC LIMIT nbefore) m), '[]'),
        'target', parley_tg_message_json(t),
        'after', coalesce((SELECT jsonb_agg(parley_tg_message_json(m) ORDER BY m.date, m.id)
                           FROM (SELECT * FROM parley_tg_live_rows(msgs) m
                                 WHERE m.chat_id = chat AND (m.date, m.id) > (t.date, t.id)
                                 ORDER BY m.date, m.id LIMIT nafter) m), '[]'));
END
$$;

-- messagesSearch: Telegram's hits in the search hits' shape ("match":
-- "live"), filtered by the arguments Telegram was not given (chats, tags,
-- topic, dates, regex, kind); both: merged with the archive's hits.
CREATE OR REPLACE FUNCTION parley_tg_live_search(args jsonb, arch jsonb, merged boolean, msgs jsonb,
                                                 ctx jsonb, upstream_total jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chats bigint[];
    lim integer := parley_tg_limit(args, 100, 500);
    rx text := parley_tg_regex(args);
    live jsonb;
    ar jsonb;
BEGIN
    chats := parley_tg_search_chats(args);
    BEGIN
        live := coalesce((SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
            'channelId', m.chat_id, 'channelTitle', c.title, 'messageId', m.id,
            'topicId', m.topic_id, 'date', m.date, 'senderId', m.sender_id,
            'senderName', m.sender_name, 'text', m.text, 'mediaKind', m.media_kind,
            'hasLink', m.has_link, 'match', 'live')))
            FROM parley_tg_live_rows(msgs) m
            LEFT JOIN chats c ON c.id = m.chat_id
            WHERE (chats IS NULL OR m.chat_id = ANY (chats))
              AND (args ->> 'topicId' IS NULL OR m.topic_id = (args ->> 'topicId')::bigint)
              AND (args ->> 'fromDate' IS NULL OR m.date >= parley_tg_time(args, 'fromDate', ctx))
              AND (args ->> 'toDate' IS NULL OR m.date <= parley_tg_time(args, 'toDate', ctx))
              AND (rx IS NULL OR m.text ~* rx)
              AND parley_tg_content(m, args ->> 'kind')), '[]');
    EXCEPTION WHEN invalid_regular_expression THEN
        PERFORM parley_tg_bad_regex(args, SQLERRM);
    END;
    IF NOT merged THEN
        RETURN parley_tg_page(args, 100, 500) || jsonb_build_object(
            'mode', 'live', 'source', 'live', 'total', jsonb_array_length(live),
            'upstreamTotal', upstream_total, 'totalCapped', false,
            'messages', parley_tg_live_merge(live, '[]', lim));
    END IF;
    ar := parley_tg_messages_search(arch, ctx);
    RETURN ar || jsonb_build_object(
        'source', 'both', 'upstreamTotal', upstream_total,
        'messages', CASE WHEN args ->> 'orderBy' = 'rank'
            -- the archive's ranked hits first, then Telegram's others
            THEN (SELECT coalesce(jsonb_agg(j ORDER BY s, o), '[]') FROM (
                      SELECT j, s, o FROM (
                          SELECT j, 1 AS s, o FROM jsonb_array_elements(ar -> 'messages')
                              WITH ORDINALITY AS e(j, o)
                          UNION ALL
                          SELECT j, 2, o FROM jsonb_array_elements(live) WITH ORDINALITY AS e(j, o)
                          WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(ar -> 'messages') h
                                            WHERE h ->> 'channelId' = j ->> 'channelId'
                                              AND h ->> 'messageId' = j ->> 'messageId')) u
                      ORDER BY s, o LIMIT lim) v)
            ELSE parley_tg_live_merge(ar -> 'messages', live, lim) END);
END
$$;

-- Before the connector reads: the chat the arguments name (channelId, or
-- the one chat of channelIds), and fromDate and toDate as unix seconds
-- (0: open) for Telegram's own date bounds; a bad argument is the model's
-- PT400 before anything is asked upstream.
CREATE OR REPLACE FUNCTION parley_tg_live_plan(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    chat bigint := parley_tg_chat(a, 'channelId');
BEGIN
    IF chat IS NULL AND jsonb_typeof(a -> 'channelIds') = 'array'
       AND jsonb_array_length(a -> 'channelIds') = 1 THEN
        chat := parley_tg_chat(jsonb_build_object('channelIds', a -> 'channelIds' -> 0), 'channelIds');
    END IF;
    RETURN jsonb_build_object(
        'channelId', coalesce(chat, 0),
        'minDate', coalesce(floor(extract(epoch FROM parley_tg_time(a, 'fromDate', ctx)))::bigint, 0),
        'maxDate', coalesce(ceil(extract(epoch FROM parley_tg_time(a, 'toDate', ctx)))::bigint, 0));
END
$$;
