/* pg_conn: one pool connection's life (see pool_internal.h): its poll
 * handle, host name resolution, the non-blocking connect and the setup
 * statements, loss with backoff and reconnect, and cancel requests on the
 * thread pool. */
#include <stdlib.h>
#include <string.h>

#include "db/pool_internal.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/strutil.h"

/* ---- thread-pool cancel -------------------------------------------------- */

static void cancel_work(uv_work_t *w)
{
    pg_cancel_work_t *cw = (pg_cancel_work_t *)w;
    cw->ok = PQcancel(cw->cancel, cw->err, sizeof cw->err);
}

static void cancel_after(uv_work_t *w, int status)
{
    pg_cancel_work_t *cw = (pg_cancel_work_t *)w;
    pg_pool_t *p = cw->pool;
    if (status == 0 && !cw->ok)
        log_warn(p->name, "cancel request failed: %s", cw->err);
    pg_conn_t *c = cw->conn;
    PQfreeCancel(cw->cancel);
    free(cw);
    p->cancels_running--;
    c->cancel_inflight = false;
    if (p->closing)
        pg_pool__maybe_closed(p);
    else if (c->state == PG_CONN_READY)
        pg_pool__dispatch(p);
}

static void conn_grace_cb(uv_timer_t *t)
{
    pg_conn_t *c = t->data;
    if (c->state == PG_CONN_BUSY) {
        c->stale_pid = c->pg ? PQbackendPID(c->pg) : 0;
        pg_conn__lost(c, "query did not stop after a cancel request");
    }
}

static void stale_check(pg_conn_t *c);

static void stale_again_cb(uv_timer_t *t)
{
    pg_conn_t *c = t->data;
    if (c->state == PG_CONN_READY && c->stale_pid != 0 && !c->pool->closing)
        stale_check(c);
}

static void stale_checked(pg_query_t *q, int status)
{
    pg_conn_t *c = (pg_conn_t *)((char *)q - offsetof(pg_conn_t, stale_q));
    pg_pool_t *p = c->pool;
    bool alive = status != 0 || (q->results && q->results[0] && PQntuples(q->results[0]) > 0);
    pg_query_release(q);
    if (p->closing)
        return;
    if (!alive) {
        log_info(p->name,
                 "connection %d: backend %d, which ignored a cancel, has ended; back in "
                 "service",
                 c->index, c->stale_pid);
        c->stale_pid = 0;
        return; /* the caller dispatches */
    }
    if (c->state == PG_CONN_READY)
        uv_timer_start(&c->timer, stale_again_cb, PG_STALE_CHECK_MS, 0);
}

/* Asks whether the stale backend still runs, asking it to terminate when
 * it does (it stops at its next interrupt check). */
static void stale_check(pg_conn_t *c)
{
    pg_pool_t *p = c->pool;
    snprintf(c->stale_arg, sizeof c->stale_arg, "%d", c->stale_pid);
    c->stale_params[0] = c->stale_arg;
    c->stale_stmt = (pg_stmt_t){.sql = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                       "WHERE pid = $1::integer",
                                .nparams = 1,
                                .params = c->stale_params};
    memset(&c->stale_q, 0, sizeof c->stale_q);
    c->stale_q.stmts = &c->stale_stmt;
    c->stale_q.nstmts = 1;
    c->stale_q.cb = stale_checked;
    c->stale_q.pool = p;
    c->stale_q.deadline = uv_now(p->loop) + p->cfg.query_timeout_ms;
    c->stale_q.results = calloc(1, sizeof *c->stale_q.results);
    if (c->stale_q.results == NULL) {
        uv_timer_start(&c->timer, stale_again_cb, PG_STALE_CHECK_MS, 0);
        return;
    }
    pg_conn__run(c, &c->stale_q);
}

/* Asks the server to stop c's running query; the connection is dropped if
 * the query has not ended PG_CANCEL_GRACE_MS later. */
void pg_conn__send_cancel(pg_conn_t *c)
{
    pg_pool_t *p = c->pool;
    if (c->cancel_sent || c->pg == NULL)
        return;
    c->cancel_sent = true;
    uv_timer_start(&c->timer, conn_grace_cb, PG_CANCEL_GRACE_MS, 0);
    pg_cancel_work_t *cw = calloc(1, sizeof *cw);
    PGcancel *pc = PQgetCancel(c->pg);
    if (cw == NULL || pc == NULL) {
        free(cw);
        if (pc)
            PQfreeCancel(pc);
        pg_conn__lost(c, "could not create a cancel request");
        return;
    }
    cw->pool = p;
    cw->conn = c;
    cw->cancel = pc;
    if (uv_queue_work(p->loop, &cw->work, cancel_work, cancel_after) != 0) {
        PQfreeCancel(pc);
        free(cw);
        pg_conn__lost(c, "could not queue a cancel request");
        return;
    }
    p->cancels_running++;
    c->cancel_inflight = true;
}

/* ---- poll handle --------------------------------------------------------- */

static void poll_close_cb(uv_handle_t *h)
{
    pg_poll_t *pp = h->data;
    pg_pool_t *p = pp->conn->pool;
    free(pp);
    p->handles_open--;
    pg_pool__maybe_closed(p);
}

static void conn_poll_close(pg_conn_t *c)
{
    if (c->poll == NULL)
        return;
    uv_close((uv_handle_t *)&c->poll->handle, poll_close_cb);
    c->poll = NULL;
    c->poll_fd = -1;
    c->poll_events = 0;
}

/* Watches the socket libpq uses now; opens a new handle when the socket
 * changed. Returns 0 or a negative code. */
static int conn_poll_watch(pg_conn_t *c, int events)
{
    int fd = PQsocket(c->pg);
    if (fd < 0)
        return UV_EBADF;
    if (c->poll != NULL && c->poll_fd != fd)
        conn_poll_close(c);
    if (c->poll == NULL) {
        pg_poll_t *pp = calloc(1, sizeof *pp);
        if (pp == NULL)
            return UV_ENOMEM;
        int rc = uv_poll_init_socket(c->pool->loop, &pp->handle, fd);
        if (rc != 0) {
            free(pp);
            return rc;
        }
        pp->conn = c;
        pp->handle.data = pp;
        c->pool->handles_open++;
        c->poll = pp;
        c->poll_fd = fd;
        c->poll_events = 0;
    }
    if (events != c->poll_events) {
        int rc = uv_poll_start(&c->poll->handle, events, pg_conn__on_poll);
        if (rc != 0)
            return rc;
        c->poll_events = events;
    }
    return 0;
}

void pg_conn__poll_update(pg_conn_t *c)
{
    int events = UV_READABLE | (c->flushing || c->copying ? UV_WRITABLE : 0);
    int rc = conn_poll_watch(c, events);
    if (rc != 0)
        pg_conn__lost(c, uv_strerror(rc));
}

/* ---- connection lifecycle ------------------------------------------------ */

void pg_conn__forget_prepared(pg_conn_t *c)
{
    for (int i = 0; i < c->nprepared; i++)
        free(c->prepared[i]);
    c->nprepared = 0;
}

bool pg_conn__is_prepared(const pg_conn_t *c, const char *name)
{
    for (int i = 0; i < c->nprepared; i++)
        if (strcmp(c->prepared[i], name) == 0)
            return true;
    return false;
}

void pg_conn__mark_prepared(pg_conn_t *c, const char *name)
{
    if (pg_conn__is_prepared(c, name))
        return;
    if (c->nprepared == c->cap_prepared) {
        int cap = c->cap_prepared ? 2 * c->cap_prepared : 16;
        char **n = realloc(c->prepared, (size_t)cap * sizeof *n);
        if (n == NULL)
            return; /* prepared again next time: harmless */
        c->prepared = n;
        c->cap_prepared = cap;
    }
    char *dup = strdup(name);
    if (dup)
        c->prepared[c->nprepared++] = dup;
}

void pg_conn__drop_pg(pg_conn_t *c)
{
    conn_poll_close(c);
    if (c->pg) {
        PQfinish(c->pg);
        c->pg = NULL;
    }
    pg_conn__forget_prepared(c);
    c->pipeline = false;
    c->flushing = false;
    c->copying = false;
    c->cancel_sent = false;
    c->nexpect = c->next_expect = 0;
    c->setup_pending = 0;
}

static void conn_backoff_cb(uv_timer_t *t)
{
    pg_conn_t *c = t->data;
    if (c->state == PG_CONN_DOWN && !c->pool->closing)
        pg_conn__connect(c);
}

/* The connection failed or broke: fail its query, schedule a reconnect. */
void pg_conn__lost(pg_conn_t *c, const char *why)
{
    pg_pool_t *p = c->pool;
    if (c->pg && PQerrorMessage(c->pg)[0] && (why == NULL || why[0] == '\0'))
        why = PQerrorMessage(c->pg);
    pg_pool__copy_msg(p->last_error, sizeof p->last_error, why ? why : "connection lost");
    bool was_up = c->state == PG_CONN_READY || c->state == PG_CONN_BUSY;
    pg_query_t *q = c->q;
    c->q = NULL;
    pg_conn__drop_pg(c);
    c->state = PG_CONN_DOWN;
    if (was_up)
        log_warn(p->name, "connection %d lost: %s", c->index, p->last_error);
    else
        log_debug(p->name, "connection %d failed: %s", c->index, p->last_error);
    if (!was_up && pg_pool__refusal(p->last_error)) {
        if (!p->refused)
            log_error(p->name, "the server refused the connection: %s", p->last_error);
        p->refused = true; /* the queue's tick fails the waiting queries */
    }
    if (!p->closing) {
        uint32_t base = c->backoff_ms ? c->backoff_ms : PG_BACKOFF_MIN_MS;
        uint32_t jitter = base / 2 ? (uint32_t)rand() % (base / 2) : 0;
        uv_timer_start(&c->timer, conn_backoff_cb, base - base / 4 + jitter, 0);
        c->backoff_ms = base * 2 > PG_BACKOFF_MAX_MS ? PG_BACKOFF_MAX_MS : base * 2;
    }
    if (q != NULL) {
        if (q->timed_out)
            pg_query__set_error(q, "57014", "query timed out and its connection was dropped");
        else
            pg_query__set_error(q, "08006", p->last_error);
        pg_query__finish(q, q->timed_out          ? UV_ETIMEDOUT
                            : q->cancel_requested ? UV_ECANCELED
                                                  : UV_ECONNRESET);
    }
    if (!p->closing)
        pg_pool__dispatch(p);
}

static void conn_connect_timeout_cb(uv_timer_t *t)
{
    pg_conn_t *c = t->data;
    if (c->state == PG_CONN_RESOLVING || c->state == PG_CONN_CONNECTING ||
        c->state == PG_CONN_SETUP) {
        if (c->gai_active) {
            uv_cancel((uv_req_t *)&c->gai); /* its callback reports the timeout */
            return;
        }
        pg_conn__lost(c, "connection attempt timed out");
    }
}

/* Sends the setup statements (pipelined) on a new connection. Returns 0
 * when there are none, 1 when sent, or UV_EIO. */
static int conn_start_setup(pg_conn_t *c)
{
    const char *const *sql = c->pool->cfg.setup_sql;
    if (sql == NULL || sql[0] == NULL)
        return 0;
    if (!PQenterPipelineMode(c->pg))
        return UV_EIO;
    c->pipeline = true;
    c->nexpect = c->next_expect = 0;
    for (int i = 0; sql[i]; i++) {
        if (!PQsendQueryParams(c->pg, sql[i], 0, NULL, NULL, NULL, NULL, 0))
            return UV_EIO;
        c->setup_pending++;
    }
    if (!PQpipelineSync(c->pg))
        return UV_EIO;
    c->state = PG_CONN_SETUP;
    int f = PQflush(c->pg);
    if (f < 0)
        return UV_EIO;
    c->flushing = f == 1;
    return 1;
}

void pg_conn__became_ready(pg_conn_t *c)
{
    pg_pool_t *p = c->pool;
    uv_timer_stop(&c->timer);
    p->refused = false;
    if (c->backoff_ms != 0)
        p->stats.reconnects++;
    char desc[256];
    pg_conninfo_describe(&p->conninfo, desc, sizeof desc);
    if (c->backoff_ms > PG_BACKOFF_MIN_MS)
        log_info(p->name, "connection %d restored (%s)", c->index, desc);
    else
        log_debug(p->name, "connection %d ready (%s)", c->index, desc);
    c->backoff_ms = PG_BACKOFF_MIN_MS;
    c->state = PG_CONN_READY;
    pg_conn__poll_update(c);
    if (c->state == PG_CONN_READY && c->stale_pid != 0) {
        log_warn(p->name, "connection %d waits for backend %d, which ignored a cancel, to end",
                 c->index, c->stale_pid);
        stale_check(c);
        return;
    }
    if (c->state == PG_CONN_READY)
        pg_pool__dispatch(p);
}

void pg_conn__connect_step(pg_conn_t *c)
{
    /* PQconnectPoll may close and reopen the socket: stop watching first. */
    conn_poll_close(c);
    PostgresPollingStatusType st = PQconnectPoll(c->pg);
    switch (st) {
    case PGRES_POLLING_READING:
    case PGRES_POLLING_WRITING: {
        int rc = conn_poll_watch(c, st == PGRES_POLLING_READING ? UV_READABLE : UV_WRITABLE);
        if (rc != 0)
            pg_conn__lost(c, uv_strerror(rc));
        return;
    }
    case PGRES_POLLING_OK: {
        if (PQsetnonblocking(c->pg, 1) != 0) {
            pg_conn__lost(c, NULL);
            return;
        }
        int rc = conn_start_setup(c);
        if (rc < 0) {
            pg_conn__lost(c, NULL);
            return;
        }
        if (rc == 0) {
            pg_conn__became_ready(c);
            return;
        }
        pg_conn__poll_update(c);
        return;
    }
    default:
        pg_conn__lost(c, NULL);
        return;
    }
}

/* Server notices (e.g. "relation already exists, skipping") go to the log
 * at debug level instead of libpq's default, stderr. */
static void notice_processor(void *arg, const char *message)
{
    pg_conn_t *c = arg;
    char msg[PG_QUERY_ERROR_MAX];
    pg_pool__copy_msg(msg, sizeof msg, message);
    log_debug(c->pool->name, "server notice: %s", msg);
}

static void conn_start_libpq(pg_conn_t *c)
{
    const pg_conninfo_t *ci = c->pool->nhosts ? &c->resolved : &c->pool->conninfo;
    c->pg = PQconnectStartParams((const char *const *)ci->keys, (const char *const *)ci->vals, 0);
    if (c->pg == NULL) {
        pg_conn__lost(c, "out of memory");
        return;
    }
    if (PQstatus(c->pg) == CONNECTION_BAD) {
        pg_conn__lost(c, NULL);
        return;
    }
    PQsetNoticeProcessor(c->pg, notice_processor, c);
    c->state = PG_CONN_CONNECTING;
    pg_conn__connect_step(c);
}

bool pg_conn__host_needs_dns(const char *h)
{
    if (h[0] == '\0' || h[0] == '/' || h[0] == '@')
        return false;
    unsigned char buf[16];
    return uv_inet_pton(AF_INET, h, buf) != 0 && uv_inet_pton(AF_INET6, h, buf) != 0;
}

static void conn_resolve_next(pg_conn_t *c);

static void conn_gai_cb(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    pg_conn_t *c = req->data;
    pg_pool_t *p = c->pool;
    c->gai_active = false;
    if (p->closing || c->state != PG_CONN_RESOLVING) {
        uv_freeaddrinfo(res);
        pg_pool__maybe_closed(p);
        return;
    }
    if (status != 0 || res == NULL) {
        char msg[PG_QUERY_ERROR_MAX];
        snprintf(msg, sizeof msg, "could not resolve database host \"%.200s\": %s",
                 p->hosts[c->resolve_next],
                 status == UV_ECANCELED ? "timed out" : uv_strerror(status));
        uv_freeaddrinfo(res);
        pg_conn__lost(c, msg);
        return;
    }
    char *addr = c->hostaddrs[c->resolve_next];
    if (res->ai_family == AF_INET6)
        uv_ip6_name((struct sockaddr_in6 *)res->ai_addr, addr, PG_ADDR_MAX);
    else
        uv_ip4_name((struct sockaddr_in *)res->ai_addr, addr, PG_ADDR_MAX);
    uv_freeaddrinfo(res);
    c->resolve_next++;
    conn_resolve_next(c);
}

/* Resolves each host name of the list in turn (socket paths and literal
 * addresses need none), then connects with the matching hostaddr list. */
static void conn_resolve_next(pg_conn_t *c)
{
    pg_pool_t *p = c->pool;
    while (c->resolve_next < p->nhosts && !pg_conn__host_needs_dns(p->hosts[c->resolve_next]))
        c->hostaddrs[c->resolve_next++][0] = '\0';
    if (c->resolve_next < p->nhosts) {
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
        c->gai.data = c;
        int rc =
            uv_getaddrinfo(p->loop, &c->gai, conn_gai_cb, p->hosts[c->resolve_next], NULL, &hints);
        if (rc != 0) {
            pg_conn__lost(c, uv_strerror(rc));
            return;
        }
        c->gai_active = true;
        return;
    }
    char list[PG_MAX_HOSTS * (PG_ADDR_MAX + 1)];
    size_t len = 0;
    for (int i = 0; i < p->nhosts; i++)
        len +=
            (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? "," : "", c->hostaddrs[i]);
    pg_conninfo_free(&c->resolved);
    int rc = pg_conninfo_copy(&c->resolved, &p->conninfo);
    if (rc == 0)
        rc = pg_conninfo_set(&c->resolved, "hostaddr", list);
    if (rc != 0) {
        pg_conn__lost(c, uv_strerror(rc));
        return;
    }
    conn_start_libpq(c);
}

void pg_conn__connect(pg_conn_t *c)
{
    pg_pool_t *p = c->pool;
    uv_timer_start(&c->timer, conn_connect_timeout_cb, p->cfg.connect_timeout_ms, 0);
    if (p->nhosts == 0) {
        conn_start_libpq(c);
        return;
    }
    c->resolve_next = 0;
    c->state = PG_CONN_RESOLVING;
    conn_resolve_next(c);
}
