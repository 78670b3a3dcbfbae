/* pool_internal: what the files of the database pool share (internal to
 * src/db): the connection and pool objects, and the functions one file
 * calls in another. pool.c owns the pool (queue, dispatch, deadlines,
 * close, stats) and query completion; pg_conn.c one connection's life
 * (poll handle, DNS, connect, setup, loss and backoff, cancel);
 * pg_conn_query.c a query on a connection (send, pipeline, results, COPY).
 *
 * Invariants:
 *  - A connection's uv_poll handle is closed before libpq may close the
 *    socket it watches (before PQconnectPoll, PQreset, PQfinish), and a new
 *    one is opened on whatever PQsocket returns afterwards. Poll handles are
 *    heap objects freed in their close callback.
 *  - Callbacks of queries never run from inside pg_pool_submit; failures
 *    found there are finished from the "done" list on the next loop turn.
 *  - Memory is released only in close callbacks. */
#ifndef PARLEY_DB_POOL_INTERNAL_H
#define PARLEY_DB_POOL_INTERNAL_H

#include <stdbool.h>

#include "db/pool.h"

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
    /* The backend of a session dropped because its query ignored a cancel:
     * the connection takes no work until that backend is gone (it is asked
     * to terminate), so runaway backends never outnumber the pool. */
    int stale_pid;
    pg_query_t stale_q;
    pg_stmt_t stale_stmt;
    char stale_arg[16];
    const char *stale_params[1];
};

/* The waiting and running limited queries of one share key
 * (pg_query_t.share): it exists while it has either, so that the shares
 * are bounded by the queue's bound and the connections. */
typedef struct pg_share_s {
    uint64_t key;
    queue_node_t hash_node; /* in the pool's share_buckets */
    queue_node_t ring_node; /* in the pool's share_ring while queries wait */
    queue_node_t waiting;   /* of pg_query_t.share_node, oldest first */
    int running;            /* its queries on a connection */
} pg_share_t;

/* Buckets of the shares' hash table (a power of two). */
#define PG_SHARE_BUCKETS 64

struct pg_pool_s {
    uv_loop_t *loop;
    pg_pool_config_t cfg;
    char name[32];
    pg_conninfo_t conninfo;
    /* Host list when some entry is a name to resolve; nhosts 0 otherwise. */
    char *hosts[PG_MAX_HOSTS];
    int nhosts;
    pg_conn_t *conns;
    /* pg_query_t waiting for a connection, each class in its own queue in
     * submission order (seq), so that the next to run is one of the two
     * heads, whatever number of limited queries wait (a scan of one queue
     * past the limited ones cost some 15,000 instructions a query with
     * 1,000 waiting). queued counts both. */
    queue_node_t queue;         /* of no class */
    queue_node_t limited_queue; /* of the limited class (pg_query_t.limited) */
    /* The limited class again, by share: the shares with waiting queries in
     * turn (the next limited query to run is the oldest of the first share
     * under its cap; that share then goes to the end), and every share by
     * key. */
    queue_node_t share_ring;
    queue_node_t share_buckets[PG_SHARE_BUCKETS];
    uint64_t next_seq;
    int queued;
    int limited_running; /* queries of the limited class on a connection (cfg.limited_max) */
    queue_node_t done;   /* finished queries whose callback is due */
    uv_timer_t tick;     /* queue deadlines */
    uv_timer_t later;    /* runs the done list on the next loop turn */
    int handles_open;
    int cancels_running;
    bool closing;
    pg_pool_close_cb close_cb;
    void *data;
    char last_error[PG_QUERY_ERROR_MAX];
    /* The server refused the last connection attempt for a reason retrying
     * does not fix (no such database or role, authentication): queued
     * queries fail at once with its message instead of at their deadline.
     * Cleared when a connection succeeds. */
    bool refused;
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

/* pool.c */
void pg_pool__copy_msg(char *dst, size_t cap, const char *src);
/* True when a failed connection's message says the server refused it for
 * good: the database or role does not exist, authentication failed, or
 * pg_hba.conf has no entry (the server's FATAL messages). */
bool pg_pool__refusal(const char *msg);
/* The SQLSTATE a refusal's message stands for: 3D000 for a database that
 * does not exist, 28P01 for a wrong password, else 28000. */
const char *pg_pool__refusal_sqlstate(const char *msg);
void pg_pool__dispatch(pg_pool_t *p);
void pg_pool__maybe_closed(pg_pool_t *p);
void pg_query__finish(pg_query_t *q, int status);
void pg_query__finish_later(pg_query_t *q, int status);
void pg_query__set_error(pg_query_t *q, const char *sqlstate, const char *msg);
int pg_query__status_of_error(pg_query_t *q);

/* pg_conn.c */
void pg_conn__became_ready(pg_conn_t *c);
/* Every PG_STALE_CHECK_MS a held-back connection looks again whether the
 * backend it replaces is gone. */
#define PG_STALE_CHECK_MS 500
void pg_conn__connect(pg_conn_t *c);
void pg_conn__connect_step(pg_conn_t *c);
void pg_conn__drop_pg(pg_conn_t *c);
void pg_conn__forget_prepared(pg_conn_t *c);
bool pg_conn__host_needs_dns(const char *h);
bool pg_conn__is_prepared(const pg_conn_t *c, const char *name);
void pg_conn__lost(pg_conn_t *c, const char *why);
void pg_conn__mark_prepared(pg_conn_t *c, const char *name);
void pg_conn__poll_update(pg_conn_t *c);
void pg_conn__send_cancel(pg_conn_t *c);

/* pg_conn_query.c */
void pg_conn__on_poll(uv_poll_t *h, int status, int events);
void pg_conn__run(pg_conn_t *c, pg_query_t *q);

#endif
