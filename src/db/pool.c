/* pool: asynchronous libpq connection pool on the libuv loop (see pool.h):
 * the query queue and its deadlines, dispatch to ready connections,
 * completion, close, stats. The invariants are in pool_internal.h. */
#include "db/pool.h"

#include <stdlib.h>
#include <string.h>

#include "db/pool_internal.h"
#include "util/log.h"
#include "util/prom_text.h"
#include "util/strutil.h"

static void pool_later_cb(uv_timer_t *t);

static void chomp(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
        s[--n] = '\0';
}

/* Copies into a fixed buffer; a truncated message is still useful. */
void pg_pool__copy_msg(char *dst, size_t cap, const char *src)
{
    if (dst == src)
        return;
    if (!str_copy(dst, cap, src ? src : "")) {
        /* truncated */
    }
    chomp(dst);
}

void pg_query__set_error(pg_query_t *q, const char *sqlstate, const char *msg)
{
    pg_pool__copy_msg(q->sqlstate, sizeof q->sqlstate, sqlstate);
    pg_pool__copy_msg(q->error, sizeof q->error, msg);
}

/* ---- shares of the limited class ------------------------------------------ */

static queue_node_t *share_bucket(pg_pool_t *p, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing: any key spreads */
    return &p->share_buckets[h >> 58];        /* the top 6 bits: PG_SHARE_BUCKETS */
}

_Static_assert(PG_SHARE_BUCKETS == 64, "share_bucket takes the top 6 bits");

/* The share of key, made when there is none. NULL on ENOMEM. */
static pg_share_t *pool_share_get(pg_pool_t *p, uint64_t key)
{
    queue_node_t *b = share_bucket(p, key);
    for (queue_node_t *n = queue_head(b); n != b; n = n->next) {
        pg_share_t *sh = queue_entry(n, pg_share_t, hash_node);
        if (sh->key == key)
            return sh;
    }
    pg_share_t *sh = calloc(1, sizeof *sh);
    if (sh == NULL)
        return NULL;
    sh->key = key;
    queue_init(&sh->ring_node);
    queue_init(&sh->waiting);
    queue_push_tail(b, &sh->hash_node);
    return sh;
}

/* Takes a share with nothing waiting out of the ring, and frees one with
 * nothing running either. */
static void pool_share_settle(pg_pool_t *p, pg_share_t *sh)
{
    (void)p;
    if (!queue_empty(&sh->waiting))
        return;
    queue_remove(&sh->ring_node); /* a no-op when not in the ring */
    if (sh->running == 0) {
        queue_remove(&sh->hash_node);
        free(sh);
    }
}

/* Takes a waiting q out of its queues (not yet finished). */
static void pool_unqueue(pg_pool_t *p, pg_query_t *q)
{
    queue_remove(&q->node);
    p->queued--;
    if (q->limited) {
        queue_remove(&q->share_node);
        pg_share_t *sh = q->owner;
        q->owner = NULL;
        pool_share_settle(p, sh);
    }
}

/* ---- completion ---------------------------------------------------------- */

void pg_query__finish(pg_query_t *q, int status)
{
    pg_pool_t *p = q->pool;
    q->state = Q_DONE;
    q->conn = NULL;
    if (status == 0)
        p->stats.completed++;
    else
        p->stats.failed++;
    bool freed_slot = q->limited_running;
    if (freed_slot) {
        q->limited_running = false;
        p->limited_running--;
        q->owner->running--;
        pool_share_settle(p, q->owner);
        q->owner = NULL;
    }
    q->ran_out = status == UV_ETIMEDOUT && q->timed_out && q->run_limited;
    if (q->ran_out) {
        char msg[96];
        snprintf(msg, sizeof msg, "the query ran past its time limit of %u ms", q->run_timeout_ms);
        pg_query__set_error(q, "57014", msg);
    }
    q->cb(q, status); /* may free q */
    if (freed_slot)
        pg_pool__dispatch(p); /* a limited query may wait for this slot */
}

/* Finishes q with status on the next loop turn (where the caller must not
 * see its callback run synchronously). The status waits in q->state. */
void pg_query__finish_later(pg_query_t *q, int status)
{
    pg_pool_t *p = q->pool;
    q->state = status;
    queue_push_tail(&p->done, &q->node);
    uv_timer_start(&p->later, pool_later_cb, 0, 0);
}

int pg_query__status_of_error(pg_query_t *q)
{
    if (strcmp(q->sqlstate, "57014") == 0) /* query_canceled */
        return q->timed_out ? UV_ETIMEDOUT : q->cancel_requested ? UV_ECANCELED : UV_EIO;
    return UV_EIO;
}

/* ---- pool ------------------------------------------------------------------ */

static pg_conn_t *pool_ready_conn(pg_pool_t *p)
{
    for (int i = 0; i < p->cfg.size; i++) {
        pg_conn_t *c = &p->conns[i];
        if (c->state == PG_CONN_READY && !c->cancel_inflight && c->stale_pid == 0)
            return c;
    }
    return NULL;
}

/* The limited query whose turn it is: the oldest of the first share in
 * the ring under its cap (limited_share_max), or NULL. */
static pg_query_t *pool_next_limited(pg_pool_t *p)
{
    if (p->cfg.limited_max > 0 && p->limited_running >= p->cfg.limited_max)
        return NULL;
    for (queue_node_t *n = queue_head(&p->share_ring); n != &p->share_ring; n = n->next) {
        pg_share_t *sh = queue_entry(n, pg_share_t, ring_node);
        if (p->cfg.limited_share_max <= 0 || sh->running < p->cfg.limited_share_max)
            return queue_entry(queue_head(&sh->waiting), pg_query_t, share_node);
    }
    return NULL;
}

/* The oldest queued query that may run now: any, but one of the limited
 * class only while fewer than limited_max of them run, and of those the
 * one whose share's turn it is. */
static pg_query_t *pool_next_query(pg_pool_t *p)
{
    pg_query_t *any =
        queue_empty(&p->queue) ? NULL : queue_entry(queue_head(&p->queue), pg_query_t, node);
    pg_query_t *lim = pool_next_limited(p);
    if (any != NULL && lim != NULL)
        return any->seq < lim->seq ? any : lim;
    return any != NULL ? any : lim;
}

void pg_pool__dispatch(pg_pool_t *p)
{
    pg_conn_t *c;
    pg_query_t *q;
    while (!p->closing && p->queued > 0 && (c = pool_ready_conn(p)) != NULL &&
           (q = pool_next_query(p)) != NULL) {
        queue_remove(&q->node);
        p->queued--;
        if (q->limited) {
            pg_share_t *sh = q->owner;
            queue_remove(&q->share_node);
            q->limited_running = true;
            p->limited_running++;
            sh->running++;
            /* Its turn is used: to the end of the ring, when more wait. */
            queue_remove(&sh->ring_node);
            if (!queue_empty(&sh->waiting))
                queue_push_tail(&p->share_ring, &sh->ring_node);
        }
        pg_conn__run(c, q);
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
        pg_query__finish(q, status);
    }
}

const char *pg_pool__refusal_sqlstate(const char *msg)
{
    /* A failed connection carries no SQLSTATE in libpq, only the server's
     * message: "FATAL:  database "x" does not exist" is
     * invalid_catalog_name, not an authorization failure. */
    if (msg && strstr(msg, "FATAL:") && strstr(msg, "database \"") && strstr(msg, "does not exist"))
        return "3D000";
    if (msg && strstr(msg, "password authentication failed"))
        return "28P01";
    return "28000";
}

bool pg_pool__refusal(const char *msg)
{
    static const char *const permanent[] = {"does not exist", "password authentication failed",
                                            "no pg_hba.conf entry", "is not permitted to log in",
                                            "authentication failed"};
    if (msg == NULL || strstr(msg, "FATAL:") == NULL)
        return false;
    for (size_t i = 0; i < sizeof permanent / sizeof permanent[0]; i++)
        if (strstr(msg, permanent[i]))
            return true;
    return false;
}

/* Every PG_POOL_TICK_MS while queries wait: fail those past deadline, or
 * all of them when the server refused the connection for good. */
#define PG_POOL_TICK_MS 100

/* Fails the queries of queue list that are past their deadline, or all of
 * them when the server refused the connection for good. Returns false when
 * a callback closed the pool. */
static bool pool_expire(pg_pool_t *p, queue_node_t *list, uint64_t now)
{
    queue_node_t *n = queue_head(list);
    while (n != list) {
        queue_node_t *next = n->next;
        pg_query_t *q = queue_entry(n, pg_query_t, node);
        if (p->refused) { /* waiting would not help */
            pool_unqueue(p, q);
            pg_query__set_error(q, pg_pool__refusal_sqlstate(p->last_error), p->last_error);
            pg_query__finish(q, UV_EACCES);
            if (p->closing)
                return false;
            next = queue_head(list);
        } else if (q->deadline <= now) {
            pool_unqueue(p, q);
            char msg[PG_QUERY_ERROR_MAX];
            snprintf(msg, sizeof msg, "timed out waiting for a database connection%s%.400s",
                     p->last_error[0] ? ": " : "", p->last_error);
            pg_query__set_error(q, "57014", msg);
            pg_query__finish(q, UV_ETIMEDOUT);
            if (p->closing)
                return false;
            /* The callback may have changed the queue: start over. */
            next = queue_head(list);
        }
        n = next;
    }
    return true;
}

static void pool_tick_cb(uv_timer_t *t)
{
    pg_pool_t *p = t->data;
    uint64_t now = uv_now(p->loop);
    if (!pool_expire(p, &p->queue, now) || !pool_expire(p, &p->limited_queue, now))
        return;
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
    q->run_limited = false;
    q->ran_out = false;
    q->deadline = uv_now(p->loop) + (q->timeout_ms ? q->timeout_ms : p->cfg.query_timeout_ms);
    q->state = Q_QUEUED;
    p->stats.submitted++;
    q->seq = p->next_seq++;
    q->owner = NULL;
    q->limited_running = false;
    if (q->limited) {
        pg_share_t *sh = pool_share_get(p, q->share);
        if (sh == NULL) {
            free(q->results);
            q->results = NULL;
            return UV_ENOMEM;
        }
        if (queue_empty(&sh->waiting))
            queue_push_tail(&p->share_ring, &sh->ring_node);
        queue_push_tail(&sh->waiting, &q->share_node);
        q->owner = sh;
    }
    queue_push_tail(q->limited ? &p->limited_queue : &p->queue, &q->node);
    p->queued++;
    pg_pool__dispatch(p);
    if (p->queued > 0 && !uv_is_active((uv_handle_t *)&p->tick))
        uv_timer_start(&p->tick, pool_tick_cb, PG_POOL_TICK_MS, PG_POOL_TICK_MS);
    return 0;
}

void pg_query_cancel(pg_query_t *q)
{
    pg_pool_t *p = q->pool;
    if (q->state == Q_QUEUED) {
        pool_unqueue(p, q);
        pg_query__set_error(q, "57014", "query cancelled");
        pg_query__finish(q, UV_ECANCELED);
    } else if (q->state == Q_RUNNING && !q->cancel_requested) {
        q->cancel_requested = true;
        pg_conn__send_cancel(q->conn);
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
    pg_pool__maybe_closed(p);
}

static void pool_timer_close_cb(uv_handle_t *h)
{
    pg_pool_t *p = h->data;
    p->handles_open--;
    pg_pool__maybe_closed(p);
}

static void pool_free(pg_pool_t *p)
{
    for (int i = 0; i < p->cfg.size; i++) {
        pg_conn_t *c = &p->conns[i];
        pg_conn__forget_prepared(c);
        free(c->prepared);
        pg_conninfo_free(&c->resolved);
    }
    for (int i = 0; i < PG_SHARE_BUCKETS; i++) /* none left after close; kept safe */
        while (!queue_empty(&p->share_buckets[i])) {
            queue_node_t *n = queue_head(&p->share_buckets[i]);
            queue_remove(n);
            free(queue_entry(n, pg_share_t, hash_node));
        }
    for (int i = 0; i < p->nhosts; i++)
        free(p->hosts[i]);
    pg_conninfo_free(&p->conninfo);
    free(p->conns);
    free(p);
}

void pg_pool__maybe_closed(pg_pool_t *p)
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
        pg_query__finish(q, q->state);
    }
    while (p->queued > 0) {
        queue_node_t *list = queue_empty(&p->queue) ? &p->limited_queue : &p->queue;
        pg_query_t *q = queue_entry(queue_head(list), pg_query_t, node);
        pool_unqueue(p, q);
        pg_query__set_error(q, "57P01", "database pool is shutting down");
        pg_query__finish(q, UV_ECANCELED);
    }
    for (int i = 0; i < p->cfg.size; i++) {
        pg_conn_t *c = &p->conns[i];
        pg_query_t *q = c->q;
        c->q = NULL;
        pg_conn__drop_pg(c);
        c->state = PG_CONN_CLOSED;
        if (c->gai_active)
            uv_cancel((uv_req_t *)&c->gai);
        uv_close((uv_handle_t *)&c->timer, conn_timer_close_cb);
        if (q) {
            pg_query__set_error(q, "57P01", "database pool is shutting down");
            pg_query__finish(q, UV_ECANCELED);
        }
    }
    uv_close((uv_handle_t *)&p->tick, pool_timer_close_cb);
    uv_close((uv_handle_t *)&p->later, pool_timer_close_cb);
    p->close_cb = cb;
    pg_pool__maybe_closed(p);
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
        any_name = any_name || pg_conn__host_needs_dns(name);
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
    queue_init(&p->limited_queue);
    queue_init(&p->share_ring);
    for (int i = 0; i < PG_SHARE_BUCKETS; i++)
        queue_init(&p->share_buckets[i]);
    queue_init(&p->done);
    int rc = pg_conninfo_copy(&p->conninfo, conninfo);
    if (rc == 0 && pg_conninfo_get(&p->conninfo, "application_name") == NULL)
        rc = pg_conninfo_set(&p->conninfo, "application_name", "parleyd");
    if (rc == 0)
        rc = pg_conninfo_set(&p->conninfo, "client_encoding", "UTF8");
    if (rc == 0 && cfg->read_only)
        rc = pg_conninfo_add_option(&p->conninfo, "-c default_transaction_read_only=on");
    if (rc == 0 && cfg->statement_timeout_ms > 0) {
        char opt[64];
        snprintf(opt, sizeof opt, "-c statement_timeout=%u", cfg->statement_timeout_ms);
        rc = pg_conninfo_add_option(&p->conninfo, opt);
    }
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
        pg_conn__connect(&p->conns[i]);
    *out = p;
    return 0;
}

void pg_pool_metrics(const pg_pool_t *pool, const char *label, bool header, buf_t *out)
{
    pg_pool_stats_t st;
    pg_pool_stats(pool, &st);
    if (header)
        prom_text_family(out, "parley_db_pool", PROM_TEXT_GAUGE, "Database pool state.");
    prom_text_int(out, "parley_db_pool", PROM_LABELS("pool", label, "state", "ready"),
                  st.conns_ready);
    prom_text_int(out, "parley_db_pool", PROM_LABELS("pool", label, "state", "busy"),
                  st.conns_busy);
    prom_text_int(out, "parley_db_pool", PROM_LABELS("pool", label, "state", "down"),
                  st.conns_down);
    prom_text_int(out, "parley_db_pool", PROM_LABELS("pool", label, "state", "queued"), st.queued);
    prom_text_uint(out, "parley_db_queries_total", PROM_LABELS("pool", label), st.submitted);
}
