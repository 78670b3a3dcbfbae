/* conn: one MCP session carried by a byte stream with newline-delimited
 * JSON-RPC: a Unix or TCP socket, or stdin/stdout (each a pipe, a TTY, a
 * socket or a regular file). It reads into the framer, hands messages to
 * the session, queues the session's output and counts it for
 * backpressure, and closes in the libuv way: handles are closed, and the
 * conn is freed by its owner from on_close, after the last close callback.
 *
 * Input and output may be different descriptors (stdio) or one stream
 * (sockets). A regular file is read and written through the libuv thread
 * pool one bounded chunk at a time, so a file never blocks the loop. */
#ifndef PARLEY_TRANSPORT_CONN_H
#define PARLEY_TRANSPORT_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "mcp/framer.h"
#include "mcp/session.h"
#include "util/queue.h"

/* Size of one read from a file or socket. */
#define CONN_READ_CHUNK (64u * 1024)

typedef struct conn_s conn_t;
typedef struct tls_conn_s tls_conn_t;

/* Runs once, after every handle closed and the session was told. The owner
 * frees the conn here (conn_free). */
typedef void (*conn_close_cb)(conn_t *c);

typedef enum {
    CONN_OPEN = 0,
    CONN_CLOSING, /* handles closing, requests finishing */
    CONN_CLOSED,  /* on_close ran or is running */
} conn_state_t;

typedef enum {
    CONN_IO_STREAM = 0, /* uv_stream_t: pipe, tty, tcp */
    CONN_IO_FILE,       /* regular file (or character device) via uv_fs */
} conn_io_kind_t;

typedef struct conn_io_s {
    conn_io_kind_t kind;
    union {
        uv_tcp_t tcp;
        uv_pipe_t pipe;
        uv_tty_t tty;
    } h;
    uv_stream_t *stream; /* &h.* for CONN_IO_STREAM; NULL otherwise */
    uv_file fd;          /* CONN_IO_FILE */
    uv_fs_t req;
    bool req_busy;
    bool open; /* handle initialised and not yet closed */
} conn_io_t;

struct conn_s {
    queue_node_t node; /* in the owner's list */
    conn_state_t state;
    uv_loop_t *loop;
    const char *kind; /* "stdio", "unix", "tcp" */
    mcp_server_t *srv;
    mcp_session_t *session; /* from conn_start until the conn closed */
    framer_t framer;
    conn_io_t in;
    conn_io_t out_own; /* output when it is not the input stream */
    conn_io_t *out;    /* &in (sockets) or &out_own (stdio) */
    char *rbuf;        /* CONN_READ_CHUNK bytes, for a file input only */
    bool want_read;    /* the session wants input */
    bool reading;      /* a read is armed */
    bool eof;
    bool eof_delivered;  /* the session was told */
    bool delivering;     /* inside the framer: resumes wait for it */
    bool resume_pending; /* a resume (or EOF) to do once delivery returns */
    queue_node_t file_q; /* file output waiting for the writer */
    size_t queued;       /* output bytes not yet written */
    int pending;         /* handles closing and requests outstanding */
    tls_conn_t *tls;     /* NULL for plain connections */
    conn_close_cb on_close;
    void *data; /* the owner's */
};

/* Initialises c with the session's server. The I/O sides are opened with
 * conn_open_*; conn_start then starts reading. Returns 0 or UV_ENOMEM. */
int conn_init(conn_t *c, uv_loop_t *loop, mcp_server_t *srv, const char *kind,
              conn_close_cb on_close, void *data);

/* Uses fd (0 or 1 for stdio) as input or output, whatever it is. Returns 0
 * or a negative code. */
int conn_open_fd(conn_t *c, uv_file fd, bool input);

/* The stream a listener accepted into &c->in.h.tcp or &c->in.h.pipe is
 * both input and output. */
void conn_open_accepted(conn_t *c, uv_stream_t *stream);

/* Creates the session and starts reading. Returns 0 or a negative code
 * (then close the conn). */
int conn_start(conn_t *c);

/* Closes (idempotent); on_close runs later. */
void conn_close(conn_t *c);

/* The server ends the connection (shutdown): its session first answers
 * what it must (an open 2026-07-28 listen gets its closing result, sent
 * now when the socket takes it), then the connection closes. */
void conn_end(conn_t *c);

/* Frees the buffers (from on_close). */
void conn_free(conn_t *c);

#endif
