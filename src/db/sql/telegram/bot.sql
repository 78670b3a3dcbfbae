-- telegram/bot: the Telegram Bot API connector's store side
-- (src/upstream/telegram/bot/tg_bot.c, tg_media.c, tg_jobs.c): the bot's account and
-- update offset, staging a getUpdates batch with its offset in one
-- transaction and applying the staged batches, the media download queue,
-- chat metadata, and the poller lease (one poller per bot across daemons).

-- The bot account from getMe; returns its accounts.id.
CREATE OR REPLACE FUNCTION parley_bot_account(me jsonb, api_url text) RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    INSERT INTO accounts AS a (kind, handle, external_id, display_name, base_url, is_default,
                               last_login_at)
    VALUES ('telegram_bot', coalesce(me ->> 'username', me ->> 'id'), me ->> 'id',
            me ->> 'first_name', api_url,
            NOT EXISTS (SELECT 1 FROM accounts WHERE kind = 'telegram_bot' AND is_default), now())
    ON CONFLICT (kind, handle) DO UPDATE
        SET external_id = EXCLUDED.external_id, display_name = EXCLUDED.display_name,
            base_url = EXCLUDED.base_url, last_login_at = now(), updated_at = now()
    RETURNING id INTO v_id;
    RETURN v_id;
END
$$;

-- The stored offset of the account's update stream (0 when none).
CREATE OR REPLACE FUNCTION parley_bot_offset(p_account bigint) RETURNS bigint
    LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT (cursor ->> 'offset')::bigint FROM sync_state
                     WHERE account_id = p_account AND stream = 'updates'), 0)
$$;

CREATE OR REPLACE FUNCTION parley_bot_chat_kind(c jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE c ->> 'type'
        WHEN 'private' THEN 'private'
        WHEN 'group' THEN 'group'
        WHEN 'channel' THEN 'channel'
        ELSE CASE WHEN coalesce((c ->> 'is_forum')::boolean, false) THEN 'forum'
                  ELSE 'supergroup' END
    END
$$;

-- The kind of a Bot API message's file (photo, video, ..., document), or
-- NULL. Scalar and inlined: the batch mapping calls it per row, and writes
-- out the object describing the file there (a photo's largest size): a
-- function of the computed kind, which it uses twice, was called instead
-- of inlined, 2-3 us a row.
CREATE OR REPLACE FUNCTION parley_bot_file_kind(m jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN NOT m ?| ARRAY['photo', 'video', 'animation', 'audio', 'voice', 'video_note',
                            'sticker', 'document'] THEN NULL
        WHEN jsonb_typeof(m -> 'photo' -> -1) = 'object' THEN 'photo'
        WHEN jsonb_typeof(m -> 'video') = 'object' THEN 'video'
        WHEN jsonb_typeof(m -> 'animation') = 'object' THEN 'animation'
        WHEN jsonb_typeof(m -> 'audio') = 'object' THEN 'audio'
        WHEN jsonb_typeof(m -> 'voice') = 'object' THEN 'voice'
        WHEN jsonb_typeof(m -> 'video_note') = 'object' THEN 'video_note'
        WHEN jsonb_typeof(m -> 'sticker') = 'object' THEN 'sticker'
        WHEN jsonb_typeof(m -> 'document') = 'object' AND NOT m ? 'animation' THEN 'document'
    END
$$;

-- The updates of getUpdates batches (each element of p_batches one
-- answer's JSON array, as staged) at or past p_from (earlier ones were
-- applied already), with their update_id.
CREATE OR REPLACE FUNCTION parley_bot_batch(p_batches jsonb[], p_from bigint)
    RETURNS TABLE (update_id bigint, u jsonb) LANGUAGE sql IMMUTABLE AS $$
    SELECT (e ->> 'update_id')::bigint, e
    FROM unnest(p_batches) AS b(updates), jsonb_array_elements(b.updates) AS x(e)
    WHERE jsonb_typeof(e -> 'update_id') = 'number' AND (e ->> 'update_id')::bigint >= p_from
$$;

-- The messages (new or edited, chats and channels) of batches, one row per
-- update, mapped to the columns of messages; malformed ones (no numeric
-- chat id, message_id or date) are left out.
CREATE OR REPLACE FUNCTION parley_bot_batch_messages(p_batches jsonb[], p_from bigint)
    RETURNS SETOF parley_bot_msg LANGUAGE sql IMMUTABLE AS $$
    SELECT b.update_id, m, (m -> 'chat' ->> 'id')::bigint, (m ->> 'message_id')::bigint,
           CASE WHEN m ? 'forum_topic_created' THEN (m ->> 'message_id')::bigint
                WHEN coalesce((m ->> 'is_topic_message')::boolean, false)
                THEN (m ->> 'message_thread_id')::bigint END,
           coalesce((m -> 'sender_chat' ->> 'id')::bigint, (m -> 'from' ->> 'id')::bigint),
           coalesce(m -> 'sender_chat' ->> 'title',
                    nullif(btrim(concat_ws(' ', m -> 'from' ->> 'first_name',
                                           m -> 'from' ->> 'last_name')), '')),
           to_timestamp((m ->> 'date')::bigint),
           CASE WHEN m ? 'edit_date' THEN to_timestamp((m ->> 'edit_date')::bigint) END,
           t.text, t.entities, (m -> 'reply_to_message' ->> 'message_id')::bigint,
           coalesce(m -> 'forward_origin' -> 'sender_user' ->> 'first_name',
                    m -> 'forward_origin' ->> 'sender_user_name',
                    m -> 'forward_origin' -> 'chat' ->> 'title'),
           coalesce(f.kind, CASE WHEN m ? 'poll' THEN 'poll'
                                 WHEN m ? 'venue' THEN 'venue'
                                 WHEN m ? 'location' THEN 'location'
                                 WHEN m ? 'contact' THEN 'contact'
                                 WHEN m ? 'dice' THEN 'dice' END),
           coalesce(t.entities @? '$[*] ? (@.type == "url" || @.type == "text_link")', false)
               OR coalesce(strpos(t.text, '://') > 0 AND t.text ~* 'https?://', false),
           CASE WHEN t.text IS NULL AND f.kind IS NULL AND
                     (m ? 'new_chat_members' OR m ? 'left_chat_member' OR m ? 'new_chat_title'
                      OR m ? 'pinned_message' OR m ? 'forum_topic_created'
                      OR m ? 'forum_topic_edited' OR m ? 'group_chat_created')
                THEN 'service' ELSE 'message' END,
           CASE WHEN m ?| ARRAY['new_chat_members', 'left_chat_member', 'new_chat_title',
                                'pinned_message', 'forum_topic_created', 'forum_topic_edited']
           THEN nullif(jsonb_strip_nulls(jsonb_build_object(
               'new_chat_members', m -> 'new_chat_members', 'left_chat_member',
               m -> 'left_chat_member', 'new_chat_title', m -> 'new_chat_title',
               'pinned_message', m -> 'pinned_message' -> 'message_id',
               'forum_topic_created', m -> 'forum_topic_created',
               'forum_topic_edited', m -> 'forum_topic_edited')), '{}'::jsonb) END,
           CASE WHEN m ?| ARRAY['poll', 'location', 'venue', 'contact', 'dice', 'via_bot',
                                'author_signature', 'reply_markup']
           THEN nullif(jsonb_strip_nulls(jsonb_build_object(
               'poll', m -> 'poll', 'location', m -> 'location', 'venue', m -> 'venue',
               'contact', m -> 'contact', 'dice', m -> 'dice', 'via_bot', m -> 'via_bot',
               'author_signature', m -> 'author_signature',
               'reply_markup', m -> 'reply_markup')), '{}'::jsonb) END,
           f.kind, CASE f.kind WHEN 'photo' THEN m -> 'photo' -> -1 ELSE m -> f.kind END,
           NULL::bigint, NULL::boolean
    FROM parley_bot_batch(p_batches, p_from) AS b
    CROSS JOIN LATERAL (SELECT coalesce(b.u -> 'message', b.u -> 'edited_message',
                                        b.u -> 'channel_post', b.u -> 'edited_channel_post')) AS x(m)
    CROSS JOIN LATERAL (SELECT coalesce(m ->> 'text', m ->> 'caption'),
                               coalesce(m -> 'entities', m -> 'caption_entities')) AS t(text, entities)
    CROSS JOIN LATERAL (SELECT parley_bot_file_kind(m)) AS f(kind)
    WHERE jsonb_typeof(m -> 'chat' -> 'id') = 'number' AND jsonb_typeof(m -> 'message_id') = 'number'
      AND jsonb_typeof(m -> 'date') = 'number'
$$;

-- Whether account p_account may store messages of chat p_chat. Always in
-- a supergroup or a channel (ids -100...: every member sees the same
-- message ids). A private chat or a basic group numbers its messages per
-- account (a bot's chat with a person and an account's chat with the same
-- person share the chat id, not their messages): there, only while the
-- chat is not another bot's or user account's. The first to store such a
-- chat keeps it; the other's messages of it are not stored.
CREATE OR REPLACE FUNCTION parley_tg_chat_ours(p_chat bigint, p_account bigint) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT p_chat <= -1000000000000 OR NOT EXISTS (
        SELECT 1 FROM chats c JOIN accounts a ON a.id = c.account_id
        WHERE c.id = p_chat AND c.account_id <> p_account
          AND a.kind IN ('telegram_bot', 'telegram_user'))
$$;

-- The mapped messages of v (their chat_id never NULL) whose chats account
-- p_account may store (parley_tg_chat_ours), asked once a chat, not once a
-- message: usually every chat is, and v comes back as it is. The distinct
-- chats are an array first: over a subquery, the planner pushed the test
-- below its DISTINCT, and asked it once a message.
CREATE OR REPLACE FUNCTION parley_tg_msgs_ours(v parley_bot_msg[], p_account bigint)
    RETURNS parley_bot_msg[] LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_others bigint[] := ARRAY(SELECT c FROM unnest(ARRAY(SELECT DISTINCT chat_id FROM unnest(v)))
                                   AS d(c)
                               WHERE NOT parley_tg_chat_ours(c, p_account));
BEGIN
    IF cardinality(v_others) = 0 THEN
        RETURN v;
    END IF;
    RETURN ARRAY(SELECT x FROM unnest(v) AS x WHERE x.chat_id <> ALL (v_others));
END
$$;

-- Stores mapped messages (parley_bot_msg rows: the bot's batches,
-- parley_bot_batch_messages, and the user account's, parley_tdu_map in
-- telegram/user.sql) with their files and their chats' last message; the
-- chats must exist. A message takes its newest version in v (edit_date,
-- else date; the later update_id on a tie) and never goes back to an older
-- one than stored (whose extra keys it keeps); a row's outgoing is its own,
-- else p_outgoing. changed: the rows inserted or changed; inserted: the
-- rows new to the store.
CREATE OR REPLACE FUNCTION parley_tg_msgs_store(v parley_bot_msg[], p_outgoing boolean,
                                                OUT changed integer, OUT inserted integer)
    LANGUAGE plpgsql AS $$
BEGIN
    -- Messages: each one's newest version in the batch.
    WITH w AS (
        INSERT INTO messages AS x (chat_id, id, topic_id, sender_id, sender_name, date, edit_date,
                                   text, entities, reply_to_id, reply_to_chat_id,
                                   forward_from_name, media_kind, has_link, kind, outgoing,
                                   action, extra)
        SELECT chat_id, id, topic_id, sender_id, sender_name, date, edit_date, text, entities,
               reply_to_id, reply_to_chat_id, forward_from_name, media_kind, has_link, kind,
               coalesce(outgoing, p_outgoing, false), action, extra
        FROM (SELECT DISTINCT ON (chat_id, id) *
              FROM unnest(v)
              ORDER BY chat_id, id, coalesce(edit_date, date) DESC, update_id DESC) AS v
        ORDER BY chat_id, id
        ON CONFLICT (chat_id, id) DO UPDATE
            -- the winner's date too: two sources' copies of a message
            -- compare by it (a copy dated later stays the newer one)
            SET date = EXCLUDED.date, text = EXCLUDED.text, entities = EXCLUDED.entities,
                edit_date = coalesce(EXCLUDED.edit_date, x.edit_date),
                media_kind = EXCLUDED.media_kind, has_link = EXCLUDED.has_link,
                extra = coalesce(x.extra, '{}') || coalesce(EXCLUDED.extra, '{}'),
                topic_id = coalesce(EXCLUDED.topic_id, x.topic_id), updated_at = now()
            -- an older version never overwrites a newer one
            WHERE coalesce(EXCLUDED.edit_date, EXCLUDED.date) >= coalesce(x.edit_date, x.date)
              AND (x.date, x.text, x.entities, x.edit_date, x.media_kind, x.topic_id) IS DISTINCT FROM
                  (EXCLUDED.date, EXCLUDED.text, EXCLUDED.entities, coalesce(EXCLUDED.edit_date, x.edit_date),
                   EXCLUDED.media_kind, coalesce(EXCLUDED.topic_id, x.topic_id))
        RETURNING x.xmax = 0 AS fresh)
    SELECT count(*), count(*) FILTER (WHERE fresh) INTO changed, inserted FROM w;
    -- Their files, queued for download.
    INSERT INTO media AS f (chat_id, message_id, ordinal, kind, file_id, file_unique_id,
                            mime_type, file_size, width, height, duration, file_name, state, extra)
    SELECT chat_id, id, 0, file_kind, file ->> 'file_id', file ->> 'file_unique_id',
           file ->> 'mime_type', (file ->> 'file_size')::bigint, (file ->> 'width')::integer,
           (file ->> 'height')::integer, (file ->> 'duration')::integer, file ->> 'file_name',
           'remote', nullif(jsonb_strip_nulls(jsonb_build_object('emoji', file -> 'emoji')),
                            '{}'::jsonb)
    FROM (SELECT DISTINCT ON (chat_id, id) *
          FROM unnest(v)
          WHERE file_kind IS NOT NULL
          ORDER BY chat_id, id, coalesce(edit_date, date) DESC, update_id DESC) AS v
    ORDER BY chat_id, id
    ON CONFLICT (chat_id, message_id, ordinal) DO UPDATE
        SET file_id = EXCLUDED.file_id, file_unique_id = EXCLUDED.file_unique_id,
            updated_at = now()
        WHERE f.file_unique_id IS DISTINCT FROM EXCLUDED.file_unique_id;
    -- Each chat's newest message.
    UPDATE chats AS c SET last_message_id = v.id, last_message_date = v.date, updated_at = now()
    FROM (SELECT DISTINCT ON (chat_id) chat_id, id, date
          FROM unnest(v)
          ORDER BY chat_id, date DESC, update_id DESC) AS v
    WHERE c.id = v.chat_id AND (c.last_message_date IS NULL OR c.last_message_date <= v.date)
      AND c.last_message_id IS DISTINCT FROM v.id;
END
$$;

-- Applies getUpdates batches (p_batches: each one answer's JSON array; or
-- one message parley sent: p_outgoing) set by set: a few statements for
-- them all, not one round per update.
-- The result is what applying the updates one by one in update_id order
-- gives: a chat, user or member takes its latest update; a message its
-- newest version (edit_date, else date; the later update on a tie), never
-- older than the stored one, whose extra keys it keeps; reactions replace
-- the message's reactions; a chat's last message is its newest one.
CREATE OR REPLACE FUNCTION parley_bot_apply(p_account bigint, p_batches jsonb[], p_from bigint,
                                            p_outgoing boolean) RETURNS void
    LANGUAGE plpgsql
    -- Its statements' plans are made once: with the batches known, the
    -- planner reads their number (unnest) and finds every custom plan
    -- cheaper than the generic one, so it planned each statement again at
    -- every call (a single update: 2.3 ms against 0.9).
    SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    -- The batch's messages, mapped once, of the chats that are ours.
    v parley_bot_msg[] := parley_tg_msgs_ours(
        ARRAY(SELECT x FROM parley_bot_batch_messages(p_batches, p_from) AS x), p_account);
    -- Whether the batch holds reactions or membership updates: one pass
    -- over it, and none of the passes looking for them when it does not.
    v_reactions boolean := EXISTS (
        SELECT FROM unnest(p_batches) AS b(u) WHERE u @? '$[*] ? (exists (@.message_reaction))');
    v_members boolean := EXISTS (
        SELECT FROM unnest(p_batches) AS b(u)
        WHERE u @? '$[*] ? (exists (@.my_chat_member) || exists (@.chat_member))');
BEGIN
    -- Chats named by messages and membership updates, as their latest update shows them.
    INSERT INTO chats AS x (id, account_id, kind, title, username, active, extra)
    SELECT id, p_account, parley_bot_chat_kind(c),
           coalesce(c ->> 'title', nullif(btrim(concat_ws(' ', c ->> 'first_name',
                                                          c ->> 'last_name')), '')),
           c ->> 'username', true, jsonb_build_object('source', 'telegram_bot')
    FROM (SELECT DISTINCT ON ((c ->> 'id')::bigint) (c ->> 'id')::bigint AS id, c
          FROM (SELECT update_id, m -> 'chat' FROM unnest(v)
                UNION ALL
                SELECT update_id, coalesce(u -> 'my_chat_member', u -> 'chat_member') -> 'chat'
                FROM parley_bot_batch(p_batches, p_from)
                WHERE v_members AND (u ? 'my_chat_member' OR u ? 'chat_member')) AS s(update_id, c)
          WHERE jsonb_typeof(c -> 'id') = 'number'
          ORDER BY (c ->> 'id')::bigint, update_id DESC) AS l
    ORDER BY id
    ON CONFLICT (id) DO UPDATE
        SET account_id = coalesce(x.account_id, EXCLUDED.account_id),
            title = coalesce(EXCLUDED.title, x.title),
            username = coalesce(EXCLUDED.username, x.username),
            kind = CASE WHEN x.kind = 'forum' AND EXCLUDED.kind = 'supergroup' THEN x.kind
                        ELSE EXCLUDED.kind END,
            updated_at = now()
        WHERE (x.title, x.username, x.kind) IS DISTINCT FROM
              (coalesce(EXCLUDED.title, x.title), coalesce(EXCLUDED.username, x.username),
               CASE WHEN x.kind = 'forum' AND EXCLUDED.kind = 'supergroup' THEN x.kind
                    ELSE EXCLUDED.kind END)
           OR x.account_id IS NULL;
    -- Senders, as their latest message shows them.
    INSERT INTO users AS u (id, first_name, last_name, username, is_bot)
    SELECT DISTINCT ON ((m -> 'from' ->> 'id')::bigint) (m -> 'from' ->> 'id')::bigint,
           m -> 'from' ->> 'first_name', m -> 'from' ->> 'last_name',
           m -> 'from' ->> 'username', coalesce((m -> 'from' ->> 'is_bot')::boolean, false)
    FROM unnest(v)
    WHERE (m -> 'from' ->> 'id')::bigint > 0
    ORDER BY (m -> 'from' ->> 'id')::bigint, update_id DESC
    ON CONFLICT (id) DO UPDATE
        SET first_name = EXCLUDED.first_name, last_name = EXCLUDED.last_name,
            username = EXCLUDED.username, is_bot = EXCLUDED.is_bot, updated_at = now()
        WHERE (u.first_name, u.last_name, u.username, u.is_bot) IS DISTINCT FROM
              (EXCLUDED.first_name, EXCLUDED.last_name, EXCLUDED.username, EXCLUDED.is_bot);
    -- Forum topics, from the service message that created each.
    INSERT INTO topics (chat_id, id, title, icon_color, creator_id, created_date)
    SELECT DISTINCT ON (chat_id, id) chat_id, id, m -> 'forum_topic_created' ->> 'name',
           (m -> 'forum_topic_created' ->> 'icon_color')::integer, sender_id, date
    FROM unnest(v)
    WHERE m ? 'forum_topic_created'
    ORDER BY chat_id, id, update_id
    ON CONFLICT (chat_id, id) DO NOTHING;
    PERFORM parley_tg_msgs_store(v, p_outgoing);
    IF v_reactions THEN
        -- Reactions: the latest count of each message.
        UPDATE messages AS x
            SET extra = coalesce(x.extra, '{}') || jsonb_build_object('reactions', r.reactions),
                updated_at = now()
        FROM (SELECT DISTINCT ON (1, 2) (u -> 'message_reaction' -> 'chat' ->> 'id')::bigint,
                     (u -> 'message_reaction' ->> 'message_id')::bigint,
                     u -> 'message_reaction' -> 'new_reaction'
              FROM parley_bot_batch(p_batches, p_from)
              WHERE u ? 'message_reaction'
              ORDER BY 1, 2, update_id DESC) AS r(chat_id, id, reactions)
        WHERE x.chat_id = r.chat_id AND x.id = r.id;
    END IF;
    IF NOT v_members THEN
        RETURN;
    END IF;
    -- Members: the users first (known users stay as their messages show them).
    INSERT INTO users (id, first_name, last_name, username, is_bot)
    SELECT DISTINCT ON (1) (n -> 'user' ->> 'id')::bigint, n -> 'user' ->> 'first_name',
           n -> 'user' ->> 'last_name', n -> 'user' ->> 'username',
           coalesce((n -> 'user' ->> 'is_bot')::boolean, false)
    FROM parley_bot_batch(p_batches, p_from),
         LATERAL (SELECT coalesce(u -> 'my_chat_member', u -> 'chat_member')
                         -> 'new_chat_member') AS y(n)
    WHERE (n -> 'user' ->> 'id')::bigint > 0
    ORDER BY 1, update_id
    ON CONFLICT (id) DO NOTHING;
    INSERT INTO chat_members AS cm (chat_id, user_id, status)
    SELECT DISTINCT ON (1, 2) (c ->> 'id')::bigint, (n -> 'user' ->> 'id')::bigint,
           CASE n ->> 'status'
               WHEN 'creator' THEN 'creator' WHEN 'administrator' THEN 'administrator'
               WHEN 'restricted' THEN 'restricted' WHEN 'left' THEN 'left'
               WHEN 'kicked' THEN 'kicked' ELSE 'member' END
    FROM parley_bot_batch(p_batches, p_from),
         LATERAL (SELECT coalesce(u -> 'my_chat_member', u -> 'chat_member')) AS y(cmu),
         LATERAL (SELECT cmu -> 'chat', cmu -> 'new_chat_member') AS z(c, n)
    WHERE (n -> 'user' ->> 'id')::bigint > 0 AND jsonb_typeof(c -> 'id') = 'number'
    ORDER BY 1, 2, update_id DESC
    ON CONFLICT (chat_id, user_id) DO UPDATE SET status = EXCLUDED.status, updated_at = now();
END
$$;

-- Stores one Bot API Message (new or edited; outgoing: parley sent it).
-- Returns the chat id.
CREATE OR REPLACE FUNCTION parley_bot_store_message(p_account bigint, m jsonb, outgoing boolean)
    RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    PERFORM parley_bot_apply(p_account,
                             ARRAY[jsonb_build_array(jsonb_build_object('update_id', 0,
                                                                        'message', m))],
                             0, outgoing);
    RETURN (m -> 'chat' ->> 'id')::bigint;
END
$$;

-- Stages a getUpdates batch (its updates at or past the stored offset) in
-- bot_update_batches and stores the next offset, atomically: once this
-- commits, the poller may confirm the batch to the Bot API (ask for the
-- next one) while the batch waits to be applied (parley_bot_apply_staged).
-- Returns {"staged": n, "offset": next, "pending": batches staged and not
-- applied, this one included}.
CREATE OR REPLACE FUNCTION parley_bot_stage(p_account bigint, p_updates jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    v_from bigint := parley_bot_offset(p_account);
    v_n integer;
    v_first bigint;
    v_next bigint;
    v_new jsonb;
BEGIN
    SELECT count(*), min(update_id), coalesce(max(update_id) + 1, v_from)
    INTO v_n, v_first, v_next
    FROM parley_bot_batch(ARRAY[p_updates], v_from);
    IF v_n > 0 THEN
        IF v_n = jsonb_array_length(p_updates) THEN
            v_new := p_updates; -- every update new: the batch as it came
        ELSE
            SELECT jsonb_agg(u) INTO v_new FROM parley_bot_batch(ARRAY[p_updates], v_from);
        END IF;
        -- first_update_id is at or past the stored offset, past every
        -- staged update: never a conflict.
        INSERT INTO bot_update_batches (account_id, first_update_id, updates)
        VALUES (p_account, v_first, v_new);
    END IF;
    INSERT INTO sync_state AS s (account_id, stream, cursor, last_update_at)
    VALUES (p_account, 'updates', jsonb_build_object('offset', v_next), now())
    ON CONFLICT (account_id, stream) DO UPDATE
        SET cursor = EXCLUDED.cursor, last_update_at = now(), updated_at = now()
        WHERE (s.cursor ->> 'offset')::bigint IS DISTINCT FROM v_next;
    RETURN jsonb_build_object('staged', v_n, 'offset', v_next, 'pending',
                              (SELECT count(*) FROM bot_update_batches
                               WHERE account_id = p_account));
END
$$;

-- Applies the account's staged batches, oldest first, at most p_limit of
-- them, as one batch (parley_bot_apply: the result of applying their
-- updates one by one in update_id order), and deletes them in the same
-- transaction: each update is applied exactly once. Appliers of one
-- account take turns (a daemon that lost the poller lock may still be
-- applying): the account's row is locked to the end of the transaction.
-- Returns {"applied": updates applied, "pending": batches left}.
CREATE OR REPLACE FUNCTION parley_bot_apply_staged(p_account bigint, p_limit integer)
    RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_all jsonb[];
    v_n integer;
BEGIN
    PERFORM 1 FROM accounts WHERE id = p_account FOR NO KEY UPDATE;
    -- The batches as they were staged, not joined into one JSON array.
    WITH d AS (
        DELETE FROM bot_update_batches b
        WHERE b.account_id = p_account AND b.first_update_id IN (
            SELECT first_update_id FROM bot_update_batches
            WHERE account_id = p_account ORDER BY first_update_id LIMIT p_limit)
        RETURNING b.first_update_id, b.updates)
    SELECT array_agg(d.updates ORDER BY d.first_update_id),
           coalesce(sum(jsonb_array_length(d.updates)), 0)
    INTO v_all, v_n
    FROM d;
    IF v_n > 0 THEN
        PERFORM parley_bot_apply(p_account, v_all, 0, false);
    END IF;
    RETURN jsonb_build_object('applied', v_n, 'pending',
                              (SELECT count(*) FROM bot_update_batches
                               WHERE account_id = p_account));
END
$$;

-- Applies a getUpdates batch and stores the next offset, atomically, in
-- one statement: stages it and applies everything staged (earlier batches
-- first). Returns {"applied": n (this batch's updates), "offset": next}.
CREATE OR REPLACE FUNCTION parley_bot_ingest(p_account bigint, p_updates jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    v jsonb := parley_bot_stage(p_account, p_updates);
BEGIN
    PERFORM parley_bot_apply_staged(p_account, 2147483647);
    RETURN jsonb_build_object('applied', v -> 'staged', 'offset', v -> 'offset');
END
$$;

-- Files to download for account p_account, claimed by daemon p_owner:
-- new ones, failed ones due again, and ones a dead daemon was downloading
-- (its presence lock is gone) or one stuck for 10 minutes.
CREATE OR REPLACE FUNCTION parley_bot_media_claim(p_account bigint, p_limit integer,
                                                  p_owner text) RETURNS jsonb
    LANGUAGE sql AS $$
    WITH c AS (
        SELECT f.chat_id, f.message_id, f.ordinal
        FROM media f JOIN chats ch ON ch.id = f.chat_id
        WHERE ch.account_id = p_account AND f.file_id IS NOT NULL
          AND (f.state = 'remote'
               OR (f.state = 'error' AND f.next_attempt_at IS NOT NULL
                   AND f.next_attempt_at <= now())
               OR (f.state = 'error' AND f.next_attempt_at IS NULL AND f.attempts < 5
                   AND f.updated_at < now() - interval '2 seconds' * power(2, f.attempts))
               OR (f.state = 'downloading'
                   AND (f.updated_at < now() - interval '10 minutes'
                        OR (f.claimed_by IS NOT NULL AND f.claimed_by IS DISTINCT FROM p_owner
                            AND NOT parley_daemon_alive(f.claimed_by)))))
        ORDER BY f.chat_id, f.message_id, f.ordinal
        LIMIT p_limit
        FOR UPDATE OF f SKIP LOCKED
    ), u AS (
        UPDATE media f SET state = 'downloading', attempts = f.attempts + 1, updated_at = now(),
                           claimed_by = p_owner
        FROM c
        WHERE f.chat_id = c.chat_id AND f.message_id = c.message_id AND f.ordinal = c.ordinal
        RETURNING f.*
    )
    SELECT coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               'chat_id', u.chat_id, 'message_id', u.message_id, 'ordinal', u.ordinal,
               'file_id', u.file_id, 'file_unique_id', u.file_unique_id,
               'file_size', u.file_size, 'mime_type', u.mime_type, 'attempts', u.attempts,
               'stored', (SELECT jsonb_build_object('sha256', d.sha256, 'local_path', d.local_path,
                                                    'size', d.file_size)
                          FROM media d
                          WHERE d.file_unique_id = u.file_unique_id AND d.state = 'done'
                          LIMIT 1)))), '[]')
    FROM u
$$;

CREATE OR REPLACE FUNCTION parley_bot_media_done(p jsonb) RETURNS void
    LANGUAGE sql AS $$
    UPDATE media SET state = p ->> 'state', sha256 = coalesce(p ->> 'sha256', sha256),
                     local_path = coalesce(p ->> 'local_path', local_path),
                     file_size = coalesce((p ->> 'size')::bigint, file_size),
                     error = p ->> 'error',
                     next_attempt_at = CASE WHEN p ? 'retry_ms' AND p ->> 'state' = 'error'
                                            THEN now() + (p ->> 'retry_ms')::bigint
                                                         * interval '1 millisecond' END,
                     downloaded_at = CASE WHEN p ->> 'state' = 'done' THEN now() END,
                     updated_at = now()
    WHERE chat_id = (p ->> 'chat_id')::bigint AND message_id = (p ->> 'message_id')::bigint
      AND ordinal = (p ->> 'ordinal')::smallint
$$;

-- One file claimed ahead of the queue for a caller that
-- waits for it (mediaDownload while the file is not stored yet). Returns the
-- row as parley_bot_media_claim does, with "claimed": true, when this daemon
-- should download it now (remote, failed, or stuck downloading elsewhere: a
-- second download of the same file is harmless, the store is
-- content-addressed); otherwise the row's state, so the caller can say why
-- there is nothing to download ("done" already, "unavailable", no file_id).
CREATE OR REPLACE FUNCTION parley_bot_media_claim_one(p_chat bigint, p_message bigint,
                                                      p_owner text) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    f media;
BEGIN
    SELECT * INTO f FROM media
    WHERE chat_id = p_chat AND message_id = p_message
    ORDER BY ordinal LIMIT 1
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN jsonb_build_object('chat_id', p_chat, 'message_id', p_message, 'state', 'missing',
                                  'error', 'the message has no file');
    END IF;
    IF f.state IN ('done', 'unavailable') OR f.file_id IS NULL THEN
        RETURN jsonb_strip_nulls(jsonb_build_object(
            'chat_id', f.chat_id, 'message_id', f.message_id, 'ordinal', f.ordinal,
            'state', f.state, 'error', coalesce(f.error, CASE WHEN f.file_id IS NULL THEN
                'the upstream gave no file handle for it' END),
            'sha256', f.sha256, 'local_path', f.local_path, 'size', f.file_size));
    END IF;
    UPDATE media SET state = 'downloading', attempts = attempts + 1, updated_at = now(),
                     claimed_by = p_owner
    WHERE chat_id = f.chat_id AND message_id = f.message_id AND ordinal = f.ordinal
    RETURNING * INTO f;
    RETURN jsonb_strip_nulls(jsonb_build_object(
        'claimed', true, 'chat_id', f.chat_id, 'message_id', f.message_id, 'ordinal', f.ordinal,
        'file_id', f.file_id, 'file_unique_id', f.file_unique_id, 'file_size', f.file_size,
        'mime_type', f.mime_type, 'attempts', f.attempts,
        'stored', (SELECT jsonb_build_object('sha256', d.sha256, 'local_path', d.local_path,
                                             'size', d.file_size)
                   FROM media d WHERE d.file_unique_id = f.file_unique_id AND d.state = 'done'
                   LIMIT 1)));
END
$$;

-- Metadata from getChat: title, username, description, member count.
CREATE OR REPLACE FUNCTION parley_bot_chat_metadata(p_chat bigint, c jsonb, p_members integer)
    RETURNS jsonb LANGUAGE sql AS $$
    UPDATE chats SET title = coalesce(c ->> 'title', nullif(btrim(concat_ws(' ',
                                 c ->> 'first_name', c ->> 'last_name')), ''), title),
                     username = coalesce(c ->> 'username', username),
                     about = coalesce(c ->> 'description', c ->> 'bio', about),
                     member_count = coalesce(p_members, member_count),
                     metadata_updated_at = now(), updated_at = now()
    WHERE id = p_chat
    RETURNING jsonb_strip_nulls(jsonb_build_object(
        'channelId', id, 'peerTitle', title,
        'username', CASE WHEN username IS NOT NULL THEN '@' || username END,
        'about', about, 'memberCount', member_count, 'metadataUpdatedAt', metadata_updated_at))
$$;

-- One getUpdates poller per bot account across all daemons
-- on the database (Telegram allows one; a second gets 409). The poller
-- holds a lease in sync_state (stream 'poller'), renewed before every
-- poll; another daemon takes over once it expires. Ingest stays
-- idempotent (the offset), so a takeover in the middle of a batch is safe.
CREATE OR REPLACE FUNCTION parley_bot_lease(p_account bigint, p_owner text, p_seconds integer)
    RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_owner text;
BEGIN
    INSERT INTO sync_state AS s (account_id, stream, cursor, last_update_at)
    VALUES (p_account, 'poller', jsonb_build_object('owner', p_owner, 'expires',
            extract(epoch FROM now()) + p_seconds), now())
    ON CONFLICT (account_id, stream) DO UPDATE
        SET cursor = EXCLUDED.cursor, last_update_at = now(), updated_at = now()
        WHERE s.cursor ->> 'owner' = p_owner
           OR (s.cursor ->> 'expires')::float8 < extract(epoch FROM now())
    RETURNING s.cursor ->> 'owner' INTO v_owner;
    RETURN v_owner IS NOT NULL;
END
$$;

-- The lease row as the record of who polls, written by the daemon that
-- holds the poller's advisory lock (src/db/lock.h): the lock is the fence,
-- so the row is taken over whatever it says.
CREATE OR REPLACE FUNCTION parley_bot_lease_take(p_account bigint, p_owner text, p_seconds integer)
    RETURNS boolean LANGUAGE sql AS $$
    INSERT INTO sync_state AS s (account_id, stream, cursor, last_update_at)
    VALUES (p_account, 'poller', jsonb_build_object('owner', p_owner, 'expires',
            extract(epoch FROM now()) + p_seconds), now())
    ON CONFLICT (account_id, stream) DO UPDATE
        SET cursor = EXCLUDED.cursor, last_update_at = now(), updated_at = now()
    RETURNING true
$$;

CREATE OR REPLACE FUNCTION parley_bot_lease_release(p_account bigint, p_owner text) RETURNS void
    LANGUAGE sql AS $$
    DELETE FROM sync_state
    WHERE account_id = p_account AND stream = 'poller' AND cursor ->> 'owner' = p_owner
$$;
