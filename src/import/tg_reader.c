/* tg_reader: streaming reader of Telegram Desktop exports (see
 * tg_reader.h).
 *
 * The yajl callbacks keep a stack of frames, one per open JSON container.
 * Containers the importer needs whole (a message, the contacts section) are
 * built as jansson values (BUILD frames); the containers that hold them
 * (the root, chats.list, a chat, its messages array) are walked without
 * being kept; everything else is skipped.
 *
 * A scanner runs ahead of yajl over the raw bytes (tg_scan.h): it knows
 * where each token (a string, a number, a literal) ends and how deep the
 * containers are, so that no piece given to yajl ends inside a token (yajl
 * would read such a token again from its start with every piece: time
 * quadratic in its length). A long token is given whole, once; in a
 * message it is bounded by the message cap, which is checked before every
 * piece, so a message over it is decided after TG_READER_MESSAGE_MAX
 * bytes, not at its end. Such a message is left out: its frames are dropped, yajl is replaced
 * by a new parser brought to the state the message's end leaves (a prefix
 * replayed without callbacks), and the scanner skips the message's bytes
 * up to its closing brace. */
#include "import/tg_reader.h"

#include "import/tg_map.h"
#include "import/tg_scan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>
#include <yajl/yajl_parse.h>

#define TG_MAX_DEPTH 256
#define TG_KEY_MAX   64

typedef enum {
    F_ROOT = 0, /* the top-level object: a chat, or a whole account */
    F_SECTION,  /* "chats" or "left_chats" */
    F_CHATS,    /* a section's "list" */
    F_CHAT,     /* one chat of a list */
    F_MESSAGES, /* a chat's "messages" */
    F_BUILD,    /* a value kept whole */
    F_SKIP,     /* ignored */
} frame_kind_t;

/* What piece_end found. */
enum { PIECE_OK = 0, PIECE_MORE, PIECE_OVERSIZED, PIECE_FAILED };

typedef enum {
    B_NESTED = 0,
    B_MESSAGE,
    B_CONTACTS,
    B_PERSONAL,
} build_role_t;

typedef struct frame_s {
    frame_kind_t kind;
    json_t *node;         /* BUILD: the container; ROOT/CHAT: the chat's fields */
    char key[TG_KEY_MAX]; /* the pending object key ("" for arrays) */
    bool key_truncated;
    build_role_t role;
    bool left;  /* SECTION/CHATS/CHAT: from left_chats */
    bool begun; /* ROOT/CHAT: CHAT_BEGIN was sent */
    int64_t chat_key;
    /* ROOT/CHAT once begun: how its messages are mapped, the last id. */
    tg_map_opts_t map;
    int64_t last_id;
    bool has_last;
    bool unordered; /* a message without an id, or not above the last */
} frame_t;

struct tg_reader_s {
    int fd;
    int tz_seconds;
    yajl_handle yajl;
    frame_t stack[TG_MAX_DEPTH];
    int depth;
    int skip_depth; /* containers open inside a SKIP frame */
    int64_t chat_keys;
    tg_scan_t in; /* the bytes read and not yet parsed, scanned ahead */
    uint64_t messages;
    uint64_t message_start; /* file offset of the current message's "{" */
    bool in_message;
    char last_id[32];
    bool want_more; /* the next step reads before it parses */
    bool completed; /* yajl_complete_parse was called */
    bool failed;
    bool replaying; /* callbacks ignore what yajl reports */
    bool skipping;  /* skipping an oversized message's bytes */
    int skip_to;    /* ... until the scanner's depth falls to this */
    bool msg_nul;   /* the current message held a NUL, now U+FFFD */
    char nul_field[TG_KEY_MAX];
    char error[512];
    /* Events of the current step. */
    tg_event_t *events;
    int nevents;
    int64_t rows_chat; /* chat of the open ROWS event, 0 if none */
    char map_error[256];
    /* Messages left out (a field PostgreSQL could not read, over the
     * cap) or repaired (a NUL); the first TG_READER_NOTES_MAX named. */
    uint64_t skipped, repaired, noted;
    char notes[TG_READER_NOTES_MAX][TG_READER_NOTE_LEN];
};

/* ---- events -------------------------------------------------------------- */

static tg_event_t *event_add(tg_reader_t *r, tg_event_kind_t kind, int64_t chat_key)
{
    if (r->nevents == TG_READER_MAX_EVENTS) {
        snprintf(r->error, sizeof r->error, "internal: too many events in one step");
        r->failed = true;
        return NULL;
    }
    tg_event_t *e = &r->events[r->nevents++];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->chat_key = chat_key;
    return e;
}

static tg_event_t *rows_event(tg_reader_t *r, int64_t chat_key, bool ordered)
{
    if (r->nevents > 0 && r->rows_chat == chat_key) {
        tg_event_t *e = &r->events[r->nevents - 1];
        if (e->kind == TG_EV_ROWS && e->ordered == ordered)
            return e;
    }
    tg_event_t *e = event_add(r, TG_EV_ROWS, chat_key);
    if (e == NULL)
        return NULL;
    buf_init(&e->rows, TG_READER_ROWS_FLUSH + TG_READER_MESSAGE_MAX * 2);
    buf_init(&e->media, TG_READER_ROWS_FLUSH + TG_READER_MESSAGE_MAX * 2);
    e->ordered = ordered;
    r->rows_chat = chat_key;
    return e;
}

void tg_events_free(tg_event_t *events, int n)
{
    for (int i = 0; i < n; i++) {
        json_decref(events[i].json);
        buf_free(&events[i].rows);
        buf_free(&events[i].media);
    }
}

/* ---- frames -------------------------------------------------------------- */

static uint64_t position(const tg_reader_t *r)
{
    return r->completed ? r->in.offset : r->in.offset + yajl_get_bytes_consumed(r->yajl);
}

/* Adds a note (a sentence naming a message and what became of it). */
__attribute__((format(printf, 2, 3))) static void note(tg_reader_t *r, const char *fmt, ...)
{
    if (r->noted < TG_READER_NOTES_MAX) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->notes[r->noted], sizeof r->notes[0], fmt, ap);
        va_end(ap);
    }
    r->noted++;
}

static int fail(tg_reader_t *r, const char *fmt, const char *detail)
{
    char what[256];
    snprintf(what, sizeof what, fmt, detail);
    snprintf(r->error, sizeof r->error, "%s at byte %llu%s%s", what,
             (unsigned long long)position(r), r->last_id[0] ? " (after message id " : "",
             r->last_id[0] ? r->last_id : "");
    if (r->last_id[0])
        strncat(r->error, ")", sizeof r->error - strlen(r->error) - 1);
    r->failed = true;
    return 0; /* stops yajl */
}

static frame_t *top(tg_reader_t *r)
{
    return r->depth > 0 ? &r->stack[r->depth - 1] : NULL;
}

static frame_t *push(tg_reader_t *r, frame_kind_t kind)
{
    if (r->depth == TG_MAX_DEPTH) {
        fail(r, "JSON nested deeper than %s levels", "256");
        return NULL;
    }
    frame_t *f = &r->stack[r->depth++];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    return f;
}

static bool key_is(const frame_t *f, const char *k)
{
    return strcmp(f->key, k) == 0;
}

/* Sends CHAT_BEGIN for a ROOT or CHAT frame once. */
static void chat_begin(tg_reader_t *r, frame_t *f)
{
    if (f->begun)
        return;
    f->begun = true;
    f->chat_key = ++r->chat_keys;
    f->map.tz_seconds = r->tz_seconds;
    f->map.chat_known = tg_map_chat_id(f->node, &f->map.chat_id);
    tg_event_t *e = event_add(r, TG_EV_CHAT_BEGIN, f->chat_key);
    if (e) {
        e->json = json_deep_copy(f->node);
        e->left = f->left;
        e->chat_known = f->map.chat_known;
        e->chat_id = f->map.chat_id;
    }
}

static void chat_end(tg_reader_t *r, frame_t *f)
{
    if (!f->begun)
        return;
    tg_event_t *e = event_add(r, TG_EV_CHAT_END, f->chat_key);
    if (e) {
        e->json = json_incref(f->node);
        e->left = f->left;
    }
    r->rows_chat = 0;
}

/* A message object is complete: its row, mapped. Rows stay "ordered"
 * (loadable straight into messages) while every id rises; from the first
 * that does not, the chat's rows are staged for an upsert. */
static void message_done(tg_reader_t *r, json_t *msg, frame_t *chat)
{
    r->messages++;
    json_t *id = json_object_get(msg, "id");
    if (json_is_integer(id))
        snprintf(r->last_id, sizeof r->last_id, "%lld", (long long)json_integer_value(id));
    buf_t rows, media;
    buf_init(&rows, TG_READER_MESSAGE_MAX * 2);
    buf_init(&media, TG_READER_MESSAGE_MAX * 2);
    tg_map_kind_t kind;
    int64_t mid;
    int mrc = tg_map_message(msg, &chat->map, &rows, &media, &kind, &mid, r->map_error,
                             sizeof r->map_error);
    bool nul = r->msg_nul;
    r->msg_nul = false;
    if (mrc == UV_EINVAL) {
        /* One message that cannot be stored does not stop the import: it
         * is left out and named ("skip, name and go on"). */
        note(r, "%s at byte %llu; the message was left out", r->map_error,
             (unsigned long long)r->message_start);
        r->skipped++;
    } else if (mrc != 0) {
        fail(r, "%s", r->map_error);
    } else if (kind != TG_MAP_SKIPPED) {
        if (kind == TG_MAP_NO_ID || (chat->has_last && mid <= chat->last_id))
            chat->unordered = true;
        if (kind == TG_MAP_ROW) {
            chat->last_id = mid;
            chat->has_last = true;
        }
        tg_event_t *e = rows_event(r, chat->chat_key, !chat->unordered);
        if (e && (buf_append(&e->rows, rows.data, rows.len) != 0 ||
                  buf_append(&e->media, media.data, media.len) != 0))
            fail(r, "%s", "out of memory");
        else if (e)
            e->nrows++;
        if (nul && kind == TG_MAP_ROW) {
            /* PostgreSQL's text and jsonb hold no NUL: repaired, named. */
            note(r,
                 "message %lld: \"%s\" held a NUL character (\\u0000) at byte %llu; stored "
                 "as U+FFFD",
                 (long long)mid, r->nul_field[0] ? r->nul_field : "a value",
                 (unsigned long long)r->message_start);
        }
        if (r->map_error[0] != '\0') /* a value that cannot be true, left out */
            note(r, "%s (at byte %llu)", r->map_error, (unsigned long long)r->message_start);
        if ((nul && kind == TG_MAP_ROW) || r->map_error[0] != '\0')
            r->repaired++;
    }
    buf_free(&rows);
    buf_free(&media);
}

/* Attaches a finished value to the top frame. Steals v. */
static int add_value(tg_reader_t *r, json_t *v)
{
    frame_t *f = top(r);
    if (v == NULL)
        return fail(r, "%s", "out of memory");
    if (f == NULL) {
        json_decref(v);
        return fail(r, "%s", "not a Telegram export: the top level is not an object");
    }
    switch (f->kind) {
    case F_BUILD:
        if (json_is_array(f->node))
            json_array_append_new(f->node, v);
        else if (!f->key_truncated)
            json_object_set_new(f->node, f->key, v);
        else
            json_decref(v);
        return 1;
    case F_ROOT:
    case F_CHAT:
        /* The chat's own scalar fields (name, type, id, ...). */
        if (json_is_object(f->node) && !json_is_object(v) && !json_is_array(v) && !f->key_truncated)
            json_object_set_new(f->node, f->key, v);
        else
            json_decref(v);
        return 1;
    case F_MESSAGES:
        json_decref(v);
        return fail(r, "%s", "an entry of \"messages\" is not an object");
    case F_CHATS:
        json_decref(v);
        return fail(r, "%s", "an entry of a chat list is not an object");
    case F_SECTION:
    case F_SKIP:
        json_decref(v);
        return 1;
    }
    json_decref(v);
    return 1;
}

/* ---- yajl callbacks ------------------------------------------------------ */

static int cb_null(void *ctx)
{
    tg_reader_t *r = ctx;
    return r->skip_depth || r->replaying ? 1 : add_value(r, json_null());
}

static int cb_boolean(void *ctx, int b)
{
    tg_reader_t *r = ctx;
    return r->skip_depth || r->replaying ? 1 : add_value(r, json_boolean(b));
}

static int cb_number(void *ctx, const char *s, size_t n)
{
    tg_reader_t *r = ctx;
    if (r->skip_depth || r->replaying)
        return 1;
    char tmp[64];
    if (n >= sizeof tmp)
        return fail(r, "%s", "a number too long");
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    bool integral = strpbrk(tmp, ".eE") == NULL;
    if (integral) {
        errno = 0;
        long long v = strtoll(tmp, NULL, 10);
        if (errno == 0)
            return add_value(r, json_integer(v));
    }
    return add_value(r, json_real(strtod(tmp, NULL)));
}

/* s with each NUL as U+FFFD (PostgreSQL's text and jsonb hold none). */
static json_t *nul_replaced(const unsigned char *s, size_t n)
{
    char *fixed = n <= (SIZE_MAX - 1) / 3 ? malloc(n * 3 + 1) : NULL;
    if (fixed == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != 0) {
            fixed[o++] = (char)s[i];
        } else {
            memcpy(fixed + o, "\xEF\xBF\xBD", 3);
            o += 3;
        }
    }
    json_t *v = json_stringn(fixed, o);
    free(fixed);
    return v;
}

static int cb_string(void *ctx, const unsigned char *s, size_t n)
{
    tg_reader_t *r = ctx;
    if (r->skip_depth || r->replaying)
        return 1;
    json_t *v;
    if (memchr(s, 0, n) == NULL) {
        v = json_stringn((const char *)s, n);
    } else {
        v = nul_replaced(s, n);
        if (v != NULL && r->in_message && !r->msg_nul) {
            r->msg_nul = true;
            snprintf(r->nul_field, sizeof r->nul_field, "%s", top(r) ? top(r)->key : "");
        } else if (v != NULL && !r->in_message) {
            note(r,
                 "a NUL character (\\u0000) in a value at byte %llu (not in a message); "
                 "stored as U+FFFD",
                 (unsigned long long)position(r));
        }
    }
    if (v == NULL)
        return fail(r, "%s", "a string that is not valid UTF-8");
    return add_value(r, v);
}

static int cb_map_key(void *ctx, const unsigned char *k, size_t n)
{
    tg_reader_t *r = ctx;
    if (r->skip_depth || r->replaying)
        return 1;
    frame_t *f = top(r);
    f->key_truncated = n >= sizeof f->key;
    size_t len = f->key_truncated ? sizeof f->key - 1 : n;
    memcpy(f->key, k, len);
    f->key[len] = '\0';
    return 1;
}

/* Opens a container (object when is_map) below the top frame. */
static int open_container(tg_reader_t *r, bool is_map)
{
    if (r->replaying)
        return 1;
    if (r->skip_depth) {
        r->skip_depth++;
        return 1;
    }
    frame_t *f = top(r);
    if (f == NULL) {
        if (!is_map)
            return fail(r, "%s", "not a Telegram export: the top level is an array");
        frame_t *root = push(r, F_ROOT);
        if (root)
            root->node = json_object();
        return root ? 1 : 0;
    }
    frame_kind_t kind = F_SKIP;
    build_role_t role = B_NESTED;
    bool left = f->left;
    switch (f->kind) {
    case F_BUILD:
        kind = F_BUILD;
        break;
    case F_ROOT:
        if (!is_map && key_is(f, "messages"))
            kind = F_MESSAGES;
        else if (is_map && (key_is(f, "chats") || key_is(f, "left_chats"))) {
            kind = F_SECTION;
            left = key_is(f, "left_chats");
        } else if (is_map && key_is(f, "contacts")) {
            kind = F_BUILD;
            role = B_CONTACTS;
        } else if (is_map && key_is(f, "personal_information")) {
            kind = F_BUILD;
            role = B_PERSONAL;
        }
        break;
    case F_SECTION:
        if (!is_map && key_is(f, "list"))
            kind = F_CHATS;
        break;
    case F_CHATS:
        if (!is_map)
            return fail(r, "%s", "an entry of a chat list is not an object");
        kind = F_CHAT;
        break;
    case F_CHAT:
        if (!is_map && key_is(f, "messages"))
            kind = F_MESSAGES;
        break;
    case F_MESSAGES:
        if (!is_map)
            return fail(r, "%s", "an entry of \"messages\" is not an object");
        kind = F_BUILD;
        role = B_MESSAGE;
        r->message_start = position(r) - 1; /* the "{" just read */
        r->in_message = true;
        r->msg_nul = false;
        break;
    case F_SKIP:
        break;
    }
    if (kind == F_SKIP) {
        r->skip_depth = 1;
        return 1;
    }
    if (kind == F_MESSAGES)
        chat_begin(r, f);
    json_t *node = NULL;
    if (kind == F_BUILD || kind == F_CHAT) {
        node = is_map ? json_object() : json_array();
        if (node == NULL)
            return fail(r, "%s", "out of memory");
    }
    frame_t *nf = push(r, kind);
    if (nf == NULL) {
        json_decref(node);
        return 0;
    }
    nf->node = node;
    nf->role = role;
    nf->left = left;
    return 1;
}

static int close_container(tg_reader_t *r)
{
    if (r->replaying)
        return 1;
    if (r->skip_depth) {
        r->skip_depth--;
        return 1;
    }
    frame_t *f = top(r);
    frame_t done = *f;
    r->depth--;
    switch (done.kind) {
    case F_BUILD:
        if (done.role == B_MESSAGE) {
            /* Below: the messages array, then its chat. */
            r->in_message = false;
            message_done(r, done.node, &r->stack[r->depth - 2]);
            json_decref(done.node);
            if (r->nevents > 0 && r->events[r->nevents - 1].kind == TG_EV_ROWS &&
                r->events[r->nevents - 1].rows.len >= TG_READER_ROWS_FLUSH)
                r->rows_chat = 0; /* the next rows start a new event */
            return r->failed ? 0 : 1;
        }
        if (done.role == B_CONTACTS || done.role == B_PERSONAL) {
            bool contacts = done.role == B_CONTACTS;
            tg_event_t *e = event_add(r, contacts ? TG_EV_CONTACTS : TG_EV_PERSONAL, 0);
            if (e)
                e->json = contacts ? json_incref(json_object_get(done.node, "list"))
                                   : json_incref(done.node);
            json_decref(done.node);
            return 1;
        }
        return add_value(r, done.node);
    case F_CHAT:
        chat_begin(r, &done); /* a chat without messages */
        chat_end(r, &done);
        json_decref(done.node);
        return 1;
    case F_ROOT:
        chat_end(r, &done);
        json_decref(done.node);
        return 1;
    case F_MESSAGES:
    case F_CHATS:
    case F_SECTION:
    case F_SKIP:
        return 1;
    }
    return 1;
}

static int cb_start_map(void *ctx)
{
    return open_container(ctx, true);
}

static int cb_end_map(void *ctx)
{
    return close_container(ctx);
}

static int cb_start_array(void *ctx)
{
    return open_container(ctx, false);
}

static int cb_end_array(void *ctx)
{
    return close_container(ctx);
}

static const yajl_callbacks callbacks = {
    .yajl_null = cb_null,
    .yajl_boolean = cb_boolean,
    .yajl_number = cb_number,
    .yajl_string = cb_string,
    .yajl_start_map = cb_start_map,
    .yajl_map_key = cb_map_key,
    .yajl_end_map = cb_end_map,
    .yajl_start_array = cb_start_array,
    .yajl_end_array = cb_end_array,
};

/* ---- pieces ---------------------------------------------------------------- */

/* Where the next piece to parse ends (*end; tg_scan_piece), a token
 * within the open message's cap. PIECE_MORE: that token goes on past the
 * bytes read; PIECE_OVERSIZED: the open message reached the cap unclosed;
 * PIECE_FAILED: a value outside a message is longer than the cap (error
 * set). */
static int piece_end(tg_reader_t *r, size_t *end)
{
    uint64_t room = TG_READER_MESSAGE_MAX + 1; /* bytes a token may take */
    if (r->in_message) {
        uint64_t used = r->in.offset - r->message_start;
        if (used >= TG_READER_MESSAGE_MAX)
            return PIECE_OVERSIZED;
        room = TG_READER_MESSAGE_MAX - used;
    }
    int sr = tg_scan_piece(&r->in, TG_READER_PIECE, room, end);
    if (sr == TG_SCAN_OK)
        return PIECE_OK;
    if (sr == TG_SCAN_MORE)
        return PIECE_MORE;
    if (r->in_message)
        return PIECE_OVERSIZED;
    snprintf(r->error, sizeof r->error,
             "a value longer than 16 MiB (not in a message) at byte %llu",
             (unsigned long long)r->in.offset);
    r->failed = true;
    return PIECE_FAILED;
}

/* The open message reached the cap: it is left out and named, its frames
 * dropped, and yajl replaced by a parser in the state the message's end
 * leaves (inside its messages array, after a value); its bytes are then
 * skipped. */
static void oversized(tg_reader_t *r)
{
    int mi = r->depth - 1;
    while (mi > 0 && !(r->stack[mi].kind == F_BUILD && r->stack[mi].role == B_MESSAGE))
        mi--;
    json_t *id = json_object_get(r->stack[mi].node, "id");
    char name[64];
    if (json_is_integer(id)) {
        snprintf(name, sizeof name, "message %lld", (long long)json_integer_value(id));
        snprintf(r->last_id, sizeof r->last_id, "%lld", (long long)json_integer_value(id));
    } else {
        snprintf(name, sizeof name, "a message%s%s", r->last_id[0] ? " after id " : "", r->last_id);
    }
    note(r, "%s at byte %llu: larger than %u MiB; the message was left out", name,
         (unsigned long long)r->message_start, TG_READER_MESSAGE_MAX >> 20);
    r->messages++;
    r->skipped++;
    for (int i = r->depth - 1; i >= mi; i--)
        json_decref(r->stack[i].node);
    r->depth = mi;
    r->in_message = false;
    r->msg_nul = false;
    r->skipping = true;
    r->skip_to = mi; /* the frames below are the containers around it */
    /* (A string as the value before: a number would end only at the next
     * byte, reported once callbacks count again.) */
    char prefix[TG_MAX_DEPTH * 5 + 4];
    size_t n = 0;
    for (int i = 0; i < mi; i++) {
        const char *open = r->stack[i].kind == F_MESSAGES ? "[\"\""
                           : r->stack[i].kind == F_CHATS  ? "["
                                                          : "{\"\":";
        size_t len = strlen(open);
        memcpy(prefix + n, open, len);
        n += len;
    }
    yajl_free(r->yajl);
    r->yajl = yajl_alloc(&callbacks, NULL, r);
    r->replaying = true;
    yajl_status st =
        r->yajl ? yajl_parse(r->yajl, (const unsigned char *)prefix, n) : yajl_status_error;
    r->replaying = false;
    if (st != yajl_status_ok) {
        snprintf(r->error, sizeof r->error, "internal: no parser after an oversized message");
        r->failed = true;
    }
}

/* ---- public -------------------------------------------------------------- */

tg_reader_t *tg_reader_new(int fd, int tz_seconds)
{
    return tg_reader_new_chunk(fd, tz_seconds, TG_READER_CHUNK);
}

tg_reader_t *tg_reader_new_chunk(int fd, int tz_seconds, size_t chunk)
{
    tg_reader_t *r = chunk > 0 ? calloc(1, sizeof *r) : NULL;
    if (r == NULL)
        return NULL;
    r->fd = fd;
    r->tz_seconds = tz_seconds;
    int rc = tg_scan_init(&r->in, chunk);
    r->yajl = yajl_alloc(&callbacks, NULL, r);
    if (rc != 0 || r->yajl == NULL) {
        tg_reader_free(r);
        return NULL;
    }
    return r;
}

void tg_reader_free(tg_reader_t *r)
{
    if (r == NULL)
        return;
    for (int i = 0; i < r->depth; i++)
        json_decref(r->stack[i].node);
    if (r->yajl)
        yajl_free(r->yajl);
    tg_scan_free(&r->in);
    free(r);
}

const char *tg_reader_error(const tg_reader_t *r)
{
    return r->error;
}

uint64_t tg_reader_offset(const tg_reader_t *r)
{
    return r->in.offset;
}

uint64_t tg_reader_messages(const tg_reader_t *r)
{
    return r->messages;
}

uint64_t tg_reader_skipped(const tg_reader_t *r)
{
    return r->skipped;
}

uint64_t tg_reader_repaired(const tg_reader_t *r)
{
    return r->repaired;
}

uint64_t tg_reader_notes(const tg_reader_t *r)
{
    return r->noted;
}

const char *tg_reader_note(const tg_reader_t *r, uint64_t i)
{
    return i < r->noted && i < TG_READER_NOTES_MAX ? r->notes[i] : NULL;
}

int tg_reader_step(tg_reader_t *r, tg_event_t *events, int *nevents)
{
    r->events = events;
    r->nevents = 0;
    r->rows_chat = 0;
    *nevents = 0;
    if (r->failed)
        return UV_EINVAL;
    yajl_status st = yajl_status_ok;
    const unsigned char *piece = NULL;
    size_t plen = 0;
    tg_scan_t *in = &r->in;
    if (!in->eof && (in->pos >= in->len || r->want_more)) {
        r->want_more = false;
        int rc = tg_scan_read(in, r->fd);
        if (rc != 0) {
            snprintf(r->error, sizeof r->error, "read error at byte %llu: %s",
                     (unsigned long long)tg_scan_at(in, in->len), uv_strerror(rc));
            r->failed = true;
            return rc;
        }
    }
    /* The bytes go to the parser a piece at a time (ending between
     * tokens), and the step ends early once half the events are used: a
     * piece of TG_READER_PIECE bytes cannot hold more than the other half
     * (every event needs tens of bytes of input), and a longer piece is a
     * single token. */
    while (!r->failed) {
        if (r->skipping) {
            if (!tg_scan_skip(in, r->skip_to))
                break;
            r->skipping = false;
            continue;
        }
        if (in->pos >= in->len)
            break;
        size_t end = 0;
        int pr = piece_end(r, &end);
        if (pr == PIECE_MORE) {
            r->want_more = true;
            break;
        }
        if (pr == PIECE_OVERSIZED) {
            oversized(r);
            continue;
        }
        if (pr == PIECE_FAILED)
            break;
        piece = in->buf + in->pos;
        plen = end - in->pos;
        st = yajl_parse(r->yajl, piece, plen);
        if (st != yajl_status_ok)
            break;
        tg_scan_parsed(in, end);
        if (r->nevents >= TG_READER_MAX_EVENTS / 2)
            break;
    }
    if (st == yajl_status_ok && !r->failed && in->eof && in->pos >= in->len) {
        piece = NULL;
        plen = 0;
        r->completed = true;
        st = yajl_complete_parse(r->yajl);
    }
    if (st != yajl_status_ok || r->failed) {
        if (!r->failed) {
            unsigned char *msg = yajl_get_error(r->yajl, 0, piece, plen);
            char m[200];
            snprintf(m, sizeof m, "%s", msg ? (const char *)msg : "parse error");
            /* yajl's own message ends with a newline. */
            size_t ml = strlen(m);
            while (ml > 0 && (m[ml - 1] == '\n' || m[ml - 1] == ' '))
                m[--ml] = '\0';
            bool truncated = r->completed;
            char what[300];
            snprintf(what, sizeof what, "%s JSON (%s)", truncated ? "truncated" : "malformed", m);
            fail(r, "%s", what);
            if (msg)
                yajl_free_error(r->yajl, msg);
        }
        *nevents = r->nevents;
        return UV_EINVAL;
    }
    *nevents = r->nevents;
    if (r->completed) {
        if (r->chat_keys == 0 && r->nevents == 0) {
            snprintf(r->error, sizeof r->error,
                     "not a Telegram export: no \"messages\" and no \"chats\" list found");
            r->failed = true;
            return UV_EINVAL;
        }
        return 1;
    }
    return 0;
}
