/* framer: newline-delimited message framing (see framer.h). */
#include "mcp/framer.h"

#include <string.h>
#include <uv.h>

/* Input read while paused before the reader stops: at most a few reads. */
#define FRAMER_SLACK_BYTES (256u * 1024)
/* An emptied buffer larger than this is released, so a session that once
 * sent a large message does not keep its room while idle. */
#define FRAMER_KEEP_BYTES 4096u

void framer_init(framer_t *f, size_t limit, framer_msg_cb on_msg, framer_oversize_cb on_oversize,
                 void *data)
{
    memset(f, 0, sizeof *f);
    /* Room for one unfinished message plus what arrives while paused. */
    buf_init(&f->pending, limit + FRAMER_SLACK_BYTES);
    f->limit = limit;
    f->on_msg = on_msg;
    f->on_oversize = on_oversize;
    f->data = data;
}

void framer_free(framer_t *f)
{
    buf_free(&f->pending);
}

static bool deliver(framer_t *f, const char *msg, size_t len)
{
    if (len > 0 && msg[len - 1] == '\r')
        len--;
    if (len == 0)
        return true;
    return f->on_msg(f, msg, len);
}

/* Delivers complete messages from pending until paused; keeps the rest. */
static void drain(framer_t *f)
{
    size_t off = 0;
    while (!f->paused && off < f->pending.len - f->tail_len) {
        char *start = f->pending.data + off;
        char *nl = memchr(start, '\n', f->pending.len - f->tail_len - off);
        if (nl == NULL)
            break;
        size_t len = (size_t)(nl - start);
        off += len + 1;
        if (!deliver(f, start, len))
            f->paused = true;
    }
    buf_consume(&f->pending, off);
    if (f->pending.len == 0 && f->pending.cap > FRAMER_KEEP_BYTES)
        buf_free(&f->pending);
}

int framer_feed(framer_t *f, const char *p, size_t n)
{
    /* Nothing buffered: whole messages are delivered straight from the
     * caller's bytes, without a copy. What remains (an unfinished or
     * oversized message, or everything after a pause) is buffered below. */
    while (n > 0 && f->pending.len == 0 && !f->skipping && !f->paused) {
        const char *nl = memchr(p, '\n', n);
        if (nl == NULL || (size_t)(nl - p) > f->limit)
            break;
        size_t len = (size_t)(nl - p);
        const char *msg = p;
        p += len + 1;
        n -= len + 1;
        if (!deliver(f, msg, len))
            f->paused = true;
    }
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t seg = nl ? (size_t)(nl - p) + 1 : n;
        if (f->skipping) {
            /* The rest of an oversized message, up to its newline. */
            if (nl != NULL)
                f->skipping = false;
        } else if (f->tail_len + seg - (nl ? 1 : 0) > f->limit) {
            /* Reported once; its bytes so far are dropped and the rest is
             * skipped up to the next newline. */
            f->pending.len -= f->tail_len;
            f->tail_len = 0;
            f->skipping = nl == NULL;
            f->on_oversize(f, f->limit);
        } else {
            int rc = buf_append(&f->pending, p, seg);
            if (rc != 0)
                return rc;
            f->tail_len = nl ? 0 : f->tail_len + seg;
        }
        p += seg;
        n -= seg;
    }
    drain(f);
    return 0;
}

int framer_resume(framer_t *f)
{
    f->paused = false;
    drain(f);
    return 0;
}

bool framer_finish(framer_t *f)
{
    drain(f);
    if (f->paused)
        return false;
    if (f->tail_len > 0) {
        size_t len = f->tail_len;
        f->tail_len = 0;
        f->pending.len -= len;
        /* pending keeps the bytes: consumed above, still allocated. */
        if (!deliver(f, f->pending.data + f->pending.len, len))
            f->paused = true;
    }
    return true;
}
