/* http_ticker: the Streamable HTTP server's periodic work (see
 * http_internal.h), every HTTP_CLOSE_CHECK_MS: the 2026-07-28 requests
 * whose client closed their stream cancelled; and every HTTP_TICK_MS the
 * idle sessions closed, held answers released, idle SSE streams pinged;
 * while closing, the connections shut down (reads at once, writes after
 * HTTP_DRAIN_MS). */
#include <poll.h>
#include <sys/socket.h>

#include <h2o.h>

#include "mcp/session.h"
#include "transport/http_internal.h"
#include "util/log.h"

static void expire_idle(http_server_t *hs)
{
    uint64_t now = uv_now(hs->loop);
    for (queue_node_t *n = hs->sessions.next; n != &hs->sessions;) {
        hsess_t *h = queue_entry(n, hsess_t, node);
        n = n->next;
        bool streaming = false;
        for (queue_node_t *s = h->streams.next; s != &h->streams; s = s->next)
            streaming |= queue_entry(s, lstream_t, node)->resp != NULL;
        if (!streaming && mcp_session_inflight(h->session) == 0 &&
            now - h->last_active > HTTP_SESSION_IDLE_MS) {
            log_info(mcp_session_tag(h->session), "closing the idle HTTP session");
            mcp_session_close(h->session);
        }
    }
}

/* h2o does not read an HTTP/1 connection while it writes a response, so a
 * client that went away is noticed only when a write fails: idle SSE
 * streams get a comment line now and then. */
static void ping_streams(http_server_t *hs)
{
    uint64_t now = uv_now(hs->loop);
    if (now - hs->last_ping < HTTP_SSE_PING_MS)
        return;
    hs->last_ping = now;
    for (queue_node_t *n = hs->resps.next; n != &hs->resps;) {
        resp_t *r = queue_entry(n, resp_t, node);
        n = n->next;
        if (r->mode == RESP_SSE && r->req && !r->sending && r->out.len == 0 &&
            buf_append_str(&r->out, ": ping\n\n") == 0) {
            if (r->ls)
                r->ls->hsess->queued += r->out.len;
            http__resp_pump(r);
        }
    }
}

/* True when the HTTP/1 connection of req was closed by its client (end
 * of file or an error on it; a byte waiting there is a pipelined request
 * and says nothing). HTTP/2 reads all along: a reset stream reaches the
 * generator's stop without this. */
static bool client_gone(h2o_req_t *req)
{
    if (req->version >= 0x200 || req->conn->callbacks->get_socket == NULL)
        return false;
    h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
    int fd = sock ? h2o_socket_get_fd(sock) : -1;
    if (fd < 0)
        return false;
    /* POLLRDHUP: the peer closed (or shut its side), even with bytes
     * still unread before the end (a TLS close_notify), which a peek at
     * the first byte would not see. */
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) <= 0)
        return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

/* "Closing the SSE response stream MUST be treated by the server as
 * cancellation of that request": the 2026-07-28 requests in progress
 * (held, or streaming: a call, a listen) whose client went away are
 * cancelled now rather than at the next write (a ping, HTTP_SSE_PING_MS).
 * One poll() per such request each HTTP_CLOSE_CHECK_MS. */
static void cancel_gone(http_server_t *hs)
{
    for (queue_node_t *n = hs->resps.next; n != &hs->resps;) {
        resp_t *r = queue_entry(n, resp_t, node);
        n = n->next;
        hsess_t *h = r->mode == RESP_HELD ? r->held_hsess : r->ls ? r->ls->hsess : NULL;
        if (r->req == NULL || h == NULL || !h->stateless || h->state != HSESS_OPEN ||
            (r->mode != RESP_HELD && r->mode != RESP_SSE) || !client_gone(r->req))
            continue;
        r->req->http1_is_persistent = 0;
        /* Ends r (its last write fails; h2o closes the connection): r may
         * be freed, and no other response of this list with it. */
        http__stateless_gone(h);
    }
}

static void shutdown_conns(http_server_t *hs, int how)
{
    for (queue_node_t *n = hs->conns.next; n != &hs->conns; n = n->next) {
        hconn_t *c = queue_entry(n, hconn_t, node);
        uv_os_fd_t fd;
        if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
            shutdown(fd, how);
    }
}

void http__tick(http_server_t *hs)
{
    if (hs->state == HTTP_ACTIVE) {
        cancel_gone(hs);
        uint64_t now = uv_now(hs->loop);
        if (now - hs->last_tick < HTTP_TICK_MS)
            return;
        hs->last_tick = now;
        expire_idle(hs);
        http__release_held(hs);
        ping_streams(hs);
        return;
    }
    /* Closing: idle keep-alive connections see EOF at once; responses
     * still being written get HTTP_DRAIN_MS. */
    shutdown_conns(hs, uv_now(hs->loop) - hs->close_started > HTTP_DRAIN_MS ? SHUT_RDWR : SHUT_RD);
    http__maybe_closed(hs);
}
