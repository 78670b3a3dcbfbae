/* conn: a newline-delimited MCP session on a byte stream (see conn.h). */
#include "transport/conn.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tls.h"
#include "util/log.h"

/* One queued write: a message with its newline, or (TLS) records. */
typedef struct out_item_s {
    uv_write_t req;    /* streams */
    queue_node_t node; /* files: in file_q */
    conn_t *conn;
    char *msg;
    size_t len;  /* bytes of msg */
    size_t done; /* bytes written so far: files, as they go; streams, at
                    once before the write request */
} out_item_t;

static const mcp_transport_ops_t conn_ops;

static void conn_read_more(conn_t *c);
static void conn_maybe_closed(conn_t *c);

/* ---- set-up ------------------------------------------------------------- */

static bool on_message(framer_t *f, const char *msg, size_t len)
{
    conn_t *c = f->data;
    if (c->state != CONN_OPEN)
        return false;
    return mcp_session_receive(c->session, msg, len);
}

static void on_oversize(framer_t *f, size_t limit)
{
    conn_t *c = f->data;
    if (c->state == CONN_OPEN)
        mcp_session_oversize(c->session, limit);
}

int conn_init(conn_t *c, uv_loop_t *loop, mcp_server_t *srv, const char *kind,
              conn_close_cb on_close, void *data)
{
    memset(c, 0, sizeof *c);
    c->loop = loop;
    c->kind = kind;
    c->on_close = on_close;
    c->data = data;
    c->in.fd = c->out_own.fd = -1;
    c->out = &c->in;
    c->want_read = true;
    queue_init(&c->file_q);
    queue_init(&c->node);
    framer_init(&c->framer, srv->limits.max_message_bytes, on_message, on_oversize, c);
    c->srv = srv;
    c->in.req.data = c->out_own.req.data = c;
    return 0;
}

int conn_open_fd(conn_t *c, uv_file fd, bool input)
{
    conn_io_t *io = input ? &c->in : &c->out_own;
    if (!input)
        c->out = &c->out_own;
    int rc = 0;
    switch (uv_guess_handle(fd)) {
    case UV_TTY:
        rc = uv_tty_init(c->loop, &io->h.tty, fd, 0);
        io->stream = (uv_stream_t *)&io->h.tty;
        break;
    case UV_NAMED_PIPE:
        if ((rc = uv_pipe_init(c->loop, &io->h.pipe, 0)) == 0) {
            io->open = true;
            rc = uv_pipe_open(&io->h.pipe, fd);
        }
        io->stream = (uv_stream_t *)&io->h.pipe;
        break;
    case UV_TCP:
        if ((rc = uv_tcp_init(c->loop, &io->h.tcp)) == 0) {
            io->open = true;
            rc = uv_tcp_open(&io->h.tcp, fd);
        }
        io->stream = (uv_stream_t *)&io->h.tcp;
        break;
    case UV_FILE:
        io->kind = CONN_IO_FILE;
        io->fd = fd;
        /* A file read runs on the thread pool: it needs a buffer of its own. */
        if (input && (c->rbuf = malloc(CONN_READ_CHUNK)) == NULL)
            return UV_ENOMEM;
        return 0;
    default:
        return UV_EINVAL;
    }
    io->kind = CONN_IO_STREAM;
    if (rc == 0) {
        io->open = true;
        io->stream->data = c;
    }
    return rc;
}

void conn_open_accepted(conn_t *c, uv_stream_t *stream)
{
    c->in.kind = CONN_IO_STREAM;
    c->in.stream = stream;
    c->in.open = true;
    stream->data = c;
    c->out = &c->in;
}

int conn_start(conn_t *c)
{
    c->session = mcp_session_new(c->srv, &conn_ops, c, c->kind);
    if (c->session == NULL)
        return UV_ENOMEM;
    conn_read_more(c);
    return 0;
}

/* ---- input -------------------------------------------------------------- */

/* Delivery is never re-entered: the session may ask to resume reading
 * while a message is being delivered (a call finished at once and freed a
 * slot); that resume is noted and done once the framer returned. */
static void pump_pending(conn_t *c)
{
    while (c->resume_pending && c->state == CONN_OPEN) {
        c->resume_pending = false;
        if (!c->want_read)
            break;
        c->delivering = true;
        framer_resume(&c->framer);
        c->delivering = false;
        if (c->eof && !c->eof_delivered) {
            c->delivering = true;
            bool all = framer_finish(&c->framer);
            c->delivering = false;
            if (all && c->state == CONN_OPEN && !c->eof_delivered) {
                c->eof_delivered = true;
                mcp_session_input_ended(c->session);
            }
        }
    }
}

static void deliver_eof(conn_t *c)
{
    if (c->eof_delivered || c->state != CONN_OPEN)
        return;
    if (c->delivering) {
        c->resume_pending = true; /* finished by the outer delivery */
        return;
    }
    c->delivering = true;
    bool all = framer_finish(&c->framer);
    c->delivering = false;
    if (!all || c->state != CONN_OPEN) {
        pump_pending(c); /* paused; finished when reading resumes */
        return;
    }
    c->eof_delivered = true;
    mcp_session_input_ended(c->session);
}

static void feed(conn_t *c, const char *p, size_t n)
{
    c->delivering = true;
    int rc = framer_feed(&c->framer, p, n);
    c->delivering = false;
    if (rc != 0) {
        log_warn(mcp_session_tag(c->session), "closing: input buffer full (%s)", uv_strerror(rc));
        conn_close(c);
        return;
    }
    pump_pending(c);
    conn_read_more(c);
}

/* Stream reads of every connection share one buffer: libuv fills it just
 * before read_cb, which hands all of it to the framer (which keeps what it
 * cannot deliver yet) or to TLS before returning; no read is ever in
 * flight across callbacks. An idle connection thus holds no read buffer. */
static char shared_rbuf[CONN_READ_CHUNK];

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    buf->base = shared_rbuf;
    buf->len = sizeof shared_rbuf;
}

static int queue_write(conn_t *c, char *data, size_t len);

/* TLS: decrypts what arrived, sends what the engine answers (handshake),
 * and feeds the plaintext. Returns false when the connection must end. */
static bool tls_input(conn_t *c, const char *p, size_t n)
{
    buf_t plain, out;
    buf_init(&plain, (size_t)4 * CONN_READ_CHUNK);
    buf_init(&out, (size_t)4 * CONN_READ_CHUNK);
    int rc = tls_conn_feed(c->tls, p, n, &plain, &out);
    if (out.len > 0) {
        size_t len;
        char *data = buf_steal(&out, &len);
        if (data == NULL || queue_write(c, data, len) != 0)
            rc = rc ? rc : UV_ENOMEM;
    }
    if (plain.len > 0 && c->state == CONN_OPEN)
        feed(c, plain.data, plain.len);
    buf_free(&plain);
    buf_free(&out);
    if (rc == UV_EOF)
        return false;
    if (rc != 0) {
        log_info(c->session ? mcp_session_tag(c->session) : "tls", "closing: %s",
                 rc == UV_EPROTO ? tls_conn_error(c->tls) : uv_strerror(rc));
        conn_close(c);
        return false;
    }
    return true;
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    conn_t *c = s->data;
    if (n > 0 && c->tls != NULL) {
        if (!tls_input(c, buf->base, (size_t)n) && c->state == CONN_OPEN) {
            uv_read_stop(s);
            c->reading = false;
            c->eof = true;
            deliver_eof(c);
        }
    } else if (n > 0) {
        feed(c, buf->base, (size_t)n);
    } else if (n < 0) {
        if (n != UV_EOF)
            log_debug(mcp_session_tag(c->session), "read: %s", uv_strerror((int)n));
        uv_read_stop(s);
        c->reading = false;
        c->eof = true;
        deliver_eof(c);
    }
}

static void file_read_cb(uv_fs_t *req)
{
    conn_t *c = req->data;
    ssize_t n = req->result;
    uv_fs_req_cleanup(req);
    c->in.req_busy = false;
    c->reading = false;
    /* Counted in pending until the end (see write_cb). */
    if (c->state == CONN_OPEN) {
        if (n > 0) {
            feed(c, c->rbuf, (size_t)n);
        } else {
            if (n < 0 && n != UV_ECANCELED)
                log_warn(mcp_session_tag(c->session), "reading input: %s", uv_strerror((int)n));
            c->eof = true;
            deliver_eof(c);
        }
        conn_read_more(c);
    }
    c->pending--;
    conn_maybe_closed(c);
}

/* Arms a read when the session wants input and none is armed. */
static void conn_read_more(conn_t *c)
{
    if (c->state != CONN_OPEN || c->eof || !c->want_read || c->reading)
        return;
    if (c->in.kind == CONN_IO_STREAM) {
        int rc = uv_read_start(c->in.stream, alloc_cb, read_cb);
        if (rc != 0) {
            log_warn(mcp_session_tag(c->session), "read: %s", uv_strerror(rc));
            conn_close(c);
            return;
        }
        c->reading = true;
        return;
    }
    uv_buf_t b = uv_buf_init(c->rbuf, CONN_READ_CHUNK);
    int rc = uv_fs_read(c->loop, &c->in.req, c->in.fd, &b, 1, -1, file_read_cb);
    if (rc != 0) {
        log_warn(mcp_session_tag(c->session), "reading input: %s", uv_strerror(rc));
        c->eof = true;
        deliver_eof(c);
        return;
    }
    c->in.req_busy = true;
    c->reading = true;
    c->pending++;
}

static void conn_set_reading(void *t, bool on)
{
    conn_t *c = t;
    c->want_read = on;
    if (c->state != CONN_OPEN)
        return;
    if (on) {
        c->resume_pending = true;
        if (!c->delivering) {
            pump_pending(c);
            conn_read_more(c);
        }
    } else if (c->reading && c->in.kind == CONN_IO_STREAM) {
        uv_read_stop(c->in.stream);
        c->reading = false;
    }
}

/* ---- output ------------------------------------------------------------- */

static void item_free(out_item_t *it)
{
    free(it->msg);
    free(it);
}

static void output_done(conn_t *c, size_t bytes)
{
    c->queued -= bytes;
    if (c->state == CONN_OPEN)
        mcp_session_drained(c->session);
}

static void write_cb(uv_write_t *req, int status)
{
    out_item_t *it = req->data;
    conn_t *c = it->conn;
    size_t bytes = it->len - it->done;
    item_free(it);
    /* The request stays counted in pending until the end: what the
     * session does from here may close the conn. */
    if (status != 0 && c->state == CONN_OPEN) {
        log_debug(mcp_session_tag(c->session), "write: %s", uv_strerror(status));
        c->queued -= bytes;
        conn_close(c);
    } else {
        output_done(c, bytes);
    }
    c->pending--;
    conn_maybe_closed(c);
}

static void file_write_next(conn_t *c);

static void file_write_cb(uv_fs_t *req)
{
    conn_t *c = req->data;
    ssize_t n = req->result;
    uv_fs_req_cleanup(req);
    c->out->req_busy = false;
    out_item_t *it = queue_entry(queue_head(&c->file_q), out_item_t, node);
    /* Counted in pending until the end (see write_cb). */
    if (n < 0) {
        if (c->state == CONN_OPEN)
            log_warn(mcp_session_tag(c->session), "writing output: %s", uv_strerror((int)n));
        conn_close(c);
    } else {
        it->done += (size_t)n;
        if (it->done == it->len) {
            queue_remove(&it->node);
            size_t bytes = it->len;
            item_free(it);
            output_done(c, bytes);
        }
        if (c->state == CONN_OPEN)
            file_write_next(c);
    }
    c->pending--;
    conn_maybe_closed(c);
}

static void file_write_next(conn_t *c)
{
    if (c->out->req_busy || queue_empty(&c->file_q))
        return;
    out_item_t *it = queue_entry(queue_head(&c->file_q), out_item_t, node);
    uv_buf_t b = uv_buf_init(it->msg + it->done, (unsigned)(it->len - it->done));
    int rc = uv_fs_write(c->loop, &c->out->req, c->out->fd, &b, 1, -1, file_write_cb);
    if (rc != 0) {
        log_warn(mcp_session_tag(c->session), "writing output: %s", uv_strerror(rc));
        conn_close(c);
        return;
    }
    c->out->req.data = c;
    c->out->req_busy = true;
    c->pending++;
}

/* Queues data[0..len) (ownership passes). On a stream with nothing
 * queued ahead, the data is first written at once (uv_try_write): an
 * answer the socket takes whole needs no write request, so no callback
 * and no re-arming of the socket's poll (libuv re-arms it with an
 * epoll_ctl after each write request: one system call a call saved).
 * What the socket does not take goes in a write request. */
static int queue_write(conn_t *c, char *data, size_t len)
{
    size_t done = 0;
    if (c->out->kind == CONN_IO_STREAM && c->queued == 0) {
        uv_buf_t now = uv_buf_init(data, (unsigned)len);
        int n = uv_try_write(c->out->stream, &now, 1);
        /* An error other than UV_EAGAIN comes again from uv_write, whose
         * callback handles it as before. */
        if (n > 0)
            done = (size_t)n;
        if (done == len) {
            free(data);
            return 0;
        }
    }
    out_item_t *it = calloc(1, sizeof *it);
    if (it == NULL) {
        free(data);
        return UV_ENOMEM;
    }
    it->conn = c;
    it->msg = data;
    it->len = len;
    it->done = done;
    c->queued += len - done;
    if (c->out->kind == CONN_IO_FILE) {
        queue_push_tail(&c->file_q, &it->node);
        file_write_next(c);
        return 0;
    }
    uv_buf_t b = uv_buf_init(data + done, (unsigned)(len - done));
    it->req.data = it;
    int rc = uv_write(&it->req, c->out->stream, &b, 1, write_cb);
    if (rc != 0) {
        c->queued -= len - done;
        item_free(it);
        return rc;
    }
    c->pending++;
    return 0;
}

/* msg is a C string of len bytes (mcp_transport_ops_t.send): its newline
 * is written over its NUL, so a message and its framing are one buffer
 * (one write, one TLS record). */
static int conn_send(void *t, char *msg, size_t len, const json_t *related, bool final)
{
    conn_t *c = t;
    (void)related;
    (void) final;
    if (c->state != CONN_OPEN) {
        free(msg);
        return UV_ECANCELED;
    }
    assert(msg[len] == '\0');
    msg[len++] = '\n';
    if (c->tls == NULL)
        return queue_write(c, msg, len);
    buf_t out;
    buf_init(&out, (size_t)1 << 30);
    int rc = tls_conn_write(c->tls, msg, len, &out);
    free(msg);
    if (rc == 0 && out.len > 0) {
        size_t n;
        char *data = buf_steal(&out, &n);
        rc = data ? queue_write(c, data, n) : UV_ENOMEM;
    }
    buf_free(&out);
    return rc;
}

static size_t conn_queued_bytes(void *t)
{
    return ((conn_t *)t)->queued;
}

/* ---- closing ------------------------------------------------------------ */

static void handle_closed(uv_handle_t *h)
{
    conn_t *c = h->data;
    c->pending--;
    conn_maybe_closed(c);
}

static void io_close(conn_t *c, conn_io_t *io)
{
    if (io->kind == CONN_IO_STREAM && io->open) {
        io->open = false;
        io->stream->data = c;
        c->pending++;
        uv_close((uv_handle_t *)io->stream, handle_closed);
    } else if (io->kind == CONN_IO_FILE && io->req_busy) {
        uv_cancel((uv_req_t *)&io->req); /* its callback still runs */
    }
}

void conn_close(conn_t *c)
{
    if (c->state != CONN_OPEN)
        return;
    c->state = CONN_CLOSING;
    c->pending++; /* held until the closes are issued */
    io_close(c, &c->in);
    if (c->out != &c->in)
        io_close(c, c->out);
    c->pending--;
    conn_maybe_closed(c);
}

void conn_end(conn_t *c)
{
    if (c->session != NULL && c->state == CONN_OPEN)
        mcp_session_close(c->session); /* ends listens, then conn_close */
    conn_close(c);
}

static void conn_close_op(void *t)
{
    conn_close(t);
}

static void conn_maybe_closed(conn_t *c)
{
    if (c->state != CONN_CLOSING || c->pending > 0)
        return;
    c->state = CONN_CLOSED;
    while (!queue_empty(&c->file_q)) {
        out_item_t *it = queue_entry(queue_head(&c->file_q), out_item_t, node);
        queue_remove(&it->node);
        c->queued -= it->len;
        item_free(it);
    }
    if (c->session)
        mcp_session_transport_closed(c->session);
    c->session = NULL;
    c->on_close(c);
}

void conn_free(conn_t *c)
{
    tls_conn_free(c->tls);
    c->tls = NULL;
    framer_free(&c->framer);
    free(c->rbuf);
    c->rbuf = NULL;
}

static const mcp_transport_ops_t conn_ops = {
    .send = conn_send,
    .queued_bytes = conn_queued_bytes,
    .set_reading = conn_set_reading,
    .close = conn_close_op,
};
