-- telegram/user: the TDLib user connector's store side: its accounts
-- (kind 'telegram_user', the login name as handle, phone and session
-- directory in accounts.extra), TDLib's users, chats and messages mapped
-- onto the store, deletions, the history backfill's pages (jobs of class
-- 'telegram.history') and a sent message's final form.
--
-- TDLib's message ids are the server id * 2^20 (1048576); the store keeps
-- the server id, as exports and the Bot API do, so a message seen through
-- an export, the bot and the account is one row. A TDLib id that is not a
-- multiple of 2^20 is a local or pending message: never stored. Chat ids
-- follow the Bot API convention already. Messages are mapped into the bot's
-- parley_bot_msg rows and stored by the one upsert both share
-- (parley_tg_msgs_store, telegram/bot.sql): an older version never
-- overwrites a newer one.

-- The server id of TDLib message id p (NULL for a local or pending one).
CREATE OR REPLACE FUNCTION parley_tdu_server_id(p jsonb) RETURNS bigint
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN (p #>> '{}') ~ '^[0-9]{1,19}$' AND (p #>> '{}')::numeric % 1048576 = 0
                     AND (p #>> '{}')::numeric > 0
                THEN ((p #>> '{}')::numeric / 1048576)::bigint END
$$;

-- A jsonb number or numeric string as bigint (TDLib writes int64 fields as
-- strings), else NULL.
CREATE OR REPLACE FUNCTION parley_tdu_int(p jsonb) RETURNS bigint
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN (p #>> '{}') ~ '^-?[0-9]{1,18}$' THEN (p #>> '{}')::bigint END
$$;

-- Whether a content @type is a service message's (members joined or left,
-- a pin, a title, a topic, a call, ...).
CREATE OR REPLACE FUNCTION parley_tdu_is_service(ct text) RETURNS boolean
    LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(ct ~ ('^message(Chat|ForumTopic|VideoChat|PinMessage|BasicGroupChatCreate|'
                          'SupergroupChatCreate|ContactRegistered|ScreenshotTaken|'
                          'CustomServiceAction|GameScore|Payment|Gift|PremiumGift|Bot|'
                          'UsersShared|ProximityAlertTriggered|InviteVideoChatParticipants|'
                          'SuggestProfilePhoto|Call|ExpiredPhoto|ExpiredVideo|WebAppDataSent|'
                          'PassportDataSent|GiveawayCreated|GiveawayCompleted)'), false)
$$;

-- The media kind of a message content's @type: NULL for text and service
-- messages, 'other' for a content the store has no kind for.
CREATE OR REPLACE FUNCTION parley_tdu_media_kind(ct text) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE ct
        WHEN 'messageText' THEN NULL
        WHEN 'messagePhoto' THEN 'photo' WHEN 'messageVideo' THEN 'video'
        WHEN 'messageDocument' THEN 'document' WHEN 'messageAudio' THEN 'audio'
        WHEN 'messageVoiceNote' THEN 'voice' WHEN 'messageAnimation' THEN 'animation'
        WHEN 'messageVideoNote' THEN 'video_note' WHEN 'messageSticker' THEN 'sticker'
        WHEN 'messageContact' THEN 'contact' WHEN 'messageLocation' THEN 'location'
        WHEN 'messageVenue' THEN 'venue' WHEN 'messagePoll' THEN 'poll'
        WHEN 'messageDice' THEN 'dice' WHEN 'messageGame' THEN 'game'
        WHEN 'messageInvoice' THEN 'invoice' WHEN 'messageStory' THEN 'story'
        WHEN 'messageChecklist' THEN 'todo'
        ELSE CASE WHEN parley_tdu_is_service(ct) THEN NULL ELSE 'other' END
    END
$$;

-- TDLib's textEntity list in the Bot API's shape ({type, offset, length,
-- url, user_id, language, custom_emoji_id}), NULL when empty; offsets are
-- UTF-16 units in both.
CREATE OR REPLACE FUNCTION parley_tdu_entities(ents jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT nullif(coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               'type', CASE t WHEN 'TextUrl' THEN 'text_link' WHEN 'MentionName' THEN 'text_mention'
                              WHEN 'PreCode' THEN 'pre' WHEN 'EmailAddress' THEN 'email'
                              ELSE lower(regexp_replace(t, '([a-z0-9])([A-Z])', '\1_\2', 'g')) END,
               'offset', (e ->> 'offset')::integer, 'length', (e ->> 'length')::integer,
               'url', e -> 'type' ->> 'url', 'user_id', parley_tdu_int(e -> 'type' -> 'user_id'),
               'language', e -> 'type' ->> 'language',
               'custom_emoji_id', e -> 'type' ->> 'custom_emoji_id')) ORDER BY o), '[]'), '[]')
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(ents) = 'array' THEN ents ELSE '[]' END)
         WITH ORDINALITY AS x(e, o),
         LATERAL (SELECT substr(e -> 'type' ->> '@type', length('textEntityType') + 1)) AS y(t)
$$;

-- The file of a content whose media kind is k, as the Bot API describes one
-- (file_id: TDLib's remote id, the same persistent form), for the media
-- queue; NULL when the content has none.
CREATE OR REPLACE FUNCTION parley_tdu_file(c jsonb, k text) RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN f IS NOT NULL THEN jsonb_strip_nulls(jsonb_build_object(
               'file_id', f -> 'remote' ->> 'id', 'file_unique_id', f -> 'remote' ->> 'unique_id',
               'file_size', nullif(coalesce(parley_tdu_int(f -> 'size'), 0), 0),
               'mime_type', o ->> 'mime_type',
               'width', coalesce(o -> 'width', o -> 'length'), 'height', coalesce(o -> 'height', o -> 'length'),
               'duration', o -> 'duration', 'file_name', nullif(o ->> 'file_name', ''),
               'emoji', o -> 'emoji')) END
    FROM (SELECT CASE k WHEN 'photo' THEN c -> 'photo' -> 'sizes' -> -1
                        WHEN 'voice' THEN c -> 'voice_note' ELSE c -> k END) AS x(o),
         LATERAL (SELECT CASE WHEN k IN ('photo', 'video', 'document', 'audio', 'voice',
                                         'animation', 'video_note', 'sticker')
                              THEN o -> CASE k WHEN 'video_note' THEN 'video' ELSE k END END
                         ) AS y(f)
    WHERE jsonb_typeof(f) = 'object'
$$;

-- TDLib message objects mapped to the store's rows: local and pending
-- messages (and malformed objects) are left out, and so are messages of a
-- chat stored as another source's. A later element is the later version
-- of a message on a tie (update_id: its position).
CREATE OR REPLACE FUNCTION parley_tdu_map(msgs jsonb) RETURNS SETOF parley_bot_msg
    LANGUAGE sql STABLE AS $$
    SELECT x.o, x.m, k.chat_id, k.id,
           CASE WHEN k.ct = 'messageForumTopicCreated' THEN k.id
                WHEN ch.kind = 'forum' THEN parley_tdu_server_id(x.m -> 'message_thread_id') END,
           k.sender_id,
           CASE WHEN x.m -> 'sender_id' ->> '@type' = 'messageSenderChat'
                THEN (SELECT s.title FROM chats s WHERE s.id = k.sender_id)
                ELSE (SELECT nullif(btrim(concat_ws(' ', u.first_name, u.last_name)), '')
                      FROM users u WHERE u.id = k.sender_id) END,
           to_timestamp((m ->> 'date')::bigint),
           CASE WHEN coalesce(parley_tdu_int(m -> 'edit_date'), 0) > 0
                THEN to_timestamp(parley_tdu_int(m -> 'edit_date')) END,
           t.text, t.entities, r.id,
           coalesce(k.fo ->> 'sender_name',
                    (SELECT nullif(btrim(concat_ws(' ', u.first_name, u.last_name)), '')
                     FROM users u WHERE u.id = parley_tdu_int(k.fo -> 'sender_user_id')),
                    (SELECT s.title FROM chats s
                     WHERE s.id = coalesce(parley_tdu_int(k.fo -> 'sender_chat_id'),
                                           parley_tdu_int(k.fo -> 'chat_id')))),
           mkx.mk,
           coalesce(t.entities @? '$[*] ? (@.type == "url" || @.type == "text_link")', false)
               OR coalesce(strpos(t.text, '://') > 0 AND t.text ~* 'https?://', false),
           CASE WHEN parley_tdu_is_service(k.ct) THEN 'service' ELSE 'message' END,
           CASE WHEN parley_tdu_is_service(k.ct) THEN jsonb_build_object('type', k.ct) END,
           nullif(jsonb_strip_nulls(jsonb_build_object(
               'poll', k.c -> 'poll', 'location', k.c -> 'location', 'venue', k.c -> 'venue',
               'contact', k.c -> 'contact', 'dice', CASE WHEN k.ct = 'messageDice' THEN k.c END,
               'author_signature', nullif(x.m ->> 'author_signature', ''),
               'forward_origin', k.fo)), '{}'::jsonb),
           CASE WHEN f.file IS NOT NULL THEN mkx.mk END, f.file,
           CASE WHEN r.chat_id IS DISTINCT FROM k.chat_id AND r.chat_id <> 0 THEN r.chat_id END,
           coalesce((x.m ->> 'is_outgoing')::boolean, false)
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(msgs) = 'array' THEN msgs ELSE '[]' END)
         WITH ORDINALITY AS x(m, o)
    CROSS JOIN LATERAL (SELECT parley_tdu_int(m -> 'chat_id'), parley_tdu_server_id(m -> 'id'),
                               m -> 'content', m -> 'content' ->> '@type',
                               coalesce(parley_tdu_int(m -> 'sender_id' -> 'user_id'),
                                        parley_tdu_int(m -> 'sender_id' -> 'chat_id')),
                               coalesce(m -> 'forward_info' -> 'origin', m -> 'forward_info'))
        AS k(chat_id, id, c, ct, sender_id, fo)
    CROSS JOIN LATERAL (SELECT coalesce(k.c -> 'text', k.c -> 'caption')) AS ft(ft)
    CROSS JOIN LATERAL (SELECT nullif(ft.ft ->> 'text', ''),
                               parley_tdu_entities(ft.ft -> 'entities')) AS t(text, entities)
    CROSS JOIN LATERAL (SELECT parley_tdu_media_kind(k.ct)) AS mkx(mk)
    CROSS JOIN LATERAL (SELECT parley_tdu_file(k.c, mkx.mk)) AS f(file)
    CROSS JOIN LATERAL (SELECT CASE WHEN m -> 'reply_to' ->> '@type' = 'messageReplyToMessage'
                                    THEN parley_tdu_int(m -> 'reply_to' -> 'chat_id')
                                    ELSE parley_tdu_int(m -> 'reply_in_chat_id') END,
                               parley_tdu_server_id(coalesce(m -> 'reply_to' -> 'message_id',
                                                             m -> 'reply_to_message_id'))) AS r(chat_id, id)
    LEFT JOIN chats ch ON ch.id = k.chat_id
    WHERE k.chat_id IS NOT NULL AND k.id IS NOT NULL AND parley_tdu_int(x.m -> 'date') IS NOT NULL
      AND (ch.id IS NULL OR ch.kind = ANY (parley_source_kinds('telegram')))
$$;

-- Upserts TDLib user objects; only changed rows are touched. Returns the
-- number inserted or changed.
CREATE OR REPLACE FUNCTION parley_tdu_users(users jsonb) RETURNS integer
    LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    INSERT INTO users AS u (id, first_name, last_name, username, phone, is_bot, is_contact,
                            is_deleted)
    SELECT DISTINCT ON (id) id, nullif(e ->> 'first_name', ''), nullif(e ->> 'last_name', ''),
           e -> 'usernames' -> 'active_usernames' ->> 0, nullif(e ->> 'phone_number', ''),
           coalesce(e -> 'type' ->> '@type' = 'userTypeBot', false),
           coalesce((e ->> 'is_contact')::boolean, false),
           coalesce(e -> 'type' ->> '@type' = 'userTypeDeleted', false)
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(users) = 'array' THEN users ELSE '[]' END)
         WITH ORDINALITY AS x(e, o),
         LATERAL (SELECT parley_tdu_int(e -> 'id')) AS y(id)
    WHERE id > 0
    ORDER BY id, o DESC
    ON CONFLICT (id) DO UPDATE
        SET first_name = EXCLUDED.first_name, last_name = EXCLUDED.last_name,
            username = EXCLUDED.username, phone = coalesce(EXCLUDED.phone, u.phone),
            is_bot = EXCLUDED.is_bot, is_contact = EXCLUDED.is_contact,
            is_deleted = EXCLUDED.is_deleted, updated_at = now()
        WHERE (u.first_name, u.last_name, u.username, u.phone, u.is_bot, u.is_contact,
               u.is_deleted) IS DISTINCT FROM
              (EXCLUDED.first_name, EXCLUDED.last_name, EXCLUDED.username,
               coalesce(EXCLUDED.phone, u.phone), EXCLUDED.is_bot, EXCLUDED.is_contact,
               EXCLUDED.is_deleted);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- The account signed in as handle p_handle (the login name: the phone by
-- default), me its TDLib user (getMe; NULL keeps what is stored), p_extra
-- merged into accounts.extra (phone, session_path, ...), p_credentials
-- replacing the stored ones unless NULL. The first one is the default.
-- One Telegram user is one account: when an earlier account (a lower id)
-- holds me's user id under another handle, this one is refused naming it
-- (SQLSTATE 23505), so a second sign-in of the same user under a new name
-- stores nothing (and accounts made that way before start no more).
-- Returns accounts.id.
CREATE OR REPLACE FUNCTION parley_tdu_account(p_handle text, me jsonb, p_extra jsonb,
                                              p_credentials bytea) RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
    v_other text;
    v_extra jsonb := jsonb_strip_nulls(jsonb_build_object(
        'phone', nullif(me ->> 'phone_number', ''))) || coalesce(p_extra, '{}');
BEGIN
    IF me ->> 'id' IS NOT NULL THEN
        -- Two sign-ins of one user at once: one after the other.
        PERFORM pg_advisory_xact_lock(hashtextextended('parley_tdu_account:' || (me ->> 'id'), 0));
        SELECT o.handle INTO v_other FROM accounts o
        WHERE o.kind = 'telegram_user' AND o.external_id = me ->> 'id' AND o.handle <> p_handle
          AND o.id < coalesce((SELECT a.id FROM accounts a
                               WHERE a.kind = 'telegram_user' AND a.handle = p_handle),
                              9223372036854775807)
        ORDER BY o.id LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'the Telegram user % is signed in already as the account ''%''; '
                            'one user is one account: use that one (or sign it out first)',
                            me ->> 'id', v_other
                USING ERRCODE = 'unique_violation';
        END IF;
    END IF;
    INSERT INTO accounts AS a (kind, handle, external_id, display_name, is_default,
                               last_login_at, credentials, extra)
    VALUES ('telegram_user', p_handle, me ->> 'id',
            nullif(btrim(concat_ws(' ', me ->> 'first_name', me ->> 'last_name')), ''),
            NOT EXISTS (SELECT 1 FROM accounts WHERE kind = 'telegram_user' AND is_default), now(),
            p_credentials, v_extra)
    ON CONFLICT (kind, handle) DO UPDATE
        SET external_id = coalesce(EXCLUDED.external_id, a.external_id),
            display_name = coalesce(EXCLUDED.display_name, a.display_name),
            credentials = coalesce(EXCLUDED.credentials, a.credentials),
            extra = coalesce(a.extra, '{}') || EXCLUDED.extra,
            last_login_at = now(), updated_at = now()
    RETURNING id INTO v_id;
    IF jsonb_typeof(me) = 'object' THEN
        PERFORM parley_tdu_users(jsonb_build_array(me));
    END IF;
    RETURN v_id;
END
$$;

CREATE OR REPLACE FUNCTION parley_tdu_account_json(a accounts) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('id', a.id, 'handle', a.handle, 'external_id', a.external_id,
                              'default', a.is_default, 'last_login_at', a.last_login_at,
                              'credentials', translate(encode(a.credentials, 'base64'), E'\n', ''),
                              'extra', coalesce(a.extra, '{}'))
$$;

-- The telegram_user account with handle p_handle (the default one when
-- NULL or ''), with its sealed credentials (base64, or null) for the
-- connector; NULL when there is none.
CREATE OR REPLACE FUNCTION parley_tdu_account_get(p_handle text) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT parley_tdu_account_json(a) FROM accounts a
    WHERE a.kind = 'telegram_user'
      AND CASE WHEN coalesce(p_handle, '') = '' THEN a.is_default ELSE a.handle = p_handle END
    ORDER BY a.is_default DESC, a.id
    LIMIT 1
$$;

-- The enabled telegram_user accounts, the default first.
CREATE OR REPLACE FUNCTION parley_tdu_accounts() RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(parley_tdu_account_json(a) ORDER BY a.is_default DESC, a.id), '[]')
    FROM accounts a WHERE a.kind = 'telegram_user' AND a.enabled
$$;

-- Stores TDLib messages for account p_account (see parley_tdu_map): a chat
-- not stored yet gets a row of the kind its id tells (chats normally come
-- first, parley_tdu_chats), forum topics their row, the messages and their
-- files the bot's upsert. given: the messages stored or already there;
-- changed: the rows inserted or changed; inserted: the new ones.
CREATE OR REPLACE FUNCTION parley_tdu_store(p_account bigint, msgs jsonb,
                                            OUT given integer, OUT changed integer,
                                            OUT inserted integer)
    LANGUAGE plpgsql AS $$
DECLARE
    v parley_bot_msg[];
BEGIN
    INSERT INTO chats AS x (id, account_id, kind, extra)
    SELECT DISTINCT id, p_account,
           CASE WHEN id > 0 THEN 'private' WHEN id > -1000000000000 THEN 'group'
                ELSE 'supergroup' END,
           jsonb_build_object('source', 'telegram_user')
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(msgs) = 'array' THEN msgs ELSE '[]' END) AS e(m),
         LATERAL (SELECT parley_tdu_int(m -> 'chat_id')) AS y(id)
    WHERE id IS NOT NULL AND parley_tdu_server_id(m -> 'id') IS NOT NULL
    ORDER BY id
    ON CONFLICT (id) DO UPDATE SET account_id = EXCLUDED.account_id, updated_at = now()
        WHERE x.account_id IS NULL AND x.kind = ANY (parley_source_kinds('telegram'));
    v := parley_tg_msgs_ours(ARRAY(SELECT x FROM parley_tdu_map(msgs) AS x), p_account);
    INSERT INTO topics (chat_id, id, title, icon_color, creator_id, created_date)
    SELECT DISTINCT ON (chat_id, id) chat_id, id, coalesce(m -> 'content' ->> 'name', ''),
           (m -> 'content' -> 'icon' ->> 'color')::integer, sender_id, date
    FROM unnest(v)
    WHERE m -> 'content' ->> '@type' = 'messageForumTopicCreated'
    ORDER BY chat_id, id, update_id
    ON CONFLICT (chat_id, id) DO NOTHING;
    given := (SELECT count(DISTINCT (chat_id, id)) FROM unnest(v));
    SELECT s.changed, s.inserted INTO changed, inserted FROM parley_tg_msgs_store(v, false) AS s;
END
$$;

-- Stores TDLib messages (new, edited, a history page, a chat's last one);
-- returns the number of rows inserted or changed.
CREATE OR REPLACE FUNCTION parley_tdu_messages(p_account bigint, msgs jsonb) RETURNS integer
    LANGUAGE sql AS $$
    SELECT changed FROM parley_tdu_store(p_account, msgs)
$$;

-- Upserts TDLib chat objects for account p_account (its account when the
-- chat has none), and stores each one's last_message. A chat stored as
-- another source's is left alone; a forum stays a forum. A partial object
-- (an update of the title or of the read state: {id, title} or {id,
-- unread_count, last_read_inbox_message_id}) changes only what it has.
-- Returns the number of chats inserted or changed.
CREATE OR REPLACE FUNCTION parley_tdu_chats(p_account bigint, chats jsonb) RETURNS integer
    LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    INSERT INTO chats AS x (id, account_id, kind, title, unread_count, read_inbox_max_id,
                            read_outbox_max_id, active, extra)
    SELECT DISTINCT ON (y.id) y.id, p_account,
           coalesce(CASE c -> 'type' ->> '@type'
                        WHEN 'chatTypePrivate' THEN 'private' WHEN 'chatTypeSecret' THEN 'private'
                        WHEN 'chatTypeBasicGroup' THEN 'group'
                        WHEN 'chatTypeSupergroup' THEN
                            CASE WHEN coalesce((c -> 'type' ->> 'is_channel')::boolean, false)
                                 THEN 'channel' ELSE 'supergroup' END END,
                    o0.kind, CASE WHEN y.id > 0 THEN 'private'
                                  WHEN y.id > -1000000000000 THEN 'group' ELSE 'supergroup' END),
           nullif(c ->> 'title', ''),
           coalesce((c ->> 'unread_count')::integer, o0.unread_count, 0),
           parley_tdu_server_id(c -> 'last_read_inbox_message_id'),
           parley_tdu_server_id(c -> 'last_read_outbox_message_id'), true,
           jsonb_build_object('source', 'telegram_user')
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(chats) = 'array' THEN chats ELSE '[]' END)
         WITH ORDINALITY AS e(c, o)
    CROSS JOIN LATERAL (SELECT parley_tdu_int(c -> 'id')) AS y(id)
    LEFT JOIN chats o0 ON o0.id = y.id
    WHERE y.id IS NOT NULL AND y.id <> 0
    ORDER BY y.id, e.o DESC
    ON CONFLICT (id) DO UPDATE
        SET account_id = coalesce(x.account_id, EXCLUDED.account_id),
            kind = CASE WHEN x.kind = 'forum' AND EXCLUDED.kind = 'supergroup' THEN x.kind
                        ELSE EXCLUDED.kind END,
            title = coalesce(EXCLUDED.title, x.title), unread_count = EXCLUDED.unread_count,
            read_inbox_max_id = coalesce(EXCLUDED.read_inbox_max_id, x.read_inbox_max_id),
            read_outbox_max_id = coalesce(EXCLUDED.read_outbox_max_id, x.read_outbox_max_id),
            extra = EXCLUDED.extra || coalesce(x.extra, '{}'), updated_at = now()
        WHERE x.kind = ANY (parley_source_kinds('telegram'))
          AND (x.account_id IS NULL
               OR (x.kind, x.title, x.unread_count, x.read_inbox_max_id, x.read_outbox_max_id)
                  IS DISTINCT FROM
                  (CASE WHEN x.kind = 'forum' AND EXCLUDED.kind = 'supergroup' THEN x.kind
                        ELSE EXCLUDED.kind END, coalesce(EXCLUDED.title, x.title),
                   EXCLUDED.unread_count,
                   coalesce(EXCLUDED.read_inbox_max_id, x.read_inbox_max_id),
                   coalesce(EXCLUDED.read_outbox_max_id, x.read_outbox_max_id))
               OR NOT coalesce(x.extra, '{}') ? 'source');
    GET DIAGNOSTICS n = ROW_COUNT;
    PERFORM parley_tdu_messages(p_account, (
        SELECT jsonb_agg(c -> 'last_message')
        FROM jsonb_array_elements(CASE WHEN jsonb_typeof(chats) = 'array' THEN chats ELSE '[]' END)
             AS e(c)
        WHERE jsonb_typeof(c -> 'last_message') = 'object'));
    RETURN n;
END
$$;

-- updateDeleteMessages: deletes chat p_chat's messages of TDLib ids p_ids
-- (a json array) only when p_permanent and not p_from_cache (TDLib
-- evicting its cache is no deletion). Their files' rows go with them
-- (media's foreign key); a chat's or topic's last message moves to the
-- newest one left. Returns the number of messages deleted.
CREATE OR REPLACE FUNCTION parley_tdu_delete(p_chat bigint, p_ids jsonb, p_permanent boolean,
                                             p_from_cache boolean) RETURNS integer
    LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    IF NOT coalesce(p_permanent, false) OR coalesce(p_from_cache, false) THEN
        RETURN 0;
    END IF;
    DELETE FROM messages m
    WHERE m.chat_id = p_chat
      AND m.id IN (SELECT parley_tdu_server_id(e)
                   FROM jsonb_array_elements(CASE WHEN jsonb_typeof(p_ids) = 'array' THEN p_ids
                                                  ELSE '[]' END) AS x(e))
      AND EXISTS (SELECT 1 FROM chats c
                  WHERE c.id = p_chat AND c.kind = ANY (parley_source_kinds('telegram')));
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        UPDATE chats c SET last_message_id = l.id, last_message_date = l.date, updated_at = now()
        FROM (SELECT (SELECT m.id FROM messages m WHERE m.chat_id = p_chat
                      ORDER BY m.date DESC, m.id DESC LIMIT 1) AS id,
                     (SELECT max(m.date) FROM messages m WHERE m.chat_id = p_chat) AS date) AS l
        WHERE c.id = p_chat AND c.last_message_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM messages m
                          WHERE m.chat_id = p_chat AND m.id = c.last_message_id);
        UPDATE topics t SET last_message_id = NULL, last_message_date = NULL, updated_at = now()
        WHERE t.chat_id = p_chat AND t.last_message_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM messages m
                          WHERE m.chat_id = p_chat AND m.id = t.last_message_id);
    END IF;
    RETURN n;
END
$$;

-- One page of a 'telegram.history' job: stores p_msgs (always: they are
-- the chat's messages whoever asked), and, while job p_job is still in
-- progress under daemon p_owner, sets its cursor to p_cursor, adds the
-- page's messages to fetched (every stored message of the page, new or
-- already in the store: depth counts the chat's messages walked, so a
-- chat partly stored by an export or the bot backfills to the same depth)
-- and extends the lease by 120 s, in the same transaction. Returns
-- {"stored": rows inserted or changed, "fetched": the job's total,
-- "active": false when the job was canceled or taken: the executor stops}.
CREATE OR REPLACE FUNCTION parley_tdu_history_page(p_job bigint, p_owner text, p_account bigint,
                                                   p_msgs jsonb, p_cursor jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    s record;
    v_fetched bigint;
    v_active boolean;
BEGIN
    SELECT * INTO s FROM parley_tdu_store(p_account, p_msgs);
    UPDATE sync_jobs j
    SET cursor = p_cursor, fetched = j.fetched + s.given,
        lease_expires_at = now() + interval '120 seconds', last_run_at = now(), updated_at = now()
    WHERE j.id = p_job AND j.status = 'in_progress' AND j.lease_owner = p_owner
    RETURNING j.fetched INTO v_fetched;
    v_active := FOUND;
    IF NOT v_active THEN
        SELECT j.fetched INTO v_fetched FROM sync_jobs j WHERE j.id = p_job;
    END IF;
    RETURN jsonb_build_object('stored', s.changed, 'fetched', coalesce(v_fetched, 0),
                              'active', v_active);
END
$$;

-- A sent message's final form (updateMessageSendSucceeded: msg, whose
-- temporary id was p_old_id), stored as outgoing. Returns it as the send
-- path hands a sent message to the telegram toolset (the Bot API's
-- Message: message_id, chat.id, date, text), NULL when msg is not a sent
-- server message.
CREATE OR REPLACE FUNCTION parley_tdu_sent(p_account bigint, p_old_id bigint, msg jsonb)
    RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_chat bigint := parley_tdu_int(msg -> 'chat_id');
    v_id bigint := parley_tdu_server_id(msg -> 'id');
    v_old bigint := parley_tdu_server_id(to_jsonb(p_old_id));
BEGIN
    IF v_chat IS NULL OR v_id IS NULL THEN
        RETURN NULL;
    END IF;
    -- A temporary id is never a server id; should one have been stored,
    -- the final message replaces it.
    IF v_old IS NOT NULL AND v_old <> v_id THEN
        DELETE FROM messages WHERE chat_id = v_chat AND id = v_old;
    END IF;
    PERFORM parley_tdu_store(p_account, jsonb_build_array(msg || '{"is_outgoing": true}'));
    RETURN (SELECT jsonb_strip_nulls(jsonb_build_object(
                'message_id', m.id, 'chat', jsonb_build_object('id', m.chat_id),
                'date', extract(epoch FROM m.date)::bigint, 'text', m.text,
                'message_thread_id', m.topic_id))
            FROM messages m WHERE m.chat_id = v_chat AND m.id = v_id);
END
$$;

-- Applies the connector's store operations in their order
-- (src/upstream/telegram/user/tg_user_account.c): {"op": "chats", "chats": [chat]},
-- {"op": "users", "users": [user]}, {"op": "messages", "messages":
-- [message]}, {"op": "delete", "chat_id", "message_ids", "is_permanent",
-- "from_cache"}. Neighbouring operations of one kind are applied together.
-- Returns the rows inserted or changed.
CREATE OR REPLACE FUNCTION parley_tdu_apply(p_account bigint, ops jsonb) RETURNS integer
    LANGUAGE plpgsql AS $$
DECLARE
    o jsonb;
    kind text;
    run_kind text;
    run jsonb := '[]';
    n integer := 0;
BEGIN
    FOR o IN SELECT value FROM jsonb_array_elements(ops) LOOP
        kind := o ->> 'op';
        IF run_kind IS DISTINCT FROM kind AND jsonb_array_length(run) > 0 THEN
            n := n + parley_tdu_apply_run(p_account, run_kind, run);
            run := '[]';
        END IF;
        run_kind := kind;
        IF kind = 'delete' AND parley_tg_chat_ours((o ->> 'chat_id')::bigint, p_account) THEN
            n := n + parley_tdu_delete((o ->> 'chat_id')::bigint, o -> 'message_ids',
                                       coalesce((o ->> 'is_permanent')::boolean, false),
                                       coalesce((o ->> 'from_cache')::boolean, false));
            run_kind := NULL;
        ELSIF kind IN ('chats', 'users', 'messages') THEN
            run := run || coalesce(o -> kind, '[]');
        END IF;
    END LOOP;
    IF jsonb_array_length(run) > 0 THEN
        n := n + parley_tdu_apply_run(p_account, run_kind, run);
    END IF;
    RETURN n;
END
$$;

CREATE OR REPLACE FUNCTION parley_tdu_apply_run(p_account bigint, kind text, items jsonb)
    RETURNS integer LANGUAGE sql AS $$
    SELECT CASE kind
        WHEN 'chats' THEN parley_tdu_chats(p_account, items)
        WHEN 'users' THEN parley_tdu_users(items)
        WHEN 'messages' THEN parley_tdu_messages(p_account, items)
        ELSE 0 END
$$;
