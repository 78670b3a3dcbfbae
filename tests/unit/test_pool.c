/* Tests for db/pool against the shared throw-away PostgreSQL: parameters,
 * pipelines and prepared statements, errors, the bounded wait queue,
 * deadlines, cancellation, read-only sessions, lost connections, sessions
 * left inside a transaction, asynchronous DNS failure, closing, and
 * pg_pool_call (one statement, one value, its inputs copied). */
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "db/pool.h"
#include "testutil.h"

typedef struct {
    bool done;
    int status;
    char value[256];
    char sqlstate[6];
    char error[PG_QUERY_ERROR_MAX];
    int ntuples;
    char values[4][32]; /* first cell of each statement's result */
} result_t;

static void on_done(pg_query_t *q, int status)
{
    result_t *r = q->data;
    r->done = true;
    r->status = status;
    strcpy(r->sqlstate, q->sqlstate);
    strcpy(r->error, q->error);
    for (int i = 0; i < q->nstmts && i < 4; i++)
        if (status == 0 && q->results[i] && PQntuples(q->results[i]) > 0)
            snprintf(r->values[i], sizeof r->values[i], "%s", PQgetvalue(q->results[i], 0, 0));
    PGresult *last = q->results[q->nstmts - 1];
    if (status == 0 && last && PQntuples(last) > 0) {
        r->ntuples = PQntuples(last);
        snprintf(r->value, sizeof r->value, "%s", PQgetvalue(last, 0, 0));
    }
    pg_query_release(q);
}

typedef struct {
    uv_loop_t loop;
    pg_pool_t *pool;
} fixture_t;

/* A pool of cfg on the shared cluster. */
static pg_pool_t *pool_of(uv_loop_t *loop, const pg_pool_config_t *cfg)
{
    pg_conninfo_t ci;
    test_pg_conninfo(&ci, NULL);
    pg_pool_t *p;
    char err[256];
    assert_int_equal(pg_pool_new(loop, cfg, &ci, &p, err, sizeof err), 0);
    pg_conninfo_free(&ci);
    return p;
}

static pg_pool_t *make_pool(uv_loop_t *loop, int size, int queue_max, bool read_only,
                            const char *host)
{
    pg_conninfo_t ci;
    test_pg_conninfo(&ci, NULL);
    if (host)
        assert_int_equal(pg_conninfo_set(&ci, "host", host), 0);
    pg_pool_config_t cfg = {.name = "test",
                            .size = size,
                            .queue_max = queue_max,
                            .query_timeout_ms = 10000,
                            .connect_timeout_ms = 3000,
                            .read_only = read_only};
    pg_pool_t *p;
    char err[256];
    assert_int_equal(pg_pool_new(loop, &cfg, &ci, &p, err, sizeof err), 0);
    pg_conninfo_free(&ci);
    return p;
}

static bool closed;
static void on_closed(pg_pool_t *p)
{
    (void)p;
    closed = true;
}

static void close_pool(uv_loop_t *loop, pg_pool_t *p)
{
    closed = false;
    pg_pool_close(p, on_closed);
    test_run_until(loop, &closed, 5000);
}

/* Submits one statement and runs the loop until it is answered. */
static void run1(uv_loop_t *loop, pg_pool_t *p, result_t *r, const char *sql, int nparams,
                 const char *const *params, uint32_t timeout_ms)
{
    pg_stmt_t st = {.sql = sql, .nparams = nparams, .params = params};
    pg_query_t q = {.stmts = &st, .nstmts = 1, .cb = on_done, .data = r, .timeout_ms = timeout_ms};
    memset(r, 0, sizeof *r);
    assert_int_equal(pg_pool_submit(p, &q), 0);
    assert_false(r->done); /* never answered from inside submit */
    test_run_until(loop, &r->done, 20000);
}

static void test_params(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *p = make_pool(&loop, 2, 16, false, NULL);
    result_t r;
    const char *params[] = {"20", "22", NULL};
    run1(&loop, p, &r, "SELECT $1::int + $2::int, $3::text IS NULL", 3, params, 0);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.value, "42");
    /* Text that would break SQL if spliced is just a value. */
    const char *evil[] = {"'); DROP TABLE x; --"};
    run1(&loop, p, &r, "SELECT length($1)", 1, evil, 0);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.value, "20");
    close_pool(&loop, p);
    test_loop_close(&loop);
}

static void test_pipeline_and_prepared(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *p = make_pool(&loop, 1, 16, false, NULL);
    const char *one[] = {"1"};
    const char *two[] = {"2"};
    for (int round = 0; round < 3; round++) {
        /* The same prepared name twice in one pipeline, then again in later
         * rounds when it already exists on the session. */
        pg_stmt_t st[3] = {
            {.sql = "SELECT $1::int * 10", .name = "times10", .nparams = 1, .params = one},
            {.sql = "SELECT $1::int * 10", .name = "times10", .nparams = 1, .params = two},
            {.sql = "SELECT 'last'"},
        };
        result_t r = {0};
        pg_query_t q = {.stmts = st, .nstmts = 3, .cb = on_done, .data = &r};
        assert_int_equal(pg_pool_submit(p, &q), 0);
        test_run_until(&loop, &r.done, 10000);
        assert_int_equal(r.status, 0);
        assert_string_equal(r.values[0], "10");
        assert_string_equal(r.values[1], "20");
        assert_string_equal(r.value, "last");
    }
    pg_pool_stats_t s;
    pg_pool_stats(p, &s);
    assert_int_equal(s.completed, 3);
    assert_int_equal(s.failed, 0);
    close_pool(&loop, p);
    test_loop_close(&loop);
}

static void test_errors_and_atomic_pipeline(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *p = make_pool(&loop, 1, 16, false, NULL);
    result_t r;
    run1(&loop, p, &r, "SELEC 1", 0, NULL, 0);
    assert_int_equal(r.status, UV_EIO);
    assert_string_equal(r.sqlstate, "42601");
    assert_non_null(strstr(r.error, "syntax error"));
    run1(&loop, p, &r, "SELECT 1/0", 0, NULL, 0);
    assert_int_equal(r.status, UV_EIO);
    assert_string_equal(r.sqlstate, "22012");

    run1(&loop, p, &r, "CREATE TEMP TABLE IF NOT EXISTS t_atomic (v int)", 0, NULL, 0);
    assert_int_equal(r.status, 0);
    /* A pipeline is one implicit transaction: the insert is undone. */
    pg_stmt_t st[2] = {{.sql = "INSERT INTO t_atomic VALUES (1)"}, {.sql = "SELECT 1/0"}};
    pg_query_t q = {.stmts = st, .nstmts = 2, .cb = on_done, .data = &r};
    memset(&r, 0, sizeof r);
    assert_int_equal(pg_pool_submit(p, &q), 0);
    test_run_until(&loop, &r.done, 10000);
    assert_int_equal(r.status, UV_EIO);
    run1(&loop, p, &r, "SELECT count(*) FROM t_atomic", 0, NULL, 0);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.value, "0");

    /* Bad submissions are refused at once. */
    pg_query_t bad = {.stmts = st, .nstmts = 0, .cb = on_done};
    assert_int_equal(pg_pool_submit(p, &bad), UV_EINVAL);
    close_pool(&loop, p);
    test_loop_close(&loop);
}

static void test_queue_full(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *p = make_pool(&loop, 1, 2, false, NULL);
    /* Wait for the connection so the first query runs at once. */
    result_t warm;
    run1(&loop, p, &warm, "SELECT 1", 0, NULL, 0);

    pg_stmt_t slow = {.sql = "SELECT pg_sleep(0.3)"};
    pg_stmt_t fast = {.sql = "SELECT 1"};
    result_t r[4] = {0};
    pg_query_t q[4] = {
        {.stmts = &slow, .nstmts = 1, .cb = on_done, .data = &r[0]},
        {.stmts = &fast, .nstmts = 1, .cb = on_done, .data = &r[1]},
        {.stmts = &fast, .nstmts = 1, .cb = on_done, .data = &r[2]},
        {.stmts = &fast, .nstmts = 1, .cb = on_done, .data = &r[3]},
    };
    assert_int_equal(pg_pool_submit(p, &q[0]), 0); /* running */
    assert_int_equal(pg_pool_submit(p, &q[1]), 0); /* queued */
    assert_int_equal(pg_pool_submit(p, &q[2]), 0); /* queued */
    assert_int_equal(pg_pool_submit(p, &q[3]), UV_EBUSY);
    pg_pool_stats_t s;
    pg_pool_stats(p, &s);
    assert_int_equal(s.queued, 2);
    assert_int_equal(s.rejected_busy, 1);
    test_run_until(&loop, &r[2].done, 10000);
    assert_true(r[0].done && r[1].done);
    assert_int_equal(r[0].status, 0);
    assert_int_equal(r[2].status, 0);
    assert_true(pg_pool_is_idle(p));
    close_pool(&loop, p);
    test_loop_close(&loop);
}

static void test_timeout_and_cancel(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *p = make_pool(&loop, 1, 8, false, NULL);
    result_t r;
    uint64_t t0 = uv_now(&loop);
    run1(&loop, p, &r, "SELECT pg_sleep(30)", 0, NULL, 300);
    assert_int_equal(r.status, UV_ETIMEDOUT);
    assert_true(uv_now(&loop) - t0 < 5000);
    /* The session is usable again. */
    run1(&loop, p, &r, "SELECT 'after'", 0, NULL, 0);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.value, "after");

    /* Cancel a running query and a queued one. */
    pg_stmt_t slow = {.sql = "SELECT pg_sleep(30)"};
    pg_stmt_t fast = {.sql = "SELECT 1"};
    result_t a = {0}, b = {0};
    pg_query_t qa = {.stmts = &slow, .nstmts = 1, .cb = on_done, .data = &a};
    pg_query_t qb = {.stmts = &fast, .nstmts = 1, .cb = on_done, .data = &b};
    assert_int_equal(pg_pool_submit(p, &qa), 0);
    assert_int_equal(pg_pool_submit(p, &qb), 0);
    test_run_for(&loop, 100);
    pg_query_cancel(&qb);
    assert_true(b.done);
    assert_int_equal(b.status, UV_ECANCELED);
    pg_query_cancel(&qa);
    test_run_until(&loop, &a.done, 5000);
    assert_int_equal(a.status, UV_ECANCELED);
    run1(&loop, p, &r, "SELECT 'still fine'", 0, NULL, 0);
    assert_int_equal(r.status, 0);
    close_pool(&loop, p);
    test_loop_close(&loop);
}

static void test_read_only(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *p = make_pool(&loop, 1, 8, true, NULL);
    result_t r;
    run1(&loop, p, &r, "CREATE TABLE ro_should_fail (v int)", 0, NULL, 0);
    assert_int_equal(r.status, UV_EIO);
    assert_string_equal(r.sqlstate, "25006"); /* read_only_sql_transaction */
    run1(&loop, p, &r, "SELECT current_setting('default_transaction_read_only')", 0, NULL, 0);
    assert_string_equal(r.value, "on");
    close_pool(&loop, p);
    test_loop_close(&loop);
}

static void test_connection_lost_and_transaction_left_open(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *p = make_pool(&loop, 1, 8, false, NULL);
    result_t r;
    run1(&loop, p, &r, "SELECT pg_backend_pid()", 0, NULL, 0);
    char pid[32];
    strcpy(pid, r.value);
    /* Kill the session from outside while it runs a query. */
    pg_stmt_t slow = {.sql = "SELECT pg_sleep(30)"};
    result_t a = {0};
    pg_query_t qa = {.stmts = &slow, .nstmts = 1, .cb = on_done, .data = &a};
    assert_int_equal(pg_pool_submit(p, &qa), 0);
    test_run_for(&loop, 200);
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%s)", pid);
    test_pg_exec(sql);
    test_run_until(&loop, &a.done, 5000);
    assert_int_equal(a.status, UV_ECONNRESET);
    assert_true(strlen(a.error) > 0);
    /* The pool reconnects by itself. */
    run1(&loop, p, &r, "SELECT pg_backend_pid()", 0, NULL, 0);
    assert_int_equal(r.status, 0);
    assert_string_not_equal(r.value, pid);
    strcpy(pid, r.value);

    /* A BEGIN without COMMIT never leaks into the next query. */
    run1(&loop, p, &r, "BEGIN", 0, NULL, 0);
    assert_int_equal(r.status, 0);
    run1(&loop, p, &r, "SELECT now() = statement_timestamp(), pg_backend_pid()", 0, NULL, 0);
    assert_int_equal(r.status, 0);
    pg_pool_stats_t s;
    pg_pool_stats(p, &s);
    assert_true(s.reconnects >= 2);
    close_pool(&loop, p);
    test_loop_close(&loop);
}

/* keep_transactions: a transaction goes on across queries of a pool of one
 * (a COPY between its statements), is ended by its owner, and with
 * read_only nothing writes outside it once the session was lost. */
static void test_keep_transactions(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    test_pg_exec("DROP TABLE IF EXISTS keep_tx; CREATE TABLE keep_tx (v int)");
    pg_conninfo_t ci;
    test_pg_conninfo(&ci, NULL);
    pg_pool_config_t cfg = {.name = "test",
                            .size = 1,
                            .queue_max = 8,
                            .query_timeout_ms = 10000,
                            .connect_timeout_ms = 3000,
                            .read_only = true,
                            .keep_transactions = true};
    pg_pool_t *p;
    char err[256];
    assert_int_equal(pg_pool_new(&loop, &cfg, &ci, &p, err, sizeof err), 0);
    pg_conninfo_free(&ci);
    pg_pool_t *other = make_pool(&loop, 1, 8, false, NULL);
    result_t r, n;
    run1(&loop, p, &r, "BEGIN READ WRITE", 0, NULL, 0);
    assert_int_equal(r.status, 0);
    run1(&loop, p, &r, "SELECT pg_backend_pid()", 0, NULL, 0);
    char pid[32];
    strcpy(pid, r.value);
    pg_stmt_t copy = {.sql = "COPY keep_tx FROM STDIN", .copy_data = "1\n2\n", .copy_len = 4};
    result_t c = {0};
    pg_query_t qc = {.stmts = &copy, .nstmts = 1, .cb = on_done, .data = &c};
    assert_int_equal(pg_pool_submit(p, &qc), 0);
    test_run_until(&loop, &c.done, 20000);
    assert_int_equal(c.status, 0);
    run1(&loop, other, &n, "SELECT count(*) FROM keep_tx", 0, NULL, 0);
    assert_string_equal(n.value, "0"); /* not yet */
    run1(&loop, p, &r, "COMMIT", 0, NULL, 0);
    assert_int_equal(r.status, 0);
    run1(&loop, other, &n, "SELECT count(*) FROM keep_tx", 0, NULL, 0);
    assert_string_equal(n.value, "2");
    /* A transaction left open, then the session lost: the next COPY lands
     * in a new read-only session and fails instead of committing alone. */
    run1(&loop, p, &r, "BEGIN READ WRITE", 0, NULL, 0);
    run1(&loop, p, &r, "SELECT pg_backend_pid()", 0, NULL, 0);
    strcpy(pid, r.value);
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%s)", pid);
    test_pg_exec(sql);
    test_run_for(&loop, 300);
    memset(&c, 0, sizeof c);
    qc = (pg_query_t){.stmts = &copy, .nstmts = 1, .cb = on_done, .data = &c};
    assert_int_equal(pg_pool_submit(p, &qc), 0);
    test_run_until(&loop, &c.done, 20000);
    assert_int_not_equal(c.status, 0);
    run1(&loop, other, &n, "SELECT count(*) FROM keep_tx", 0, NULL, 0);
    assert_string_equal(n.value, "2");
    close_pool(&loop, other);
    close_pool(&loop, p);
    test_pg_exec("DROP TABLE keep_tx");
    test_loop_close(&loop);
}

static void test_dns_failure_is_async_and_reported(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *p = make_pool(&loop, 1, 8, false, "no-such-host.invalid");
    result_t r;
    run1(&loop, p, &r, "SELECT 1", 0, NULL, 1500);
    assert_int_equal(r.status, UV_ETIMEDOUT);
    if (strstr(r.error, "no-such-host.invalid") == NULL)
        fail_msg("error does not name the host: %s", r.error);
    close_pool(&loop, p);
    test_loop_close(&loop);
}

/* A database that does not exist is not waited for: the query fails at
 * once (not at its 10 s deadline) with the server's message; the pool
 * keeps trying, and serves once the database is there. */
static void test_refused_fails_at_once(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    char name[64];
    snprintf(name, sizeof name, "parley_missing_%d", (int)getpid());
    pg_conninfo_t ci;
    test_pg_conninfo(&ci, name);
    pg_pool_config_t cfg = {.name = "test",
                            .size = 1,
                            .queue_max = 8,
                            .query_timeout_ms = 10000,
                            .connect_timeout_ms = 3000};
    pg_pool_t *p;
    char err[256];
    assert_int_equal(pg_pool_new(&loop, &cfg, &ci, &p, err, sizeof err), 0);
    pg_conninfo_free(&ci);
    result_t r;
    run1(&loop, p, &r, "SELECT 1", 0, NULL, 0);
    assert_int_equal(r.status, UV_EACCES);
    if (strstr(r.error, name) == NULL || strstr(r.error, "does not exist") == NULL)
        fail_msg("not the server's message: %s", r.error);
    assert_string_equal(r.sqlstate, "3D000"); /* not an authorization failure */
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    test_pg_exec(sql);
    for (int i = 0; i < 100; i++) { /* reconnects with backoff */
        run1(&loop, p, &r, "SELECT 1", 0, NULL, 0);
        if (r.status == 0)
            break;
        test_run_for(&loop, 100);
    }
    assert_int_equal(r.status, 0);
    close_pool(&loop, p);
    snprintf(sql, sizeof sql, "DROP DATABASE %s", name);
    test_pg_exec(sql);
    test_loop_close(&loop);
}

/* statement_timeout: the server stops a statement by itself (a lost
 * cancel request cannot leave it running). */
static void test_statement_timeout(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_config_t cfg = {.name = "test",
                            .size = 1,
                            .queue_max = 8,
                            .query_timeout_ms = 20000,
                            .connect_timeout_ms = 3000,
                            .statement_timeout_ms = 300};
    pg_pool_t *p = pool_of(&loop, &cfg);
    result_t r;
    run1(&loop, p, &r, "SELECT pg_sleep(10)", 0, NULL, 0);
    assert_int_equal(r.status, UV_EIO);
    assert_string_equal(r.sqlstate, "57014");
    if (strstr(r.error, "statement timeout") == NULL)
        fail_msg("not the server's statement timeout: %s", r.error);
    close_pool(&loop, p);
    test_loop_close(&loop);
}

/* A query that ignores its cancel (pg_trgm's similarity over megabytes
 * checks for interrupts only at its end): its connection is dropped after
 * the grace period, and the replacement takes no work while the old
 * backend still runs, so runaway backends never outnumber the pool. */
static void test_ignored_cancel_holds_the_slot(void **state)
{
    (void)state;
    test_pg_exec("CREATE EXTENSION IF NOT EXISTS pg_trgm");
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *p = make_pool(&loop, 1, 8, false, NULL);
    result_t r1, r2;
    pg_stmt_t slow = {.sql = "SELECT similarity(repeat('ab cd ef ', 2000000), "
                             "repeat('ab cd eg ', 2000000))"};
    pg_query_t q1 = {.stmts = &slow, .nstmts = 1, .cb = on_done, .data = &r1, .timeout_ms = 200};
    memset(&r1, 0, sizeof r1);
    assert_int_equal(pg_pool_submit(p, &q1), 0);
    test_run_until(&loop, &r1.done, 20000);
    assert_int_equal(r1.status, UV_ETIMEDOUT);
    /* The next query runs only once the runaway backend is gone. */
    run1(&loop, p, &r2,
         "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT similarity(repeat%' "
         "AND pid <> pg_backend_pid()",
         0, NULL, 30000);
    assert_int_equal(r2.status, 0);
    assert_string_equal(r2.value, "0");
    close_pool(&loop, p);
    test_loop_close(&loop);
}

static void test_close_fails_queued(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *p = make_pool(&loop, 1, 8, false, NULL);
    pg_stmt_t slow = {.sql = "SELECT pg_sleep(30)"};
    result_t r[3] = {0};
    pg_query_t q[3];
    for (int i = 0; i < 3; i++) {
        q[i] = (pg_query_t){.stmts = &slow, .nstmts = 1, .cb = on_done, .data = &r[i]};
        assert_int_equal(pg_pool_submit(p, &q[i]), 0);
    }
    test_run_for(&loop, 200);
    closed = false;
    pg_pool_close(p, on_closed);
    for (int i = 0; i < 3; i++) {
        assert_true(r[i].done);
        assert_int_equal(r[i].status, UV_ECANCELED);
    }
    test_run_until(&loop, &closed, 5000);
    test_loop_close(&loop);
}

/* COPY FROM STDIN: several MiB (more than the socket takes at once), a
 * row that does not parse (the error names the line, nothing is kept), and
 * COPY refused beside other statements. */
static void test_copy_in(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *p = make_pool(&loop, 1, 16, false, NULL);
    result_t r;
    char table[64];
    snprintf(table, sizeof table, "copy_test_%d", (int)getpid());
    char sql[256];
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s; CREATE TABLE %s (id int, t text)", table,
             table);
    test_pg_exec(sql);
    size_t rows = 100000, cap = rows * 80, len = 0;
    char *data = malloc(cap);
    for (size_t i = 0; i < rows; i++)
        len +=
            (size_t)snprintf(data + len, cap - len,
                             "%zu\tline %zu with a tab\\tand UTF-8 \xc3\xa9\xe2\x9c\x93\n", i, i);
    snprintf(sql, sizeof sql, "COPY %s (id, t) FROM STDIN", table);
    pg_stmt_t st = {.sql = sql, .copy_data = data, .copy_len = len};
    pg_query_t q = {.stmts = &st, .nstmts = 1, .cb = on_done, .data = &r};
    memset(&r, 0, sizeof r);
    assert_int_equal(pg_pool_submit(p, &q), 0);
    test_run_until(&loop, &r.done, 30000);
    assert_int_equal(r.status, 0);
    char count_sql[128];
    snprintf(count_sql, sizeof count_sql, "SELECT count(*), max(id) FROM %s", table);
    run1(&loop, p, &r, count_sql, 0, NULL, 0);
    assert_string_equal(r.value, "100000");
    /* A bad row fails the whole COPY. */
    const char *bad = "1\tok\nnot-a-number\tx\n";
    pg_stmt_t st2 = {.sql = sql, .copy_data = bad, .copy_len = strlen(bad)};
    pg_query_t q2 = {.stmts = &st2, .nstmts = 1, .cb = on_done, .data = &r};
    memset(&r, 0, sizeof r);
    assert_int_equal(pg_pool_submit(p, &q2), 0);
    test_run_until(&loop, &r.done, 30000);
    assert_int_equal(r.status, UV_EIO);
    assert_string_equal(r.sqlstate, "22P02");
    run1(&loop, p, &r, count_sql, 0, NULL, 0);
    assert_string_equal(r.value, "100000");
    /* COPY must run alone. */
    pg_stmt_t two[2] = {{.sql = sql, .copy_data = bad, .copy_len = 1}, {.sql = "SELECT 1"}};
    pg_query_t q3 = {.stmts = two, .nstmts = 2, .cb = on_done, .data = &r};
    assert_int_equal(pg_pool_submit(p, &q3), UV_EINVAL);
    free(data);
    snprintf(sql, sizeof sql, "DROP TABLE %s", table);
    test_pg_exec(sql);
    close_pool(&loop, p);
    test_loop_close(&loop);
}

static void on_call(void *data, int status, const char *value, const char *sqlstate,
                    const char *error)
{
    result_t *r = data;
    r->done = true;
    r->status = status;
    snprintf(r->value, sizeof r->value, "%s", value ? value : "(null)");
    snprintf(r->sqlstate, sizeof r->sqlstate, "%s", sqlstate);
    snprintf(r->error, sizeof r->error, "%s", error ? error : "");
}

static void test_call(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *p = make_pool(&loop, 1, 4, false, NULL);
    result_t r = {0};
    /* The parameters are copied: the caller's buffer may change at once. */
    char a[8] = "20", *b = strdup("22");
    const char *params[] = {a, b, NULL};
    assert_int_equal(pg_pool_call(p, "t_call",
                                  "SELECT ($1::int + $2::int)::text || coalesce($3, '!')", 3,
                                  params, on_call, &r, NULL),
                     0);
    strcpy(a, "xx");
    free(b);
    assert_false(r.done);
    test_run_until(&loop, &r.done, 5000);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.value, "42!");
    /* No row and SQL NULL are a NULL value. */
    memset(&r, 0, sizeof r);
    assert_int_equal(pg_pool_call(p, NULL, "SELECT 1 WHERE false", 0, NULL, on_call, &r, NULL), 0);
    test_run_until(&loop, &r.done, 5000);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.value, "(null)");
    /* An error comes with its SQLSTATE and message. */
    memset(&r, 0, sizeof r);
    assert_int_equal(pg_pool_call(p, NULL, "SELECT 1/0", 0, NULL, on_call, &r, NULL), 0);
    test_run_until(&loop, &r.done, 5000);
    assert_int_equal(r.status, UV_EIO);
    assert_string_equal(r.sqlstate, "22012");
    assert_non_null(strstr(r.error, "division by zero"));
    /* Cancelled while it runs. */
    memset(&r, 0, sizeof r);
    pg_call_t *c = NULL;
    assert_int_equal(pg_pool_call(p, NULL, "SELECT pg_sleep(30)", 0, NULL, on_call, &r, &c), 0);
    test_run_for(&loop, 100);
    pg_call_cancel(c);
    test_run_until(&loop, &r.done, 5000);
    assert_int_equal(r.status, UV_ECANCELED);
    close_pool(&loop, p);
    test_loop_close(&loop);
}

/* The order calls were answered in. */
static int answered;
typedef struct {
    result_t r;
    int order;
} ordered_t;

static void on_ordered(void *data, int status, const char *value, const char *sqlstate,
                       const char *error)
{
    ordered_t *o = data;
    on_call(&o->r, status, value, sqlstate, error);
    o->order = ++answered;
}

/* Queries of the limited class (searches) hold at most limited_max
 * connections: with two connections and a cap of one, a read submitted
 * behind two slow limited queries runs at once on the other connection
 * (the second limited query waits for the first), and the second limited
 * query runs when the first is done. */
static void test_limited_class(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_config_t cfg = {.name = "test",
                            .size = 2,
                            .queue_max = 8,
                            .query_timeout_ms = 10000,
                            .connect_timeout_ms = 3000,
                            .limited_max = 1};
    pg_pool_t *p = pool_of(&loop, &cfg);
    answered = 0;
    ordered_t s1 = {0}, s2 = {0}, other = {0};
    const char *slow = "SELECT pg_sleep(0.5)::text || 'searched'";
    assert_int_equal(pg_pool_call_limited(p, NULL, slow, 0, NULL, on_ordered, &s1, NULL), 0);
    assert_int_equal(pg_pool_call_limited(p, NULL, slow, 0, NULL, on_ordered, &s2, NULL), 0);
    assert_int_equal(pg_pool_call(p, NULL, "SELECT 'read'", 0, NULL, on_ordered, &other, NULL), 0);
    test_run_until(&loop, &s2.r.done, 10000);
    assert_true(s1.r.done && other.r.done);
    assert_int_equal(other.r.status, 0);
    assert_string_equal(other.r.value, "read");
    assert_string_equal(s2.r.value, "searched");
    assert_int_equal(other.order, 1); /* not behind the searches */
    assert_int_equal(s1.order, 2);
    assert_int_equal(s2.order, 3);
    close_pool(&loop, p);
    test_loop_close(&loop);
}

/* Waiting queries of both classes run oldest first (each class waits in
 * its own queue): on one connection busy with a slow read, a search, a
 * read, a search and a read submitted in turn run in that order; at close,
 * those still waiting in either queue fail. */
static void test_classes_in_order(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_config_t cfg = {.name = "test",
                            .size = 1,
                            .queue_max = 16,
                            .query_timeout_ms = 10000,
                            .connect_timeout_ms = 3000,
                            .limited_max = 1};
    pg_pool_t *p = pool_of(&loop, &cfg);
    answered = 0;
    ordered_t first = {0}, o[4], late[2];
    memset(o, 0, sizeof o);
    memset(late, 0, sizeof late);
    assert_int_equal(pg_pool_call(p, NULL, "SELECT pg_sleep(0.3)::text || 'first'", 0, NULL,
                                  on_ordered, &first, NULL),
                     0);
    for (int i = 0; i < 4; i++) {
        int rc = i % 2 == 0
                     ? pg_pool_call_limited(p, NULL, "SELECT 'searched'", 0, NULL, on_ordered,
                                            &o[i], NULL)
                     : pg_pool_call(p, NULL, "SELECT 'read'", 0, NULL, on_ordered, &o[i], NULL);
        assert_int_equal(rc, 0);
    }
    test_run_until(&loop, &o[3].r.done, 10000);
    assert_int_equal(first.order, 1);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(o[i].r.status, 0);
        assert_string_equal(o[i].r.value, i % 2 == 0 ? "searched" : "read");
        assert_int_equal(o[i].order, i + 2);
    }
    /* Left waiting behind a slow read, one of each class: failed at close. */
    ordered_t busy = {0};
    assert_int_equal(
        pg_pool_call(p, NULL, "SELECT pg_sleep(30)::text", 0, NULL, on_ordered, &busy, NULL), 0);
    assert_int_equal(
        pg_pool_call_limited(p, NULL, "SELECT 'x'", 0, NULL, on_ordered, &late[0], NULL), 0);
    assert_int_equal(pg_pool_call(p, NULL, "SELECT 'y'", 0, NULL, on_ordered, &late[1], NULL), 0);
    test_run_for(&loop, 100);
    closed = false;
    pg_pool_close(p, on_closed);
    test_run_until(&loop, &closed, 5000);
    for (int i = 0; i < 2; i++) {
        assert_true(late[i].r.done);
        assert_int_equal(late[i].r.status, UV_ECANCELED);
    }
    test_loop_close(&loop);
}

/* A query of the limited class waiting past its deadline fails as one of
 * no class does (its deadline well before the end of the query holding the
 * connection: the two never race). */
static void test_limited_deadline(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_config_t cfg = {.name = "test",
                            .size = 1,
                            .queue_max = 4,
                            .query_timeout_ms = 10000,
                            .connect_timeout_ms = 3000,
                            .limited_max = 1};
    pg_pool_t *p = pool_of(&loop, &cfg);
    ordered_t busy = {0};
    assert_int_equal(
        pg_pool_call(p, NULL, "SELECT pg_sleep(1.5)::text", 0, NULL, on_ordered, &busy, NULL), 0);
    pg_stmt_t st = {.sql = "SELECT 'x'"};
    result_t r = {0};
    pg_query_t q = {
        .stmts = &st, .nstmts = 1, .timeout_ms = 300, .limited = true, .cb = on_done, .data = &r};
    assert_int_equal(pg_pool_submit(p, &q), 0);
    test_run_until(&loop, &r.done, 5000);
    assert_int_equal(r.status, UV_ETIMEDOUT);
    assert_non_null(strstr(r.error, "waiting for a database connection"));
    assert_false(busy.r.done);
    test_run_until(&loop, &busy.r.done, 5000);
    assert_int_equal(busy.r.status, 0);
    close_pool(&loop, p);
    test_loop_close(&loop);
}

/* Submits a limited call of share key share through pg_pool_call_opts. */
static void call_shared(pg_pool_t *p, uint64_t share, const char *sql, ordered_t *o)
{
    pg_call_opts_t opts = {.limited = true, .share = share};
    assert_int_equal(pg_pool_call_opts(p, &opts, NULL, sql, 0, NULL, on_ordered, o, NULL), 0);
}

/* Limited queries wait round-robin between share keys: with one limited
 * slot, share A submits five and then share B one; B's runs as soon as
 * A's running and next ones are done, before A's later ones, which keep
 * their own order. */
static void test_limited_fair_between_shares(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_config_t cfg = {.name = "test",
                            .size = 2,
                            .queue_max = 16,
                            .query_timeout_ms = 10000,
                            .connect_timeout_ms = 3000,
                            .limited_max = 1};
    pg_pool_t *p = pool_of(&loop, &cfg);
    ordered_t warm = {0}; /* connected: A's first runs as it comes */
    assert_int_equal(pg_pool_call(p, NULL, "SELECT 1", 0, NULL, on_ordered, &warm, NULL), 0);
    test_run_until(&loop, &warm.r.done, 5000);
    answered = 0;
    ordered_t a[5], b = {0};
    memset(a, 0, sizeof a);
    for (int i = 0; i < 5; i++)
        call_shared(p, 0xA, "SELECT pg_sleep(0.1)::text || 'a'", &a[i]);
    call_shared(p, 0xB, "SELECT 'b'", &b);
    test_run_until(&loop, &a[4].r.done, 10000);
    assert_true(b.r.done);
    assert_string_equal(b.r.value, "b");
    for (int i = 0; i < 5; i++)
        assert_string_equal(a[i].r.value, "a");
    assert_int_equal(a[0].order, 1);
    assert_int_equal(a[1].order, 2);
    assert_int_equal(b.order, 3); /* not sixth */
    assert_int_equal(a[2].order, 4);
    assert_int_equal(a[3].order, 5);
    assert_int_equal(a[4].order, 6);
    close_pool(&loop, p);
    test_loop_close(&loop);
}

/* One share key holds at most limited_share_max limited slots: with two
 * slots and a cap of one a share, share A's second slow query waits while
 * share B's runs on the slot kept for others. */
static void test_limited_share_cap(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_config_t cfg = {.name = "test",
                            .size = 3,
                            .queue_max = 16,
                            .query_timeout_ms = 10000,
                            .connect_timeout_ms = 3000,
                            .limited_max = 2,
                            .limited_share_max = 1};
    pg_pool_t *p = pool_of(&loop, &cfg);
    answered = 0;
    ordered_t a[2], b = {0};
    memset(a, 0, sizeof a);
    call_shared(p, 7, "SELECT pg_sleep(0.6)::text || 'a'", &a[0]);
    call_shared(p, 7, "SELECT pg_sleep(0.6)::text || 'a'", &a[1]);
    test_run_for(&loop, 100);
    call_shared(p, 8, "SELECT 'b'", &b);
    test_run_until(&loop, &a[1].r.done, 10000);
    assert_int_equal(b.r.status, 0);
    assert_int_equal(b.order, 1); /* the slot A could not take */
    assert_int_equal(a[0].order, 2);
    assert_int_equal(a[1].order, 3);
    close_pool(&loop, p);
    test_loop_close(&loop);
}

/* A query's run_timeout_ms counts from when it holds a connection: one
 * that waited longer than that behind a slow read still runs, and one that
 * runs past it is cancelled and answered UV_ETIMEDOUT with a message
 * naming the limit (pg_query_t.ran_out set). */
static void test_run_timeout(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_config_t cfg = {.name = "test",
                            .size = 1,
                            .queue_max = 4,
                            .query_timeout_ms = 10000,
                            .connect_timeout_ms = 3000,
                            .limited_max = 1};
    pg_pool_t *p = pool_of(&loop, &cfg);
    answered = 0;
    ordered_t busy = {0}, waited = {0}, slow = {0};
    assert_int_equal(pg_pool_call(p, NULL, "SELECT pg_sleep(0.6)::text || 'busy'", 0, NULL,
                                  on_ordered, &busy, NULL),
                     0);
    pg_call_opts_t opts = {.limited = true, .run_timeout_ms = 400};
    assert_int_equal(
        pg_pool_call_opts(p, &opts, NULL, "SELECT 'waited'", 0, NULL, on_ordered, &waited, NULL),
        0);
    test_run_until(&loop, &waited.r.done, 5000);
    assert_int_equal(waited.r.status, 0);
    assert_string_equal(waited.r.value, "waited");
    uint64_t t0 = uv_now(&loop);
    assert_int_equal(pg_pool_call_opts(p, &opts, NULL, "SELECT pg_sleep(20)::text", 0, NULL,
                                       on_ordered, &slow, NULL),
                     0);
    test_run_until(&loop, &slow.r.done, 5000);
    assert_int_equal(slow.r.status, UV_ETIMEDOUT);
    assert_non_null(strstr(slow.r.error, "time limit of 400 ms"));
    assert_true(uv_now(&loop) - t0 < 3000); /* not the pool's 10 s */
    /* The connection serves the next query. */
    ordered_t after = {0};
    assert_int_equal(pg_pool_call(p, NULL, "SELECT 'after'", 0, NULL, on_ordered, &after, NULL), 0);
    test_run_until(&loop, &after.r.done, 5000);
    assert_string_equal(after.r.value, "after");
    close_pool(&loop, p);
    test_loop_close(&loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_pipeline_and_prepared),
        cmocka_unit_test(test_errors_and_atomic_pipeline),
        cmocka_unit_test(test_queue_full),
        cmocka_unit_test(test_timeout_and_cancel),
        cmocka_unit_test(test_read_only),
        cmocka_unit_test(test_connection_lost_and_transaction_left_open),
        cmocka_unit_test(test_keep_transactions),
        cmocka_unit_test(test_dns_failure_is_async_and_reported),
        cmocka_unit_test(test_refused_fails_at_once),
        cmocka_unit_test(test_statement_timeout),
        cmocka_unit_test(test_ignored_cancel_holds_the_slot),
        cmocka_unit_test(test_close_fails_queued),
        cmocka_unit_test(test_copy_in),
        cmocka_unit_test(test_call),
        cmocka_unit_test(test_limited_class),
        cmocka_unit_test(test_classes_in_order),
        cmocka_unit_test(test_limited_deadline),
        cmocka_unit_test(test_limited_fair_between_shares),
        cmocka_unit_test(test_limited_share_cap),
        cmocka_unit_test(test_run_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
