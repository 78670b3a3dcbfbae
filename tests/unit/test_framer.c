/* Tests for mcp/framer: newline framing, CRLF, empty lines, split reads,
 * oversized messages skipped without ending the stream, pause/resume, a
 * final line without a newline, delivery without a copy and the release
 * of a large buffer once emptied. */
#include <string.h>

#include "mcp/framer.h"
#include "testutil.h"

typedef struct {
    char msgs[16][64];
    int n;
    int oversize;
    int pause_after; /* pause once n reaches this (0: never) */
} sink_t;

static bool on_msg(framer_t *f, const char *msg, size_t len)
{
    sink_t *s = f->data;
    assert_true(s->n < 16);
    snprintf(s->msgs[s->n++], 64, "%.*s", (int)len, msg);
    return !(s->pause_after && s->n == s->pause_after);
}

static void on_oversize(framer_t *f, size_t limit)
{
    sink_t *s = f->data;
    assert_int_equal(limit, 8);
    s->oversize++;
}

static void test_split_and_crlf(void **state)
{
    (void)state;
    sink_t s = {0};
    framer_t f;
    framer_init(&f, 8, on_msg, on_oversize, &s);
    assert_int_equal(framer_feed(&f, "ab", 2), 0);
    assert_int_equal(s.n, 0);
    assert_int_equal(framer_feed(&f, "c\r\n\n\nde", 7), 0);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.msgs[0], "abc");
    assert_int_equal(framer_feed(&f, "f\n", 2), 0);
    assert_string_equal(s.msgs[1], "def");
    framer_free(&f);
}

static void test_oversize_is_skipped(void **state)
{
    (void)state;
    sink_t s = {0};
    framer_t f;
    framer_init(&f, 8, on_msg, on_oversize, &s);
    /* 8 bytes is fine; 9 is not, across several reads. */
    assert_int_equal(framer_feed(&f, "12345678\n12345", 14), 0);
    assert_int_equal(framer_feed(&f, "6789", 4), 0);
    assert_int_equal(s.oversize, 1);
    assert_int_equal(framer_feed(&f, "0000000000000\nok\n", 17), 0);
    assert_int_equal(s.oversize, 1); /* reported once per message */
    assert_int_equal(s.n, 2);
    assert_string_equal(s.msgs[0], "12345678");
    assert_string_equal(s.msgs[1], "ok");
    /* A complete oversized line in one read. */
    assert_int_equal(framer_feed(&f, "123456789012\nyes\n", 17), 0);
    assert_int_equal(s.oversize, 2);
    assert_string_equal(s.msgs[2], "yes");
    /* Memory stays bounded: nothing of the skipped bytes is kept. */
    assert_true(f.pending.len == 0);
    framer_free(&f);
}

static void test_pause_resume_finish(void **state)
{
    (void)state;
    sink_t s = {.pause_after = 1};
    framer_t f;
    framer_init(&f, 8, on_msg, on_oversize, &s);
    assert_int_equal(framer_feed(&f, "a\nb\nc", 5), 0);
    assert_int_equal(s.n, 1); /* paused after the first */
    assert_false(framer_finish(&f));
    s.pause_after = 0;
    framer_resume(&f);
    assert_int_equal(s.n, 2);
    assert_true(framer_finish(&f));
    assert_int_equal(s.n, 3);
    assert_string_equal(s.msgs[2], "c");
    framer_free(&f);
}

/* Whole messages in one read are delivered without a copy; the room a
 * large unfinished message took is given back once it is delivered. */
static void test_no_copy_and_release(void **state)
{
    (void)state;
    sink_t s = {0};
    framer_t f;
    framer_init(&f, 10000, on_msg, on_oversize, &s);
    assert_int_equal(framer_feed(&f, "one\ntwo\n", 8), 0);
    assert_int_equal(s.n, 2);
    assert_int_equal(f.pending.cap, 0); /* nothing was buffered */
    char big[6001];
    memset(big, 'x', 6000);
    big[6000] = '\n';
    assert_int_equal(framer_feed(&f, big, 3000), 0); /* unfinished: buffered */
    assert_true(f.pending.cap >= 3000);
    assert_int_equal(framer_feed(&f, big + 3000, 3001), 0);
    assert_int_equal(s.n, 3);
    assert_int_equal(strlen(s.msgs[2]), 63); /* the sink keeps 63 chars */
    assert_int_equal(f.pending.cap, 0);      /* released once delivered */
    /* A pause inside one read keeps the rest, in order. */
    s.pause_after = 4;
    assert_int_equal(framer_feed(&f, "p\nq\nr\n", 6), 0);
    assert_int_equal(s.n, 4);
    s.pause_after = 0;
    framer_resume(&f);
    assert_int_equal(s.n, 6);
    assert_string_equal(s.msgs[4], "q");
    assert_string_equal(s.msgs[5], "r");
    framer_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_and_crlf),
        cmocka_unit_test(test_oversize_is_skipped),
        cmocka_unit_test(test_pause_resume_finish),
        cmocka_unit_test(test_no_copy_and_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
