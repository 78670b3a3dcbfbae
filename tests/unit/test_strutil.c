/* Tests for util/strutil: bounded copies, trimming, strict parsing, UTF-8. */
#include "testutil.h"
#include "util/strutil.h"

#include <string.h>

static void test_copy(void **state)
{
    (void)state;
    char buf[4];
    assert_true(str_copy(buf, sizeof buf, "abc"));
    assert_string_equal(buf, "abc");
    assert_false(str_copy(buf, sizeof buf, "abcd"));
    assert_string_equal(buf, "abc");
    assert_true(str_fmt(buf, sizeof buf, "%d", 123));
    assert_false(str_fmt(buf, sizeof buf, "%d", 1234));
}

static void test_trim(void **state)
{
    (void)state;
    char s[] = "  \t key = v \n";
    assert_string_equal(str_trim(s), "key = v");
    char e[] = "   ";
    assert_string_equal(str_trim(e), "");
}

static void test_parse_i64(void **state)
{
    (void)state;
    int64_t v;
    assert_true(str_parse_i64("42", 0, 100, &v));
    assert_int_equal(v, 42);
    assert_true(str_parse_i64("-5", -10, 10, &v));
    assert_int_equal(v, -5);
    assert_false(str_parse_i64("101", 0, 100, &v));
    assert_false(str_parse_i64("4x", 0, 100, &v));
    assert_false(str_parse_i64("", 0, 100, &v));
    assert_false(str_parse_i64(" 4", 0, 100, &v));
    assert_false(str_parse_i64("99999999999999999999", 0, INT64_MAX, &v));
}

static void test_parse_bool(void **state)
{
    (void)state;
    bool b;
    assert_true(str_parse_bool("YES", &b) && b);
    assert_true(str_parse_bool("off", &b) && !b);
    assert_false(str_parse_bool("maybe", &b));
}

static void test_utf8_seq(void **state)
{
    (void)state;
    assert_int_equal(str_utf8_seq((const unsigned char *)"a", 1), 1);
    assert_int_equal(str_utf8_seq((const unsigned char *)"", 0), 0);
    assert_int_equal(str_utf8_seq((const unsigned char *)"\xC3\xA9", 2), 2);
    assert_int_equal(str_utf8_seq((const unsigned char *)"\xE6\x97\xA5", 3), 3);
    assert_int_equal(str_utf8_seq((const unsigned char *)"\xF0\x9F\x98\x80", 4), 4);
    assert_int_equal(str_utf8_seq((const unsigned char *)"\xC3", 1), 0);         /* cut */
    assert_int_equal(str_utf8_seq((const unsigned char *)"\xC0\x80", 2), 0);     /* overlong */
    assert_int_equal(str_utf8_seq((const unsigned char *)"\xE0\x9C\x9E", 3), 0); /* overlong */
    assert_int_equal(str_utf8_seq((const unsigned char *)"\xED\xA0\x80", 3), 0); /* surrogate */
    assert_int_equal(str_utf8_seq((const unsigned char *)"\xF4\x90\x80\x80", 4), 0);
    assert_int_equal(str_utf8_seq((const unsigned char *)"\xBF", 1), 0);
    assert_int_equal(str_utf8_seq((const unsigned char *)"\xE6\x41\xA5", 3), 0);
}

static void assert_trimmed(const char *in, const char *want)
{
    char s[16];
    snprintf(s, sizeof s, "%s", in);
    str_utf8_trim_end(s);
    assert_string_equal(s, want);
}

static void test_utf8_trim_end(void **state)
{
    (void)state;
    assert_trimmed("caf\xC3\xA9", "caf\xC3\xA9");
    assert_trimmed("caf\xC3", "caf");
    assert_trimmed("x\xE6\x97", "x");
    assert_trimmed("x\xF0\x9F\x98", "x");
    assert_trimmed("x\xF0\x9F\x98\x80", "x\xF0\x9F\x98\x80");
    assert_trimmed("", "");
    assert_trimmed("ok", "ok");
}

static void test_hex(void **state)
{
    (void)state;
    const unsigned char b[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
    char out[2 * sizeof b + 1];
    memset(out, 'x', sizeof out);
    str_hex(b, sizeof b, out);
    assert_string_equal(out, "00017f80abff");
    str_hex(b, 0, out);
    assert_string_equal(out, "");
}

static void test_utf8_repair(void **state)
{
    (void)state;
    char a[] = "ab\xc3";                          /* cut at the end */
    char b[] = "a\xe2\x82 (x)";                   /* cut in the middle */
    char c[] = "\x80ok \xc3\xa9\xf0\x9f\x98\x80"; /* a stray continuation byte, then valid */
    char d[] = "\xed\xa0\x80";                    /* an encoded surrogate */
    str_utf8_repair(a);
    str_utf8_repair(b);
    str_utf8_repair(c);
    str_utf8_repair(d);
    assert_string_equal(a, "ab?");
    assert_string_equal(b, "a?? (x)");
    assert_string_equal(c, "?ok \xc3\xa9\xf0\x9f\x98\x80");
    assert_string_equal(d, "???");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy),        cmocka_unit_test(test_utf8_seq),
        cmocka_unit_test(test_trim),        cmocka_unit_test(test_parse_i64),
        cmocka_unit_test(test_parse_bool),  cmocka_unit_test(test_utf8_trim_end),
        cmocka_unit_test(test_utf8_repair), cmocka_unit_test(test_hex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
