/* Tests for archive/chatwise_import's reading of app.db's columns
 * (chatwise_text_json, chatwise_meta_json): text that is not UTF-8 or
 * holds NULs, and meta with tool calls whose arguments and results are
 * JSON text; the guard that interrupts a statement of any length once
 * the import is stopped. The import itself is tested end to end
 * (tests/e2e). */
#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "import/chatwise_import.h"
#include "testutil.h"

static void assert_text(const char *in, size_t n, const char *want)
{
    json_t *v = chatwise_text_json((const unsigned char *)in, n);
    assert_true(json_is_string(v));
    assert_string_equal(json_string_value(v), want);
    json_decref(v);
}

static void test_text(void **state)
{
    (void)state;
    assert_text("plain", 5, "plain");
    assert_text("caf\xC3\xA9", 5, "caf\xC3\xA9");
    assert_text("a\0b", 3,
                "a\xEF\xBF\xBD"
                "b");
    assert_text("caf\xE9!", 5, "caf\xEF\xBF\xBD!");
    /* An overlong form and a surrogate are not UTF-8 either (found by
     * fuzz_chatwise_meta: such text became null, its content lost). */
    assert_text("x\xE0\x9C\x9Ey", 5, "x\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDy");
    assert_text("\xED\xA0\x80", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    assert_text("\xC0\x80", 2, "\xEF\xBF\xBD\xEF\xBF\xBD");
}

static void test_meta(void **state)
{
    (void)state;
    const char *in =
        "{\"toolCall\":{\"c1\":{\"arguments\":\"{\\\"q\\\":1}\",\"args\":\"not json\"}},"
        "\"toolResult\":\"[1]\"}";
    json_t *raw = json_string(in);
    json_t *m = chatwise_meta_json(raw);
    json_t *want =
        json_loads("{\"toolCall\":{\"c1\":{\"arguments\":{\"q\":1},\"args\":\"not json\"}},"
                   "\"toolResult\":[1]}",
                   0, NULL);
    assert_true(json_equal(m, want));
    json_decref(want);
    json_decref(m);
    json_decref(raw);
    raw = json_string("not JSON at all");
    m = chatwise_meta_json(raw);
    assert_ptr_equal(m, raw);
    json_decref(m);
    json_decref(raw);
    raw = json_integer(7);
    m = chatwise_meta_json(raw);
    assert_true(json_equal(m, raw));
    json_decref(m);
    json_decref(raw);
}

/* An endless statement under the guard: SQLITE_INTERRUPT soon after the
 * stop flag is set from another thread (the loop's, in the daemon). */
typedef struct {
    sqlite3 *db;
    int rc;
} endless_t;

static void *run_endless(void *arg)
{
    endless_t *e = arg;
    sqlite3_stmt *st = NULL;
    e->rc = sqlite3_prepare_v2(e->db,
                               "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
                               "SELECT count(*) FROM r",
                               -1, &st, NULL);
    if (e->rc == SQLITE_OK)
        e->rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return NULL;
}

static void test_guard_interrupts(void **state)
{
    (void)state;
    endless_t e = {0};
    assert_int_equal(sqlite3_open(":memory:", &e.db), SQLITE_OK);
    bool stop = false;
    chatwise_import__guard(e.db, &stop);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, run_endless, &e), 0);
    usleep(300 * 1000); /* well inside the statement */
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    __atomic_store_n(&stop, true, __ATOMIC_RELAXED);
    assert_int_equal(pthread_join(t, NULL), 0); /* the test's timeout bounds a hang */
    clock_gettime(CLOCK_MONOTONIC, &b);
    assert_int_equal(e.rc, SQLITE_INTERRUPT);
    long ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
    print_message("interrupted %ld ms after the stop\n", ms);
    sqlite3_close(e.db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_guard_interrupts),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
