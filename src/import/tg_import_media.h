/* tg_import_media: the files of an imported Telegram chat copied into the
 * media store (archive/media_store.h): which of the chat's media rows are
 * still to be looked at (TG_IMPORT_MEDIA_LIST_SQL), each one's file stored
 * (tg_import_media_copy, on the thread pool), and what became of each
 * written back (TG_IMPORT_MEDIA_SAVE_SQL) and counted. A file is opened
 * once beneath the export folder, without following a symbolic link
 * anywhere on its path, and must be a regular file (beneath_open_read):
 * that descriptor is what is stored. A refused file marks its row and is
 * named in a warning; the rest goes on. tg_import drives it after each
 * chat, TG_IMPORT_MEDIA_BATCH rows at a time. */
#ifndef PARLEY_IMPORT_TG_IMPORT_MEDIA_H
#define PARLEY_IMPORT_TG_IMPORT_MEDIA_H

#include <jansson.h>

#include "import/tg_import.h"

/* $1 the chat's id, $2 how many rows at most: the rows with a file in the
 * export still to be stored, as the text of a JSON array
 * [{message_id, ordinal, export_path}] (the batch). */
#define TG_IMPORT_MEDIA_LIST_SQL                                                                   \
    "SELECT coalesce(jsonb_agg(jsonb_build_object('message_id', message_id, 'ordinal', "           \
    "ordinal, 'export_path', export_path) ORDER BY message_id, ordinal), '[]')::text "             \
    "FROM (SELECT message_id, ordinal, export_path FROM media "                                    \
    "WHERE chat_id = $1::bigint AND state = 'remote' AND export_path IS NOT NULL "                 \
    "AND NOT parley_tg_file_missing(export_path) ORDER BY message_id, ordinal "                    \
    "LIMIT $2::integer) s"
/* $1 the chat's id, $2 the JSON text of a batch tg_import_media_copy went
 * through: each row's state, file and error stored. */
#define TG_IMPORT_MEDIA_SAVE_SQL                                                                   \
    "UPDATE media m SET state = u.state, sha256 = u.sha256, local_path = u.local_path, "           \
    "error = u.error, file_size = coalesce(u.size, m.file_size), "                                 \
    "downloaded_at = CASE WHEN u.state = 'done' THEN now() END, updated_at = now() "               \
    "FROM jsonb_to_recordset($2::jsonb) AS u(message_id bigint, ordinal smallint, "                \
    "state text, sha256 text, local_path text, error text, size bigint) "                          \
    "WHERE m.chat_id = $1::bigint AND m.message_id = u.message_id "                                \
    "AND m.ordinal = u.ordinal"

/* Stores the file of each row of batch (export_path, relative to
 * export_dir) into the media store at media_root, and sets the row's
 * state: "done" with sha256, local_path and size; "unavailable" (not in
 * the export) or "error" with error. A refused file is warned, naming
 * path (the export's file) and the message. Thread pool. */
void tg_import_media_copy(json_t *batch, const char *export_dir, const char *media_root,
                          const char *path);
/* Counts the rows of a batch that went through tg_import_media_copy into
 * st's files_stored, files_missing and files_refused. */
void tg_import_media_count(const json_t *batch, tg_import_stats_t *st);

#endif
