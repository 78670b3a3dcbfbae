-- telegram/import: the Telegram Desktop export import
-- (src/import/tg_import.c). The importer maps every message to its
-- columns itself (src/import/tg_map.c) and loads a chat in one
-- transaction: parley_tg_import_begin, COPYs of its rows (into messages
-- when the chat has none yet, else into import_rows), then
-- parley_tg_import_chat, which upserts the staged rows and derives users,
-- files and topics, so that importing the same export twice changes
-- nothing. A message keeps its newest version, by edit date: an export
-- older than the store (or than the bot's copy) takes back no edit, and
-- fields it lacks erase nothing.

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

-- A path that is really a marker: "(File not included. ...)",
-- "(File unavailable, ...)", "(File exceeds maximum size. ...)".
CREATE OR REPLACE FUNCTION parley_tg_file_missing(path text) RETURNS boolean
    LANGUAGE sql IMMUTABLE AS $$
    SELECT path IS NOT NULL AND path ~ '^\(File '
$$;

-- The chat's row from its export fields (name, type, id; p_left: from
-- left_chats); its Bot API id.
CREATE OR REPLACE FUNCTION parley_tg_import_chat_row(p_header jsonb, p_left boolean) RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    v_type text := coalesce(p_header ->> 'type', 'personal_chat');
    v_chat bigint;
    v_kind text;
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
    -- ON CONFLICT DO UPDATE locks the row even when nothing changes: a
    -- second import of the chat waits for this one's transaction.
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
    RETURN v_chat;
END
$$;

-- Which version of a stored message an import keeps: the one edited last.
-- The incoming version (edit date p_theirs) is newer than the stored one
-- (p_mine) when it has an edit date and the stored one has none or an
-- earlier one; with equal or no edit dates the stored version stays (an
-- export carries no date of its own, so an unedited message in two exports
-- cannot tell which is newer). Scalar SQL, inlined into the upsert.
CREATE OR REPLACE FUNCTION parley_tg_newer(p_mine timestamptz, p_theirs timestamptz)
    RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT p_theirs IS NOT NULL AND (p_mine IS NULL OR p_theirs > p_mine)
$$;

-- A column of the version (text, entities, edit date, link, media): the
-- newer version's value, taken as a whole (NULL included: an edit may
-- remove the formatting).
CREATE OR REPLACE FUNCTION parley_tg_newest(p_mine timestamptz, p_theirs timestamptz,
                                            v_mine anyelement, v_theirs anyelement)
    RETURNS anyelement LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN parley_tg_newer(p_mine, p_theirs) THEN v_theirs ELSE v_mine END
$$;

-- Any other column (sender, date, reply, forward, kind, action): the newer
-- version's value, or the other's when the newer lacks it.
CREATE OR REPLACE FUNCTION parley_tg_newest_known(p_mine timestamptz, p_theirs timestamptz,
                                                  v_mine anyelement, v_theirs anyelement)
    RETURNS anyelement LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN parley_tg_newer(p_mine, p_theirs) THEN coalesce(v_theirs, v_mine)
                ELSE coalesce(v_mine, v_theirs) END
$$;

-- extra (reactions, poll, buttons, ...): the keys of both versions, the
-- newer one's value for a key both have; NULL when neither has any.
CREATE OR REPLACE FUNCTION parley_tg_newest_extra(p_mine timestamptz, p_theirs timestamptz,
                                                  v_mine jsonb, v_theirs jsonb)
    RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN v_mine IS NULL AND v_theirs IS NULL THEN NULL
                WHEN parley_tg_newer(p_mine, p_theirs)
                THEN coalesce(v_mine, '{}') || coalesce(v_theirs, '{}')
                ELSE coalesce(v_theirs, '{}') || coalesce(v_mine, '{}') END
$$;

-- A stored message x and another version e of it, merged column by column
-- (the rules of the three functions above), as a row of import_rows (the
-- columns an import writes). One ROW expression, so that PostgreSQL
-- inlines it where the upsert reads it: x's and e's columns are read
-- directly (the test of an unchanged row compares the merged row with
-- x's as two rows).
CREATE OR REPLACE FUNCTION parley_tg_merge(x messages, e messages) RETURNS import_rows
    LANGUAGE sql IMMUTABLE AS $$
    SELECT ROW(x.chat_id, x.id,
               parley_tg_newest_known(x.edit_date, e.edit_date, x.sender_id, e.sender_id),
               parley_tg_newest_known(x.edit_date, e.edit_date, x.sender_name, e.sender_name),
               parley_tg_newest_known(x.edit_date, e.edit_date, x.date, e.date),
               parley_tg_newest(x.edit_date, e.edit_date, x.edit_date, e.edit_date),
               parley_tg_newest(x.edit_date, e.edit_date, x.text, e.text),
               parley_tg_newest(x.edit_date, e.edit_date, x.entities, e.entities),
               parley_tg_newest_known(x.edit_date, e.edit_date, x.reply_to_id, e.reply_to_id),
               parley_tg_newest_known(x.edit_date, e.edit_date, x.reply_to_chat_id,
                                      e.reply_to_chat_id),
               parley_tg_newest_known(x.edit_date, e.edit_date, x.forward_from_name,
                                      e.forward_from_name),
               parley_tg_newest(x.edit_date, e.edit_date, x.media_kind, e.media_kind),
               parley_tg_newest(x.edit_date, e.edit_date, x.has_link, e.has_link),
               parley_tg_newest_known(x.edit_date, e.edit_date, x.kind, e.kind),
               parley_tg_newest_known(x.edit_date, e.edit_date, x.action, e.action),
               parley_tg_newest_extra(x.edit_date, e.edit_date, x.extra, e.extra))::import_rows
$$;

-- Opens a chat's import, inside the transaction that holds all of it (the
-- importer's BEGIN): the chat's row, and whether its rows may be COPYed
-- straight into messages, which is when the chat has no messages yet.
-- p_chat: the id the importer computed from the fields before "messages"
-- (NULL when they do not give it: then every row is staged).
CREATE OR REPLACE FUNCTION parley_tg_import_begin(p_header jsonb, p_left boolean, p_chat bigint)
    RETURNS boolean
    LANGUAGE plpgsql AS $$
DECLARE
    v_chat bigint;
BEGIN
    IF p_chat IS NULL THEN
        RETURN false;
    END IF;
    v_chat := parley_tg_import_chat_row(p_header, p_left);
    IF v_chat <> p_chat THEN
        RAISE EXCEPTION 'internal: chat id % differs from the importer''s %', v_chat, p_chat;
    END IF;
    RETURN NOT EXISTS (SELECT 1 FROM messages WHERE chat_id = v_chat);
END
$$;

-- Closes a chat's import, in the same transaction: its users, the staged
-- rows (import_rows: all of them, or when p_direct those after the first
-- id that did not rise), files (import_media), topics, last message and
-- read marker; the staged rows are deleted. p_header: the chat's fields
-- again (with any given after "messages"); p_direct: rows went straight
-- into messages, the chat having none before. Re-running it with the same
-- rows changes nothing. Returns {"chat_id", "messages", "written",
-- "topics", "duplicates": copies of an id the export holds more than once
-- that were left out (of several copies, the one edited last is kept),
-- "duplicate_ids": the first 20 such ids}.
CREATE OR REPLACE FUNCTION parley_tg_import_chat(p_header jsonb, p_left boolean, p_direct boolean,
                                                 p_chat bigint) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    v_chat bigint;
    v_count bigint;
    v_written bigint;
    v_dups bigint;
    v_dup_ids jsonb;
BEGIN
    v_chat := parley_tg_import_chat_row(p_header, p_left);
    IF p_chat IS NOT NULL AND v_chat <> p_chat THEN
        RAISE EXCEPTION 'the chat''s "id" or "type" after its messages differ from those before';
    END IF;

    -- Senders and actors (the newest name wins). A sender's name is a full
    -- display name: it goes into first_name alone, and never over the names
    -- of a contact (contacts.list) or of the account's own user.
    INSERT INTO users AS u (id, first_name)
    SELECT DISTINCT ON (uid) uid, name
    FROM (SELECT sender_id AS uid, sender_name AS name, id AS mid
          FROM messages WHERE p_direct AND chat_id = v_chat
          UNION ALL
          SELECT sender_id, sender_name, id FROM import_rows) s
    WHERE uid > 0
    ORDER BY uid, mid DESC
    ON CONFLICT (id) DO UPDATE SET first_name = EXCLUDED.first_name, last_name = NULL,
                                   updated_at = now()
        WHERE (u.first_name, u.last_name) IS DISTINCT FROM (EXCLUDED.first_name, NULL)
          AND EXCLUDED.first_name IS NOT NULL AND NOT u.is_contact
          AND NOT coalesce((u.extra ->> 'is_self')::boolean, false);

    -- An id given more than once: the copies left out, named (with
    -- p_direct the chat's messages are this export's rows loaded before).
    WITH d AS (
        SELECT id, count(*) - 1
                   + CASE WHEN p_direct AND EXISTS (SELECT 1 FROM messages m
                                                    WHERE m.chat_id = v_chat AND m.id = r.id)
                          THEN 1 ELSE 0 END AS extra
        FROM import_rows r
        WHERE id IS NOT NULL
        GROUP BY id
    )
    SELECT coalesce(sum(extra), 0),
           coalesce((SELECT jsonb_agg(id ORDER BY id)
                     FROM (SELECT id FROM d WHERE extra > 0 ORDER BY id LIMIT 20) f), '[]')
    INTO v_dups, v_dup_ids
    FROM d;

    WITH src AS (
        SELECT DISTINCT ON (id) *
        FROM import_rows
        WHERE id IS NOT NULL
        ORDER BY id, edit_date DESC NULLS LAST
    ), ins AS (
        INSERT INTO messages AS x (chat_id, id, sender_id, sender_name, date, edit_date, text,
                                   entities, reply_to_id, reply_to_chat_id, forward_from_name,
                                   media_kind, has_link, kind, action, extra)
        SELECT v_chat, r.id, r.sender_id, r.sender_name, r.date, r.edit_date, r.text, r.entities,
               r.reply_to_id, CASE WHEN r.reply_to_chat_id <> v_chat THEN r.reply_to_chat_id END,
               r.forward_from_name, r.media_kind, r.has_link, r.kind, r.action, r.extra
        FROM src r
        -- The newest version wins (parley_tg_newest): an older export never
        -- takes back an edit, and what it lacks erases nothing.
        ON CONFLICT (chat_id, id) DO UPDATE
            SET (chat_id, id, sender_id, sender_name, date, edit_date, text, entities,
                 reply_to_id, reply_to_chat_id, forward_from_name, media_kind, has_link, kind,
                 action, extra) = (SELECT (parley_tg_merge(x, EXCLUDED)).*),
                updated_at = now()
            -- An unchanged row is not written again.
            WHERE ROW(x.chat_id, x.id, x.sender_id, x.sender_name, x.date, x.edit_date, x.text,
                      x.entities, x.reply_to_id, x.reply_to_chat_id, x.forward_from_name,
                      x.media_kind, x.has_link, x.kind, x.action, x.extra)::import_rows
                  IS DISTINCT FROM parley_tg_merge(x, EXCLUDED)
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM src), (SELECT count(*) FROM ins) INTO v_count, v_written;
    IF p_direct THEN
        -- The chat had no messages: every one it has now is new.
        SELECT count(*) INTO v_count FROM messages WHERE chat_id = v_chat;
        v_written := v_count;
    END IF;

    -- Files: photos and documents of messages (service photos included).
    INSERT INTO media AS f (chat_id, message_id, ordinal, kind, export_path, mime_type, file_size,
                            width, height, duration, file_name, state, extra)
    SELECT DISTINCT ON (message_id) v_chat, message_id, 0, kind, export_path, mime_type,
           file_size, width, height, duration, file_name, state, extra
    FROM import_media
    ORDER BY message_id
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
    FROM (SELECT CASE WHEN p_direct THEN (SELECT max(id) FROM messages WHERE chat_id = v_chat)
                      ELSE (SELECT max(id) FROM import_rows) END AS top) r
    WHERE c.id = v_chat AND r.top IS NOT NULL
      AND coalesce(c.read_inbox_max_id, 0) < r.top;

    -- The staged rows never outlive the transaction.
    DELETE FROM import_rows;
    DELETE FROM import_media;
    RETURN jsonb_build_object('chat_id', v_chat, 'messages', v_count, 'written', v_written,
                              'topics', (SELECT count(*) FROM topics WHERE chat_id = v_chat),
                              'duplicates', v_dups, 'duplicate_ids', v_dup_ids);
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
