/* Tests for db/index_build against a fresh database with the real schema
 * (each test its own): a declared build is built, the index it replaces
 * dropped, the row marked done, and a second start has nothing to do; a
 * build that fails (a unique index over duplicate values) leaves an
 * invalid index, is tried again, and once the data is fixed the leftover
 * is dropped and the index built; a slow build (an index expression that
 * sleeps) logs its progress and lets writes through while it runs (it is
 * concurrent); of two builders one builds while the other waits, and when
 * the builder stops mid-build the other takes over; the loop closes
 * cleanly. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/index_build.h"
#include "testutil.h"

static uv_loop_t loop;
static pg_pool_t *pool;
static pg_conninfo_t ci;

typedef struct {
    bool done;
    char value[512];
} sql_answer_t;

static void on_value(void *data, int status, const char *value, const char *sqlstate,
                     const char *error)
{
    (void)sqlstate;
    sql_answer_t *a = data;
    if (status != 0)
        fail_msg("SQL failed: %s", error);
    snprintf(a->value, sizeof a->value, "%s", value ? value : "");
    a->done = true;
}

/* The first column of the first row of sql, as text. */
static const char *value_of(const char *sql)
{
    static sql_answer_t a;
    memset(&a, 0, sizeof a);
    assert_int_equal(pg_pool_call(pool, NULL, sql, 0, NULL, on_value, &a, NULL), 0);
    test_run_until(&loop, &a.done, 20000);
    return a.value;
}

/* Runs the loop until sql answers want (20 s at most). */
static void wait_for(const char *sql, const char *want)
{
    uint64_t deadline = uv_now(&loop) + 20000;
    while (strcmp(value_of(sql), want) != 0) {
        assert_true(uv_now(&loop) < deadline);
        test_run_for(&loop, 20);
    }
}

typedef struct {
    bool called;
    int status;
} build_answer_t;

static void on_built(index_build_t *b, int status)
{
    build_answer_t *a = index_build_data(b);
    a->called = true;
    a->status = status;
}

static index_build_t *start(build_answer_t *a, uint32_t progress_ms, uint32_t retry_ms)
{
    char err[256];
    index_build_t *b = NULL;
    memset(a, 0, sizeof *a);
    index_build_opts_t o = {
        .connect_timeout_ms = 5000, .progress_ms = progress_ms, .retry_ms = retry_ms};
    assert_int_equal(index_build_start(&loop, &ci, pool, &o, on_built, a, &b, err, sizeof err), 0);
    return b;
}

/* Stops b, runs the loop until it is idle, frees it; its stats into st. */
static void finish(index_build_t *b, index_build_stats_t *st)
{
    index_build_stop(b);
    uint64_t deadline = uv_now(&loop) + 20000;
    while (!index_build_idle(b)) {
        assert_true(uv_now(&loop) < deadline);
        test_run_for(&loop, 10);
    }
    index_build_stats(b, st);
    index_build_free(b);
}

/* A table of n rows with an index expression that sleeps 1 ms a row (2 ms
 * a row to build: the expression is computed twice). */
static void slow_table(int n)
{
    char sql[512];
    value_of("CREATE FUNCTION ib_slow(i integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS "
             "$$ BEGIN PERFORM pg_sleep(0.001); RETURN i; END $$");
    value_of("CREATE TABLE ib_slow (a integer)");
    snprintf(sql, sizeof sql, "INSERT INTO ib_slow SELECT i FROM generate_series(1, %d) i", n);
    value_of(sql);
    value_of("SELECT parley_index_build('ib_slow_idx', 'CREATE INDEX CONCURRENTLY IF NOT EXISTS "
             "ib_slow_idx ON ib_slow (ib_slow(a))')");
}

static const char sql_building[] =
    "SELECT count(*) FROM pg_stat_progress_create_index WHERE relid = 'ib_slow'::regclass";
static const char sql_valid[] = "SELECT coalesce((SELECT indisvalid FROM pg_index WHERE "
                                "indexrelid = to_regclass('ib_slow_idx')), false)";

static int setup(void **state)
{
    (void)state;
    uv_loop_init(&loop);
    char db[64];
    test_pg_migrated_db(&loop, 3, &pool, db, sizeof db);
    test_pg_conninfo(&ci, db);
    /* The schema's own builds (done when the database was migrated) are
     * not the tests': each test sees its own alone. */
    value_of("DELETE FROM schema_index_builds");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    pg_conninfo_free(&ci);
    test_pg_pool_close(&loop, pool);
    test_loop_close(&loop);
    return 0;
}

static void test_builds_and_replaces(void **state)
{
    (void)state;
    value_of("CREATE TABLE ib_t (a integer, b integer)");
    value_of("INSERT INTO ib_t SELECT i, i % 7 FROM generate_series(1, 2000) i");
    value_of("CREATE INDEX ib_t_old_idx ON ib_t (a)");
    /* As a migration declares it: the runner sets parley.migration. */
    value_of("DO $$ BEGIN PERFORM set_config('parley.migration', '900', true); "
             "PERFORM parley_index_build('ib_t_ab_idx', "
             "'CREATE INDEX CONCURRENTLY IF NOT EXISTS ib_t_ab_idx ON ib_t (a, b)', "
             "'ib_t_old_idx'); END $$");
    assert_string_equal(value_of("SELECT concat_ws(',', table_name, version, replaces, state) "
                                 "FROM schema_index_builds WHERE name = 'ib_t_ab_idx'"),
                        "ib_t,900,ib_t_old_idx,pending");
    build_answer_t a;
    index_build_t *b = start(&a, 0, 0);
    test_run_until(&loop, &a.called, 30000);
    assert_int_equal(a.status, 0);
    index_build_stats_t st;
    finish(b, &st);
    assert_int_equal(st.built, 1);
    assert_int_equal(st.dropped_replaced, 1);
    assert_int_equal(st.dropped_invalid, 0);
    assert_int_equal(st.failures, 0);
    assert_string_equal(value_of("SELECT indisvalid FROM pg_index "
                                 "WHERE indexrelid = 'ib_t_ab_idx'::regclass"),
                        "t");
    assert_string_equal(value_of("SELECT to_regclass('ib_t_old_idx') IS NULL"), "t");
    assert_string_equal(value_of("SELECT concat_ws(',', state, attempts, finished_at IS NOT NULL) "
                                 "FROM schema_index_builds WHERE name = 'ib_t_ab_idx'"),
                        "done,1,t");
    /* Declared again (the same text): nothing changes; a second start has
     * nothing to build. */
    value_of("SELECT parley_index_build('ib_t_ab_idx', "
             "'CREATE INDEX CONCURRENTLY IF NOT EXISTS ib_t_ab_idx ON ib_t (a, b)', "
             "'ib_t_old_idx')");
    b = start(&a, 0, 0);
    test_run_until(&loop, &a.called, 20000);
    assert_int_equal(a.status, 0);
    finish(b, &st);
    assert_int_equal(st.built + st.dropped_invalid + st.dropped_replaced, 0);
}

static void test_failed_build_dropped_and_rebuilt(void **state)
{
    (void)state;
    value_of("CREATE TABLE ib_u (a integer)");
    value_of("INSERT INTO ib_u SELECT i % 50 FROM generate_series(1, 1000) i");
    value_of("SELECT parley_index_build('ib_u_a_key', "
             "'CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS ib_u_a_key ON ib_u (a)')");
    build_answer_t a;
    index_build_t *b = start(&a, 0, 300);
    /* The build fails on the duplicates, leaves an invalid index and
     * records why; it is tried again meanwhile. */
    wait_for("SELECT coalesce(last_error LIKE '%could not create unique index%', false) "
             "FROM schema_index_builds WHERE name = 'ib_u_a_key'",
             "t");
    assert_false(a.called);
    assert_string_equal(value_of("SELECT state FROM schema_index_builds"), "pending");
    /* The data fixed, the leftover is dropped and the index built. */
    value_of("DELETE FROM ib_u WHERE a IN (SELECT a FROM ib_u GROUP BY a HAVING count(*) > 1) "
             "AND ctid NOT IN (SELECT min(ctid) FROM ib_u GROUP BY a)");
    test_run_until(&loop, &a.called, 30000);
    assert_int_equal(a.status, 0);
    index_build_stats_t st;
    finish(b, &st);
    assert_int_equal(st.built, 1);
    assert_true(st.failures >= 1);
    assert_true(st.dropped_invalid >= 1);
    assert_string_equal(value_of("SELECT indisvalid FROM pg_index "
                                 "WHERE indexrelid = 'ib_u_a_key'::regclass"),
                        "t");
    assert_string_equal(value_of("SELECT concat_ws(',', state, attempts > 1, last_error IS NULL) "
                                 "FROM schema_index_builds WHERE name = 'ib_u_a_key'"),
                        "done,t,t");
}

/* Keeps what log_* writes to stderr in a file while a test runs. */
static int saved_stderr = -1;
static char log_path[64];

static void capture_start(void)
{
    snprintf(log_path, sizeof log_path, "/tmp/parley-ib-log.XXXXXX");
    int fd = mkstemp(log_path);
    assert_true(fd >= 0);
    saved_stderr = dup(STDERR_FILENO);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);
    close(fd);
}

/* The captured lines (also copied to the real stderr). */
static char *capture_end(void)
{
    static char buf[65536];
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    int fd = open(log_path, O_RDONLY);
    assert_true(fd >= 0);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    assert_true(n >= 0);
    buf[n] = '\0';
    close(fd);
    unlink(log_path);
    fputs(buf, stderr);
    return buf;
}

static void on_insert(void *data, int status, const char *value, const char *sqlstate,
                      const char *error)
{
    on_value(data, status, value, sqlstate, error);
}

static void test_slow_build_progress_and_writes(void **state)
{
    (void)state;
    slow_table(2000); /* about 4 s to build */
    capture_start();
    build_answer_t a;
    index_build_t *b = start(&a, 500, 0);
    wait_for(sql_building, "1");
    /* The build is concurrent: a write goes through at once. A plain
     * CREATE INDEX would hold it until the end. */
    uint64_t t0 = uv_now(&loop);
    static sql_answer_t ins;
    memset(&ins, 0, sizeof ins);
    assert_int_equal(pg_pool_call(pool, NULL, "INSERT INTO ib_slow VALUES (-1) RETURNING a", 0,
                                  NULL, on_insert, &ins, NULL),
                     0);
    test_run_until(&loop, &ins.done, 20000);
    uint64_t took = uv_now(&loop) - t0;
    assert_false(a.called); /* still building */
    test_run_until(&loop, &a.called, 60000);
    assert_int_equal(a.status, 0);
    index_build_stats_t st;
    finish(b, &st);
    char *log = capture_end();
    assert_true(took < 1000);
    assert_int_equal(st.built, 1);
    assert_true(st.progress_logged >= 3);
    assert_non_null(strstr(log, "index ib_slow_idx on ib_slow: building it concurrently"));
    assert_non_null(strstr(log, "index ib_slow_idx on ib_slow: building index: scanning table, "));
    assert_non_null(strstr(log, " blocks), "));
    assert_non_null(strstr(log, "index ib_slow_idx on ib_slow built ("));
    assert_string_equal(value_of(sql_valid), "t");
    assert_string_equal(value_of("SELECT count(*) FROM ib_slow WHERE ib_slow(a) = -1"), "1");
}

static void test_two_builders_one_builds(void **state)
{
    (void)state;
    slow_table(2000);
    build_answer_t a1, a2;
    index_build_t *b1 = start(&a1, 0, 200);
    wait_for(sql_building, "1");
    index_build_t *b2 = start(&a2, 0, 200);
    /* The second finds the first building and waits. */
    index_build_stats_t st2;
    uint64_t deadline = uv_now(&loop) + 20000;
    do {
        assert_true(uv_now(&loop) < deadline);
        test_run_for(&loop, 20);
        index_build_stats(b2, &st2);
    } while (st2.busy < 2);
    assert_string_equal(value_of(sql_building), "1");
    assert_int_equal(st2.built, 0);
    /* The first stops mid-build (as a daemon that dies): its lock goes
     * with its connection; the second drops the invalid leftover and
     * builds. */
    index_build_stats_t st1;
    finish(b1, &st1);
    assert_false(a1.called);
    assert_int_equal(st1.built, 0);
    test_run_until(&loop, &a2.called, 60000);
    assert_int_equal(a2.status, 0);
    finish(b2, &st2);
    assert_int_equal(st2.built, 1);
    assert_int_equal(st2.dropped_invalid, 1);
    assert_string_equal(value_of(sql_valid), "t");
    assert_string_equal(value_of("SELECT concat_ws(',', state, attempts) FROM schema_index_builds"),
                        "done,2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_builds_and_replaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_build_dropped_and_rebuilt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_build_progress_and_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_builders_one_builds, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
