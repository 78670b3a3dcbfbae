-- inline/conversations: conversations_list (recent chats, and the lookup
-- of a chat by a person's name, a title or an id, ranked) and
-- conversations_get.
--
-- Ranking. The query and each field are folded (parley_inline_fold: case,
-- accents and punctuation do not matter). A field matches
--   exactly (the whole field)                         1.0
--   at a word start ("dena x" in "dena x mo")          0.7
--   anywhere inside                                    0.4
-- and counts with its weight: the DM peer's username 100, the peer's
-- display name (first and last name) 90, the peer's alias 85, the chat's
-- title 80. A chat's score is its best field's; a numeric query equal to
-- the chat id scores 1000. A direct chat gets +15 over groups and
-- channels, a chat left or deleted -30. Ties: score, then direct chats,
-- then the newest last message, then the chat id. bestMatch is the top
-- chat when it is alone or leads the next by at least 10.

-- How well folded query q matches field f: 1, 0.7, 0.4 or 0.
CREATE OR REPLACE FUNCTION parley_inline_match(f text, q text) RETURNS numeric
    LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN q = '' OR f IS NULL OR parley_inline_fold(f) = '' THEN 0
        WHEN parley_inline_fold(f) = q THEN 1
        WHEN ' ' || parley_inline_fold(f) LIKE '% ' || q || '%' THEN 0.7
        WHEN parley_inline_fold(f) LIKE '%' || q || '%' THEN 0.4
        ELSE 0 END::numeric
$$;

-- A chat's match for query q: {score, reasons}; score 0 when nothing
-- matched.
CREATE OR REPLACE FUNCTION parley_inline_rank(c chats, peer users, q text) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    fq text := parley_inline_fold(q);
    best numeric := 0;
    reasons text[] := '{}';
    mt numeric;
    f record;
BEGIN
    IF btrim(q) ~ '^-?\d+$' AND btrim(q)::numeric = c.id THEN
        RETURN jsonb_build_object('score', 1000, 'reasons', jsonb_build_array('chatId:exact'));
    END IF;
    FOR f IN SELECT * FROM (VALUES
            ('username', 100, peer.username), ('displayName', 90, parley_inline_user_name(peer)),
            ('alias', 85, peer.alias), ('title', 80, c.title)) AS v(name, weight, val)
    LOOP
        mt := parley_inline_match(f.val, fq);
        IF mt > 0 THEN
            reasons := reasons || (f.name || ':' || CASE WHEN mt >= 1 THEN 'exact'
                                                         WHEN mt >= 0.7 THEN 'wordPrefix'
                                                         ELSE 'substring' END);
            best := greatest(best, mt * f.weight);
        END IF;
    END LOOP;
    IF best > 0 AND c.kind = 'private' THEN
        best := best + 15;
        reasons := reasons || 'directChat'::text;
    END IF;
    IF best > 0 AND NOT c.active THEN
        best := best - 30;
        reasons := reasons || 'inactive'::text;
    END IF;
    RETURN jsonb_build_object('score', round(best::numeric, 1), 'reasons', to_jsonb(reasons));
END
$$;

-- A chat as the inline tools answer it (match may be NULL).
CREATE OR REPLACE FUNCTION parley_inline_chat_json(c chats, peer users, me bigint[], match jsonb)
    RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'chatId', c.id,
        'kind', CASE WHEN c.kind = 'private' THEN 'dm' WHEN c.kind = 'channel' THEN 'channel'
                     ELSE 'group' END,
        'title', c.title,
        'username', CASE WHEN c.username IS NOT NULL THEN '@' || c.username END,
        'peer', CASE WHEN peer.id IS NOT NULL THEN parley_inline_user_json(peer) END,
        'active', CASE WHEN NOT c.active THEN false END,
        'lastMessage', (SELECT jsonb_strip_nulls(jsonb_build_object(
                                   'messageId', m.id, 'date', m.date, 'senderName', m.sender_name,
                                   'out', m.outgoing OR m.sender_id = ANY (me),
                                   'snippet', left(m.text, 120)))
                        FROM messages m WHERE m.chat_id = c.id
                        ORDER BY m.date DESC, m.id DESC LIMIT 1),
        'unreadCount', parley_inline_unread(c, me),
        'uri', format('inline://chat/%s', c.id),
        'match', match))
$$;

CREATE OR REPLACE FUNCTION parley_inline_conversations_list(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    q text := nullif(btrim(a ->> 'query'), '');
    lim integer := parley_inline_limit(a, 20, 100);
    sort text := coalesce(a ->> 'sort', CASE WHEN q IS NULL THEN 'recent' ELSE 'relevance' END);
    unread_only boolean := coalesce((a ->> 'unreadOnly')::boolean, false);
    me bigint[] := parley_inline_me();
    items jsonb;
    best jsonb;
BEGIN
    WITH cand AS (
        SELECT c, p, CASE WHEN q IS NULL THEN NULL ELSE parley_inline_rank(c, p, q) END AS mt,
               parley_inline_unread(c, me) AS unread
        FROM chats c
        LEFT JOIN users p ON c.kind = 'private' AND p.id = c.id
        WHERE c.kind = ANY (parley_source_kinds('telegram'))
    ), ranked AS (
        SELECT *, coalesce((mt ->> 'score')::numeric, 0) AS score FROM cand
        WHERE (q IS NULL OR (mt ->> 'score')::numeric > 0) AND (NOT unread_only OR unread > 0)
          AND (q IS NOT NULL OR (c).active)
    ), ordered AS (
        SELECT *,
               row_number() OVER (ORDER BY CASE WHEN sort = 'relevance' THEN score END DESC NULLS LAST,
                                           CASE WHEN sort = 'unread' THEN unread END DESC NULLS LAST,
                                           CASE WHEN sort = 'relevance' THEN (c).kind = 'private' END
                                               DESC NULLS LAST,
                                           (c).last_message_date DESC NULLS LAST, (c).id) AS o,
               row_number() OVER (ORDER BY score DESC, (c).kind = 'private' DESC,
                                           (c).last_message_date DESC NULLS LAST, (c).id) AS rn
        FROM ranked
    )
    SELECT coalesce(jsonb_agg(parley_inline_chat_json(c, p, me, mt) ORDER BY o)
                        FILTER (WHERE o <= lim), '[]'),
           CASE WHEN q IS NULL OR count(*) = 0 THEN 'null'::jsonb
                WHEN count(*) = 1 OR max(score) FILTER (WHERE rn = 1)
                                     - max(score) FILTER (WHERE rn = 2) >= 10
                    THEN to_jsonb(max((c).id) FILTER (WHERE rn = 1))
                ELSE 'null'::jsonb END
    INTO items, best
    FROM ordered;
    RETURN jsonb_build_object('items', items, 'limit', lim, 'sort', sort,
                              'bestMatch', coalesce(best, 'null'::jsonb));
END
$$;

CREATE OR REPLACE FUNCTION parley_inline_conversations_get(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    chat bigint := parley_inline_chat(a);
    me bigint[] := parley_inline_me();
BEGIN
    RETURN (SELECT parley_inline_chat_json(c, p, me, NULL) || jsonb_strip_nulls(jsonb_build_object(
                'about', c.about, 'memberCount', c.member_count,
                'messageCount', (SELECT count(*) FROM messages m WHERE m.chat_id = c.id),
                'firstMessageDate', (SELECT min(date) FROM messages m WHERE m.chat_id = c.id),
                'readMaxId', c.read_inbox_max_id))
            FROM chats c LEFT JOIN users p ON c.kind = 'private' AND p.id = c.id
            WHERE c.id = chat);
END
$$;

-- The Telegram chat an inline://chat URI names (a = {"uri", "vars"}:
-- chatId, and messageId for a message's URI), whether or not the message
-- is there; NULL when its ids are not ids or there is no such chat of a
-- message service (src/db/sql/sources.sql).
CREATE OR REPLACE FUNCTION parley_inline_uri_chat(a jsonb) RETURNS bigint
    LANGUAGE sql STABLE AS $$
    SELECT c.id FROM chats c
    WHERE c.id = CASE WHEN a #>> '{vars,chatId}' ~ '^-?\d{1,18}$'
                           AND coalesce(a #>> '{vars,messageId}' ~ '^\d{1,18}$', true)
                      THEN (a #>> '{vars,chatId}')::bigint END
      AND c.kind = ANY (parley_source_kinds('telegram'))
$$;

-- inline://chat/{chatId}, inline://chat/{chatId}/message/{messageId} and
-- inline://file/{fileId} (resources/read): a = {"uri", "vars"}; the ReadResourceResult, or JSON
-- null when there is no such chat or message (or it is another source's
-- than Telegram).
CREATE OR REPLACE FUNCTION parley_inline_resource(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    me bigint[] := parley_inline_me();
    chat bigint;
    body jsonb;
BEGIN
    IF a #>> '{vars,fileId}' IS NOT NULL THEN
        body := (SELECT parley_upload_json(u) FROM uploads u WHERE u.id = a #>> '{vars,fileId}');
    ELSE
        chat := parley_inline_uri_chat(a);
        IF a #>> '{vars,messageId}' IS NULL THEN
            body := (SELECT parley_inline_chat_json(c, p, me, NULL) FROM chats c
                     LEFT JOIN users p ON c.kind = 'private' AND p.id = c.id
                     WHERE c.id = chat);
        ELSIF chat IS NOT NULL THEN
            body := (SELECT parley_inline_message_json(m, me, NULL) FROM messages m
                     WHERE m.chat_id = chat AND m.id = (a #>> '{vars,messageId}')::bigint);
        END IF;
    END IF;
    IF body IS NULL THEN
        RETURN 'null';
    END IF;
    RETURN jsonb_build_object('contents', jsonb_build_array(jsonb_build_object(
        'uri', a ->> 'uri', 'mimeType', 'application/json', 'text', body::text)));
END
$$;

-- Whether an inline:// resource may be watched (resources/subscribe,
-- subscriptions/listen; src/toolsets/inline/inline.c): a chat of a message
-- service (the source parley_inline_resource reads), for a message URI
-- too, whether or not the message is there yet; an upload that exists.
-- {"contents": []} when it may, JSON null (not found) when not: a chat of
-- another source (ChatWise, an agent session, Bluesky) is never watched
-- through inline, whoever asks.
CREATE OR REPLACE FUNCTION parley_inline_resource_watch(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    file text := a #>> '{vars,fileId}';
BEGIN
    IF file IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM uploads u WHERE u.id = file) THEN
            RETURN '{"contents": []}';
        END IF;
        RETURN 'null';
    END IF;
    IF parley_inline_uri_chat(a) IS NOT NULL THEN
        RETURN '{"contents": []}';
    END IF;
    RETURN 'null';
END
$$;

-- conversations_create without a connector: what the archive offers.
CREATE OR REPLACE FUNCTION parley_inline_conversations_create(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_needs_connector('conversations_create',
        'create the chat in a Telegram app; once the account is in it, conversations_list '
        'finds it');
END
$$;
