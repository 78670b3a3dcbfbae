/* Tests for db/migrate: the first run creates the whole store, a second run
 * changes nothing, two runners started together on a fresh database apply
 * each migration exactly once, and a parleyd older than the database runs
 * on the newer release's functions or refuses to start (migrate.h,
 * "Releases"). */
#include <stdlib.h>
#include <string.h>

#include "db/migrate.h"
#include "testutil.h"

static pg_pool_t *make_pool(uv_loop_t *loop, const char *db)
{
    pg_conninfo_t ci;
    test_pg_conninfo(&ci, db);
    pg_pool_config_t cfg = {.name = "mig",
                            .size = 1,
                            .queue_max = 8,
                            .query_timeout_ms = 30000,
                            .connect_timeout_ms = 3000};
    pg_pool_t *p;
    char err[256];
    assert_int_equal(pg_pool_new(loop, &cfg, &ci, &p, err, sizeof err), 0);
    pg_conninfo_free(&ci);
    return p;
}

static int finished;
static void on_migrated(migrate_t *m, int status)
{
    if (status != 0)
        fail_msg("migration failed: %s", m->error);
    finished++;
}

static int pools_closed;
static void on_closed(pg_pool_t *p)
{
    (void)p;
    pools_closed++;
}

typedef struct {
    bool done;
    int status;
    char value[64];
} result_t;

static void on_done(pg_query_t *q, int status)
{
    result_t *r = q->data;
    r->done = true;
    r->status = status;
    if (status == 0 && PQntuples(q->results[0]) > 0)
        snprintf(r->value, sizeof r->value, "%s", PQgetvalue(q->results[0], 0, 0));
    pg_query_release(q);
}

static void query(uv_loop_t *loop, pg_pool_t *p, const char *sql, const char *param, result_t *r)
{
    const char *params[] = {param};
    pg_stmt_t st = {.sql = sql, .nparams = param ? 1 : 0, .params = params};
    pg_query_t q = {.stmts = &st, .nstmts = 1, .cb = on_done, .data = r};
    memset(r, 0, sizeof *r);
    assert_int_equal(pg_pool_submit(p, &q), 0);
    test_run_until(loop, &r->done, 10000);
    assert_int_equal(r->status, 0);
}

static bool wait_flag;
static int wait_target;

static void on_migrated_flag(migrate_t *m, int status)
{
    on_migrated(m, status);
    wait_flag = finished >= wait_target;
}

static void run_migrations(uv_loop_t *loop, migrate_t **ms, pg_pool_t **ps, int n)
{
    finished = 0;
    wait_target = n;
    wait_flag = false;
    for (int i = 0; i < n; i++) {
        memset(ms[i], 0, sizeof *ms[i]);
        ms[i]->cb = on_migrated_flag;
        assert_int_equal(migrate_start(ms[i], ps[i]), 0);
    }
    test_run_until(loop, &wait_flag, 60000);
}

static void close_pools(uv_loop_t *loop, pg_pool_t **ps, int n)
{
    pools_closed = 0;
    for (int i = 0; i < n; i++)
        pg_pool_close(ps[i], on_closed);
    while (pools_closed < n)
        test_run_for(loop, 10);
}

static void test_fresh_then_idempotent(void **state)
{
    (void)state;
    char db[64];
    test_pg_create_db(db, sizeof db);
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *p = make_pool(&loop, db);
    migrate_t m1, *ms[] = {&m1};
    run_migrations(&loop, ms, &p, 1);
    assert_int_equal(m1.applied, migrations_count);
    assert_int_equal(m1.schema_version, migrate_latest_version());

    /* The store of DESIGN.md is there, with its search indexes. */
    const char *tables[] = {"accounts", "chats", "users",     "chat_members", "topics",
                            "messages", "media", "sync_jobs", "sync_state",   "schema_version"};
    result_t r;
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        query(&loop, p, "SELECT to_regclass($1) IS NOT NULL", tables[i], &r);
        if (strcmp(r.value, "t") != 0)
            fail_msg("table %s missing", tables[i]);
    }
    query(&loop, p,
          "SELECT count(*) FROM pg_indexes WHERE tablename = 'messages' AND indexdef LIKE $1",
          "%USING gin%", &r);
    assert_true(atoi(r.value) >= 2); /* tsvector and trigram */
    query(&loop, p,
          "SELECT string_agg(a.attname, ',' ORDER BY a.attnum) FROM pg_index i "
          "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
          "WHERE i.indrelid = $1::regclass AND i.indisprimary",
          "messages", &r);
    assert_string_equal(r.value, "chat_id,id");
    query(&loop, p, "SELECT count(*) FROM pg_extension WHERE extname = $1", "pg_trgm", &r);
    assert_string_equal(r.value, "1");

    /* Second run: nothing to do, nothing changes. */
    run_migrations(&loop, ms, &p, 1);
    assert_int_equal(m1.applied, 0);
    query(&loop, p, "SELECT count(*) FROM schema_version", NULL, &r);
    assert_int_equal(atoi(r.value), migrations_count);
    close_pools(&loop, &p, 1);
    test_loop_close(&loop);
}

static void test_concurrent(void **state)
{
    (void)state;
    char db[64];
    test_pg_create_db(db, sizeof db);
    uv_loop_t loop;
    uv_loop_init(&loop);
    enum { N = 3 };
    pg_pool_t *ps[N];
    migrate_t m[N], *ms[N];
    for (int i = 0; i < N; i++) {
        ps[i] = make_pool(&loop, db);
        ms[i] = &m[i];
    }
    run_migrations(&loop, ms, ps, N);
    int applied = 0;
    for (int i = 0; i < N; i++) {
        applied += m[i].applied;
        assert_int_equal(m[i].schema_version, migrate_latest_version());
    }
    assert_int_equal(applied, migrations_count);
    close_pools(&loop, ps, N);
    test_loop_close(&loop);
}

/* A run waits as long as it must (for the lock here; for an index built
 * on a large store in the field): the pool's query limit, a tool's, does
 * not bound it (MIGRATE_TIMEOUT_MS does). On the code before, a pool of
 * 100 ms failed the run with a timeout while another held the lock. */
static result_t held;
static void test_not_bound_by_query_timeout(void **state)
{
    (void)state;
    char db[64];
    test_pg_create_db(db, sizeof db);
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *holder = make_pool(&loop, db);
    /* Another runner holds the migration lock for a second. */
    const char *key[] = {MIGRATE_LOCK_KEY};
    pg_stmt_t st[] = {
        {.sql = "SELECT pg_advisory_lock($1::bigint)", .nparams = 1, .params = key},
        {.sql = "SELECT pg_sleep(1.0)"},
        {.sql = "SELECT pg_advisory_unlock($1::bigint)", .nparams = 1, .params = key}};
    pg_query_t hq = {.stmts = st, .nstmts = 3, .cb = on_done, .data = &held};
    memset(&held, 0, sizeof held);
    assert_int_equal(pg_pool_submit(holder, &hq), 0);
    test_run_for(&loop, 300);
    pg_conninfo_t ci;
    test_pg_conninfo(&ci, db);
    pg_pool_config_t cfg = {.name = "mig-short",
                            .size = 1,
                            .queue_max = 8,
                            .query_timeout_ms = 100,
                            .connect_timeout_ms = 3000};
    pg_pool_t *p;
    char err[256];
    assert_int_equal(pg_pool_new(&loop, &cfg, &ci, &p, err, sizeof err), 0);
    pg_conninfo_free(&ci);
    migrate_t m, *ms[] = {&m};
    run_migrations(&loop, ms, &p, 1);
    assert_int_equal(m.applied, migrations_count);
    test_run_until(&loop, &held.done, 10000);
    assert_int_equal(held.status, 0);
    pg_pool_t *ps[] = {p, holder};
    close_pools(&loop, ps, 2);
    test_loop_close(&loop);
}

static void test_embedded_list_is_ordered(void **state)
{
    (void)state;
    assert_true(migrations_count >= 1);
    assert_int_equal(migrations[0].version, 1);
    for (int i = 1; i < migrations_count; i++)
        assert_true(migrations[i].version > migrations[i - 1].version);
    assert_non_null(strstr(migrations[0].sql, "CREATE TABLE"));
}

/* The database as a newer release left it: one migration past this
 * parleyd, that release's functions (a marker in one of them), and the
 * oldest parleyd it admits. */
static void newer_release(uv_loop_t *loop, pg_pool_t *p, const char *admits)
{
    result_t r;
    char sql[512];
    snprintf(sql, sizeof sql,
             "WITH v AS (INSERT INTO schema_version (version, name) VALUES (%d, 'next') "
             "ON CONFLICT DO NOTHING) "
             "INSERT INTO schema_release (latest, compatible_from) VALUES (%d, $1::integer) "
             "ON CONFLICT (latest) DO UPDATE SET compatible_from = EXCLUDED.compatible_from",
             migrate_latest_version() + 1, migrate_latest_version() + 1);
    query(loop, p, sql, admits, &r);
    query(loop, p,
          "CREATE OR REPLACE FUNCTION parley_daemon_alive(p_owner text) RETURNS boolean "
          "LANGUAGE sql STABLE AS $$ SELECT p_owner IS NOT NULL /* next release */ $$",
          NULL, &r);
}

static int refused_status;
static char refused_error[PG_QUERY_ERROR_MAX];
static void on_refused(migrate_t *m, int status)
{
    refused_status = status;
    snprintf(refused_error, sizeof refused_error, "%s", m->error);
    wait_flag = true;
}

static void test_older_parleyd(void **state)
{
    (void)state;
    char db[64];
    test_pg_create_db(db, sizeof db);
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_pool_t *p = make_pool(&loop, db);
    migrate_t m, *ms[] = {&m};
    run_migrations(&loop, ms, &p, 1);
    assert_true(m.functions_applied);
    result_t r;
    char want[64];
    snprintf(want, sizeof want, "%d:%d", migrate_latest_version(), MIGRATE_COMPATIBLE_FROM);
    query(&loop, p, "SELECT string_agg(latest || ':' || compatible_from, ',') FROM schema_release",
          NULL, &r);
    assert_string_equal(r.value, want);

    /* A newer release that admits this one: it starts, and leaves the
     * newer functions as they are (it used to put its own back). */
    char admits[16];
    snprintf(admits, sizeof admits, "%d", migrate_latest_version());
    newer_release(&loop, p, admits);
    run_migrations(&loop, ms, &p, 1);
    assert_false(m.functions_applied);
    assert_int_equal(m.schema_version, migrate_latest_version() + 1);
    query(&loop, p,
          "SELECT count(*) FROM pg_proc WHERE proname = 'parley_daemon_alive' AND prosrc LIKE $1",
          "%next release%", &r);
    assert_string_equal(r.value, "1");

    /* One that admits only its own: refused, with what to do. */
    snprintf(admits, sizeof admits, "%d", migrate_latest_version() + 1);
    newer_release(&loop, p, admits);
    memset(&m, 0, sizeof m);
    m.cb = on_refused;
    wait_flag = false;
    assert_int_equal(migrate_start(&m, p), 0);
    test_run_until(&loop, &wait_flag, 60000);
    assert_int_not_equal(refused_status, 0);
    if (strstr(refused_error, "upgrade it") == NULL || strstr(refused_error, admits) == NULL)
        fail_msg("refusal says: %s", refused_error);
    close_pools(&loop, &p, 1);
    test_loop_close(&loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embedded_list_is_ordered),
        cmocka_unit_test(test_fresh_then_idempotent),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_not_bound_by_query_timeout),
        cmocka_unit_test(test_older_parleyd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
