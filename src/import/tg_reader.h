/* tg_reader: reads a Telegram Desktop JSON export incrementally, a bounded
 * chunk at a time, with a streaming JSON parser (yajl), so memory stays
 * flat whatever the file size. It understands both shapes: a single-chat
 * export ({name, type, id, messages}) and a whole-account export (chats.list,
 * left_chats.list, contacts.list, ...). Each step turns one chunk into
 * events: a chat begins (its own fields, its id when they give it), rows of
 * its messages already mapped to their columns (tg_map) in COPY text
 * format, the chat ends, the contacts list.
 *
 * Runs on the libuv thread pool (one step at a time); it touches nothing
 * but its file and its own memory. */
#ifndef PARLEY_IMPORT_TG_READER_H
#define PARLEY_IMPORT_TG_READER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

/* Bytes read and parsed per step. */
#define TG_READER_CHUNK (1u << 20)
/* A step hands over its rows once they pass this size (or at a chat's
 * end). */
#define TG_READER_ROWS_FLUSH (4u << 20)
/* Largest single message object accepted (bytes from its "{" to its
 * "}"). Checked while the message is read, before each piece: a message
 * over it is decided once this many bytes of it were read, left out and
 * named, and the reader skips its bytes; a value outside a message (a
 * chat's name) longer than this fails the read. */
#define TG_READER_MESSAGE_MAX (16u << 20)
/* Events one step may produce; the parser gets TG_READER_PIECE bytes at a
 * time (cut between tokens; a longer token is given whole, once) and the
 * step ends once half the events are used. The smallest chat,
 * {"id":1,"messages":[]}, yields three events from 22 bytes: a piece
 * yields at most about 300, so the other half covers it. */
#define TG_READER_MAX_EVENTS 1024
#define TG_READER_PIECE      2048

typedef enum {
    TG_EV_CHAT_BEGIN = 0, /* json: the chat's own fields; left: from left_chats;
                           * chat_known, chat_id: its id, when they give it */
    TG_EV_ROWS,           /* rows: COPY rows (TG_MAP_MESSAGE_COLUMNS), media:
                           * COPY rows (TG_MAP_MEDIA_COLUMNS); ordered: every
                           * row has an id, above those of the chat before it */
    TG_EV_CHAT_END,       /* json: the chat's fields again (with those after messages) */
    TG_EV_CONTACTS,       /* json: the contacts list (an array) */
    TG_EV_PERSONAL,       /* json: personal_information (the account's own user) */
} tg_event_kind_t;

typedef struct tg_event_s {
    tg_event_kind_t kind;
    int64_t chat_key; /* ordinal of the chat in the export, from 1 */
    json_t *json;
    bool left;
    bool chat_known;
    int64_t chat_id;
    buf_t rows;
    buf_t media;
    size_t nrows;
    bool ordered;
} tg_event_t;

typedef struct tg_reader_s tg_reader_t;

/* A reader of fd (owned by the caller); local dates of the export are read
 * at tz_seconds east of UTC. NULL on ENOMEM. */
tg_reader_t *tg_reader_new(int fd, int tz_seconds);
/* The same, reading chunk bytes at a time (tg_reader_new: TG_READER_CHUNK;
 * the fuzz target reads small chunks, which also puts chunk ends
 * everywhere). NULL when chunk is 0 or out of memory. */
tg_reader_t *tg_reader_new_chunk(int fd, int tz_seconds, size_t chunk);
void tg_reader_free(tg_reader_t *r);

/* Reads and parses the next chunk, filling events (*nevents of them;
 * the caller frees them with tg_events_free). Returns 0 (more to come),
 * 1 (end of input, all events delivered), or a negative code with
 * tg_reader_error() saying what and where (byte offset, last message id). */
int tg_reader_step(tg_reader_t *r, tg_event_t *events, int *nevents);

void tg_events_free(tg_event_t *events, int n);

const char *tg_reader_error(const tg_reader_t *r);

/* Bytes of the file consumed so far. */
uint64_t tg_reader_offset(const tg_reader_t *r);

/* Messages read so far. */
uint64_t tg_reader_messages(const tg_reader_t *r);

/* Messages left out so far: a field that could not be stored (a date out
 * of range, an id that is not one: what PostgreSQL would refuse) or a
 * message over TG_READER_MESSAGE_MAX. */
uint64_t tg_reader_skipped(const tg_reader_t *r);
/* Messages stored repaired so far: a NUL character (\u0000, which
 * PostgreSQL's text and jsonb cannot hold) stored as U+FFFD. */
uint64_t tg_reader_repaired(const tg_reader_t *r);
/* Notes so far, one a message left out or repaired (or a NUL outside a
 * message), and the i-th of them, a sentence naming it and what became of
 * it ("message 12: \"date\" is not a valid date at byte 345; the message
 * was left out"; NULL past the first TG_READER_NOTES_MAX). */
#define TG_READER_NOTES_MAX 20
#define TG_READER_NOTE_LEN  320
uint64_t tg_reader_notes(const tg_reader_t *r);
const char *tg_reader_note(const tg_reader_t *r, uint64_t i);

#endif
