/* Tests for db/embedded, each on a data directory of its own: first start
 * (initdb) and stop, restart, two users of one cluster, a cluster left
 * running by a killed parleyd, a stale postmaster.pid, and clear errors. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/embedded.h"
#include "db/pool.h"
#include "testutil.h"

typedef struct {
    bool done;
    int status;
} wait_t;

static void on_emb(pg_embedded_t *e, int status)
{
    wait_t *w = pg_embedded_get_data(e);
    w->done = true;
    w->status = status;
}

static bool emb_closed;
static void on_emb_closed(pg_embedded_t *e)
{
    (void)e;
    emb_closed = true;
}

static pg_embedded_t *emb_new(uv_loop_t *loop, const char *dir)
{
    pg_embedded_config_t cfg = {
        .data_dir = dir, .bindir = PARLEY_PG_BINDIR, .run_as = "parley", .start_timeout_s = 60};
    pg_embedded_t *e;
    char err[512];
    assert_int_equal(pg_embedded_new(loop, &cfg, &e, err, sizeof err), 0);
    return e;
}

static void emb_start(uv_loop_t *loop, pg_embedded_t *e)
{
    wait_t w = {0};
    pg_embedded_set_data(e, &w);
    pg_embedded_start(e, on_emb);
    test_run_until(loop, &w.done, 120000);
    if (w.status != 0)
        fail_msg("start failed: %s", pg_embedded_error(e));
}

static void emb_stop(uv_loop_t *loop, pg_embedded_t *e)
{
    wait_t w = {0};
    pg_embedded_set_data(e, &w);
    pg_embedded_stop(e, on_emb);
    test_run_until(loop, &w.done, 60000);
    assert_int_equal(w.status, 0);
}

static void emb_close(uv_loop_t *loop, pg_embedded_t *e)
{
    emb_closed = false;
    pg_embedded_close(e, on_emb_closed);
    test_run_until(loop, &emb_closed, 5000);
}

/* The postmaster named by postmaster.pid is alive (pg_ctl refuses root). */
static bool server_running(const char *dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/pg/data/postmaster.pid", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    int pid = 0;
    bool ok = fscanf(f, "%d", &pid) == 1;
    fclose(f);
    return ok && pid > 0 && kill(pid, 0) == 0;
}

/* Runs one query through a pool on the cluster: who it connects as, and
 * the settings of parley.conf the server actually runs with (a value
 * PostgreSQL refused would have stopped it from starting). */
static void check_query(uv_loop_t *loop, pg_embedded_t *e);

typedef struct {
    bool done;
    int status;
    char value[256];
} result_t;

static void on_done(pg_query_t *q, int status)
{
    result_t *r = q->data;
    r->done = true;
    r->status = status;
    if (status == 0)
        snprintf(r->value, sizeof r->value, "%s", PQgetvalue(q->results[0], 0, 0));
    pg_query_release(q);
}

static bool pool_closed;
static void on_pool_closed(pg_pool_t *p)
{
    (void)p;
    pool_closed = true;
}

static void check_query(uv_loop_t *loop, pg_embedded_t *e)
{
    pg_pool_config_t cfg = {.name = "t",
                            .size = 1,
                            .queue_max = 4,
                            .query_timeout_ms = 10000,
                            .connect_timeout_ms = 5000};
    pg_pool_t *p;
    char err[256];
    assert_int_equal(pg_pool_new(loop, &cfg, pg_embedded_conninfo(e), &p, err, sizeof err), 0);
    pg_stmt_t st = {.sql = "SELECT current_database() || ':' || current_user || ' ' || "
                           "current_setting('fsync') || current_setting('synchronous_commit') || "
                           "current_setting('full_page_writes') || ' jit=' || "
                           "current_setting('jit') || ' wal=' || current_setting('max_wal_size')"};
    result_t r = {0};
    pg_query_t q = {.stmts = &st, .nstmts = 1, .cb = on_done, .data = &r};
    assert_int_equal(pg_pool_submit(p, &q), 0);
    test_run_until(loop, &r.done, 15000);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.value, "parley:parley ononon jit=off wal=4GB");
    pool_closed = false;
    pg_pool_close(p, on_pool_closed);
    test_run_until(loop, &pool_closed, 5000);
}

static void test_first_start_and_restart(void **state)
{
    (void)state;
    char *dir = test_tmpdir("parley-emb");
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_embedded_t *e = emb_new(&loop, dir);
    emb_start(&loop, e);
    assert_true(pg_embedded_started_server(e));
    char path[256];
    snprintf(path, sizeof path, "%s/pg/data/PG_VERSION", dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/pg/run/.s.PGSQL.5432", dir);
    assert_int_equal(access(path, F_OK), 0);
    check_query(&loop, e);
    /* No TCP listener. */
    assert_int_equal(test_sh("grep -q \"listen_addresses = ''\" %s/pg/data/parley.conf", dir), 0);
    emb_stop(&loop, e);
    assert_false(server_running(dir));

    /* Restart on the same directory reuses the cluster. */
    emb_start(&loop, e);
    assert_true(pg_embedded_started_server(e));
    check_query(&loop, e);
    emb_stop(&loop, e);
    assert_false(server_running(dir));
    emb_close(&loop, e);
    test_loop_close(&loop);
    test_rmdir(dir);
}

static void test_two_users_and_leftover(void **state)
{
    (void)state;
    char *dir = test_tmpdir("parley-emb");
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_embedded_t *a = emb_new(&loop, dir);
    pg_embedded_t *b = emb_new(&loop, dir);
    emb_start(&loop, a);
    emb_start(&loop, b);
    assert_true(pg_embedded_started_server(a));
    assert_false(pg_embedded_started_server(b)); /* joined */
    emb_stop(&loop, a);
    assert_true(server_running(dir)); /* b still uses it */
    check_query(&loop, b);
    emb_stop(&loop, b);
    assert_false(server_running(dir));

    /* A parleyd killed without stopping leaves the cluster running (here:
     * close without stop); the next one joins it and stops it. */
    emb_start(&loop, a);
    emb_close(&loop, a);
    assert_true(server_running(dir));
    emb_start(&loop, b);
    assert_false(pg_embedded_started_server(b));
    check_query(&loop, b);
    emb_stop(&loop, b);
    assert_false(server_running(dir));
    emb_close(&loop, b);
    test_loop_close(&loop);
    test_rmdir(dir);
}

static void test_stale_pid(void **state)
{
    (void)state;
    char *dir = test_tmpdir("parley-emb");
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_embedded_t *e = emb_new(&loop, dir);
    emb_start(&loop, e);
    /* Kill the postmaster with SIGKILL: postmaster.pid stays behind. */
    char path[256];
    snprintf(path, sizeof path, "%s/pg/data/postmaster.pid", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int pid = 0;
    assert_int_equal(fscanf(f, "%d", &pid), 1);
    fclose(f);
    emb_close(&loop, e);
    assert_int_equal(kill(pid, SIGKILL), 0);
    for (int i = 0; i < 100 && kill(pid, 0) == 0; i++)
        usleep(50000);
    assert_int_equal(access(path, F_OK), 0);

    e = emb_new(&loop, dir);
    emb_start(&loop, e);
    assert_true(pg_embedded_started_server(e));
    check_query(&loop, e);
    emb_stop(&loop, e);
    assert_false(server_running(dir));

    /* A pid file naming a process that does not exist. */
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "4194000\n%s/pg/data\n", dir);
    fclose(f);
    emb_start(&loop, e);
    check_query(&loop, e);
    emb_stop(&loop, e);
    emb_close(&loop, e);
    test_loop_close(&loop);
    test_rmdir(dir);
}

static void test_errors(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_embedded_config_t cfg = {.data_dir = "/tmp/a-very-long-directory-name-for-a-unix-socket-"
                                            "path-that-cannot-fit-in-sun-path-of-108-bytes-xx",
                                .bindir = PARLEY_PG_BINDIR,
                                .run_as = "parley"};
    pg_embedded_t *e;
    char err[512];
    assert_int_equal(pg_embedded_new(&loop, &cfg, &e, err, sizeof err), UV_ENAMETOOLONG);
    assert_non_null(strstr(err, "too long for a Unix socket"));

    /* A directory in the way of the cluster is not overwritten. */
    char *dir = test_tmpdir("parley-emb");
    char path[256];
    snprintf(path, sizeof path, "%s/pg/data", dir);
    assert_int_equal(test_sh("mkdir -p %s && touch %s/precious", path, path), 0);
    e = emb_new(&loop, dir);
    wait_t w = {0};
    pg_embedded_set_data(e, &w);
    pg_embedded_start(e, on_emb);
    test_run_until(&loop, &w.done, 30000);
    assert_int_equal(w.status, UV_EEXIST);
    assert_non_null(strstr(pg_embedded_error(e), "is not a PostgreSQL cluster"));
    emb_close(&loop, e);

    /* A missing PostgreSQL binary directory is reported. */
    cfg.data_dir = dir;
    cfg.bindir = "/nonexistent/bin";
    assert_int_equal(test_sh("rm -rf %s/pg", dir), 0);
    assert_int_equal(pg_embedded_new(&loop, &cfg, &e, err, sizeof err), 0);
    w = (wait_t){0};
    pg_embedded_set_data(e, &w);
    pg_embedded_start(e, on_emb);
    test_run_until(&loop, &w.done, 30000);
    assert_true(w.status < 0);
    assert_non_null(strstr(pg_embedded_error(e), "initdb"));
    assert_non_null(strstr(pg_embedded_error(e), "/nonexistent/bin"));
    emb_close(&loop, e);
    test_loop_close(&loop);
    test_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_start_and_restart),
        cmocka_unit_test(test_two_users_and_leftover),
        cmocka_unit_test(test_stale_pid),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
