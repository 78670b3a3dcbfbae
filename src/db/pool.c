/* pool: asynchronous libpq connection pool on the libuv loop (see pool.h).
 *
 * Invariants:
 *  - A connection's uv_poll handle is closed before libpq may close the
 *    socket it watches (before PQconnectPoll, PQreset, PQfinish), and a new
 *    one is opened on whatever PQsocket returns afterwards. Poll handles are
 *    heap objects freed in their close callback.
 *  - Callbacks of queries never run from inside pg_pool_submit; failures
 *    found there are finished from the "done" list on the next loop turn.
 *  - Memory is released only in close callbacks. */
#include "db/pool.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/log.h"
#include "util/strutil.h"

typedef enum {
    PG_CONN_DOWN = 0,   /* not connected; waiting for the backoff timer */
    PG_CONN_RESOLVING,  /* uv_getaddrinfo on a host name */
    PG_CONN_CONNECTING, /* PQconnectPoll in progress */
    PG_CONN_SETUP,      /* running setup_sql */
    PG_CONN_READY,      /* idle, takes a query */
    PG_CONN_BUSY,       /* running a query */
    PG_CONN_CLOSED,     /* pool closing */
} pg_conn_state_t;

typedef enum { Q_NEW = 0, Q_QUEUED, Q_RUNNING, Q_DONE } pg_query_state_t;

/* Entries of a multi-host conninfo ("host=a,b,c"); longest printed address. */
#define PG_MAX_HOSTS 8
#define PG_ADDR_MAX  64

typedef struct pg_poll_s {
    uv_poll_t handle;
    pg_conn_t *conn;
} pg_poll_t;

/* What each result of a running query answers, in send order. */
typedef struct pg_expect_s {
    int stmt; /* statement index, or -1 for setup statements */
    bool is_prepare;
} pg_expect_t;

struct pg_conn_s {
    pg_pool_t *pool;
    int index;
    pg_conn_state_t state;
    PGconn *pg;
    pg_poll_t *poll;
    int poll_fd;
    int poll_events;
    uv_timer_t timer; /* connect deadline, backoff, query deadline */
    uv_getaddrinfo_t gai;
    bool gai_active;
    pg_conninfo_t resolved; /* conninfo with hostaddr filled in */
    int resolve_next;       /* host list entry being resolved */
    char hostaddrs[PG_MAX_HOSTS][PG_ADDR_MAX];
    pg_query_t *q; /* the running query, or NULL */
    pg_expect_t expect[2 * PG_QUERY_MAX_STMTS];
    int nexpect, next_expect;
    bool pipeline;
    bool copying;    /* sending COPY data (copy_off bytes sent so far) */
    bool copy_ended; /* PQputCopyEnd accepted */
    size_t copy_off;
    bool flushing;        /* output still queued in libpq */
    bool cancel_sent;     /* a cancel was requested for q */
    bool cancel_inflight; /* PQcancel still running: do not reuse yet */
    int setup_pending;    /* setup statements not yet answered */
    char **prepared;      /* statement names prepared on this session */
    int nprepared, cap_prepared;
    uint32_t backoff_ms;
};

struct pg_pool_s {
    uv_loop_t *loop;
    pg_pool_config_t cfg;
    char name[32];
    pg_conninfo_t conninfo;
    /* Host list when some entry is a name to resolve; nhosts 0 otherwise. */
    char *hosts[PG_MAX_HOSTS];
    int nhosts;
    pg_conn_t *conns;
    queue_node_t queue; /* pg_query_t waiting for a connection */
    int queued;
    queue_node_t done; /* finished queries whose callback is due */
    uv_timer_t tick;   /* queue deadlines */
    uv_timer_t later;  /* runs the done list on the next loop turn */
    int handles_open;
    int cancels_running;
    bool closing;
    pg_pool_close_cb close_cb;
    void *data;
    char last_error[PG_QUERY_ERROR_MAX];
    pg_pool_stats_t stats;
};

/* A cancel request on the thread pool. PQcancel opens its own connection
 * and blocks, so it never runs on the loop. */
typedef struct pg_cancel_work_s {
    uv_work_t work;
    pg_pool_t *pool;
    pg_conn_t *conn;
    PGcancel *cancel;
    char err[256];
    int ok;
} pg_cancel_work_t;

/* COPY data handed to libpq per call. */
#define PG_COPY_CHUNK (256u * 1024)

static void conn_connect(pg_conn_t *c);
static void conn_lost(pg_conn_t *c, const char *why);
static void conn_poll_update(pg_conn_t *c);
static void pool_dispatch(pg_pool_t *p);
static void pool_maybe_closed(pg_pool_t *p);
static void pool_later_cb(uv_timer_t *t);

static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
        s[--n] = '\0';
}

/* Copies into a fixed buffer; a truncated message is still useful. */
static void copy_msg(char *dst, size_t cap, const char *src)
{
    if (dst == src)
        return;
    if (!str_copy(dst, cap, src ? src : "")) {
        /* truncated */
    }
    chomp(dst);
}

static void set_error(pg_query_t *q, const char *sqlstate, const char *msg)
{
    copy_msg(q->sqlstate, sizeof q->sqlstate, sqlstate);
    copy_msg(q->error, sizeof q->error, msg);
}

/* ---- completion ---------------------------------------------------------- */

static void query_finish(pg_query_t *q, int status)
{
    pg_pool_t *p = q->pool;
    q->state = Q_DONE;
    q->conn = NULL;
    if (status == 0)
        p->stats.completed++;
    else
        p->stats.failed++;
    q->cb(q, status);
}

/* Finishes q with status on the next loop turn (where the caller must not
 * see its callback run synchronously). The status waits in q->state. */
static void query_finish_later(pg_query_t *q, int status)
{
    pg_pool_t *p = q->pool;
    q->state = status;
    queue_push_tail(&p->done, &q->node);
    uv_timer_start(&p->later, pool_later_cb, 0, 0);
}

static int status_of_error(pg_query_t *q)
{
    if (strcmp(q->sqlstate, "57014") == 0) /* query_canceled */
        return q->timed_out ? UV_ETIMEDOUT : q->cancel_requested ? UV_ECANCELED : UV_EIO;
    return UV_EIO;
}

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
        pool_maybe_closed(p);
    else if (c->state == PG_CONN_READY)
        pool_dispatch(p);
}

static void conn_grace_cb(uv_timer_t *t)
{
    pg_conn_t *c = t->data;
    if (c->state == PG_CONN_BUSY)
        conn_lost(c, "query did not stop after a cancel request");
}

/* Asks the server to stop c's running query; the connection is dropped if
 * the query has not ended PG_CANCEL_GRACE_MS later. */
static void conn_send_cancel(pg_conn_t *c)
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
        conn_lost(c, "could not create a cancel request");
        return;
    }
    cw->pool = p;
    cw->conn = c;
    cw->cancel = pc;
    if (uv_queue_work(p->loop, &cw->work, cancel_work, cancel_after) != 0) {
        PQfreeCancel(pc);
        free(cw);
        conn_lost(c, "could not queue a cancel request");
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
    pool_maybe_closed(p);
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

static void conn_on_poll(uv_poll_t *h, int status, int events);

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
        int rc = uv_poll_start(&c->poll->handle, events, conn_on_poll);
        if (rc != 0)
            return rc;
        c->poll_events = events;
    }
    return 0;
}

static void conn_poll_update(pg_conn_t *c)
{
    int events = UV_READABLE | (c->flushing || c->copying ? UV_WRITABLE : 0);
    int rc = conn_poll_watch(c, events);
    if (rc != 0)
        conn_lost(c, uv_strerror(rc));
}

/* ---- connection lifecycle ------------------------------------------------ */

static void conn_forget_prepared(pg_conn_t *c)
{
    for (int i = 0; i < c->nprepared; i++)
        free(c->prepared[i]);
    c->nprepared = 0;
}

static bool conn_is_prepared(const pg_conn_t *c, const char *name)
{
    for (int i = 0; i < c->nprepared; i++)
        if (strcmp(c->prepared[i], name) == 0)
            return true;
    return false;
}

static void conn_mark_prepared(pg_conn_t *c, const char *name)
{
    if (conn_is_prepared(c, name))
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

static void conn_drop_pg(pg_conn_t *c)
{
    conn_poll_close(c);
    if (c->pg) {
        PQfinish(c->pg);
        c->pg = NULL;
    }
    conn_forget_prepared(c);
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
        conn_connect(c);
}

/* The connection failed or broke: fail its query, schedule a reconnect. */
static void conn_lost(pg_conn_t *c, const char *why)
{
    pg_pool_t *p = c->pool;
    if (c->pg && PQerrorMessage(c->pg)[0] && (why == NULL || why[0] == '\0'))
        why = PQerrorMessage(c->pg);
    copy_msg(p->last_error, sizeof p->last_error, why ? why : "connection lost");
    bool was_up = c->state == PG_CONN_READY || c->state == PG_CONN_BUSY;
    pg_query_t *q = c->q;
    c->q = NULL;
    conn_drop_pg(c);
    c->state = PG_CONN_DOWN;
    if (was_up)
        log_warn(p->name, "connection %d lost: %s", c->index, p->last_error);
    else
        log_debug(p->name, "connection %d failed: %s", c->index, p->last_error);
    if (!p->closing) {
        uint32_t base = c->backoff_ms ? c->backoff_ms : PG_BACKOFF_MIN_MS;
        uint32_t jitter = base / 2 ? (uint32_t)rand() % (base / 2) : 0;
        uv_timer_start(&c->timer, conn_backoff_cb, base - base / 4 + jitter, 0);
        c->backoff_ms = base * 2 > PG_BACKOFF_MAX_MS ? PG_BACKOFF_MAX_MS : base * 2;
    }
    if (q != NULL) {
        if (q->timed_out)
            set_error(q, "57014", "query timed out and its connection was dropped");
        else
            set_error(q, "08006", p->last_error);
        query_finish(q, q->timed_out          ? UV_ETIMEDOUT
                        : q->cancel_requested ? UV_ECANCELED
                                              : UV_ECONNRESET);
    }
    if (!p->closing)
        pool_dispatch(p);
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
        conn_lost(c, "connection attempt timed out");
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

static void conn_became_ready(pg_conn_t *c)
{
    pg_pool_t *p = c->pool;
    uv_timer_stop(&c->timer);
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
    conn_poll_update(c);
    if (c->state == PG_CONN_READY)
        pool_dispatch(p);
}

static void conn_connect_step(pg_conn_t *c)
{
    /* PQconnectPoll may close and reopen the socket: stop watching first. */
    conn_poll_close(c);
    PostgresPollingStatusType st = PQconnectPoll(c->pg);
    switch (st) {
    case PGRES_POLLING_READING:
    case PGRES_POLLING_WRITING: {
        int rc = conn_poll_watch(c, st == PGRES_POLLING_READING ? UV_READABLE : UV_WRITABLE);
        if (rc != 0)
            conn_lost(c, uv_strerror(rc));
        return;
    }
    case PGRES_POLLING_OK: {
        if (PQsetnonblocking(c->pg, 1) != 0) {
            conn_lost(c, NULL);
            return;
        }
        int rc = conn_start_setup(c);
        if (rc < 0) {
            conn_lost(c, NULL);
            return;
        }
        if (rc == 0) {
            conn_became_ready(c);
            return;
        }
        conn_poll_update(c);
        return;
    }
    default:
        conn_lost(c, NULL);
        return;
    }
}

/* Server notices (e.g. "relation already exists, skipping") go to the log
 * at debug level instead of libpq's default, stderr. */
static void notice_processor(void *arg, const char *message)
{
    pg_conn_t *c = arg;
    char msg[PG_QUERY_ERROR_MAX];
    copy_msg(msg, sizeof msg, message);
    log_debug(c->pool->name, "server notice: %s", msg);
}

static void conn_start_libpq(pg_conn_t *c)
{
    const pg_conninfo_t *ci = c->pool->nhosts ? &c->resolved : &c->pool->conninfo;
    c->pg = PQconnectStartParams((const char *const *)ci->keys, (const char *const *)ci->vals, 0);
    if (c->pg == NULL) {
        conn_lost(c, "out of memory");
        return;
    }
    if (PQstatus(c->pg) == CONNECTION_BAD) {
        conn_lost(c, NULL);
        return;
    }
    PQsetNoticeProcessor(c->pg, notice_processor, c);
    c->state = PG_CONN_CONNECTING;
    conn_connect_step(c);
}

static bool host_needs_dns(const char *h)
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
        pool_maybe_closed(p);
        return;
    }
    if (status != 0 || res == NULL) {
        char msg[PG_QUERY_ERROR_MAX];
        snprintf(msg, sizeof msg, "could not resolve database host \"%.200s\": %s",
                 p->hosts[c->resolve_next],
                 status == UV_ECANCELED ? "timed out" : uv_strerror(status));
        uv_freeaddrinfo(res);
        conn_lost(c, msg);
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
    while (c->resolve_next < p->nhosts && !host_needs_dns(p->hosts[c->resolve_next]))
        c->hostaddrs[c->resolve_next++][0] = '\0';
    if (c->resolve_next < p->nhosts) {
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
        c->gai.data = c;
        int rc =
            uv_getaddrinfo(p->loop, &c->gai, conn_gai_cb, p->hosts[c->resolve_next], NULL, &hints);
        if (rc != 0) {
            conn_lost(c, uv_strerror(rc));
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
        conn_lost(c, uv_strerror(rc));
        return;
    }
    conn_start_libpq(c);
}

static void conn_connect(pg_conn_t *c)
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

/* ---- queries on a connection --------------------------------------------- */

static void conn_query_deadline_cb(uv_timer_t *t)
{
    pg_conn_t *c = t->data;
    if (c->state != PG_CONN_BUSY || c->q == NULL)
        return;
    c->q->timed_out = true;
    conn_send_cancel(c);
}

/* Sends q's statements. Returns 0 or UV_EIO (connection unusable). */
static int conn_send_query(pg_conn_t *c, pg_query_t *q)
{
    bool pipeline = q->nstmts > 1;
    for (int i = 0; i < q->nstmts && !pipeline; i++)
        if (q->stmts[i].name && !conn_is_prepared(c, q->stmts[i].name))
            pipeline = true;
    c->nexpect = c->next_expect = 0;
    if (pipeline) {
        if (!PQenterPipelineMode(c->pg))
            return UV_EIO;
        c->pipeline = true;
    }
    for (int i = 0; i < q->nstmts; i++) {
        const pg_stmt_t *st = &q->stmts[i];
        if (st->name) {
            bool prepared = conn_is_prepared(c, st->name);
            for (int j = 0; j < i && !prepared; j++)
                prepared = q->stmts[j].name && strcmp(q->stmts[j].name, st->name) == 0;
            if (!prepared) {
                if (!PQsendPrepare(c->pg, st->name, st->sql, st->nparams, NULL))
                    return UV_EIO;
                c->expect[c->nexpect++] = (pg_expect_t){i, true};
            }
            if (!PQsendQueryPrepared(c->pg, st->name, st->nparams, st->params, NULL, NULL, 0))
                return UV_EIO;
        } else if (!PQsendQueryParams(c->pg, st->sql, st->nparams, NULL, st->params, NULL, NULL,
                                      0)) {
            return UV_EIO;
        }
        c->expect[c->nexpect++] = (pg_expect_t){i, false};
    }
    if (pipeline && !PQpipelineSync(c->pg))
        return UV_EIO;
    int f = PQflush(c->pg);
    if (f < 0)
        return UV_EIO;
    c->flushing = f == 1;
    return 0;
}

static void conn_run(pg_conn_t *c, pg_query_t *q)
{
    pg_pool_t *p = c->pool;
    c->q = q;
    c->cancel_sent = false;
    q->conn = c;
    q->state = Q_RUNNING;
    c->state = PG_CONN_BUSY;
    uint64_t now = uv_now(p->loop);
    uv_timer_start(&c->timer, conn_query_deadline_cb, q->deadline > now ? q->deadline - now : 1, 0);
    if (conn_send_query(c, q) != 0) {
        /* Never call back from inside submit: finish q on the next turn. */
        c->q = NULL;
        set_error(q, "08006", PQerrorMessage(c->pg));
        conn_lost(c, NULL);
        query_finish_later(q, UV_ECONNRESET);
        return;
    }
    conn_poll_update(c);
}

static void record_error(pg_query_t *q, const PGresult *r)
{
    if (q->error[0] != '\0')
        return; /* keep the first error */
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    set_error(q, state ? state : "XX000", msg ? msg : PQresultErrorMessage(r));
}

static bool result_ok(const PGresult *r)
{
    ExecStatusType st = PQresultStatus(r);
    return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY;
}

/* One result of the running query or setup. */
static void conn_take_result(pg_conn_t *c, PGresult *r)
{
    if (PQresultStatus(r) == PGRES_PIPELINE_ABORTED) {
        PQclear(r);
        return;
    }
    if (c->state == PG_CONN_SETUP) {
        if (!result_ok(r) && c->pool->last_error[0] == '\0') {
            const char *m = PQresultErrorMessage(r);
            if (!str_copy(c->pool->last_error, sizeof c->pool->last_error, m)) {
                /* truncated */
            }
        }
        if (!result_ok(r))
            c->setup_pending = -1000; /* marks a failed setup */
        PQclear(r);
        return;
    }
    pg_query_t *q = c->q;
    if (c->next_expect >= c->nexpect) {
        PQclear(r);
        return;
    }
    pg_expect_t e = c->expect[c->next_expect];
    if (!result_ok(r)) {
        record_error(q, r);
        PQclear(r);
        return;
    }
    if (e.is_prepare) {
        conn_mark_prepared(c, q->stmts[e.stmt].name);
        PQclear(r);
        return;
    }
    PQclear(q->results[e.stmt]);
    q->results[e.stmt] = r;
}

/* The running query (or setup) has all its results. */
static void conn_job_done(pg_conn_t *c)
{
    pg_pool_t *p = c->pool;
    if (c->pipeline) {
        if (!PQexitPipelineMode(c->pg)) {
            conn_lost(c, NULL);
            return;
        }
        c->pipeline = false;
    }
    if (c->state == PG_CONN_SETUP) {
        if (c->setup_pending < 0) {
            conn_lost(c, p->last_error[0] ? p->last_error : "connection setup failed");
            return;
        }
        p->last_error[0] = '\0';
        conn_became_ready(c);
        return;
    }
    pg_query_t *q = c->q;
    c->q = NULL;
    c->state = PG_CONN_READY;
    uv_timer_stop(&c->timer);
    if (PQtransactionStatus(c->pg) != PQTRANS_IDLE) {
        /* A query left the session inside a transaction (a BEGIN without
         * COMMIT, or a failed one): never hand that session to the next
         * query. */
        conn_lost(c, "a query left its session inside a transaction; reconnecting");
    }
    int status = q->error[0] ? status_of_error(q) : q->cancel_requested ? UV_ECANCELED : 0;
    if (status == UV_ECANCELED && q->error[0] == '\0')
        set_error(q, "57014", "query cancelled");
    query_finish(q, status);
    /* The callback may have submitted (this connection may be busy again)
     * or closed the pool: look at the state afresh. */
    if (!p->closing && c->state == PG_CONN_READY)
        pool_dispatch(p);
}

/* COPY FROM STDIN: hands the data to libpq as fast as the socket takes
 * it (a full buffer answers 0: wait until writable). Returns 0, or
 * UV_EIO (connection unusable). */
static int conn_copy_pump(pg_conn_t *c)
{
    const pg_stmt_t *st = &c->q->stmts[0];
    while (c->copy_off < st->copy_len) {
        size_t n = st->copy_len - c->copy_off;
        if (n > PG_COPY_CHUNK)
            n = PG_COPY_CHUNK;
        int r = PQputCopyData(c->pg, st->copy_data + c->copy_off, (int)n);
        if (r < 0)
            return UV_EIO;
        if (r == 0)
            break;
        c->copy_off += n;
    }
    if (c->copy_off == st->copy_len && !c->copy_ended) {
        const char *why = c->q->cancel_requested ? "cancelled" : NULL;
        int r = PQputCopyEnd(c->pg, why);
        if (r < 0)
            return UV_EIO;
        c->copy_ended = r == 1;
    }
    int f = PQflush(c->pg);
    if (f < 0)
        return UV_EIO;
    c->flushing = f == 1;
    if (c->copy_ended && !c->flushing)
        c->copying = false;
    return 0;
}

static void conn_read(pg_conn_t *c)
{
    pg_pool_t *p = c->pool;
    if (!PQconsumeInput(c->pg) || PQstatus(c->pg) == CONNECTION_BAD) {
        conn_lost(c, NULL);
        return;
    }
    PGnotify *n;
    while ((n = PQnotifies(c->pg)) != NULL) {
        if (p->cfg.on_notify)
            p->cfg.on_notify(p, n->relname, n->extra);
        PQfreemem(n);
        if (p->closing || c->pg == NULL)
            return;
    }
    if (c->flushing) {
        int f = PQflush(c->pg);
        if (f < 0) {
            conn_lost(c, NULL);
            return;
        }
        c->flushing = f == 1;
    }
    if (c->state != PG_CONN_BUSY && c->state != PG_CONN_SETUP) {
        /* Idle: only a server-side error (e.g. shutdown) can arrive. */
        PGresult *r;
        while (!PQisBusy(c->pg) && (r = PQgetResult(c->pg)) != NULL)
            PQclear(r);
        return;
    }
    while (!PQisBusy(c->pg)) {
        PGresult *r = PQgetResult(c->pg);
        if (r == NULL) {
            if (!c->pipeline) {
                conn_job_done(c);
                return;
            }
            c->next_expect++; /* end of one statement's results */
            continue;
        }
        if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            conn_job_done(c);
            return;
        }
        if (PQresultStatus(r) == PGRES_COPY_IN) {
            PQclear(r);
            if (c->q == NULL || c->q->stmts[0].copy_data == NULL) {
                /* A COPY the caller gave no data for: end it at once. */
                PQputCopyEnd(c->pg, "no data was given for COPY FROM STDIN");
                continue;
            }
            c->copying = true;
            c->copy_ended = false;
            c->copy_off = 0;
            if (conn_copy_pump(c) != 0) {
                conn_lost(c, NULL);
                return;
            }
            if (c->copying)
                return; /* the rest when the socket is writable */
            continue;
        }
        conn_take_result(c, r);
    }
}

static void conn_on_poll(uv_poll_t *h, int status, int events)
{
    pg_conn_t *c = ((pg_poll_t *)h->data)->conn;
    if (status < 0) {
        conn_lost(c, uv_strerror(status));
        return;
    }
    switch (c->state) {
    case PG_CONN_CONNECTING:
        conn_connect_step(c);
        return;
    case PG_CONN_SETUP:
    case PG_CONN_READY:
    case PG_CONN_BUSY:
        if ((events & UV_WRITABLE) && c->copying) {
            if (conn_copy_pump(c) != 0) {
                conn_lost(c, NULL);
                return;
            }
            if (!c->copying) {
                /* All sent: results may be ready already. */
                pg_query_t *q = c->q;
                conn_read(c);
                if (c->state != PG_CONN_BUSY || c->q != q || c->pool->closing)
                    return;
            }
        } else if ((events & UV_WRITABLE) && c->flushing) {
            int f = PQflush(c->pg);
            if (f < 0) {
                conn_lost(c, NULL);
                return;
            }
            c->flushing = f == 1;
        }
        if (events & UV_READABLE) {
            pg_conn_state_t before = c->state;
            pg_query_t *q = c->q;
            conn_read(c);
            /* conn_read may have finished the query, lost the connection
             * or (through a callback) closed the pool. */
            if (c->state != before || c->q != q || c->pool->closing)
                return;
        }
        conn_poll_update(c);
        return;
    default:
        return;
    }
}

/* ---- pool ------------------------------------------------------------------ */

static pg_conn_t *pool_ready_conn(pg_pool_t *p)
{
    for (int i = 0; i < p->cfg.size; i++) {
        pg_conn_t *c = &p->conns[i];
        if (c->state == PG_CONN_READY && !c->cancel_inflight)
            return c;
    }
    return NULL;
}

static void pool_dispatch(pg_pool_t *p)
{
    pg_conn_t *c;
    while (!p->closing && !queue_empty(&p->queue) && (c = pool_ready_conn(p)) != NULL) {
        queue_node_t *n = queue_head(&p->queue);
        queue_remove(n);
        p->queued--;
        conn_run(c, queue_entry(n, pg_query_t, node));
    }
    if (p->queued == 0 && !p->closing)
        uv_timer_stop(&p->tick);
}

static void pool_later_cb(uv_timer_t *t)
{
    pg_pool_t *p = t->data;
    while (!queue_empty(&p->done)) {
        queue_node_t *n = queue_head(&p->done);
        queue_remove(n);
        pg_query_t *q = queue_entry(n, pg_query_t, node);
        int status = q->state;
        query_finish(q, status);
    }
}

/* Every PG_POOL_TICK_MS while queries wait: fail those past deadline. */
#define PG_POOL_TICK_MS 100

static void pool_tick_cb(uv_timer_t *t)
{
    pg_pool_t *p = t->data;
    uint64_t now = uv_now(p->loop);
    queue_node_t *n = queue_head(&p->queue);
    while (n != &p->queue) {
        queue_node_t *next = n->next;
        pg_query_t *q = queue_entry(n, pg_query_t, node);
        if (q->deadline <= now) {
            queue_remove(n);
            p->queued--;
            char msg[PG_QUERY_ERROR_MAX];
            snprintf(msg, sizeof msg, "timed out waiting for a database connection%s%.400s",
                     p->last_error[0] ? ": " : "", p->last_error);
            set_error(q, "57014", msg);
            query_finish(q, UV_ETIMEDOUT);
            if (p->closing)
                return;
            /* The callback may have changed the queue: start over. */
            next = queue_head(&p->queue);
        }
        n = next;
    }
    if (p->queued == 0)
        uv_timer_stop(&p->tick);
}

int pg_pool_submit(pg_pool_t *p, pg_query_t *q)
{
    if (p->closing)
        return UV_ECANCELED;
    if (q->nstmts < 1 || q->nstmts > PG_QUERY_MAX_STMTS || q->stmts == NULL || q->cb == NULL)
        return UV_EINVAL;
    for (int i = 0; i < q->nstmts; i++)
        if (q->stmts[i].copy_data != NULL && (q->nstmts != 1 || q->stmts[i].name != NULL))
            return UV_EINVAL; /* COPY runs alone and unprepared */
    if (p->queued >= p->cfg.queue_max) {
        p->stats.rejected_busy++;
        return UV_EBUSY;
    }
    q->results = calloc((size_t)q->nstmts, sizeof *q->results);
    if (q->results == NULL)
        return UV_ENOMEM;
    q->pool = p;
    q->conn = NULL;
    q->sqlstate[0] = '\0';
    q->error[0] = '\0';
    q->cancel_requested = false;
    q->timed_out = false;
    q->deadline = uv_now(p->loop) + (q->timeout_ms ? q->timeout_ms : p->cfg.query_timeout_ms);
    q->state = Q_QUEUED;
    p->stats.submitted++;
    queue_push_tail(&p->queue, &q->node);
    p->queued++;
    pool_dispatch(p);
    if (p->queued > 0 && !uv_is_active((uv_handle_t *)&p->tick))
        uv_timer_start(&p->tick, pool_tick_cb, PG_POOL_TICK_MS, PG_POOL_TICK_MS);
    return 0;
}

void pg_query_cancel(pg_query_t *q)
{
    pg_pool_t *p = q->pool;
    if (q->state == Q_QUEUED) {
        queue_remove(&q->node);
        p->queued--;
        set_error(q, "57014", "query cancelled");
        query_finish(q, UV_ECANCELED);
    } else if (q->state == Q_RUNNING && !q->cancel_requested) {
        q->cancel_requested = true;
        conn_send_cancel(q->conn);
    }
}

void pg_query_release(pg_query_t *q)
{
    if (q->results) {
        for (int i = 0; i < q->nstmts; i++)
            PQclear(q->results[i]);
        free(q->results);
        q->results = NULL;
    }
}

static void conn_timer_close_cb(uv_handle_t *h)
{
    pg_pool_t *p = ((pg_conn_t *)h->data)->pool;
    p->handles_open--;
    pool_maybe_closed(p);
}

static void pool_timer_close_cb(uv_handle_t *h)
{
    pg_pool_t *p = h->data;
    p->handles_open--;
    pool_maybe_closed(p);
}

static void pool_free(pg_pool_t *p)
{
    for (int i = 0; i < p->cfg.size; i++) {
        pg_conn_t *c = &p->conns[i];
        conn_forget_prepared(c);
        free(c->prepared);
        pg_conninfo_free(&c->resolved);
    }
    for (int i = 0; i < p->nhosts; i++)
        free(p->hosts[i]);
    pg_conninfo_free(&p->conninfo);
    free(p->conns);
    free(p);
}

static void pool_maybe_closed(pg_pool_t *p)
{
    if (!p->closing || p->handles_open > 0 || p->cancels_running > 0 || p->close_cb == NULL)
        return;
    for (int i = 0; i < p->cfg.size; i++)
        if (p->conns[i].gai_active)
            return;
    pg_pool_close_cb cb = p->close_cb;
    p->close_cb = NULL;
    cb(p);
    pool_free(p);
}

void pg_pool_close(pg_pool_t *p, pg_pool_close_cb cb)
{
    if (p->closing)
        return;
    p->closing = true;
    while (!queue_empty(&p->done)) {
        queue_node_t *n = queue_head(&p->done);
        queue_remove(n);
        pg_query_t *q = queue_entry(n, pg_query_t, node);
        query_finish(q, q->state);
    }
    while (!queue_empty(&p->queue)) {
        queue_node_t *n = queue_head(&p->queue);
        queue_remove(n);
        p->queued--;
        pg_query_t *q = queue_entry(n, pg_query_t, node);
        set_error(q, "57P01", "database pool is shutting down");
        query_finish(q, UV_ECANCELED);
    }
    for (int i = 0; i < p->cfg.size; i++) {
        pg_conn_t *c = &p->conns[i];
        pg_query_t *q = c->q;
        c->q = NULL;
        conn_drop_pg(c);
        c->state = PG_CONN_CLOSED;
        if (c->gai_active)
            uv_cancel((uv_req_t *)&c->gai);
        uv_close((uv_handle_t *)&c->timer, conn_timer_close_cb);
        if (q) {
            set_error(q, "57P01", "database pool is shutting down");
            query_finish(q, UV_ECANCELED);
        }
    }
    uv_close((uv_handle_t *)&p->tick, pool_timer_close_cb);
    uv_close((uv_handle_t *)&p->later, pool_timer_close_cb);
    p->close_cb = cb;
    pool_maybe_closed(p);
}

void pg_pool_stats(const pg_pool_t *p, pg_pool_stats_t *out)
{
    *out = p->stats;
    out->conns_ready = out->conns_busy = out->conns_down = 0;
    for (int i = 0; i < p->cfg.size; i++) {
        switch (p->conns[i].state) {
        case PG_CONN_READY:
            out->conns_ready++;
            break;
        case PG_CONN_BUSY:
            out->conns_busy++;
            break;
        default:
            out->conns_down++;
        }
    }
    out->queued = p->queued;
}

const char *pg_pool_last_error(const pg_pool_t *p)
{
    return p->last_error;
}

bool pg_pool_is_idle(const pg_pool_t *p)
{
    if (p->queued > 0 || !queue_empty(&p->done))
        return false;
    for (int i = 0; i < p->cfg.size; i++)
        if (p->conns[i].q != NULL)
            return false;
    return true;
}

void *pg_pool_get_data(const pg_pool_t *p)
{
    return p->data;
}

void pg_pool_set_data(pg_pool_t *p, void *data)
{
    p->data = data;
}

/* Splits the effective host list when some entry is a name to resolve. */
static int pool_parse_hosts(pg_pool_t *p)
{
    const char *h = pg_conninfo_get(&p->conninfo, "host");
    if (h == NULL)
        h = getenv("PGHOST");
    const char *ha = pg_conninfo_get(&p->conninfo, "hostaddr");
    if (ha == NULL)
        ha = getenv("PGHOSTADDR");
    if (h == NULL || h[0] == '\0' || (ha != NULL && ha[0] != '\0'))
        return 0;
    bool any_name = false;
    const char *s = h;
    while (true) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (p->nhosts == PG_MAX_HOSTS)
            return UV_E2BIG;
        char *name = strndup(s, len);
        if (name == NULL)
            return UV_ENOMEM;
        p->hosts[p->nhosts++] = name;
        any_name = any_name || host_needs_dns(name);
        if (comma == NULL)
            break;
        s = comma + 1;
    }
    if (!any_name) {
        for (int i = 0; i < p->nhosts; i++)
            free(p->hosts[i]);
        p->nhosts = 0;
    }
    return 0;
}

int pg_pool_new(uv_loop_t *loop, const pg_pool_config_t *cfg, const pg_conninfo_t *conninfo,
                pg_pool_t **out, char *err, size_t errcap)
{
    if (cfg->size < 1 || cfg->size > PG_POOL_MAX_CONNS || cfg->queue_max < 1 ||
        cfg->query_timeout_ms == 0 || cfg->connect_timeout_ms == 0) {
        snprintf(err, errcap, "invalid pool configuration");
        return UV_EINVAL;
    }
    pg_pool_t *p = calloc(1, sizeof *p);
    if (p == NULL || (p->conns = calloc((size_t)cfg->size, sizeof *p->conns)) == NULL) {
        free(p);
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    p->loop = loop;
    p->cfg = *cfg;
    if (!str_copy(p->name, sizeof p->name, cfg->name ? cfg->name : "db")) {
        /* a truncated tag is fine */
    }
    p->cfg.name = p->name;
    queue_init(&p->queue);
    queue_init(&p->done);
    int rc = pg_conninfo_copy(&p->conninfo, conninfo);
    if (rc == 0 && pg_conninfo_get(&p->conninfo, "application_name") == NULL)
        rc = pg_conninfo_set(&p->conninfo, "application_name", "parleyd");
    if (rc == 0)
        rc = pg_conninfo_set(&p->conninfo, "client_encoding", "UTF8");
    if (rc == 0 && cfg->read_only)
        rc = pg_conninfo_add_option(&p->conninfo, "-c default_transaction_read_only=on");
    if (rc == 0)
        rc = pool_parse_hosts(p);
    if (rc != 0) {
        snprintf(err, errcap, "database settings: %s", uv_strerror(rc));
        pool_free(p);
        return rc;
    }
    uv_timer_init(loop, &p->tick);
    uv_timer_init(loop, &p->later);
    p->tick.data = p;
    p->later.data = p;
    p->handles_open = 2;
    for (int i = 0; i < cfg->size; i++) {
        pg_conn_t *c = &p->conns[i];
        c->pool = p;
        c->index = i;
        c->poll_fd = -1;
        uv_timer_init(loop, &c->timer);
        c->timer.data = c;
        p->handles_open++;
    }
    for (int i = 0; i < cfg->size; i++)
        conn_connect(&p->conns[i]);
    *out = p;
    return 0;
}

void pg_pool_metrics(const pg_pool_t *pool, const char *label, bool header, buf_t *out)
{
    pg_pool_stats_t st;
    pg_pool_stats(pool, &st);
    if (header)
        buf_append_str(out, "# HELP parley_db_pool Database pool state.\n"
                            "# TYPE parley_db_pool gauge\n");
    buf_printf(out,
               "parley_db_pool{pool=\"%s\",state=\"ready\"} %d\n"
               "parley_db_pool{pool=\"%s\",state=\"busy\"} %d\n"
               "parley_db_pool{pool=\"%s\",state=\"down\"} %d\n"
               "parley_db_pool{pool=\"%s\",state=\"queued\"} %d\n",
               label, st.conns_ready, label, st.conns_busy, label, st.conns_down, label, st.queued);
    buf_printf(out, "parley_db_queries_total{pool=\"%s\"} %llu\n", label,
               (unsigned long long)st.submitted);
}
