/* Tests for sync/jobs against a fresh database with the real schema: the
 * runner claims only its own (namespaced) classes, keeps each class within
 * its concurrency, finishes jobs idle,
 * retries with backoff until the attempts run out, takes over a job whose
 * daemon's lease expired, leaves a job cancelled while it ran cancelled,
 * and closes with its loop clean. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "sync/jobs.h"
#include "testutil.h"

#define HELD_MAX 16

static uv_loop_t loop;
static pg_pool_t *pool;
static sync_runner_t *runner;

/* The executors: "telegram.test_hold" jobs are held until the test finishes them;
 * "test.fail" jobs fail at once (retry). */
static sync_job_t *held[HELD_MAX];
static int nheld;
static int running_max;
static int media_runs;

static void exec_hold(sync_job_t *job, void *ctx)
{
    (void)ctx;
    assert_true(nheld < HELD_MAX);
    held[nheld++] = job;
    int r = sync_runner_running(runner);
    if (r > running_max)
        running_max = r;
}

static void exec_fail(sync_job_t *job, void *ctx)
{
    (void)ctx;
    media_runs++;
    sync_job_finish(job, SYNC_RETRY, "upstream unavailable", 0, 0);
}

typedef struct {
    bool done;
    char value[256];
} sql_t;

static void on_sql(pg_query_t *q, int status)
{
    sql_t *s = q->data;
    if (status != 0)
        fail_msg("SQL failed: %s", q->error);
    PGresult *r = q->results[q->nstmts - 1];
    snprintf(s->value, sizeof s->value, "%s",
             r && PQntuples(r) > 0 && PQnfields(r) > 0 ? PQgetvalue(r, 0, 0) : "");
    pg_query_release(q);
    s->done = true;
}

/* Runs text; returns the first value of its result (static buffer). */
static const char *sql(const char *text)
{
    static sql_t s;
    memset(&s, 0, sizeof s);
    pg_stmt_t st = {.sql = text};
    pg_query_t q = {.stmts = &st, .nstmts = 1, .cb = on_sql, .data = &s};
    assert_int_equal(pg_pool_submit(pool, &q), 0);
    test_run_until(&loop, &s.done, 20000);
    return s.value;
}

/* Runs the loop until the runner has n jobs held, or fails. */
static void wait_held(int n)
{
    for (int i = 0; i < 200 && nheld < n; i++)
        test_run_for(&loop, 50);
    assert_int_equal(nheld, n);
}

/* Finishes the held job at index i and waits until it is recorded. */
static void finish_held(int i, sync_outcome_t outcome)
{
    sync_job_t *job = held[i];
    memmove(&held[i], &held[i + 1], (size_t)(nheld - i - 1) * sizeof held[0]);
    nheld--;
    int before = sync_runner_running(runner);
    sync_job_finish(job, outcome, NULL, 3, 0);
    for (int k = 0; k < 200 && sync_runner_running(runner) >= before; k++)
        test_run_for(&loop, 10);
}

static int setup(void **state)
{
    (void)state;
    uv_loop_init(&loop);
    test_pg_migrated_pool(&loop, 3, &pool);
    return 0;
}

static bool runner_closed, pool_closed;
static void on_runner_closed(void *data)
{
    (void)data;
    runner_closed = true;
}
static void on_pool_closed(pg_pool_t *p)
{
    (void)p;
    pool_closed = true;
}

static int teardown(void **state)
{
    (void)state;
    if (runner) {
        while (nheld > 0)
            finish_held(0, SYNC_IDLE);
        sync_runner_close(runner, on_runner_closed, NULL);
        test_run_until(&loop, &runner_closed, 10000);
    }
    pg_pool_close(pool, on_pool_closed);
    test_run_until(&loop, &pool_closed, 5000);
    test_loop_close(&loop);
    return 0;
}

static void start_runner(void)
{
    if (runner)
        return;
    sync_class_t classes[] = {
        {.name = "telegram.test_hold", .concurrency = 2, .exec = exec_hold},
        {.name = "test.fail", .concurrency = 1, .exec = exec_fail},
    };
    assert_int_equal(sync_runner_start(&loop, pool, classes, 2, NULL, &runner), 0);
}

static void test_concurrency_and_idle(void **state)
{
    (void)state;
    sql("INSERT INTO sync_jobs (class, channel) SELECT 'telegram.test_hold', 'c' || g "
        "FROM generate_series(1, 5) g");
    /* Another connector's job of a class with the same last part. */
    sql("INSERT INTO sync_jobs (class, channel) VALUES ('other.hold', 'not-mine')");
    start_runner();
    wait_held(2);
    test_run_for(&loop, 1500); /* more ticks: still no room */
    assert_int_equal(nheld, 2);
    assert_string_equal(sql("SELECT count(*) FROM sync_jobs WHERE status = 'in_progress' AND "
                            "lease_owner IS NOT NULL AND lease_expires_at > now()"),
                        "2");
    for (int done = 0; done < 5; done++) {
        wait_held(done < 3 ? 2 : 5 - done);
        finish_held(0, SYNC_IDLE);
        sync_runner_kick(runner);
    }
    assert_int_equal(running_max, 2);
    assert_string_equal(sql("SELECT string_agg(status || ':' || fetched || ':' || "
                            "(lease_owner IS NULL), ',' ORDER BY id) FROM sync_jobs "
                            "WHERE class = 'telegram.test_hold'"),
                        "idle:3:true,idle:3:true,idle:3:true,idle:3:true,idle:3:true");
    assert_string_equal(sql("SELECT status || ':' || attempts FROM sync_jobs WHERE class = "
                            "'other.hold'"),
                        "pending:0");
}

static void test_retry_then_error(void **state)
{
    (void)state;
    start_runner();
    sql("INSERT INTO sync_jobs (class, channel) VALUES ('test.fail', 'r')");
    sync_runner_kick(runner);
    for (int i = 0; i < 200 && media_runs < 1; i++)
        test_run_for(&loop, 20);
    test_run_for(&loop, 200);
    assert_string_equal(sql("SELECT status || ':' || attempts || ':' || (next_attempt_at > now()) "
                            "|| ':' || error FROM sync_jobs WHERE channel = 'r'"),
                        "pending:1:true:upstream unavailable");
    /* The last attempt: due now, and it fails for good. */
    sql("UPDATE sync_jobs SET attempts = 4, next_attempt_at = now() WHERE channel = 'r'");
    sync_runner_kick(runner);
    for (int i = 0; i < 200 && media_runs < 2; i++)
        test_run_for(&loop, 20);
    test_run_for(&loop, 200);
    assert_string_equal(sql("SELECT status || ':' || attempts FROM sync_jobs WHERE channel = 'r'"),
                        "error:5");
}

static void test_takeover(void **state)
{
    (void)state;
    start_runner();
    sql("INSERT INTO sync_jobs (class, channel, status, lease_owner, lease_expires_at) VALUES "
        "('telegram.test_hold', 'orphan', 'in_progress', 'dead-host:1', now() - interval '1 "
        "second')");
    sync_runner_kick(runner);
    wait_held(1);
    assert_string_equal(json_string_value(json_object_get(held[0]->row, "channel")), "orphan");
    assert_string_not_equal(sql("SELECT lease_owner FROM sync_jobs WHERE channel = 'orphan'"),
                            "dead-host:1");
    finish_held(0, SYNC_IDLE);
    assert_string_equal(sql("SELECT status FROM sync_jobs WHERE channel = 'orphan'"), "idle");
}

static void test_cancel_while_running(void **state)
{
    (void)state;
    start_runner();
    sql("INSERT INTO sync_jobs (class, channel) VALUES ('telegram.test_hold', 'cancel-me')");
    sync_runner_kick(runner);
    wait_held(1);
    char body[160];
    snprintf(body, sizeof body,
             "SELECT parley_tg_sync_jobs_cancel('{\"jobId\": %lld}', '{}')::text",
             (long long)json_integer_value(json_object_get(held[0]->row, "id")));
    json_error_t je;
    json_t *r = json_loads(sql(body), 0, &je);
    assert_int_equal(json_integer_value(json_object_get(r, "canceled")), 1);
    json_decref(r);
    /* The executor ends later, asking for a retry: the job stays cancelled. */
    finish_held(0, SYNC_RETRY);
    test_run_for(&loop, 100);
    assert_string_equal(sql("SELECT status || ':' || error FROM sync_jobs WHERE channel = "
                            "'cancel-me'"),
                        "idle:canceled");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrency_and_idle),
        cmocka_unit_test(test_retry_then_error),
        cmocka_unit_test(test_takeover),
        cmocka_unit_test(test_cancel_while_running),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
