/* tg_map: maps one message of a Telegram Desktop export (a jansson object,
 * as tg_reader builds it) to its final columns: a COPY text-format row for
 * messages (or the import_rows staging table, which has the same columns)
 * and, when it carries a file, a row for import_media. It gives exactly the
 * values the SQL mapping of the store gave (PostgreSQL's text of JSON
 * values, its integer and timestamp input rules, jsonb_strip_nulls, the
 * link test), so that the database only loads rows. Pure CPU work on the
 * caller's memory: it runs on the thread pool inside the reader. */
#ifndef PARLEY_IMPORT_TG_MAP_H
#define PARLEY_IMPORT_TG_MAP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* The columns of a message row, in order (COPY messages / import_rows). */
#define TG_MAP_MESSAGE_COLUMNS                                                                     \
    "chat_id, id, sender_id, sender_name, date, edit_date, text, entities, reply_to_id, "          \
    "reply_to_chat_id, forward_from_name, media_kind, has_link, kind, action, extra"
/* The columns of a media row (COPY import_media). */
#define TG_MAP_MEDIA_COLUMNS                                                                       \
    "message_id, kind, export_path, mime_type, file_size, width, height, duration, file_name, "    \
    "state, extra"

typedef struct tg_map_opts_s {
    bool chat_known; /* chat_id is the chat's id; else the rows get NULL */
    int64_t chat_id;
    int tz_seconds; /* UTC offset of the export's local dates */
} tg_map_opts_t;

typedef enum {
    TG_MAP_ROW = 0, /* a row with an id */
    TG_MAP_NO_ID,   /* a row with a NULL id (its sender still counts) */
    TG_MAP_SKIPPED, /* an id that is not an integer: no row */
} tg_map_kind_t;

/* Maps m. Appends one row to rows (unless skipped) and at most one to media.
 * Returns 0 with *kind and *id, or a negative code with err saying what:
 * UV_EINVAL for a message that cannot be stored (a field PostgreSQL could
 * not have read either, a date given that is not one, an id not above 0),
 * else ENOBUFS/ENOMEM. On 0, err is "" or names a value stored other than
 * given: a file_size, width, height or duration below 0 stored as NULL
 * ("message 5: \"file_size\" -1 is not a size; stored without it"), no
 * date at all stored as the epoch. */
int tg_map_message(const json_t *m, const tg_map_opts_t *o, buf_t *rows, buf_t *media,
                   tg_map_kind_t *kind, int64_t *id, char *err, size_t errcap);

/* The chat's Bot API id from its export fields ("type", numeric "id"):
 * false when there is no usable id. */
__attribute__((warn_unused_result)) bool tg_map_chat_id(const json_t *header, int64_t *out);

/* Seconds of a "+HH:MM" offset (as tg_map_parse_tz writes it). */
int tg_map_tz_seconds(const char *tz);

/* True when tz is a UTC offset this importer accepts ("+03:00", "-5",
 * "+0530", "UTC", "Z"); normalises it to "+HH:MM" in out. */
__attribute__((warn_unused_result)) bool tg_map_parse_tz(const char *tz, char *out, size_t cap);

#endif
