/* tg_import: `parleyd import telegram-export PATH`. Streams a Telegram
 * Desktop JSON export into the store: the reader parses the file a chunk at
 * a time on the thread pool (tg_reader) and maps each message to its
 * columns (tg_map); each chat is loaded in one transaction of its own
 * connection, its rows COPYed straight into messages when it has none yet
 * (else staged and upserted), and closed by one call of
 * parley_tg_import_chat (src/db/sql/telegram/import.sql). A chat is in the
 * store completely or not at all; on an error its transaction is rolled
 * back and the chats imported before it are named. Progress goes to
 * stderr: a bar with rate and ETA on a terminal, a line every few seconds
 * otherwise. */
#ifndef PARLEY_IMPORT_TG_IMPORT_H
#define PARLEY_IMPORT_TG_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "db/conninfo.h"
#include "db/pool.h"
#include "import/importer.h"

/* Time limit of one database step of an import (a COPY of a chunk, or the
 * end of a whole chat). */
#define TG_IMPORT_QUERY_TIMEOUT_MS (60u * 60 * 1000)
/* Non-terminal progress: a line this often. */
/* Media rows copied per thread-pool job. */
#define TG_IMPORT_MEDIA_BATCH 128

typedef struct tg_import_s tg_import_t;

typedef struct tg_import_stats_s {
    uint64_t chats;    /* imported completely */
    uint64_t messages; /* read from the export */
    uint64_t written;  /* messages inserted or changed */
    uint64_t contacts;
    uint64_t files_stored;  /* media files copied into the media store */
    uint64_t files_missing; /* referenced but not in the export folder */
    uint64_t files_refused; /* a link, out of the folder, not a regular file, unreadable */
    uint64_t skipped;       /* messages left out: a field could not be stored, over the
                             * cap, a second copy of an id (warned) */
    uint64_t duplicates;    /* of skipped: copies of an id already read */
    uint64_t repaired;      /* messages stored repaired: a NUL as U+FFFD (warned) */
} tg_import_stats_t;

/* The source "telegram-export" (importer.h): env->path a result.json or
 * its folder, env->tz the offset of dates without date_unixtime, files
 * into env->data_dir/media (tg_import_media.h). A stop ends it at the next
 * step (UV_ECANCELED): the open chat's transaction is rolled back, whole
 * chats imported stay. */
extern const importer_def_t tg_import_source;

#endif
