/* Fuzz target: message search's query parsing, which is SQL
 * (parley_search and its helpers in src/db/sql/search.sql: web-search
 * syntax through websearch_to_tsquery, the terms for substring and fuzzy
 * matching, CJK bigrams), driven through archive_search on a real
 * PostgreSQL with the project's schema and a few messages in English,
 * Russian and Japanese.
 *
 * The input is a flag byte (bit 0: fuzzy, bit 1: by rank, bit 2: the text
 * is the regex too) and the query text; text with a NUL or that is not
 * UTF-8 is skipped (MCP strings are UTF-8). Every search must answer a
 * results page; the only refusals allowed are UV_EINVAL for an invalid
 * regex (search.h) or, before any SQL, for one with a back-reference
 * (regex_guard.h), and no statement may take more than the pool's 2 s.
 *
 * The cluster: the test suite's when PARLEY_TEST_PG_DIR names a running
 * one (a new database, dropped at exit), else its own in a temporary directory
 * (tests/harness/pg_cluster.sh), destroyed at exit, or by a watchdog
 * process when the fuzzer dies without exiting. */
#include <jansson.h>
#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "archive/regex_guard.h"
#include "archive/search.h"
#include "db/conninfo.h"
#include "db/migrate.h"
#include "db/pool.h"
#include "fuzz_util.h"
#include "util/log.h"

#define QUERY_MS 2000

static uv_loop_t loop;
static pg_pool_t *pool;
static char cluster[64]; /* our own cluster's directory, or "" */
static char host[256];   /* the cluster's socket directory */
static char db[64];

static void fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_search_query: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    abort();
}

/* Runs one statement on host's dbname (blocking: this harness only). */
static void admin_exec(const char *dbname, const char *sql)
{
    char ci[512];
    snprintf(ci, sizeof ci, "host=%s port=5432 user=parley dbname=%s", host, dbname);
    PGconn *c = PQconnectdb(ci);
    if (PQstatus(c) != CONNECTION_OK)
        fail("cannot connect", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail(sql, PQresultErrorMessage(r));
    PQclear(r);
    PQfinish(c);
}

static void run_until(const bool *flag, uint64_t ms)
{
    uint64_t end = uv_now(&loop) + ms;
    while (!*flag && uv_now(&loop) < end)
        uv_run(&loop, UV_RUN_ONCE);
    if (!*flag)
        fail("the database did not answer in time", NULL);
}

static bool migrated;
static void on_migrated(migrate_t *m, int status)
{
    if (status != 0)
        fail("migrations failed", m->error);
    migrated = true;
}

static bool sql_done;
static void on_sql(pg_query_t *q, int status)
{
    if (status != 0)
        fail("setup SQL failed", q->error);
    pg_query_release(q);
    sql_done = true;
}

static void pool_exec(const char *text)
{
    pg_stmt_t st = {.sql = text};
    pg_query_t q = {.stmts = &st, .nstmts = 1, .cb = on_sql};
    sql_done = false;
    if (pg_pool_submit(pool, &q) != 0)
        fail("cannot submit", text);
    run_until(&sql_done, 30000);
}

static bool pool_closed;
static void on_pool_closed(pg_pool_t *p)
{
    (void)p;
    pool_closed = true;
}

static void cleanup(void)
{
    pool_closed = false;
    pg_pool_close(pool, on_pool_closed);
    run_until(&pool_closed, 10000);
    uv_run(&loop, UV_RUN_NOWAIT);
    if (uv_loop_close(&loop) != 0)
        fail("a handle was left open", NULL);
    if (cluster[0]) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "%s/pg_cluster.sh destroy %s", PARLEY_HARNESS, cluster);
        if (system(cmd) != 0)
            fprintf(stderr, "fuzz_search_query: could not destroy %s\n", cluster);
    } else {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", db);
        admin_exec("postgres", sql);
    }
}

/* Our own cluster, and a watchdog that destroys it once this process is
 * gone however it ended (libFuzzer leaves by _Exit on a crash). */
static void start_cluster(void)
{
    snprintf(cluster, sizeof cluster, "/tmp/parley-fuzzpg-XXXXXX");
    if (mkdtemp(cluster) == NULL)
        fail("mkdtemp", NULL);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/pg_cluster.sh start %s >/dev/null", PARLEY_HARNESS, cluster);
    if (system(cmd) != 0)
        fail("cannot start a cluster", cluster);
    snprintf(cmd, sizeof cmd,
             "setsid sh -c 'while kill -0 %d 2>/dev/null; do sleep 1; done; "
             "%s/pg_cluster.sh destroy %s' >/dev/null 2>&1 </dev/null &",
             (int)getpid(), PARLEY_HARNESS, cluster);
    if (system(cmd) != 0)
        fail("cannot start the watchdog", NULL);
    snprintf(host, sizeof host, "%s", cluster);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_set_level(LOG_ERROR);
    const char *dir = getenv("PARLEY_TEST_PG_DIR");
    char sock[300];
    snprintf(sock, sizeof sock, "%s/.s.PGSQL.5432", dir ? dir : "");
    if (dir && dir[0] && access(sock, F_OK) == 0)
        snprintf(host, sizeof host, "%s", dir);
    else
        start_cluster();
    snprintf(db, sizeof db, "fuzz_search_%d", (int)getpid());
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
    admin_exec("postgres", sql);

    uv_loop_init(&loop);
    char text[512], err[256];
    snprintf(text, sizeof text, "host=%s port=5432 user=parley dbname=%s", host, db);
    pg_conninfo_t ci;
    if (pg_conninfo_parse(&ci, text, err, sizeof err) != 0)
        fail("conninfo", err);
    pg_pool_config_t cfg = {.name = "fuzz",
                            .size = 1,
                            .queue_max = 8,
                            .query_timeout_ms = QUERY_MS,
                            .statement_timeout_ms = QUERY_MS,
                            .connect_timeout_ms = 10000};
    if (pg_pool_new(&loop, &cfg, &ci, &pool, err, sizeof err) != 0)
        fail("pool", err);
    pg_conninfo_free(&ci);
    atexit(cleanup);
    static migrate_t m;
    m.cb = on_migrated;
    if (migrate_start(&m, pool) != 0)
        fail("cannot migrate", NULL);
    run_until(&migrated, 120000);
    pool_exec("INSERT INTO chats (id, kind, title) VALUES (-1, 'group', 'Crew'), "
              "(-2, 'group', 'Книжный клуб'), (-3, 'supergroup', '日本')");
    pool_exec("INSERT INTO messages (chat_id, id, date, sender_id, sender_name, text) VALUES "
              "(-1, 1, '2026-01-01T10:00Z', 7, 'Ann', 'The quick brown fox jumps'),"
              "(-1, 2, '2026-01-02T10:00Z', 8, 'Bob', 'quick deploy of the \"brown\" fox "
              "service: 100%_done \\\\ OR -not'),"
              "(-1, 3, '2026-01-03T10:00Z', 7, 'Ann', 'see https://example.org for the fox'),"
              "(-1, 4, '2026-01-04T10:00Z', 8, 'Bob', NULL),"
              "(-2, 1, '2026-02-01T10:00Z', 9, 'Ира', 'Я ем пельмени каждый день'),"
              "(-3, 1, '2026-03-01T10:00Z', 10, 'Ken', '日本語のテキストです。検索できますか'),"
              "(-3, 2, '2026-03-02T10:00Z', 10, 'Ken', '東京で会議があります 😀 ok')");
    return 0;
}

typedef struct {
    const char *q;
    bool regex;
    bool done;
} search_t;

/* A results page, or the one refusal allowed (an invalid regex). */
static void on_answer(void *data, int status, const char *json, const char *error)
{
    search_t *s = data;
    s->done = true;
    if (status == UV_ETIMEDOUT)
        fail("the search took more than 2 s", s->q);
    if (status != 0 && !(status == UV_EINVAL && s->regex))
        fail(error, s->q);
    if (status != 0)
        return;
    json_t *page = json_loads(json, 0, NULL);
    if (!json_is_array(json_object_get(page, "results")) ||
        !json_is_integer(json_object_get(page, "count")) ||
        !json_is_string(json_object_get(page, "mode")))
        fail("not a results page", json);
    json_decref(page);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || memchr(data, 0, size) != NULL ||
        !fuzz_utf8_valid((const char *)data + 1, size - 1))
        return 0;
    char *q = malloc(size);
    memcpy(q, data + 1, size - 1);
    q[size - 1] = '\0';
    archive_search_req_t req = {
        .query = q,
        .regex = data[0] & 4 ? q : NULL,
        .fuzzy = data[0] & 1,
        .order_by_rank = data[0] & 2,
        .limit = 20,
    };
    search_t s = {.q = q, .regex = req.regex != NULL};
    int rc = archive_search(pool, &req, on_answer, &s, NULL);
    if (rc == UV_EINVAL && req.regex && archive_regex_has_backref(req.regex, NULL)) {
        free(q); /* a back-reference: refused before any SQL (regex_guard.h) */
        return 0;
    }
    if (rc != 0)
        fail("archive_search refused the call", q);
    run_until(&s.done, QUERY_MS + 5000);
    free(q);
    return 0;
}
