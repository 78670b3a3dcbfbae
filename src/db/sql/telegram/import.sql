-- telegram/import: the Telegram Desktop export import
-- (src/archive/tg_import.c). The reader COPYs each chat's messages into
-- import_staging; parley_tg_import_chat turns one chat's staged rows into
-- upserts of the chat, its users, topics, messages and media, so that
-- importing the same export twice changes nothing.

-- Bot API id of an export chat: users positive, basic groups -id,
-- supergroups and channels -(10^12 + id).
CREATE OR REPLACE FUNCTION parley_tg_chat_id(p_type text, p_id bigint) RETURNS bigint
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN p_type IN ('personal_chat', 'bot_chat', 'saved_messages', 'replies') THEN p_id
        WHEN p_type = 'private_group' THEN -p_id
        ELSE -(1000000000000 + p_id)
    END
$$;

-- Bot API id of an export peer reference: "user123", "channel123",
-- "chat123", or a bare number (exports of about 2020).
CREATE OR REPLACE FUNCTION parley_tg_peer_id(p jsonb) RETURNS bigint
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN jsonb_typeof(p) = 'number' THEN (p #>> '{}')::numeric::bigint
        WHEN p #>> '{}' ~ '^user[0-9]+$' THEN substr(p #>> '{}', 5)::bigint
        WHEN p #>> '{}' ~ '^channel[0-9]+$' THEN -(1000000000000 + substr(p #>> '{}', 8)::bigint)
        WHEN p #>> '{}' ~ '^chat[0-9]+$' THEN -substr(p #>> '{}', 5)::bigint
        WHEN p #>> '{}' ~ '^-?[0-9]+$' THEN (p #>> '{}')::bigint
    END
$$;

-- Plain text of an export "text": a string, or an array of strings and
-- entity objects. (PL/pgSQL: a string, the common case, is a simple
-- expression; an SQL function with a sub-select would set up an executor
-- for every message.)
CREATE OR REPLACE FUNCTION parley_tg_text(t jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF jsonb_typeof(t) = 'string' THEN
        RETURN t #>> '{}';
    ELSIF jsonb_typeof(t) = 'array' THEN
        RETURN (SELECT coalesce(string_agg(CASE jsonb_typeof(e) WHEN 'string' THEN e #>> '{}'
                                           ELSE e ->> 'text' END, '' ORDER BY ord), '')
                FROM jsonb_array_elements(t) WITH ORDINALITY AS x(e, ord));
    END IF;
    RETURN NULL;
END
$$;

-- Entities: text_entities when the export has them, else derived from an
-- array text.
CREATE OR REPLACE FUNCTION parley_tg_entities(m jsonb) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF jsonb_typeof(m -> 'text_entities') = 'array' THEN
        RETURN nullif(m -> 'text_entities', '[]'::jsonb);
    ELSIF jsonb_typeof(m -> 'text') = 'array' THEN
        RETURN (SELECT nullif(jsonb_agg(CASE jsonb_typeof(e)
                                        WHEN 'string' THEN jsonb_build_object('type', 'plain',
                                                                              'text', e)
                                        ELSE e END ORDER BY ord), '[]'::jsonb)
                FROM jsonb_array_elements(m -> 'text') WITH ORDINALITY AS x(e, ord));
    END IF;
    RETURN NULL;
END
$$;

-- A time of the export: the unixtime field when present, else the local
-- "date" string read at the given UTC offset.
CREATE OR REPLACE FUNCTION parley_tg_time(unixtime jsonb, local jsonb, tz interval) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN unixtime #>> '{}' ~ '^[0-9]+$' THEN to_timestamp((unixtime #>> '{}')::bigint)
        WHEN local #>> '{}' ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$' THEN
            ((local #>> '{}')::timestamp - tz) AT TIME ZONE 'UTC'
    END
$$;

-- A path that is really a marker: "(File not included. ...)",
-- "(File unavailable, ...)", "(File exceeds maximum size. ...)".
CREATE OR REPLACE FUNCTION parley_tg_file_missing(path text) RETURNS boolean
    LANGUAGE sql IMMUTABLE AS $$
    SELECT path IS NOT NULL AND path ~ '^\(File '
$$;

CREATE OR REPLACE FUNCTION parley_tg_media_kind(m jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN m ? 'photo' AND m ->> 'type' = 'message' THEN 'photo'
        WHEN m ->> 'media_type' = 'sticker' THEN 'sticker'
        WHEN m ->> 'media_type' = 'video_file' THEN 'video'
        WHEN m ->> 'media_type' = 'animation' THEN 'animation'
        WHEN m ->> 'media_type' = 'voice_message' THEN 'voice'
        WHEN m ->> 'media_type' = 'video_message' THEN 'video_note'
        WHEN m ->> 'media_type' = 'audio_file' THEN 'audio'
        WHEN m ? 'file' THEN 'document'
        WHEN m ? 'poll' THEN 'poll'
        WHEN m ? 'todo_list' THEN 'todo'
        WHEN m ? 'location_information' AND m ? 'place_name' THEN 'venue'
        WHEN m ? 'location_information' THEN 'location'
        WHEN m ? 'contact_information' THEN 'contact'
        WHEN m ? 'game_title' THEN 'game'
        WHEN m ? 'invoice_information' THEN 'invoice'
        WHEN m ? 'dice' THEN 'dice'
        WHEN m ? 'story' THEN 'story'
    END
$$;

-- Maps and upserts one staged chat. p_header: the chat's own fields of the
-- export (name, type, id); p_left: from left_chats. Returns
-- {"chat_id", "messages", "written", "topics"}.
CREATE OR REPLACE FUNCTION parley_tg_import_chat(p_import bigint, p_chat_key bigint, p_header jsonb,
                                      p_tz interval, p_left boolean) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    v_type text := coalesce(p_header ->> 'type', 'personal_chat');
    v_chat bigint;
    v_kind text;
    v_count bigint;
    v_written bigint;
    v_topics bigint;
BEGIN
    IF p_header ->> 'id' IS NULL OR p_header ->> 'id' !~ '^-?[0-9]+$' THEN
        RAISE EXCEPTION 'the chat has no numeric "id"';
    END IF;
    v_chat := parley_tg_chat_id(v_type, (p_header ->> 'id')::bigint);
    v_kind := CASE
        WHEN v_type IN ('personal_chat', 'bot_chat', 'saved_messages', 'replies') THEN 'private'
        WHEN v_type = 'private_group' THEN 'group'
        WHEN v_type LIKE '%channel' THEN 'channel'
        ELSE 'supergroup'
    END;

    INSERT INTO chats AS c (id, kind, external_id, title, username, active, extra)
    VALUES (v_chat, v_kind, p_header ->> 'id',
            CASE WHEN v_type = 'saved_messages' THEN coalesce(p_header ->> 'name', 'Saved Messages')
                 ELSE p_header ->> 'name' END,
            NULL, NOT p_left,
            jsonb_build_object('source', 'telegram_export', 'export_type', v_type))
    ON CONFLICT (id) DO UPDATE
        SET title = coalesce(EXCLUDED.title, c.title), active = EXCLUDED.active,
            extra = coalesce(c.extra, '{}') || EXCLUDED.extra, updated_at = now()
        WHERE (c.title, c.active) IS DISTINCT FROM (coalesce(EXCLUDED.title, c.title),
                                                    EXCLUDED.active)
           OR NOT coalesce(c.extra, '{}') @> EXCLUDED.extra;

    -- Senders and actors (the newest name wins). A sender's name is a full
    -- display name: it goes into first_name alone, and never over the names
    -- of a contact (contacts.list) or of the account's own user.
    INSERT INTO users AS u (id, first_name)
    SELECT DISTINCT ON (uid) uid, name
    FROM (SELECT parley_tg_peer_id(coalesce(msg -> 'from_id', msg -> 'actor_id')) AS uid,
                 coalesce(msg ->> 'from', msg ->> 'actor') AS name,
                 (msg ->> 'id')::bigint AS mid
          FROM import_staging
          WHERE import_id = p_import AND chat_key = p_chat_key) s
    WHERE uid > 0
    ORDER BY uid, mid DESC
    ON CONFLICT (id) DO UPDATE SET first_name = EXCLUDED.first_name, last_name = NULL,
                                   updated_at = now()
        WHERE (u.first_name, u.last_name) IS DISTINCT FROM (EXCLUDED.first_name, NULL)
          AND EXCLUDED.first_name IS NOT NULL AND NOT u.is_contact
          AND NOT coalesce((u.extra ->> 'is_self')::boolean, false);

    WITH src AS (
        SELECT DISTINCT ON ((msg ->> 'id')::bigint) msg AS m
        FROM import_staging
        WHERE import_id = p_import AND chat_key = p_chat_key AND msg ->> 'id' ~ '^-?[0-9]+$'
        ORDER BY (msg ->> 'id')::bigint
    ), rows AS (
        SELECT (m ->> 'id')::bigint AS id,
               parley_tg_peer_id(coalesce(m -> 'from_id', m -> 'actor_id')) AS sender_id,
               coalesce(m ->> 'from', m ->> 'actor') AS sender_name,
               coalesce(parley_tg_time(m -> 'date_unixtime', m -> 'date', p_tz), 'epoch') AS date,
               parley_tg_time(m -> 'edited_unixtime', m -> 'edited', p_tz) AS edit_date,
               nullif(parley_tg_text(m -> 'text'), '') AS text,
               parley_tg_entities(m) AS entities,
               (m ->> 'reply_to_message_id')::bigint AS reply_to_id,
               parley_tg_peer_id(m -> 'reply_to_peer_id') AS reply_to_peer,
               m ->> 'forwarded_from' AS forward_from_name,
               parley_tg_media_kind(m) AS media_kind,
               CASE WHEN m ->> 'type' IN ('service', 'unsupported') THEN m ->> 'type'
                    ELSE 'message' END AS kind,
               CASE WHEN m ->> 'type' = 'service' THEN
                   m - '{id,type,date,date_unixtime,actor,actor_id,text,text_entities}'::text[]
               END AS action,
               CASE WHEN m ?| ARRAY['via_bot', 'author', 'saved_from', 'forwarded_from_id',
                                    'reactions', 'inline_bot_buttons', 'poll', 'todo_list',
                                    'location_information', 'place_name', 'address',
                                    'live_location_period_seconds', 'contact_information',
                                    'contact_vcard', 'game_title', 'invoice_information', 'dice',
                                    'self_destruct_period_seconds', 'signature']
               THEN nullif(jsonb_strip_nulls(jsonb_build_object(
                   'via_bot', m -> 'via_bot', 'author', m -> 'author',
                   'saved_from', m -> 'saved_from', 'forwarded_from_id', m -> 'forwarded_from_id',
                   'reactions', m -> 'reactions', 'inline_bot_buttons', m -> 'inline_bot_buttons',
                   'poll', m -> 'poll', 'todo_list', m -> 'todo_list',
                   'location', m -> 'location_information', 'place_name', m -> 'place_name',
                   'address', m -> 'address', 'live_location_period_seconds',
                   m -> 'live_location_period_seconds', 'contact', m -> 'contact_information',
                   'contact_vcard', m -> 'contact_vcard', 'game', m -> 'game_title',
                   'invoice', m -> 'invoice_information', 'dice', m -> 'dice',
                   'self_destruct_period_seconds', m -> 'self_destruct_period_seconds',
                   'signature', m -> 'signature')), '{}'::jsonb) END AS extra,
               m
        FROM src
    ), ins AS (
        INSERT INTO messages AS x (chat_id, id, sender_id, sender_name, date, edit_date, text,
                                   entities, reply_to_id, reply_to_chat_id, forward_from_name,
                                   media_kind, has_link, kind, action, extra)
        SELECT v_chat, r.id, r.sender_id, r.sender_name, r.date, r.edit_date, r.text, r.entities,
               r.reply_to_id, CASE WHEN r.reply_to_peer <> v_chat THEN r.reply_to_peer END,
               r.forward_from_name, r.media_kind,
               coalesce(r.entities @? '$[*] ? (@.type == "link" || @.type == "text_link")', false)
                   OR coalesce(strpos(r.text, '://') > 0 AND r.text ~* 'https?://', false),
               r.kind, r.action, r.extra
        FROM rows r
        ON CONFLICT (chat_id, id) DO UPDATE
            SET sender_id = EXCLUDED.sender_id, sender_name = EXCLUDED.sender_name,
                date = EXCLUDED.date, edit_date = EXCLUDED.edit_date, text = EXCLUDED.text,
                entities = EXCLUDED.entities, reply_to_id = EXCLUDED.reply_to_id,
                reply_to_chat_id = EXCLUDED.reply_to_chat_id,
                forward_from_name = EXCLUDED.forward_from_name, media_kind = EXCLUDED.media_kind,
                has_link = EXCLUDED.has_link, kind = EXCLUDED.kind, action = EXCLUDED.action,
                extra = EXCLUDED.extra, updated_at = now()
            WHERE (x.sender_id, x.sender_name, x.date, x.edit_date, x.text, x.entities,
                   x.reply_to_id, x.reply_to_chat_id, x.forward_from_name, x.media_kind,
                   x.has_link, x.kind, x.action, x.extra)
                  IS DISTINCT FROM
                  (EXCLUDED.sender_id, EXCLUDED.sender_name, EXCLUDED.date, EXCLUDED.edit_date,
                   EXCLUDED.text, EXCLUDED.entities, EXCLUDED.reply_to_id,
                   EXCLUDED.reply_to_chat_id, EXCLUDED.forward_from_name, EXCLUDED.media_kind,
                   EXCLUDED.has_link, EXCLUDED.kind, EXCLUDED.action, EXCLUDED.extra)
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM rows), (SELECT count(*) FROM ins) INTO v_count, v_written;

    -- Files: photos and documents of messages (service photos included).
    INSERT INTO media AS f (chat_id, message_id, ordinal, kind, export_path, mime_type, file_size,
                            width, height, duration, file_name, state, extra)
    SELECT v_chat, (m ->> 'id')::bigint, 0,
           CASE WHEN m ? 'photo' THEN 'photo'
                ELSE coalesce(nullif(parley_tg_media_kind(m), 'document'), 'document') END,
           coalesce(m ->> 'photo', m ->> 'file'),
           m ->> 'mime_type',
           coalesce(m ->> 'file_size', m ->> 'photo_file_size')::bigint,
           (m ->> 'width')::integer, (m ->> 'height')::integer,
           (m ->> 'duration_seconds')::integer, m ->> 'file_name',
           CASE WHEN parley_tg_file_missing(coalesce(m ->> 'photo', m ->> 'file'))
                THEN 'unavailable' ELSE 'remote' END,
           nullif(jsonb_strip_nulls(jsonb_build_object(
               'thumbnail', m -> 'thumbnail', 'sticker_emoji', m -> 'sticker_emoji',
               'media_type', m -> 'media_type')), '{}'::jsonb)
    FROM (SELECT DISTINCT ON ((msg ->> 'id')::bigint) msg AS m
          FROM import_staging
          WHERE import_id = p_import AND chat_key = p_chat_key AND msg ->> 'id' ~ '^-?[0-9]+$'
            AND (msg ? 'photo' OR msg ? 'file')
          ORDER BY (msg ->> 'id')::bigint) s
    ON CONFLICT (chat_id, message_id, ordinal) DO UPDATE
        SET kind = EXCLUDED.kind, export_path = EXCLUDED.export_path,
            mime_type = EXCLUDED.mime_type, file_size = EXCLUDED.file_size,
            width = EXCLUDED.width, height = EXCLUDED.height, duration = EXCLUDED.duration,
            file_name = EXCLUDED.file_name, extra = EXCLUDED.extra,
            state = CASE WHEN f.state = 'done' THEN f.state ELSE EXCLUDED.state END,
            updated_at = now()
        WHERE (f.kind, f.export_path, f.mime_type, f.file_size, f.width, f.height, f.duration,
               f.file_name, f.extra)
              IS DISTINCT FROM
              (EXCLUDED.kind, EXCLUDED.export_path, EXCLUDED.mime_type, EXCLUDED.file_size,
               EXCLUDED.width, EXCLUDED.height, EXCLUDED.duration, EXCLUDED.file_name,
               EXCLUDED.extra)
           OR (f.state <> 'done' AND f.state IS DISTINCT FROM EXCLUDED.state);

    -- Forum topics: a topic_created service message opens one (its id is
    -- the topic's); topic_edit renames it.
    INSERT INTO topics AS t (chat_id, id, title, creator_id, created_date, extra)
    SELECT v_chat, id, coalesce((SELECT a.action ->> 'title'
                                 FROM messages a
                                 WHERE a.chat_id = v_chat AND a.reply_to_id = m.id
                                   AND a.action ->> 'action' = 'topic_edit'
                                   AND a.action ->> 'title' IS NOT NULL
                                 ORDER BY a.id DESC LIMIT 1),
                                m.action ->> 'title', ''),
           m.sender_id, m.date, NULL
    FROM messages m
    WHERE m.chat_id = v_chat AND m.action ->> 'action' = 'topic_created'
    ON CONFLICT (chat_id, id) DO UPDATE SET title = EXCLUDED.title, updated_at = now()
        WHERE t.title IS DISTINCT FROM EXCLUDED.title;
    GET DIAGNOSTICS v_topics = ROW_COUNT;

    -- A message belongs to the topic whose creation it replies to, directly
    -- or through a reply chain.
    WITH RECURSIVE tree (id, topic) AS (
        SELECT id, id FROM topics WHERE chat_id = v_chat
        UNION
        SELECT m.id, tree.topic
        FROM messages m JOIN tree ON m.chat_id = v_chat AND m.reply_to_id = tree.id
    )
    UPDATE messages m SET topic_id = tree.topic, updated_at = now()
    FROM tree
    WHERE m.chat_id = v_chat AND m.id = tree.id AND m.topic_id IS DISTINCT FROM tree.topic;

    IF EXISTS (SELECT 1 FROM topics WHERE chat_id = v_chat) THEN
        UPDATE chats SET kind = 'forum', updated_at = now()
        WHERE id = v_chat AND kind = 'supergroup';
    END IF;

    UPDATE chats c
    SET last_message_id = l.id, last_message_date = l.date, updated_at = now()
    FROM (SELECT id, date FROM messages WHERE chat_id = v_chat ORDER BY date DESC, id DESC
          LIMIT 1) l
    WHERE c.id = v_chat AND (c.last_message_id, c.last_message_date)
                            IS DISTINCT FROM (l.id, l.date);

    -- What an import brings is read: the read marker moves up to its newest
    -- message (never back).
    UPDATE chats c SET read_inbox_max_id = r.top, updated_at = now()
    FROM (SELECT max((msg ->> 'id')::bigint) AS top FROM import_staging
          WHERE import_id = p_import AND chat_key = p_chat_key AND msg ->> 'id' ~ '^-?[0-9]+$') r
    WHERE c.id = v_chat AND r.top IS NOT NULL
      AND coalesce(c.read_inbox_max_id, 0) < r.top;

    DELETE FROM import_staging WHERE import_id = p_import AND chat_key = p_chat_key;
    RETURN jsonb_build_object('chat_id', v_chat, 'messages', v_count, 'written', v_written,
                              'topics', (SELECT count(*) FROM topics WHERE chat_id = v_chat));
END
$$;

-- Contacts of a whole-account export ("contacts": {"list": [...]}): a
-- contact's first and last name are the user's.
CREATE OR REPLACE FUNCTION parley_tg_import_contacts(p_list jsonb) RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    v_n bigint;
BEGIN
    INSERT INTO users AS u (id, first_name, last_name, phone, is_contact)
    SELECT DISTINCT ON ((c ->> 'user_id')::bigint) (c ->> 'user_id')::bigint,
           nullif(c ->> 'first_name', ''), nullif(c ->> 'last_name', ''),
           nullif(c ->> 'phone_number', ''), true
    FROM jsonb_array_elements(coalesce(p_list, '[]')) AS x(c)
    WHERE c ->> 'user_id' ~ '^[0-9]+$' AND (c ->> 'user_id')::bigint > 0
    ON CONFLICT (id) DO UPDATE
        SET first_name = coalesce(EXCLUDED.first_name, u.first_name),
            last_name = CASE WHEN EXCLUDED.first_name IS NOT NULL THEN EXCLUDED.last_name
                             ELSE coalesce(EXCLUDED.last_name, u.last_name) END,
            phone = coalesce(EXCLUDED.phone, u.phone), is_contact = true, updated_at = now()
        WHERE (u.first_name, u.last_name, u.phone, u.is_contact)
              IS DISTINCT FROM (coalesce(EXCLUDED.first_name, u.first_name),
                                CASE WHEN EXCLUDED.first_name IS NOT NULL THEN EXCLUDED.last_name
                                     ELSE coalesce(EXCLUDED.last_name, u.last_name) END,
                                coalesce(EXCLUDED.phone, u.phone), true);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;

-- The account's own user from a whole-account export
-- ("personal_information"): upserted into users and marked with
-- extra.is_self, so tools can tell "me" from the others.
CREATE OR REPLACE FUNCTION parley_tg_import_self(p jsonb) RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    IF p ->> 'user_id' IS NULL OR p ->> 'user_id' !~ '^[0-9]+$' THEN
        RETURN NULL;
    END IF;
    v_id := (p ->> 'user_id')::bigint;
    INSERT INTO users AS u (id, first_name, last_name, username, phone, about, extra)
    VALUES (v_id, nullif(p ->> 'first_name', ''), nullif(p ->> 'last_name', ''),
            nullif(ltrim(p ->> 'username', '@'), ''), nullif(p ->> 'phone_number', ''),
            nullif(p ->> 'bio', ''), '{"is_self": true}')
    ON CONFLICT (id) DO UPDATE
        SET first_name = coalesce(EXCLUDED.first_name, u.first_name),
            last_name = coalesce(EXCLUDED.last_name, u.last_name),
            username = coalesce(EXCLUDED.username, u.username),
            phone = coalesce(EXCLUDED.phone, u.phone), about = coalesce(EXCLUDED.about, u.about),
            extra = coalesce(u.extra, '{}') || EXCLUDED.extra, updated_at = now()
        WHERE (u.first_name, u.last_name, u.username, u.phone, u.about)
              IS DISTINCT FROM (coalesce(EXCLUDED.first_name, u.first_name),
                                coalesce(EXCLUDED.last_name, u.last_name),
                                coalesce(EXCLUDED.username, u.username),
                                coalesce(EXCLUDED.phone, u.phone),
                                coalesce(EXCLUDED.about, u.about))
           OR NOT coalesce(u.extra, '{}') @> EXCLUDED.extra;
    RETURN v_id;
END
$$;
