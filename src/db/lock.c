/* lock: an advisory lock held on a dedicated connection (see lock.h). */
#include "db/lock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define LOCK_TAG "lock"

struct pg_lock_s {
    pg_pool_t *pool;
    uv_timer_t timer;
    pg_lock_cb cb;
    void *data;
    char key[128];
    bool held;
    bool asking;   /* a query in flight */
    bool answered; /* the first answer was reported */
    bool closing;
    uint64_t reconnects; /* the pool's count when the lock was taken */
    int parts;           /* the timer and the pool, until closed */
    void (*close_cb)(void *data);
    void *close_data;
    pg_query_t q;
    pg_stmt_t stmt;
    const char *params[1];
};

static uint64_t reconnects_of(pg_pool_t *p)
{
    pg_pool_stats_t st;
    pg_pool_stats(p, &st);
    return st.reconnects;
}

static void lost(pg_lock_t *l, const char *why)
{
    if (!l->held)
        return;
    l->held = false;
    log_warn(LOCK_TAG, "%s: lost (%s)", l->key, why);
    l->cb(l, false);
}

static void asked(pg_query_t *q, int status)
{
    pg_lock_t *l = q->data;
    l->asking = false;
    const char *v = status == 0 && q->results && q->results[0] && PQntuples(q->results[0]) == 1
                        ? PQgetvalue(q->results[0], 0, 0)
                        : NULL;
    bool got = v != NULL && strcmp(v, "t") == 0;
    char error[PG_QUERY_ERROR_MAX];
    snprintf(error, sizeof error, "%s", status == 0 ? "" : q->error);
    pg_query_release(q);
    if (l->closing)
        return;
    if (l->held) {
        /* The check: the session that holds the lock must still be the
         * one we have. */
        if (status != 0)
            lost(l, error[0] ? error : uv_strerror(status));
        else if (reconnects_of(l->pool) != l->reconnects)
            lost(l, "the connection was replaced");
        return;
    }
    if (got) {
        l->held = true;
        l->answered = true;
        l->reconnects = reconnects_of(l->pool);
        log_debug(LOCK_TAG, "%s: taken", l->key);
        l->cb(l, true);
    } else if (status == 0 && !l->answered) {
        l->answered = true;
        l->cb(l, false); /* someone else holds it */
    }
}

static void tick(uv_timer_t *t)
{
    pg_lock_t *l = t->data;
    if (l->asking || l->closing)
        return;
    /* Held: a cheap round trip on the same session; else ask again. */
    l->stmt = (pg_stmt_t){.sql = l->held ? "SELECT true"
                                         : "SELECT pg_try_advisory_lock("
                                           "hashtextextended($1, 0))",
                          .nparams = l->held ? 0 : 1,
                          .params = l->params};
    memset(&l->q, 0, sizeof l->q);
    l->q.stmts = &l->stmt;
    l->q.nstmts = 1;
    l->q.timeout_ms = PG_LOCK_CHECK_MS * 3;
    l->q.cb = asked;
    l->q.data = l;
    if (pg_pool_submit(l->pool, &l->q) == 0)
        l->asking = true;
}

static void part_closed(pg_lock_t *l)
{
    if (--l->parts > 0)
        return;
    void (*cb)(void *) = l->close_cb;
    void *data = l->close_data;
    free(l);
    if (cb)
        cb(data);
}

static void timer_closed(uv_handle_t *h)
{
    part_closed(h->data);
}

static void pool_closed(pg_pool_t *p)
{
    part_closed(pg_pool_get_data(p));
}

int pg_lock_start(uv_loop_t *loop, const pg_conninfo_t *conninfo, const char *key,
                  uint32_t connect_timeout_ms, pg_lock_cb cb, void *data, pg_lock_t **out,
                  char *err, size_t errcap)
{
    pg_lock_t *l = calloc(1, sizeof *l);
    if (l == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    snprintf(l->key, sizeof l->key, "%s", key);
    l->params[0] = l->key;
    l->cb = cb;
    l->data = data;
    pg_conninfo_t ci;
    int rc = pg_conninfo_copy(&ci, conninfo);
    char v[3][16];
    snprintf(v[0], sizeof v[0], "%d", PG_LOCK_KEEPALIVE_IDLE_S);
    snprintf(v[1], sizeof v[1], "%d", PG_LOCK_KEEPALIVE_INTERVAL_S);
    snprintf(v[2], sizeof v[2], "%d", PG_LOCK_KEEPALIVE_COUNT);
    if (rc == 0)
        rc = pg_conninfo_set(&ci, "keepalives", "1") ||
                     pg_conninfo_set(&ci, "keepalives_idle", v[0]) ||
                     pg_conninfo_set(&ci, "keepalives_interval", v[1]) ||
                     pg_conninfo_set(&ci, "keepalives_count", v[2])
                 ? UV_ENOMEM
                 : 0;
    pg_pool_config_t pc = {
        .name = "lock",
        .size = 1,
        .queue_max = 4,
        .query_timeout_ms = PG_LOCK_CHECK_MS * 3,
        .connect_timeout_ms = connect_timeout_ms,
    };
    if (rc == 0)
        rc = pg_pool_new(loop, &pc, &ci, &l->pool, err, errcap);
    else
        snprintf(err, errcap, "out of memory");
    pg_conninfo_free(&ci);
    if (rc != 0) {
        free(l);
        return rc;
    }
    pg_pool_set_data(l->pool, l);
    uv_timer_init(loop, &l->timer);
    l->timer.data = l;
    l->parts = 2;
    uv_timer_start(&l->timer, tick, 0, PG_LOCK_CHECK_MS);
    *out = l;
    return 0;
}

bool pg_lock_held(const pg_lock_t *l)
{
    return l->held;
}

void *pg_lock_data(const pg_lock_t *l)
{
    return l->data;
}

void pg_lock_close(pg_lock_t *l, void (*cb)(void *data), void *data)
{
    l->closing = true;
    l->held = false;
    l->close_cb = cb;
    l->close_data = data;
    uv_close((uv_handle_t *)&l->timer, timer_closed);
    pg_pool_close(l->pool, pool_closed); /* a query in flight ends UV_ECANCELED */
}
