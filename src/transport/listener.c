/* listener: Unix and TCP listeners for newline-delimited MCP (see
 * listener.h). */
#include "transport/listener.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport/conn.h"
#include "transport/tls.h"
#include "util/log.h"

#define LISTENER_TAG "listen"

static void listener_maybe_closed(listener_t *l)
{
    if (l->state != LISTENER_CLOSING || l->pending > 0)
        return;
    listener_close_cb cb = l->on_closed;
    if (cb)
        cb(l);
    free(l);
}

static void conn_closed(conn_t *c)
{
    listener_t *l = c->data;
    queue_remove(&c->node);
    conn_free(c);
    free(c);
    if (l->state == LISTENER_CLOSING) {
        l->pending--;
        listener_maybe_closed(l);
    }
}

static void listen_handle_closed(uv_handle_t *h)
{
    listener_t *l = h->data;
    if (l->ep.kind == ENDPOINT_UNIX && l->bound)
        unlink(l->ep.unix_path);
    l->pending--;
    listener_maybe_closed(l);
}

static void refused_closed(uv_handle_t *h)
{
    free(h);
}

static void on_connection(uv_stream_t *server, int status)
{
    listener_t *l = server->data;
    if (status != 0) {
        log_warn(LISTENER_TAG, "%s: accept: %s", l->ep.text, uv_strerror(status));
        return;
    }
    if (l->state != LISTENER_ACTIVE)
        return;
    bool is_unix = l->ep.kind == ENDPOINT_UNIX;
    /* Clients of a socket carry no token: the endpoint is their
     * principal, and holds at most its share of max_sessions. */
    char owner[64];
    snprintf(owner, sizeof owner, "endpoint:%p", (void *)l);
    mcp_admit_t admit = mcp_server_admit_owner(l->srv, owner);
    if (admit != MCP_ADMIT_OK) {
        /* Accept and close at once, so the backlog does not fill. */
        uv_handle_t *h = malloc(is_unix ? sizeof(uv_pipe_t) : sizeof(uv_tcp_t));
        if (h == NULL)
            return;
        if (is_unix)
            uv_pipe_init(l->loop, (uv_pipe_t *)h, 0);
        else
            uv_tcp_init(l->loop, (uv_tcp_t *)h);
        if (uv_accept(server, (uv_stream_t *)h) == 0 && admit == MCP_ADMIT_FULL)
            log_warn(LISTENER_TAG, "%s: refusing a connection: %d sessions open (max_sessions)",
                     l->ep.text, l->srv->stats.sessions_open);
        else if (admit == MCP_ADMIT_SHARE)
            log_warn(LISTENER_TAG,
                     "%s: refusing a connection: this endpoint holds %d sessions, its share of "
                     "max_sessions (principal_session_share)",
                     l->ep.text, mcp_server_owner_open(l->srv, owner));
        uv_close(h, refused_closed);
        return;
    }
    conn_t *c = malloc(sizeof *c);
    if (c == NULL || conn_init(c, l->loop, l->srv, is_unix ? "unix" : "tcp", conn_closed, l) != 0) {
        log_error(LISTENER_TAG, "%s: out of memory accepting a connection", l->ep.text);
        if (c) {
            conn_free(c);
            free(c);
        }
        return;
    }
    queue_push_tail(&l->conns, &c->node);
    uv_stream_t *s;
    if (is_unix) {
        uv_pipe_init(l->loop, &c->in.h.pipe, 0);
        s = (uv_stream_t *)&c->in.h.pipe;
    } else {
        uv_tcp_init(l->loop, &c->in.h.tcp);
        s = (uv_stream_t *)&c->in.h.tcp;
        uv_tcp_nodelay(&c->in.h.tcp, 1);
    }
    conn_open_accepted(c, s);
    int rc = uv_accept(server, s);
    if (rc == 0 && l->tls != NULL && (c->tls = tls_conn_new(l->tls, true, NULL)) == NULL)
        rc = UV_ENOMEM;
    if (rc == 0)
        rc = conn_start(c);
    if (rc == 0 && is_unix) {
        /* Its requestStates are this socket's (mcp_session_set_anonymous). */
        char label[sizeof l->ep.unix_path + 8];
        snprintf(label, sizeof label, "unix:%s", l->ep.unix_path);
        mcp_session_set_anonymous(c->session, label);
    }
    if (rc == 0)
        mcp_session_set_owner(c->session, owner);
    if (rc != 0) {
        log_warn(LISTENER_TAG, "%s: accept: %s", l->ep.text, uv_strerror(rc));
        conn_close(c);
    }
}

/* A socket file already at path: replaced when nothing listens on it (its
 * owner died); an error when something does or it is not a socket. */
static int unix_check_stale(const char *path, char *err, size_t errcap)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errcap,
                 "unix:%s exists and is not a socket; remove it or choose another path", path);
        return UV_EEXIST;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    /* A non-blocking connect to a Unix socket answers at once. */
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    int e = errno;
    close(fd);
    if (rc == 0 || e == EAGAIN || e == EINPROGRESS) {
        snprintf(err, errcap, "unix:%s: another process is listening there", path);
        return UV_EADDRINUSE;
    }
    if (e == ECONNREFUSED) {
        log_info(LISTENER_TAG, "removing stale socket %s", path);
        if (unlink(path) != 0 && errno != ENOENT) {
            snprintf(err, errcap, "unix:%s: cannot remove the stale socket: %s", path,
                     strerror(errno));
            return -errno;
        }
        return 0;
    }
    snprintf(err, errcap, "unix:%s: %s", path, strerror(e));
    return -e;
}

int listener_start(uv_loop_t *loop, mcp_server_t *srv, const endpoint_t *ep, struct tls_ctx_s *tls,
                   listener_t **out, char *err, size_t errcap)
{
    listener_t *l = calloc(1, sizeof *l);
    if (l == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    l->loop = loop;
    l->srv = srv;
    l->ep = *ep;
    l->tls = tls;
    queue_init(&l->conns);
    int rc;
    if (ep->kind == ENDPOINT_UNIX) {
        if ((rc = unix_check_stale(ep->unix_path, err, errcap)) != 0) {
            free(l);
            return rc;
        }
        uv_pipe_init(loop, &l->h.pipe, 0);
        /* Created 0600: only the daemon's user may connect. */
        mode_t old = umask(0177);
        rc = uv_pipe_bind(&l->h.pipe, ep->unix_path);
        umask(old);
    } else {
        uv_tcp_init(loop, &l->h.tcp);
        rc = uv_tcp_bind(&l->h.tcp, (const struct sockaddr *)&ep->addr, 0);
    }
    l->h.tcp.data = l;
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&l->h, LISTENER_BACKLOG, on_connection);
    if (rc != 0) {
        snprintf(err, errcap, "%s: %s", ep->text, uv_strerror(rc));
        /* Freed from the close callback. */
        l->state = LISTENER_CLOSING;
        l->pending = 1;
        uv_close((uv_handle_t *)&l->h, listen_handle_closed);
        return rc;
    }
    l->bound = true;
    if (ep->kind == ENDPOINT_TCP) {
        struct sockaddr_storage sa;
        int len = sizeof sa;
        if (uv_tcp_getsockname(&l->h.tcp, (struct sockaddr *)&sa, &len) == 0)
            l->ep.port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
    }
    if (ep->kind == ENDPOINT_TCP)
        log_info(LISTENER_TAG, "serving MCP on %s (port %d)", ep->text, l->ep.port);
    else
        log_info(LISTENER_TAG, "serving MCP on %s", ep->text);
    *out = l;
    return 0;
}

void listener_close(listener_t *l, listener_close_cb cb)
{
    if (l->state == LISTENER_CLOSING)
        return;
    l->state = LISTENER_CLOSING;
    l->on_closed = cb;
    l->pending = 1;
    uv_close((uv_handle_t *)&l->h, listen_handle_closed);
    for (queue_node_t *n = l->conns.next; n != &l->conns;) {
        queue_node_t *next = n->next;
        l->pending++;
        conn_end(queue_entry(n, conn_t, node));
        n = next;
    }
}
