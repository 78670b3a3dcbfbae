/* pg_conn_query: a query on a ready connection (see pool_internal.h):
 * sending it (prepared by name once per session, several statements in
 * pipeline mode), COPY data, reading the results, the query's deadline,
 * and the socket events that drive it all. */
#include <stdlib.h>
#include <string.h>

#include "db/pool_internal.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/strutil.h"

/* ---- queries on a connection --------------------------------------------- */

static void conn_query_deadline_cb(uv_timer_t *t)
{
    pg_conn_t *c = t->data;
    if (c->state != PG_CONN_BUSY || c->q == NULL)
        return;
    c->q->timed_out = true;
    pg_conn__send_cancel(c);
}

/* Sends q's statements. Returns 0 or UV_EIO (connection unusable). */
static int conn_send_query(pg_conn_t *c, pg_query_t *q)
{
    bool pipeline = q->nstmts > 1;
    for (int i = 0; i < q->nstmts && !pipeline; i++)
        if (q->stmts[i].name && !pg_conn__is_prepared(c, q->stmts[i].name))
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
            bool prepared = pg_conn__is_prepared(c, st->name);
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

void pg_conn__run(pg_conn_t *c, pg_query_t *q)
{
    pg_pool_t *p = c->pool;
    c->q = q;
    c->cancel_sent = false;
    q->conn = c;
    q->state = Q_RUNNING;
    c->state = PG_CONN_BUSY;
    uint64_t now = uv_now(p->loop);
    q->run_limited = q->run_timeout_ms > 0 &&
                     (q->run_replaces_deadline || now + q->run_timeout_ms < q->deadline);
    if (q->run_limited)
        q->deadline = now + q->run_timeout_ms;
    uv_timer_start(&c->timer, conn_query_deadline_cb, q->deadline > now ? q->deadline - now : 1, 0);
    if (conn_send_query(c, q) != 0) {
        /* Never call back from inside submit: finish q on the next turn. */
        c->q = NULL;
        pg_query__set_error(q, "08006", PQerrorMessage(c->pg));
        pg_conn__lost(c, NULL);
        pg_query__finish_later(q, UV_ECONNRESET);
        return;
    }
    pg_conn__poll_update(c);
}

static void record_error(pg_query_t *q, const PGresult *r)
{
    if (q->error[0] != '\0')
        return; /* keep the first error */
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    pg_query__set_error(q, state ? state : "XX000", msg ? msg : PQresultErrorMessage(r));
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
        pg_conn__mark_prepared(c, q->stmts[e.stmt].name);
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
            pg_conn__lost(c, NULL);
            return;
        }
        c->pipeline = false;
    }
    if (c->state == PG_CONN_SETUP) {
        if (c->setup_pending < 0) {
            pg_conn__lost(c, p->last_error[0] ? p->last_error : "connection setup failed");
            return;
        }
        p->last_error[0] = '\0';
        pg_conn__became_ready(c);
        return;
    }
    pg_query_t *q = c->q;
    c->q = NULL;
    c->state = PG_CONN_READY;
    uv_timer_stop(&c->timer);
    if (PQtransactionStatus(c->pg) != PQTRANS_IDLE && !p->cfg.keep_transactions) {
        /* A query left the session inside a transaction (a BEGIN without
         * COMMIT, or a failed one): never hand that session to the next
         * query (unless the pool's owner carries transactions across its
         * queries, see keep_transactions). */
        pg_conn__lost(c, "a query left its session inside a transaction; reconnecting");
    }
    int status = q->error[0]           ? pg_query__status_of_error(q)
                 : q->cancel_requested ? UV_ECANCELED
                                       : 0;
    if (status == UV_ECANCELED && q->error[0] == '\0')
        pg_query__set_error(q, "57014", "query cancelled");
    pg_query__finish(q, status);
    /* The callback may have submitted (this connection may be busy again)
     * or closed the pool: look at the state afresh. */
    if (!p->closing && c->state == PG_CONN_READY)
        pg_pool__dispatch(p);
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
        pg_conn__lost(c, NULL);
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
            pg_conn__lost(c, NULL);
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
                pg_conn__lost(c, NULL);
                return;
            }
            if (c->copying)
                return; /* the rest when the socket is writable */
            continue;
        }
        conn_take_result(c, r);
    }
}

void pg_conn__on_poll(uv_poll_t *h, int status, int events)
{
    pg_conn_t *c = ((pg_poll_t *)h->data)->conn;
    if (status < 0) {
        pg_conn__lost(c, uv_strerror(status));
        return;
    }
    switch (c->state) {
    case PG_CONN_CONNECTING:
        pg_conn__connect_step(c);
        return;
    case PG_CONN_SETUP:
    case PG_CONN_READY:
    case PG_CONN_BUSY:
        if ((events & UV_WRITABLE) && c->copying) {
            if (conn_copy_pump(c) != 0) {
                pg_conn__lost(c, NULL);
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
                pg_conn__lost(c, NULL);
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
        pg_conn__poll_update(c);
        return;
    default:
        return;
    }
}
