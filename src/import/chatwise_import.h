/* chatwise_import: `parleyd import chatwise PATH`: the chats of the ChatWise
 * desktop app (its SQLite file app.db, or the folder holding it) into the
 * store as chats of kind ai_chat, through parley_chatwise_ingest (see
 * src/db/sql/chatwise/import.sql). The file is opened read-only with
 * SQLite's own read path, so a file the app has open is read as a
 * consistent snapshot per batch, never as half-written pages. Tables chat
 * and message are read in rowid order, CHATWISE_IMPORT_BATCH rows a step,
 * on the thread pool; each batch is applied in one transaction. Idempotent
 * and incremental: rows already stored unchanged are not written again, so
 * a second import changes nothing. A missing file, one that is not a
 * regular file (a FIFO, a device: refused without opening it blocking),
 * one that is not a SQLite database, or one without the two tables (or
 * whose chat or message is a view, a virtual table or has a generated
 * column: refused by name)
 * fails before anything is written. Stopping interrupts the statement in
 * flight (a SQLite progress handler looks at the stop flag). One bad row never fails the others: a
 * text value over CHATWISE_IMPORT_MAX_VALUE bytes is stored cut to it (the row's extra.truncated
 * says the size it had), a time that is not one PostgreSQL can store (out of the years 1 to 9999)
 * is left out (a message is then dated as its chat), a row PostgreSQL refuses is skipped; each is
 * warned with its table and row id (the first CHATWISE_IMPORT_MAX_WARNINGS of each kind) and
 * counted. */
#ifndef PARLEY_IMPORT_CHATWISE_IMPORT_H
#define PARLEY_IMPORT_CHATWISE_IMPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "db/pool.h"
#include "import/importer.h"

#define CHATWISE_IMPORT_BATCH        500         /* rows read and applied per step */
#define CHATWISE_IMPORT_BUSY_MS      5000        /* wait for the app's write lock, per read */
#define CHATWISE_IMPORT_MAX_VALUE    (8u << 20)  /* bytes of a text value; longer is cut */
#define CHATWISE_IMPORT_BATCH_BYTES  (16u << 20) /* a batch ends past these bytes of values */
#define CHATWISE_IMPORT_MAX_WARNINGS 20          /* rows named per kind and import */
/* SQLite virtual-machine steps between two looks at the stop flag: a
 * statement in flight, however long, ends soon after SIGTERM (within the
 * time of 100 steps: one expensive value each at worst). */
#define CHATWISE_IMPORT_PROGRESS_OPS 100

struct sqlite3;
/* Interrupts every statement of db (SQLITE_INTERRUPT) soon after *stop is
 * set (atomically, from any thread): SQLite's progress handler, every
 * CHATWISE_IMPORT_PROGRESS_OPS steps. The import sets it on its database;
 * the tests drive it alone. */
void chatwise_import__guard(struct sqlite3 *db, const bool *stop);

/* The values the importer makes of app.db's columns, from the file's
 * untrusted bytes (pure; the fuzz target chatwise_meta drives them).
 * chatwise_text_json: text of n bytes as a JSON string, bytes that are not
 * UTF-8 (jansson's strict reading: no overlong forms, no surrogates) and
 * NULs (jsonb has none) each becoming U+FFFD; a string whatever the bytes
 * (null only when out of memory). chatwise_meta_json: a message's meta
 * column, as chatwise_text_json or a number gave it, as stored: parsed
 * when it is JSON, with tool-call arguments and the tool result that are
 * JSON strings parsed too (kept as strings when they are not JSON), else
 * raw itself. Both return a new reference. */
json_t *chatwise_text_json(const unsigned char *s, size_t n);
json_t *chatwise_meta_json(json_t *raw);

typedef struct chatwise_import_s chatwise_import_t;

typedef struct chatwise_import_stats_s {
    uint64_t chats, messages;        /* read from the file */
    uint64_t chats_written, written; /* chats and messages new or changed */
    uint64_t tool_calls, orphans;    /* messages with tool calls; without their chat */
    uint64_t truncated;              /* rows with a value cut to CHATWISE_IMPORT_MAX_VALUE */
    uint64_t bad_times;              /* rows with a time left out */
    uint64_t refused;                /* rows PostgreSQL refused, skipped */
} chatwise_import_stats_t;

/* The source "chatwise" (importer.h): env->path is app.db or its folder;
 * progress on stderr when env->progress (the command), none for serve's
 * follower (followable: follow_file app.db, companion -wal). */
extern const importer_def_t chatwise_import_source;

#endif
