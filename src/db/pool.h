/* pool: a bounded pool of asynchronous libpq connections on the libuv loop.
 *
 * Each connection is driven by a uv_poll on PQsocket: connect with
 * PQconnectStartParams/PQconnectPoll (host names are resolved first with
 * uv_getaddrinfo, so libpq never blocks on DNS), queries with
 * PQsendQueryParams / PQsendQueryPrepared, several statements of one query
 * in pipeline mode (one round trip; they run as one implicit transaction).
 * "COPY ... FROM STDIN" statements stream their data with
 * PQputCopyData as the socket takes it. Queries wait in a FIFO of at most queue_max entries; past
 * it pg_pool_submit answers UV_EBUSY at once. Queries of the limited class (searches) wait
 * round-robin between their share keys (principals), so that one key's many do not hold back
 * another's one. Each query has a deadline (queue wait included); at
 * the deadline a running query is cancelled on the server (PQcancel on the thread pool, never on
 * the loop). A connection that breaks fails its query with UV_ECONNRESET and reconnects with
 * exponential backoff; queued queries wait for it until their deadline.
 *
 * A read-only pool sets default_transaction_read_only on every session. */
#ifndef PARLEY_DB_POOL_H
#define PARLEY_DB_POOL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "db/conninfo.h"
#include "util/queue.h"

#define PG_POOL_MAX_CONNS 256
#define PG_QUERY_MAX_STMTS                                                                         \
    128 /* statements of one pipelined query (the migrations take one each) */
#define PG_QUERY_ERROR_MAX 512
/* Reconnect backoff: starts here, doubles, capped, with +-25% jitter. */
#define PG_BACKOFF_MIN_MS 100
#define PG_BACKOFF_MAX_MS 5000
/* After a cancel request, how long a query may take to stop before its
 * connection is dropped. */
#define PG_CANCEL_GRACE_MS 2000

typedef struct pg_pool_s pg_pool_t;
typedef struct pg_query_s pg_query_t;
typedef struct pg_conn_s pg_conn_t;

/* Called once per submitted query. status: 0, UV_EIO (the server reported
 * an error: see q->sqlstate and q->error), UV_ETIMEDOUT (q->ran_out tells
 * whether it ran past its run_timeout_ms), UV_ECONNRESET
 * (connection lost while running), UV_EACCES (the server refuses
 * connections for good: no such database or role, authentication failed;
 * q->error has its message), UV_ECANCELED (pg_query_cancel or pool
 * closing). The results stay valid until pg_query_release(). */
typedef void (*pg_query_cb)(pg_query_t *q, int status);

/* Notification from LISTEN (see listen.h). */
typedef void (*pg_notify_cb)(pg_pool_t *pool, const char *channel, const char *payload);
typedef void (*pg_pool_close_cb)(pg_pool_t *pool);

typedef struct pg_stmt_s {
    const char *sql;
    /* Name of a prepared statement: prepared once per connection, then
     * executed by name. NULL: sent with PQsendQueryParams. */
    const char *name;
    int nparams;
    const char *const *params; /* text format; NULL element = SQL NULL */
    /* For "COPY ... FROM STDIN": the data to send (COPY text format),
     * borrowed until the callback. Such a statement must be the query's
     * only one (COPY does not run in pipeline mode). */
    const char *copy_data;
    size_t copy_len;
} pg_stmt_t;

struct pg_query_s {
    /* Set by the caller; borrowed until the callback. */
    const pg_stmt_t *stmts;
    int nstmts;          /* 1..PG_QUERY_MAX_STMTS */
    uint32_t timeout_ms; /* 0: the pool's default */
    /* In the pool's limited class (heavy work such as searches): at most
     * cfg.limited_max of them run at once; the others wait in the queue
     * while queries of no class pass them. */
    bool limited;
    /* For a limited query: whose it is, an opaque key (a hash of the
     * principal; 0 is a key like any other). Waiting limited queries run
     * round-robin between keys, oldest first within one key, and one key
     * holds at most cfg.limited_share_max of the limited slots. */
    uint64_t share;
    /* A limit on the query once it holds a connection (0: none but the
     * deadline): past it, it is cancelled on the server and answered
     * UV_ETIMEDOUT with ran_out set, whatever time it spent waiting. */
    uint32_t run_timeout_ms;
    /* run_timeout_ms is the query's limit once it runs even when that ends
     * past its deadline, which then bounds only the wait for a connection
     * (a migration: minutes of work on a large store, but a prompt failure
     * when no server answers). */
    bool run_replaces_deadline;
    pg_query_cb cb;
    void *data;

    /* Set by the pool before the callback. */
    PGresult **results; /* nstmts entries; NULL where none */
    char sqlstate[6];
    char error[PG_QUERY_ERROR_MAX];
    bool ran_out; /* UV_ETIMEDOUT at run_timeout_ms (error names the limit) */

    /* Private. */
    queue_node_t node;
    pg_pool_t *pool;
    pg_conn_t *conn;
    uint64_t deadline;        /* uv_now() ms */
    uint64_t seq;             /* submission order, across the pool's two queues */
    queue_node_t share_node;  /* a waiting limited query: in its share's queue */
    struct pg_share_s *owner; /* a limited query's share, while queued or running */
    int state;
    bool cancel_requested;
    bool timed_out;
    bool limited_running; /* counted in the pool's limited_running */
    bool run_limited;     /* the deadline running is run_timeout_ms's */
};

typedef struct pg_pool_config_s {
    const char *name; /* log tag: "db" or "db-ro" */
    int size;
    int queue_max;
    uint32_t query_timeout_ms;
    uint32_t connect_timeout_ms;
    bool read_only;
    /* A query may leave its session inside a transaction, for the next
     * query to go on with: for a pool of one connection whose owner runs a
     * transaction across several queries (a COPY cannot share a query) and
     * ends it, or rolls it back after an error. Otherwise such a session
     * is dropped. Pair it with read_only, so that a statement sent after
     * the connection was lost and restored cannot write outside the
     * transaction it was meant for. */
    bool keep_transactions;
    /* The server's own limit on a statement (statement_timeout), so that
     * PostgreSQL stops a query even when a cancel request is lost; 0: the
     * server's default. */
    uint32_t statement_timeout_ms;
    /* Queries of the limited class (pg_query_t.limited) that may run at
     * once, so that heavy work leaves connections for the rest; 0: no
     * cap. */
    int limited_max;
    /* Limited slots one share key (pg_query_t.share) may hold at once, so
     * that the others keep a reserve; 0: no cap but limited_max. */
    int limited_share_max;
    /* Statements run on every new connection before it takes queries
     * (LISTEN, SET). NULL-terminated; borrowed for the pool's life. */
    const char *const *setup_sql;
    pg_notify_cb on_notify;
} pg_pool_config_t;

typedef struct pg_pool_stats_s {
    int conns_ready; /* connected, idle */
    int conns_busy;  /* running a query */
    int conns_down;  /* connecting or waiting to reconnect */
    int queued;      /* waiting for a connection */
    uint64_t submitted, completed, failed, rejected_busy, reconnects;
} pg_pool_stats_t;

/* Creates a pool and starts connecting. conninfo is copied. Returns 0 and
 * *out, or a negative code (UV_EINVAL, UV_ENOMEM) with err set. */
int pg_pool_new(uv_loop_t *loop, const pg_pool_config_t *cfg, const pg_conninfo_t *conninfo,
                pg_pool_t **out, char *err, size_t errcap);

/* Queues q. Returns 0 (q->cb will run once, never from inside this call),
 * UV_EBUSY (queue full), UV_EINVAL (bad statement count) or UV_ECANCELED
 * (pool closing); on an error the callback does not run. */
__attribute__((warn_unused_result)) int pg_pool_submit(pg_pool_t *pool, pg_query_t *q);

/* ---- one statement, one value (pool_call.c) ----------------------------
 * Most callers run one statement and want one value back (every SQL
 * function of the store answers JSON text). pg_pool_call does the set-up
 * the others write by hand: it copies the statement and the parameters,
 * submits, and hands over the first column of the first row. */
typedef struct pg_call_s pg_call_t;

/* status 0 with value (NULL when there was no row or it was SQL NULL), or a
 * negative code as for pg_query_cb with sqlstate ("" when none) and error.
 * All three are valid during the callback only. */
typedef void (*pg_call_cb)(void *data, int status, const char *value, const char *sqlstate,
                           const char *error);

/* Runs sql with nparams text parameters (copied; a NULL element is SQL
 * NULL), prepared once per connection under name unless name is NULL.
 * Returns 0 and *out (when out is not NULL; valid for pg_call_cancel until
 * the callback, and for pg_call_ran_out during it), or a negative code (UV_EBUSY, UV_EINVAL,
 * UV_ECANCELED, UV_ENOMEM) without calling back. */
int pg_pool_call(pg_pool_t *pool, const char *name, const char *sql, int nparams,
                 const char *const *params, pg_call_cb cb, void *data, pg_call_t **out);

/* pg_pool_call for a query of the pool's limited class (see limited_max). */
int pg_pool_call_limited(pg_pool_t *pool, const char *name, const char *sql, int nparams,
                         const char *const *params, pg_call_cb cb, void *data, pg_call_t **out);

/* pg_pool_call with its own time limit (timeout_ms; 0: the pool's), for
 * work known to be long, such as an import's batch. */
int pg_pool_call_timeout(pg_pool_t *pool, uint32_t timeout_ms, const char *name, const char *sql,
                         int nparams, const char *const *params, pg_call_cb cb, void *data,
                         pg_call_t **out);

/* How pg_pool_call_opts runs a call: the fields of pg_query_t of the same
 * names (all zero: as pg_pool_call). */
typedef struct pg_call_opts_s {
    bool limited;
    uint64_t share;
    uint32_t timeout_ms;
    uint32_t run_timeout_ms;
} pg_call_opts_t;

int pg_pool_call_opts(pg_pool_t *pool, const pg_call_opts_t *opts, const char *name,
                      const char *sql, int nparams, const char *const *params, pg_call_cb cb,
                      void *data, pg_call_t **out);

/* Stops the call as pg_query_cancel does; the callback still runs. */
void pg_call_cancel(pg_call_t *c);

/* During the callback of a call answered UV_ETIMEDOUT: true when it ran
 * past its run_timeout_ms (pg_query_t.ran_out), false when the deadline
 * came first. */
__attribute__((warn_unused_result)) bool pg_call_ran_out(const pg_call_t *c);

/* Stops q: a queued query is answered UV_ECANCELED at once; a running one
 * is cancelled on the server and answered UV_ECANCELED when it stops. */
void pg_query_cancel(pg_query_t *q);

/* Frees q's results (not q itself). Safe on a query never run. */
void pg_query_release(pg_query_t *q);

/* Fails queued queries with UV_ECANCELED, drops the connections (running
 * queries are answered UV_ECANCELED) and calls cb once every handle is
 * closed; the pool is freed after cb returns. */
void pg_pool_close(pg_pool_t *pool, pg_pool_close_cb cb);

void pg_pool_stats(const pg_pool_t *pool, pg_pool_stats_t *out);

/* Appends the pool's Prometheus figures, labelled pool="label", to out
 * (a util/buf.h buffer). header: also the HELP/TYPE lines (once per
 * family, for the first pool written). */
struct buf_s;
void pg_pool_metrics(const pg_pool_t *pool, const char *label, bool header, struct buf_s *out);

/* The last connection error (for "database unavailable" messages), or "". */
const char *pg_pool_last_error(const pg_pool_t *pool);

/* True when nothing is queued or running. */
__attribute__((warn_unused_result)) bool pg_pool_is_idle(const pg_pool_t *pool);

void *pg_pool_get_data(const pg_pool_t *pool);
void pg_pool_set_data(pg_pool_t *pool, void *data);

#endif
