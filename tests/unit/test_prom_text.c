/* Tests for util/prom_text: the exact bytes of family headers and sample
 * lines, the escaping of label values and HELP text, and a full buffer
 * left as it was. */
#include "testutil.h"
#include "util/prom_text.h"

#include <math.h>
#include <string.h>
#include <uv.h>

#define assert_out(b, s)                                                                           \
    do {                                                                                           \
        assert_int_equal((b)->len, strlen(s));                                                     \
        assert_memory_equal((b)->data, (s), strlen(s));                                            \
        assert_int_equal((b)->data[(b)->len], '\0');                                               \
    } while (0)

static void test_family(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 4096);
    assert_int_equal(
        prom_text_family(&b, "parley_db_pool", PROM_TEXT_GAUGE, "Database pool state."), 0);
    assert_int_equal(prom_text_family(&b, "x_total", PROM_TEXT_COUNTER, NULL), 0);
    assert_int_equal(prom_text_family(&b, "d", PROM_TEXT_HISTOGRAM, "Back\\slash\nnew \"line\"."),
                     0);
    assert_out(&b, "# HELP parley_db_pool Database pool state.\n"
                   "# TYPE parley_db_pool gauge\n"
                   "# TYPE x_total counter\n"
                   "# HELP d Back\\\\slash\\nnew \"line\".\n"
                   "# TYPE d histogram\n");
    buf_free(&b);
}

static void test_samples(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 4096);
    assert_int_equal(prom_text_int(&b, "g", NULL, -3), 0);
    assert_int_equal(prom_text_int(&b, "g", PROM_LABELS("transport", "http"), 2147483647), 0);
    assert_int_equal(prom_text_uint(&b, "c_total", NULL, 18446744073709551615ULL), 0);
    assert_int_equal(
        prom_text_uint(&b, "parley_db_pool", PROM_LABELS("pool", "rw", "state", "ready"), 4), 0);
    assert_int_equal(prom_text_double(&b, "s_sum", NULL, 0.0), 0);
    assert_int_equal(prom_text_double(&b, "s_sum", NULL, 0.0032471), 0);
    assert_int_equal(prom_text_double(&b, "s_sum", PROM_LABELS("a", "b"), 1234.5), 0);
    assert_int_equal(prom_text_double(&b, "n", NULL, NAN), 0);
    assert_int_equal(prom_text_double(&b, "n", NULL, INFINITY), 0);
    assert_int_equal(prom_text_double(&b, "n", NULL, -INFINITY), 0);
    assert_int_equal(prom_text_uint(&b, "e", (const char *const[]){NULL}, 1), 0);
    assert_out(&b, "g -3\n"
                   "g{transport=\"http\"} 2147483647\n"
                   "c_total 18446744073709551615\n"
                   "parley_db_pool{pool=\"rw\",state=\"ready\"} 4\n"
                   "s_sum 0.000000\n"
                   "s_sum 0.003247\n"
                   "s_sum{a=\"b\"} 1234.500000\n"
                   "n NaN\n"
                   "n +Inf\n"
                   "n -Inf\n"
                   "e 1\n");
    buf_free(&b);
}

/* A label value is escaped: \ as \\, " as \", a newline as \n; nothing
 * else. */
static void test_label_escaping(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 4096);
    assert_int_equal(prom_text_int(&b, "m", PROM_LABELS("class", "a\\b\"c\nd\te", "k", ""), 1), 0);
    assert_int_equal(prom_text_int(&b, "m", PROM_LABELS("v", "\\\\\"\"\n\n"), 2), 0);
    assert_out(&b, "m{class=\"a\\\\b\\\"c\\nd\te\",k=\"\"} 1\n"
                   "m{v=\"\\\\\\\\\\\"\\\"\\n\\n\"} 2\n");
    buf_free(&b);
}

static void test_one_sample_families(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 4096);
    assert_int_equal(prom_text_counter(&b, "parley_busy_total", "Requests refused as busy.", 7), 0);
    assert_int_equal(prom_text_gauge(&b, "parley_active_calls", "Calls in flight.", 0), 0);
    assert_int_equal(prom_text_counter(&b, "parley_bluesky_calls_total", NULL, 12), 0);
    assert_out(&b, "# HELP parley_busy_total Requests refused as busy.\n"
                   "# TYPE parley_busy_total counter\nparley_busy_total 7\n"
                   "# HELP parley_active_calls Calls in flight.\n"
                   "# TYPE parley_active_calls gauge\nparley_active_calls 0\n"
                   "# TYPE parley_bluesky_calls_total counter\n"
                   "parley_bluesky_calls_total 12\n");
    buf_free(&b);
}

/* Past the limit a call writes nothing and says so; what fits still goes
 * in after it. */
static void test_full(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 40);
    assert_int_equal(prom_text_int(&b, "abc", PROM_LABELS("k", "v"), 1), 0);
    const char *before = "abc{k=\"v\"} 1\n";
    assert_out(&b, before);
    /* the labels do not fit, the value does not, the escaping does not */
    assert_int_equal(prom_text_int(&b, "abc", PROM_LABELS("k", "vvvvvvvvvvvvvvvvvvvvvvvvvvv"), 1),
                     UV_ENOBUFS);
    assert_out(&b, before);
    assert_int_equal(prom_text_uint(&b, "abcdefghijklmnopq", NULL, 1234567890ULL), UV_ENOBUFS);
    assert_out(&b, before);
    assert_int_equal(prom_text_int(&b, "m", PROM_LABELS("v", "\n\n\n\n\n\n\n\n\n\n\n\n"), 1),
                     UV_ENOBUFS);
    assert_out(&b, before);
    assert_int_equal(prom_text_double(&b, "d", NULL, 1e30), UV_ENOBUFS);
    assert_out(&b, before);
    /* a header fits, its sample does not: neither is written */
    assert_int_equal(prom_text_counter(&b, "x", NULL, 12345678901234ULL), UV_ENOBUFS);
    assert_out(&b, before);
    assert_int_equal(prom_text_family(&b, "x", PROM_TEXT_GAUGE, "a help too long to fit"),
                     UV_ENOBUFS);
    assert_out(&b, before);
    assert_int_equal(prom_text_gauge(&b, "x", NULL, 1), 0);
    assert_out(&b, "abc{k=\"v\"} 1\n# TYPE x gauge\nx 1\n");
    buf_free(&b);

    /* nothing written yet, nothing fits: the buffer stays empty */
    buf_init(&b, 4);
    assert_int_equal(prom_text_int(&b, "abcd", NULL, 1), UV_ENOBUFS);
    assert_int_equal(b.len, 0);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family),         cmocka_unit_test(test_samples),
        cmocka_unit_test(test_label_escaping), cmocka_unit_test(test_one_sample_families),
        cmocka_unit_test(test_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
