-- tg_import_reference: the SQL mapping of Telegram export messages as the
-- store had it before the importer mapped them itself (src/import/tg_map.c),
-- kept only for tests/integration/import_telegram_map.sh, which imports the
-- same exports both ways and compares every stored column. Loaded into the
-- test's reference database only; the rows come from tg_stage.mjs (the
-- export's messages as the old reader handed them to the database). The
-- functions are those of import.sql before the change, renamed.
CREATE UNLOGGED TABLE ref_staging (
    import_id bigint NOT NULL,
    chat_key  bigint NOT NULL,
    msg       jsonb NOT NULL
);

-- Bot API id of an export peer reference: "user123", "channel123",
-- "chat123", or a bare number (exports of about 2020).
CREATE OR REPLACE FUNCTION ref_tg_peer_id(p jsonb) RETURNS bigint
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
CREATE OR REPLACE FUNCTION ref_tg_text(t jsonb) RETURNS text
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
-- array text; none (NULL) when every run is plain text ({"type": "plain",
-- "text": ...} and nothing else), which the text says whole.
CREATE OR REPLACE FUNCTION ref_tg_entities_plain(e jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE AS $$
    SELECT NOT EXISTS (SELECT 1 FROM jsonb_array_elements(e) AS x(r)
                       WHERE NOT (jsonb_typeof(r) = 'object' AND r ->> 'type' = 'plain'
                                  AND (r - 'type' - 'text') = '{}'::jsonb
                                  AND jsonb_typeof(r -> 'type') = 'string'))
$$;
CREATE OR REPLACE FUNCTION ref_tg_entities(m jsonb) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF jsonb_typeof(m -> 'text_entities') = 'array' THEN
        RETURN CASE WHEN NOT ref_tg_entities_plain(m -> 'text_entities') THEN m -> 'text_entities' END;
    ELSIF jsonb_typeof(m -> 'text') = 'array' THEN
        RETURN (SELECT CASE WHEN NOT ref_tg_entities_plain(a) THEN a END
                FROM (SELECT jsonb_agg(CASE jsonb_typeof(e)
                                       WHEN 'string' THEN jsonb_build_object('type', 'plain',
                                                                             'text', e)
                                       ELSE e END ORDER BY ord) AS a
                      FROM jsonb_array_elements(m -> 'text') WITH ORDINALITY AS x(e, ord)) y);
    END IF;
    RETURN NULL;
END
$$;

-- A time of the export: the unixtime field when present, else the local
-- "date" string read at the given UTC offset.
CREATE OR REPLACE FUNCTION ref_tg_time(unixtime jsonb, local jsonb, tz interval) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN unixtime #>> '{}' ~ '^[0-9]+$' THEN to_timestamp((unixtime #>> '{}')::bigint)
        WHEN local #>> '{}' ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$' THEN
            ((local #>> '{}')::timestamp - tz) AT TIME ZONE 'UTC'
    END
$$;

CREATE OR REPLACE FUNCTION ref_tg_media_kind(m jsonb) RETURNS text
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

-- The mapping of one staged chat as parley_tg_import_chat did it in SQL,
-- into the staging tables the importer fills now (import_rows with every
-- message, import_media), then the store's parley_tg_import_chat as for a
-- chat whose rows were all staged: the importer's rows, COPYed straight
-- into messages, must come out the same.
CREATE OR REPLACE FUNCTION ref_tg_import_chat(p_import bigint, p_chat_key bigint, p_header jsonb,
                                              p_tz interval, p_left boolean) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    v_res jsonb;
BEGIN
    WITH src AS (
        SELECT msg AS m
        FROM ref_staging
        WHERE import_id = p_import AND chat_key = p_chat_key
          AND (msg ->> 'id' IS NULL OR msg ->> 'id' ~ '^-?[0-9]+$')
    ), rows AS (
        SELECT (m ->> 'id')::bigint AS id,
               ref_tg_peer_id(coalesce(m -> 'from_id', m -> 'actor_id')) AS sender_id,
               coalesce(m ->> 'from', m ->> 'actor') AS sender_name,
               coalesce(ref_tg_time(m -> 'date_unixtime', m -> 'date', p_tz), 'epoch') AS date,
               ref_tg_time(m -> 'edited_unixtime', m -> 'edited', p_tz) AS edit_date,
               nullif(ref_tg_text(m -> 'text'), '') AS text,
               ref_tg_entities(m) AS entities,
               (m ->> 'reply_to_message_id')::bigint AS reply_to_id,
               ref_tg_peer_id(m -> 'reply_to_peer_id') AS reply_to_peer,
               m ->> 'forwarded_from' AS forward_from_name,
               ref_tg_media_kind(m) AS media_kind,
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
                   'signature', m -> 'signature')), '{}'::jsonb) END AS extra
        FROM src
    )
    INSERT INTO import_rows (chat_id, id, sender_id, sender_name, date, edit_date, text, entities,
                             reply_to_id, reply_to_chat_id, forward_from_name, media_kind,
                             has_link, kind, action, extra)
    SELECT NULL, r.id, r.sender_id, r.sender_name, r.date, r.edit_date, r.text, r.entities,
           r.reply_to_id, r.reply_to_peer, r.forward_from_name, r.media_kind,
           coalesce(r.entities @? '$[*] ? (@.type == "link" || @.type == "text_link")', false)
               OR coalesce(strpos(r.text, '://') > 0 AND r.text ~* 'https?://', false),
           r.kind, r.action, r.extra
    FROM rows r;

    INSERT INTO import_media (message_id, kind, export_path, mime_type, file_size, width, height,
                              duration, file_name, state, extra)
    SELECT (m ->> 'id')::bigint,
           CASE WHEN m ? 'photo' THEN 'photo'
                ELSE coalesce(nullif(ref_tg_media_kind(m), 'document'), 'document') END,
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
    FROM (SELECT msg AS m FROM ref_staging
          WHERE import_id = p_import AND chat_key = p_chat_key AND msg ->> 'id' ~ '^-?[0-9]+$'
            AND (msg ? 'photo' OR msg ? 'file')) s;

    v_res := parley_tg_import_chat(p_header, p_left, false, NULL);
    DELETE FROM ref_staging WHERE import_id = p_import AND chat_key = p_chat_key;
    RETURN v_res;
END
$$;
