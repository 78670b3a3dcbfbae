/* The pool while its PostgreSQL is stopped (pg_ctl stop -m fast) and
 * started again: in-flight and new queries fail with a clear error while it
 * is down, and later queries succeed once it is back, without a restart of
 * the pool. Uses a cluster of its own. */
#include <stdlib.h>
#include <string.h>

#include "db/pool.h"
#include "testutil.h"

typedef struct {
    bool done;
    int status;
    char error[PG_QUERY_ERROR_MAX];
} result_t;

static void on_done(pg_query_t *q, int status)
{
    result_t *r = q->data;
    r->done = true;
    r->status = status;
    strcpy(r->error, q->error);
    pg_query_release(q);
}

static bool closed;
static void on_closed(pg_pool_t *p)
{
    (void)p;
    closed = true;
}

static void run1(uv_loop_t *loop, pg_pool_t *p, result_t *r, const char *sql, uint32_t timeout)
{
    pg_stmt_t st = {.sql = sql};
    pg_query_t q = {.stmts = &st, .nstmts = 1, .cb = on_done, .data = r, .timeout_ms = timeout};
    memset(r, 0, sizeof *r);
    assert_int_equal(pg_pool_submit(p, &q), 0);
    test_run_until(loop, &r->done, 30000);
}

static void test_restart(void **state)
{
    (void)state;
    const char *harness = getenv("PARLEY_HARNESS");
    if (harness == NULL)
        skip();
    char *dir = test_tmpdir("parley-restart");
    assert_int_equal(test_sh("%s/pg_cluster.sh start %s >/dev/null", harness, dir), 0);

    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_conninfo_t ci;
    char err[256], info[256];
    snprintf(info, sizeof info, "host=%s port=5432 user=parley dbname=postgres", dir);
    assert_int_equal(pg_conninfo_parse(&ci, info, err, sizeof err), 0);
    pg_pool_config_t cfg = {.name = "restart",
                            .size = 2,
                            .queue_max = 16,
                            .query_timeout_ms = 10000,
                            .connect_timeout_ms = 2000};
    pg_pool_t *p;
    assert_int_equal(pg_pool_new(&loop, &cfg, &ci, &p, err, sizeof err), 0);
    pg_conninfo_free(&ci);

    result_t r;
    run1(&loop, p, &r, "SELECT 1", 0);
    assert_int_equal(r.status, 0);

    /* A query running while the server stops fails with a clear error. */
    pg_stmt_t slow = {.sql = "SELECT pg_sleep(20)"};
    result_t a = {0};
    pg_query_t qa = {.stmts = &slow, .nstmts = 1, .cb = on_done, .data = &a};
    assert_int_equal(pg_pool_submit(p, &qa), 0);
    test_run_for(&loop, 200);
    assert_int_equal(test_sh("%s/pg_cluster.sh stop %s", harness, dir), 0);
    test_run_until(&loop, &a.done, 10000);
    assert_true(a.status == UV_ECONNRESET || a.status == UV_EIO);
    assert_true(strlen(a.error) > 0);

    /* While it is down, a query waits until its deadline and says why. */
    run1(&loop, p, &r, "SELECT 1", 1000);
    assert_int_equal(r.status, UV_ETIMEDOUT);
    assert_non_null(strstr(r.error, "waiting for a database connection"));

    pg_pool_stats_t s;
    pg_pool_stats(p, &s);
    assert_int_equal(s.conns_ready + s.conns_busy, 0);

    assert_int_equal(test_sh("%s/pg_cluster.sh start %s >/dev/null", harness, dir), 0);
    /* Back: the pool reconnects on its own (backoff is at most 5 s). */
    run1(&loop, p, &r, "SELECT 2", 15000);
    assert_int_equal(r.status, 0);
    pg_pool_stats(p, &s);
    assert_true(s.reconnects >= 1);

    closed = false;
    pg_pool_close(p, on_closed);
    test_run_until(&loop, &closed, 5000);
    test_loop_close(&loop);
    assert_int_equal(test_sh("%s/pg_cluster.sh destroy %s", harness, dir), 0);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_restart)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
