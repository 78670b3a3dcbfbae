/* framer: splits a byte stream into newline-delimited messages (the MCP
 * stdio framing, also used on Unix and TCP sockets). A message longer than
 * the limit is reported once as oversized and its bytes are skipped up to
 * the next newline, so one bad message never ends the session and never
 * grows memory past the limit. Empty lines and a trailing '\r' are
 * ignored. */
#ifndef PARLEY_MCP_FRAMER_H
#define PARLEY_MCP_FRAMER_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

typedef struct framer_s framer_t;

/* A complete message (not NUL-terminated in general; len excludes the
 * newline). Return false to stop delivering (the rest stays buffered
 * until the next framer_feed or framer_resume). */
typedef bool (*framer_msg_cb)(framer_t *f, const char *msg, size_t len);
/* A message exceeded the limit (called once per oversized message). */
typedef void (*framer_oversize_cb)(framer_t *f, size_t limit);

struct framer_s {
    buf_t pending;   /* undelivered messages, then an unfinished one */
    size_t tail_len; /* bytes of the unfinished message at the end */
    size_t limit;    /* maximum message size in bytes */
    bool skipping;   /* inside an oversized message */
    bool paused;     /* on_msg returned false; framer_resume clears it */
    framer_msg_cb on_msg;
    framer_oversize_cb on_oversize;
    void *data;
};

void framer_init(framer_t *f, size_t limit, framer_msg_cb on_msg, framer_oversize_cb on_oversize,
                 void *data);
void framer_free(framer_t *f);

/* Feeds bytes; delivers complete messages unless paused. Returns 0,
 * UV_ENOBUFS (the reader kept feeding long after a pause) or UV_ENOMEM. */
int framer_feed(framer_t *f, const char *p, size_t n);

/* Clears the pause and delivers buffered complete messages (it may pause
 * again). */
int framer_resume(framer_t *f);

/* At end of input: delivers the buffered messages and a final line
 * without a newline. Returns false when paused before all were delivered
 * (call it again after the pause). */
bool framer_finish(framer_t *f);

#endif
