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
#ifndef PARLEY_ARCHIVE_TG_IMPORT_H
#define PARLEY_ARCHIVE_TG_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "db/conninfo.h"
#include "db/pool.h"

/* Time limit of one database step of an import (a COPY of a chunk, or the
 * end of a whole chat). */
#define TG_IMPORT_QUERY_TIMEOUT_MS (60u * 60 * 1000)
/* Non-terminal progress: a line this often. */
#define TG_IMPORT_PROGRESS_MS 5000
/* Media rows copied per thread-pool job. */
#define TG_IMPORT_MEDIA_BATCH 128

typedef struct tg_import_s tg_import_t;

/* status: 0, or a negative code with tg_import_error() saying what. */
typedef void (*tg_import_cb)(tg_import_t *imp, int status);

typedef struct tg_import_stats_s {
    uint64_t chats;    /* imported completely */
    uint64_t messages; /* read from the export */
    uint64_t written;  /* messages inserted or changed */
    uint64_t contacts;
    uint64_t files_stored;  /* media files copied into the media store */
    uint64_t files_missing; /* referenced but not in the export folder */
    uint64_t skipped;       /* messages left out: a field could not be stored (warned) */
} tg_import_stats_t;

/* Checks path (a result.json, or a folder holding one; a TZ offset such as
 * "+03:00" for exports without date_unixtime), opens it and starts. pool
 * runs the statements outside the chats' transactions; the transactions
 * get a connection of their own to conninfo (the same database). The
 * files of each chat found in the export folder are copied into the media
 * store at media_root (see media_store.h) after the chat is imported. Returns
 * 0, or a negative code with err naming the file. */
int tg_import_start(uv_loop_t *loop, pg_pool_t *pool, const pg_conninfo_t *conninfo,
                    const char *path, const char *tz, const char *media_root, tg_import_cb cb,
                    void *data, tg_import_t **out, char *err, size_t errcap);

/* Stops at the next step boundary (SIGINT): the open chat's transaction is
 * rolled back, whole chats already imported stay; the callback runs with
 * UV_ECANCELED. */
void tg_import_stop(tg_import_t *imp);

/* True once the callback ran. */
__attribute__((warn_unused_result)) bool tg_import_done(const tg_import_t *imp);

const char *tg_import_error(const tg_import_t *imp);
void tg_import_get_stats(const tg_import_t *imp, tg_import_stats_t *out);
void *tg_import_data(const tg_import_t *imp);

/* Frees an import that finished (after its callback). */
void tg_import_free(tg_import_t *imp);

/* True when tz is a UTC offset this importer accepts ("+03:00", "-5",
 * "+0530", "UTC", "Z"); normalises it to "+HH:MM" in out. */
__attribute__((warn_unused_result)) bool tg_import_parse_tz(const char *tz, char *out, size_t cap);

#endif
