/* testutil: shared test helpers (see testutil.h). */
#include "testutil.h"

#include "db/index_build.h"
#include "db/migrate.h"
#include "db/pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop_timer_cb(uv_timer_t *t)
{
    *(bool *)t->data = true;
}

static void close_cb(uv_handle_t *h)
{
    (void)h;
}

void test_run_until(uv_loop_t *loop, const bool *flag, uint64_t timeout_ms)
{
    uint64_t deadline = uv_now(loop) + timeout_ms;
    while (!*flag) {
        if (uv_now(loop) > deadline)
            fail_msg("timed out after %llu ms waiting for the loop",
                     (unsigned long long)timeout_ms);
        /* A short timer keeps UV_RUN_ONCE from blocking past the deadline. */
        uv_timer_t t;
        bool fired = false;
        uv_timer_init(loop, &t);
        t.data = &fired;
        uv_timer_start(&t, stop_timer_cb, 20, 0);
        uv_run(loop, UV_RUN_ONCE);
        uv_close((uv_handle_t *)&t, close_cb);
        uv_run(loop, UV_RUN_NOWAIT);
    }
}

void test_run_for(uv_loop_t *loop, uint64_t ms)
{
    bool done = false;
    uv_timer_t t;
    uv_timer_init(loop, &t);
    t.data = &done;
    uv_timer_start(&t, stop_timer_cb, ms, 0);
    while (!done)
        uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, close_cb);
    uv_run(loop, UV_RUN_NOWAIT);
}

static void walk_cb(uv_handle_t *h, void *arg)
{
    (void)arg;
    fprintf(stderr, "handle left open: type %s active %d closing %d\n",
            uv_handle_type_name(uv_handle_get_type(h)), uv_is_active(h), uv_is_closing(h));
}

void test_loop_close(uv_loop_t *loop)
{
    uv_run(loop, UV_RUN_DEFAULT);
    int rc = uv_loop_close(loop);
    if (rc != 0)
        uv_walk(loop, walk_cb, NULL);
    assert_int_equal(rc, 0);
}

char *test_tmpdir(const char *prefix)
{
    char *path = malloc(64);
    assert_non_null(path);
    snprintf(path, 64, "/tmp/%s.XXXXXX", prefix);
    assert_non_null(mkdtemp(path));
    return path;
}

void test_rmdir(char *dir)
{
    if (dir && strncmp(dir, "/tmp/", 5) == 0)
        assert_int_equal(test_sh("rm -rf '%s'", dir), 0);
    free(dir);
}

void test_pg_conninfo(pg_conninfo_t *ci, const char *dbname)
{
    const char *s = getenv("PARLEY_TEST_PG");
    if (s == NULL) {
        fprintf(stderr, "PARLEY_TEST_PG is not set: run through ctest\n");
        skip();
    }
    char err[256];
    assert_int_equal(pg_conninfo_parse(ci, s, err, sizeof err), 0);
    if (dbname)
        assert_int_equal(pg_conninfo_set(ci, "dbname", dbname), 0);
}

void test_pg_exec(const char *sql)
{
    pg_conninfo_t ci;
    test_pg_conninfo(&ci, NULL);
    PGconn *c = PQconnectdbParams((const char *const *)ci.keys, (const char *const *)ci.vals, 0);
    pg_conninfo_free(&ci);
    if (PQstatus(c) != CONNECTION_OK)
        fail_msg("connect: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    PQfinish(c);
}

void test_pg_create_db(char *buf, size_t cap)
{
    static int seq;
    snprintf(buf, cap, "t_%d_%d", (int)getpid(), ++seq);
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", buf);
    test_pg_exec(sql);
}

int test_sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

static bool migrated;
static void on_migrated(migrate_t *m, int status)
{
    if (status != 0)
        fail_msg("migrations: %s", m->error);
    migrated = true;
}

static bool pool_closed_flag;
static void pool_closed_cb(pg_pool_t *p)
{
    (void)p;
    pool_closed_flag = true;
}

void test_pg_pool_close(uv_loop_t *loop, pg_pool_t *pool)
{
    pool_closed_flag = false;
    pg_pool_close(pool, pool_closed_cb);
    test_run_until(loop, &pool_closed_flag, 5000);
}

void test_pg_migrated_pool(uv_loop_t *loop, int size, pg_pool_t **out)
{
    char db[64];
    test_pg_migrated_db(loop, size, out, db, sizeof db);
}

static bool indexes_built;
static void on_indexes_built(index_build_t *b, int status)
{
    if (status != 0)
        fail_msg("building the indexes the migrations ask for: %s", index_build_error(b));
    indexes_built = true;
}

void test_pg_migrated_db(uv_loop_t *loop, int size, pg_pool_t **out, char *db, size_t cap)
{
    test_pg_create_db(db, cap);
    pg_conninfo_t ci;
    test_pg_conninfo(&ci, db);
    pg_pool_config_t cfg = {.name = "test",
                            .size = size,
                            .queue_max = 64,
                            .query_timeout_ms = 20000,
                            .connect_timeout_ms = 5000};
    char err[256];
    assert_int_equal(pg_pool_new(loop, &cfg, &ci, out, err, sizeof err), 0);
    pg_conninfo_free(&ci);
    static migrate_t m;
    memset(&m, 0, sizeof m);
    m.cb = on_migrated;
    migrated = false;
    assert_int_equal(migrate_start(&m, *out), 0);
    test_run_until(loop, &migrated, 60000);
    /* As parleyd migrate and serve do: the indexes the migrations ask
     * for (db/index_build.h) are built too. */
    test_pg_conninfo(&ci, db);
    index_build_opts_t o = {.connect_timeout_ms = 5000, .fail_fast = true};
    index_build_t *b = NULL;
    indexes_built = false;
    assert_int_equal(
        index_build_start(loop, &ci, *out, &o, on_indexes_built, NULL, &b, err, sizeof err), 0);
    pg_conninfo_free(&ci);
    test_run_until(loop, &indexes_built, 60000);
    index_build_stop(b);
    while (!index_build_idle(b))
        test_run_for(loop, 5);
    index_build_free(b);
}
