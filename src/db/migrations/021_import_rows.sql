-- 021_import_rows: the Telegram import maps messages in the importer. It
-- reads each export message into its final columns (src/archive/tg_map.c)
-- and, in one transaction per chat, COPYs the rows straight into messages
-- when the chat has none yet, or else into import_rows, from which
-- parley_tg_import_chat upserts them as before; files go through
-- import_media. Rows of these two tables live only inside that transaction
-- (the chat's import deletes them before it commits), so each import sees
-- its own rows only. The jsonb staging table, its sequence and the SQL
-- mapping functions are gone.
-- Shaped like the columns the import fills, with their types and without
-- their constraints (id NULL: a message without an id, whose sender counts).
CREATE UNLOGGED TABLE import_rows AS
    SELECT chat_id, id, sender_id, sender_name, date, edit_date, text, entities, reply_to_id,
           reply_to_chat_id, forward_from_name, media_kind, has_link, kind, action, extra
    FROM messages WITH NO DATA;

CREATE UNLOGGED TABLE import_media AS
    SELECT message_id, kind, export_path, mime_type, file_size, width, height, duration,
           file_name, state, extra
    FROM media WITH NO DATA;

DROP FUNCTION IF EXISTS parley_tg_import_chat(bigint, bigint, jsonb, interval, boolean);
DROP FUNCTION IF EXISTS parley_tg_text(jsonb);
DROP FUNCTION IF EXISTS parley_tg_entities(jsonb);
DROP FUNCTION IF EXISTS parley_tg_time(jsonb, jsonb, interval);
DROP FUNCTION IF EXISTS parley_tg_media_kind(jsonb);
DROP FUNCTION IF EXISTS parley_tg_peer_id(jsonb);
DROP TABLE import_staging;
DROP SEQUENCE import_id_seq;
