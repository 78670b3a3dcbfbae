/* listener: a listening Unix or TCP socket that accepts newline-delimited
 * MCP sessions (one conn each). A Unix socket is created with mode 0600; a
 * stale socket file left by a process that died is replaced, a live one is
 * an error. Past the server's max_sessions a new connection is accepted and
 * closed at once. */
#ifndef PARLEY_TRANSPORT_LISTENER_H
#define PARLEY_TRANSPORT_LISTENER_H

#include <stddef.h>
#include <uv.h>

#include "mcp/server.h"
#include "transport/endpoint.h"
#include "util/queue.h"

#define LISTENER_BACKLOG 511

typedef struct listener_s listener_t;
typedef void (*listener_close_cb)(listener_t *l);

typedef enum {
    LISTENER_ACTIVE = 0,
    LISTENER_CLOSING,
} listener_state_t;

struct listener_s {
    listener_state_t state;
    uv_loop_t *loop;
    mcp_server_t *srv;
    endpoint_t ep;
    union {
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h;
    bool bound;         /* listening (a Unix socket file is ours to remove) */
    queue_node_t conns; /* open connections */
    struct tls_ctx_s *tls;
    int pending; /* the listening handle and conns still closing */
    listener_close_cb on_closed;
    void *data;
};

/* Binds and listens; with tls (not owned; outlives the listener) every
 * connection speaks TLS. Returns 0 with *out (owned until listener_close's
 * callback), or a negative code with err. */
int listener_start(uv_loop_t *loop, mcp_server_t *srv, const endpoint_t *ep, struct tls_ctx_s *tls,
                   listener_t **out, char *err, size_t errcap);

/* Stops accepting and closes every connection; cb runs when all are
 * closed, then the listener is freed. */
void listener_close(listener_t *l, listener_close_cb cb);

#endif
