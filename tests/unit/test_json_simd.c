/* Tests for util/json_simd: what it reads it reads as jansson does (the
 * same serialisation, member order and number types included), and what
 * jansson alone must judge it leaves to jansson (NULL): a key twice or
 * holding a NUL, integers past int64, nesting or length past
 * its limits, and everything simdjson refuses. jsonrpc_parse gives
 * jansson's answer either way. */
#include "testutil.h"
#include "mcp/jsonrpc.h"
#include "util/json_simd.h"

#include <stdlib.h>
#include <string.h>

#define FLAGS (JSON_ALLOW_NUL | JSON_DECODE_ANY | JSON_REJECT_DUPLICATES)

static char *dump(const json_t *v)
{
    return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
}

/* text (len bytes) is read by json_simd_load exactly as jansson reads it. */
static void assert_read_alike(const char *text, size_t len)
{
    json_error_t je;
    json_t *fast = json_simd_load(text, len);
    json_t *slow = json_loadb(text, len, FLAGS, &je);
    if (fast == NULL)
        fail_msg("json_simd_load left to jansson: %.80s", text);
    assert_non_null(slow);
    char *a = dump(fast), *b = dump(slow);
    assert_string_equal(a, b);
    free(a);
    free(b);
    json_t *via = jsonrpc_parse(text, len, &je);
    assert_true(json_equal(via, slow));
    json_decref(via);
    json_decref(fast);
    json_decref(slow);
}

/* text is left to jansson, and jsonrpc_parse answers as jansson does:
 * the same value, or the same error. */
static void assert_left(const char *text, size_t len)
{
    json_t *fast = json_simd_load(text, len);
    if (fast != NULL)
        fail_msg("json_simd_load read what it must leave to jansson: %.80s", text);
    json_error_t je1, je2;
    json_t *slow = json_loadb(text, len, FLAGS, &je1);
    json_t *via = jsonrpc_parse(text, len, &je2);
    if (slow == NULL && strstr(je1.text, "too big") == NULL) {
        assert_null(via);
        assert_string_equal(je1.text, je2.text);
        assert_int_equal(je1.position, je2.position);
    } else if (slow != NULL) {
        assert_true(json_equal(via, slow));
    }
    json_decref(via);
    json_decref(slow);
}

#define READ_ALIKE(s) assert_read_alike(s, sizeof s - 1)
#define LEFT(s)       assert_left(s, sizeof s - 1)

static void test_read_alike(void **state)
{
    (void)state;
    READ_ALIKE("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
               "\"x\",\"arguments\":{\"q\":\"\\u0432\\u0441\\u0442\",\"limit\":20},\"_meta\":{"
               "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}");
    READ_ALIKE("{\"z\":1,\"a\":2,\"m\":{\"y\":[],\"b\":{}},\"\":null}"); /* order kept */
    READ_ALIKE("[1,-1,0,1.5,-2.25,1e2,1E-2,1e-400,0.1,9223372036854775807,"
               "-9223372036854775808,true,false,null]");
    READ_ALIKE("\"a\\u0000b\\ud83d\\ude00\\u00e9\\n\\\"\\\\\\/\""); /* NUL in a value */
    READ_ALIKE(" \t\r\n{ \"a\" : [ 1 , 2 ] } \n");
    READ_ALIKE("42");
    READ_ALIKE("[-0,-0.0,-0e0,0e0]"); /* an integer 0, then reals */
    READ_ALIKE("\"\xd0\xb2\xe2\x82\xac\xf0\x9f\x98\x80\"");
}

static void test_left_to_jansson(void **state)
{
    (void)state;
    LEFT("{\"a\":1,\"a\":2}");
    LEFT("{\"p\":{\"x\":{},\"x\":[]}}");
    LEFT("{\"a\\u0000\":1}");
    LEFT("[9223372036854775808]");
    LEFT("{\"id\":123456789012345678901234567890,\"method\":\"ping\"}");
    LEFT("[1e400]");
    LEFT("{\"a\":1,}");
    LEFT("{\"a\":1}x");
    LEFT("{\"a\":2\0}");
    LEFT("\"\\ud800\"");
    LEFT("\"\xc0\xaf\"");
    LEFT("\"\xed\xa0\x80\"");
    LEFT("");
    LEFT("[01]");
    LEFT("\"a\tb\"");
    LEFT("{\"a\":\"b\"\f}");
}

/* Deep nesting: read up to JSON_SIMD_MAX_DEPTH, left to jansson past it
 * (jansson refuses past its own 2048). */
static void test_depth(void **state)
{
    (void)state;
    for (int depth = 1000; depth <= 2100; depth += 1100) {
        char *s = malloc(2 * (size_t)depth + 1);
        memset(s, '[', (size_t)depth);
        memset(s + depth, ']', (size_t)depth);
        s[2 * depth] = '\0';
        if (depth <= JSON_SIMD_MAX_DEPTH)
            assert_read_alike(s, 2 * (size_t)depth);
        else
            assert_left(s, 2 * (size_t)depth);
        free(s);
    }
}

/* A text of JSON_SIMD_MAX_LEN bytes is read; one byte more is left. */
static void test_length(void **state)
{
    (void)state;
    size_t n = JSON_SIMD_MAX_LEN + 1;
    char *s = malloc(n + 1);
    memset(s, ' ', n);
    memcpy(s, "{\"a\":\"", 6);
    memset(s + 6, 'x', 100);
    memcpy(s + 106, "\"}", 2);
    s[n] = '\0';
    assert_read_alike(s, n - 1);
    assert_left(s, n);
    free(s);
}

/* The reader's buffers are reused: many texts of different sizes in turn
 * read alike (and ASan sees no leak or overrun). */
static void test_reuse(void **state)
{
    (void)state;
    char s[512];
    for (int i = 0; i < 300; i++) {
        int n =
            snprintf(s, sizeof s, "{\"i\":%d,\"s\":\"%.*s\"}", i, i % 200,
                     "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuv"
                     "wxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopq"
                     "rstuvwxyzabcdefghijklmnopqrstuvwxyz");
        assert_read_alike(s, (size_t)n);
    }
}

/* The params._meta of a message read by json_simd_load_rpc. */
static json_t *meta_of(const char *text, json_t **m)
{
    *m = json_simd_load_rpc(text, strlen(text));
    assert_non_null(*m);
    json_error_t je;
    json_t *slow = json_loadb(text, strlen(text), FLAGS, &je);
    assert_true(json_equal(*m, slow));
    json_decref(slow);
    return json_object_get(json_object_get(*m, "params"), "_meta");
}

#define MSG(meta) "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"_meta\":" meta "}}"

/* A _meta equal to a kept one is that one; one that differs in order, a
 * number's type or a byte is built anew; the oldest of more than
 * JSON_SIMD_SHARED is forgotten. */
static void test_shared_meta(void **state)
{
    (void)state;
    json_t *m1, *m2, *m3;
    json_t *a = meta_of(MSG("{\"v\":\"2026\",\"c\":{},\"i\":{\"n\":\"x\"}}"), &m1);
    json_t *b = meta_of(MSG("{\"v\":\"2026\",\"c\":{},\"i\":{\"n\":\"x\"}}"), &m2);
    assert_ptr_equal(a, b);
    json_decref(m2);
    static const char *const other[] = {
        MSG("{\"c\":{},\"v\":\"2026\",\"i\":{\"n\":\"x\"}}"),         /* order */
        MSG("{\"v\":\"2026\",\"c\":{},\"i\":{\"n\":\"y\"}}"),         /* a byte */
        MSG("{\"v\":\"2026\",\"c\":{},\"i\":{\"n\":\"x\",\"k\":1}}"), /* a member */
        MSG("{\"v\":\"2026\",\"c\":{\"n\":1}}"),
        MSG("{\"v\":\"2026\",\"c\":{\"n\":1.0}}"), /* integer, then real */
        MSG("{\"v\":\"2026\",\"c\":{\"n\":[true,null]}}"),
        MSG("{\"v\":\"2026\",\"c\":{\"n\":[false,null]}}"),
    };
    for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
        json_t *c = meta_of(other[i], &m3);
        assert_ptr_not_equal(a, c);
        json_decref(m3);
    }
    /* a was pushed out by the last JSON_SIMD_SHARED: built anew, equal. */
    json_t *d = meta_of(MSG("{\"v\":\"2026\",\"c\":{},\"i\":{\"n\":\"x\"}}"), &m2);
    assert_ptr_not_equal(a, d);
    assert_true(json_equal(a, d));
    json_decref(m2);
    json_decref(m1);
    /* A _meta given twice, or a key twice inside a kept one, is still left
     * to jansson. */
    LEFT(MSG("{\"v\":1},\"_meta\":{\"v\":1}"));
    assert_null(json_simd_load_rpc(MSG("{\"v\":1,\"v\":1}"), strlen(MSG("{\"v\":1,\"v\":1}"))));
}

/* json_simd_load_members takes an object of the named members only, each
 * once, and builds them as jansson would (order and number types kept);
 * anything else (another member, one twice, not an object, what
 * json_simd_load leaves) it refuses, leaving out untouched. */
static void test_members(void **state)
{
    (void)state;
    static const char *const names[] = {"id", "method", "params"};
    json_t *out[3];
    const char *ok = "{\"params\":{\"b\":[1,2.5],\"a\":null},\"id\":7}";
    assert_true(json_simd_load_members(ok, strlen(ok), names, 3, out));
    assert_int_equal(json_integer_value(out[0]), 7);
    assert_null(out[1]);
    char *p = dump(out[2]);
    assert_string_equal(p, "{\"b\":[1,2.5],\"a\":null}");
    free(p);
    json_decref(out[0]);
    json_decref(out[2]);

    static const char *const refused[] = {
        "{\"id\":1,\"other\":2}",         /* another member */
        "{\"id\":1,\"id\":2}",            /* one twice */
        "{\"id\":1,\"i\\u0064\":2}",      /* twice, once escaped */
        "[1]",                            /* not an object */
        "{\"params\":{\"k\":1,\"k\":2}}", /* a key twice inside: jansson's */
        "{\"id\":18446744073709551615}",  /* past int64: jansson's */
        "{\"id\":",                       /* not JSON */
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        json_t *sentinel = json_true();
        json_t *o[3] = {sentinel, sentinel, sentinel};
        if (json_simd_load_members(refused[i], strlen(refused[i]), names, 3, o))
            fail_msg("json_simd_load_members took %s", refused[i]);
        for (size_t k = 0; k < 3; k++)
            assert_ptr_equal(o[k], sentinel);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_alike), cmocka_unit_test(test_left_to_jansson),
        cmocka_unit_test(test_depth),      cmocka_unit_test(test_length),
        cmocka_unit_test(test_reuse),      cmocka_unit_test(test_shared_meta),
        cmocka_unit_test(test_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
