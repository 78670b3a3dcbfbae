/* tg_reader: streaming reader of Telegram Desktop exports (see
 * tg_reader.h).
 *
 * The yajl callbacks keep a stack of frames, one per open JSON container.
 * Containers the importer needs whole (a message, the contacts section) are
 * built as jansson values (BUILD frames); the containers that hold them
 * (the root, chats.list, a chat, its messages array) are walked without
 * being kept; everything else is skipped. */
#include "import/tg_reader.h"

#include "import/tg_map.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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
    uint64_t offset; /* file bytes parsed before the current chunk */
    uint64_t messages;
    uint64_t message_start; /* file offset where the current message began */
    bool in_message;
    char last_id[32];
    unsigned char *chunk;
    size_t chunk_cap; /* bytes read at a time (TG_READER_CHUNK) */
    size_t chunk_len;
    size_t chunk_pos; /* bytes of chunk already parsed */
    bool eof;
    bool failed;
    char error[512];
    /* Events of the current step. */
    tg_event_t *events;
    int nevents;
    int64_t rows_chat; /* chat of the open ROWS event, 0 if none */
    char map_error[256];
    /* Messages left out: a field PostgreSQL could not read (the first
     * TG_READER_NOTES_MAX named). */
    uint64_t skipped;
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
    return r->eof ? r->offset : r->offset + yajl_get_bytes_consumed(r->yajl);
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
    if (mrc == UV_EINVAL) {
        /* One message that cannot be stored does not stop the import: it
         * is left out and named ("skip, name and go on"). */
        if (r->skipped < TG_READER_NOTES_MAX)
            snprintf(r->notes[r->skipped], sizeof r->notes[0], "%s at byte %llu", r->map_error,
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
        /* Bound a single message object. */
        if (r->in_message && position(r) - r->message_start > TG_READER_MESSAGE_MAX)
            return fail(r, "%s", "a message larger than 16 MiB");
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
    return r->skip_depth ? 1 : add_value(r, json_null());
}

static int cb_boolean(void *ctx, int b)
{
    tg_reader_t *r = ctx;
    return r->skip_depth ? 1 : add_value(r, json_boolean(b));
}

static int cb_number(void *ctx, const char *s, size_t n)
{
    tg_reader_t *r = ctx;
    if (r->skip_depth)
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

static int cb_string(void *ctx, const unsigned char *s, size_t n)
{
    tg_reader_t *r = ctx;
    if (r->skip_depth)
        return 1;
    json_t *v = json_stringn((const char *)s, n);
    if (v == NULL)
        return fail(r, "%s", "a string that is not valid UTF-8");
    return add_value(r, v);
}

static int cb_map_key(void *ctx, const unsigned char *k, size_t n)
{
    tg_reader_t *r = ctx;
    if (r->skip_depth)
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
        r->message_start = position(r);
        r->in_message = true;
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
    r->chunk_cap = chunk;
    r->chunk = malloc(chunk);
    r->yajl = yajl_alloc(&callbacks, NULL, r);
    if (r->chunk == NULL || r->yajl == NULL) {
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
    free(r->chunk);
    free(r);
}

const char *tg_reader_error(const tg_reader_t *r)
{
    return r->error;
}

uint64_t tg_reader_offset(const tg_reader_t *r)
{
    return r->offset;
}

uint64_t tg_reader_messages(const tg_reader_t *r)
{
    return r->messages;
}

uint64_t tg_reader_skipped(const tg_reader_t *r)
{
    return r->skipped;
}

const char *tg_reader_note(const tg_reader_t *r, uint64_t i)
{
    return i < r->skipped && i < TG_READER_NOTES_MAX ? r->notes[i] : NULL;
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
    if (r->chunk_pos >= r->chunk_len) {
        ssize_t n;
        do
            n = read(r->fd, r->chunk, r->chunk_cap);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
            snprintf(r->error, sizeof r->error, "read error at byte %llu: %s",
                     (unsigned long long)r->offset, strerror(errno));
            r->failed = true;
            return -errno;
        }
        r->chunk_len = (size_t)n;
        r->chunk_pos = 0;
        if (n == 0) {
            st = yajl_complete_parse(r->yajl);
            r->eof = true;
        }
    }
    /* The chunk goes to the parser a piece at a time, and the step ends
     * early once half the events are used: a piece cannot hold more than
     * the other half (every event needs tens of bytes of input). */
    while (!r->eof && r->chunk_pos < r->chunk_len && !r->failed) {
        piece = r->chunk + r->chunk_pos;
        plen = r->chunk_len - r->chunk_pos < TG_READER_PIECE ? r->chunk_len - r->chunk_pos
                                                             : TG_READER_PIECE;
        st = yajl_parse(r->yajl, piece, plen);
        if (st != yajl_status_ok)
            break;
        r->chunk_pos += plen;
        r->offset += (uint64_t)plen;
        if (r->nevents >= TG_READER_MAX_EVENTS / 2)
            break;
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
            bool truncated = r->eof;
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
    if (r->eof) {
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
