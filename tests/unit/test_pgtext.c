/* Tests for db/pgtext against the shared throw-away PostgreSQL: jsonb's
 * text of JSON values and timestamptz's text in UTC, each compared with
 * what the server itself prints for the same value, and COPY's escaping
 * read back through a COPY into a table. */
#include "testutil.h"

#include <libpq-fe.h>
#include <string.h>

#include "db/pgtext.h"

static PGconn *conn;

static PGconn *server(void)
{
    if (conn == NULL) {
        pg_conninfo_t ci;
        test_pg_conninfo(&ci, NULL);
        conn = PQconnectdbParams((const char *const *)ci.keys, (const char *const *)ci.vals, 0);
        pg_conninfo_free(&ci);
        if (PQstatus(conn) != CONNECTION_OK)
            fail_msg("connect: %s", PQerrorMessage(conn));
        PQclear(PQexec(conn, "SET TimeZone = 'UTC'"));
    }
    return conn;
}

/* The server's text of sql with one text parameter. */
static void server_text(const char *sql, const char *param, char *out, size_t cap)
{
    PGresult *r = PQexecParams(server(), sql, 1, NULL, &param, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s (%s): %s", sql, param, PQresultErrorMessage(r));
    snprintf(out, cap, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

static void test_jsonb_text(void **state)
{
    (void)state;
    static const char *const values[] = {
        ("{\"bb\": [1, 1.5, 5.0, null, true], \"a\": \"x\\\"\\u0001\", \"c\": {}, \"r\": 1e20, "
         "\"s\": 0.1}"),
        "[\"\\u00e9\\u4e2d\", -0.0, 1e-7, 123456789012345678, {\"k\": {\"kk\": null}}]",
        "{\"z\": 1, \"yy\": 2, \"x\": 3, \"aaa\": [], \"b\": \"\\t\\n\\\\\"}",
        "\"just a string\"",
        "3.14159",
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        json_error_t je;
        json_t *v = json_loads(values[i], JSON_DECODE_ANY, &je);
        assert_non_null(v);
        /* What the mapping does: jansson's text of the value, read by the
         * server as jsonb, printed by the server. */
        char *jansson = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        char want[1024];
        server_text("SELECT $1::jsonb::text", jansson, want, sizeof want);
        buf_t b;
        buf_init(&b, 4096);
        assert_int_equal(pgtext_jsonb(&b, v, false), 0);
        assert_int_equal(buf_append(&b, "", 1), 0);
        assert_string_equal(b.data, want);
        buf_free(&b);
        server_text("SELECT jsonb_strip_nulls($1::jsonb)::text", jansson, want, sizeof want);
        buf_init(&b, 4096);
        assert_int_equal(pgtext_jsonb(&b, v, true), 0);
        assert_int_equal(buf_append(&b, "", 1), 0);
        assert_string_equal(b.data, want);
        buf_free(&b);
        free(jansson);
        json_decref(v);
    }
}

static void test_timestamptz(void **state)
{
    (void)state;
    /* Unix seconds (and microseconds) across eras, leap days, BC years. */
    static const struct {
        int64_t secs, usecs;
    } t[] = {
        {0, 0},
        {1704103200, 0},
        {951782400, 500000}, /* 2000-02-29 */
        {-1, 1},
        {-62135596800, 0},      /* 0001-01-01 */
        {-62135596801, 0},      /* 1 BC */
        {-210866803200, 0},     /* 4713 BC */
        {253402300799, 999999}, /* 9999-12-31 */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int64_t us = (t[i].secs - PGTEXT_EPOCH_UNIX) * PGTEXT_USECS + t[i].usecs;
        char param[64], want[64];
        snprintf(param, sizeof param, "%lld,%lld", (long long)t[i].secs, (long long)t[i].usecs);
        server_text("SELECT (to_timestamp(split_part($1, ',', 1)::bigint) + "
                    "split_part($1, ',', 2)::bigint * interval '1 microsecond')::text",
                    param, want, sizeof want);
        buf_t b;
        buf_init(&b, 256);
        assert_int_equal(pgtext_timestamptz(&b, us), 0);
        assert_int_equal(buf_append(&b, "", 1), 0);
        assert_string_equal(b.data, want);
        buf_free(&b);
    }
    /* 1970-01-01 is day 0; 2000-03-01 follows a leap day. */
    assert_int_equal(pgtext_days_from_civil(1970, 1, 1), 0);
    assert_int_equal(pgtext_days_from_civil(2000, 3, 1) - pgtext_days_from_civil(2000, 2, 28), 2);
}

/* A field escaped for COPY's text format comes back from the server as it
 * was. */
static void test_copy_escape(void **state)
{
    (void)state;
    static const char text[] = "tab\there\nnew line\\back slash\rcr \\N not null \xe4\xb8\xad";
    buf_t b;
    buf_init(&b, 256);
    assert_int_equal(pgtext_copy_escape(&b, text, sizeof text - 1), 0);
    assert_int_equal(buf_append(&b, "\n", 1), 0);
    PGconn *c = server();
    PQclear(PQexec(c, "CREATE TEMP TABLE t_copy (v text)"));
    PGresult *r = PQexec(c, "COPY t_copy FROM STDIN");
    assert_int_equal(PQresultStatus(r), PGRES_COPY_IN);
    PQclear(r);
    assert_int_equal(PQputCopyData(c, b.data, (int)b.len), 1);
    assert_int_equal(PQputCopyEnd(c, NULL), 1);
    r = PQgetResult(c);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("COPY: %s", PQresultErrorMessage(r));
    PQclear(r);
    r = PQexec(c, "SELECT v FROM t_copy");
    assert_int_equal(PQntuples(r), 1);
    assert_string_equal(PQgetvalue(r, 0, 0), text);
    PQclear(r);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jsonb_text),
        cmocka_unit_test(test_timestamptz),
        cmocka_unit_test(test_copy_escape),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (conn)
        PQfinish(conn);
    return rc;
}
