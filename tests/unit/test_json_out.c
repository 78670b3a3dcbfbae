/* Tests for util/json_out: the text is jansson's own (json_dumps, compact)
 * for every kind of value, key order kept; depth and buffer bounds; a
 * cycle refused. */
#include "testutil.h"
#include "util/json_out.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

/* v's text from json_out equals jansson's compact dump. */
static void assert_as_jansson(const json_t *v)
{
    buf_t b;
    buf_init(&b, (size_t)1 << 20);
    assert_int_equal(json_out_append(&b, v), 0);
    char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_non_null(want);
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    free(want);
    buf_free(&b);
}

static void test_scalars(void **state)
{
    (void)state;
    json_t *v[] = {
        json_true(),
        json_false(),
        json_null(),
        json_integer(0),
        json_integer(7),
        json_integer(-42),
        json_integer(INT64_MAX),
        json_integer(INT64_MIN),
        json_real(0.5),
        json_real(-1e300),
        json_real(3.0),
        json_real(0.1),
        json_string(""),
        json_string("plain"),
        json_string("quote \" backslash \\ slash / tab \t newline \n return \r"),
        json_string("\x01\x1f\x7f \b\f"),
        json_string("Привет, 世界 😀"),
        json_stringn("a\0b", 3), /* NUL inside a string */
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        assert_non_null(v[i]);
        assert_as_jansson(v[i]);
        json_decref(v[i]);
    }
}

/* Fills buf with pieces picked at random (seed: the generator's state)
 * until it holds want bytes or the next piece would pass cap; returns the
 * length. */
static size_t random_pieces(char *buf, size_t want, size_t cap, unsigned *seed,
                            const char *const *pieces, size_t npieces)
{
    size_t n = 0;
    while (n < want) {
        *seed = *seed * 1103515245u + 12345u;
        const char *piece = pieces[(*seed >> 16) % npieces];
        size_t len = strlen(piece);
        if (n + len > cap)
            break;
        memcpy(buf + n, piece, len);
        n += len;
    }
    return n;
}

/* The escaper takes 16 bytes at a time while 32 are left: every
 * character that needs escaping, at every position of an 80-byte string
 * (both sides of each 16-byte boundary, with a second one elsewhere), and
 * strings of every length to 300 made of random pieces: plain ASCII, each
 * character that needs escaping, and UTF-8 sequences of 2 to 4 bytes
 * (bytes >= 0x80 must pass as they are). */
static void test_escape_positions(void **state)
{
    (void)state;
    const char special[] = {'"', '\\', '\b', '\f', '\n', '\r', '\t', 0x01, 0x1f, 0x0b, 0x00};
    char text[80];
    for (size_t k = 0; k < sizeof special; k++)
        for (size_t at = 0; at < sizeof text; at++) {
            memset(text, 'a' + (int)(at % 26), sizeof text);
            text[at] = special[k];
            text[(at * 7 + 3) % sizeof text] = special[(k + 1) % sizeof special];
            json_t *v = json_stringn(text, sizeof text);
            assert_non_null(v);
            assert_as_jansson(v);
            json_decref(v);
        }
    static const char *const pieces[] = {
        "a",
        "Z",
        " ",
        "0",
        "~",
        "\x7f",
        "\"",
        "\\",
        "\b",
        "\f",
        "\n",
        "\r",
        "\t",
        "\x01",
        "\x1f",
        "\xc3\xa9",
        "\xe6\x97\xa5",
        "\xf0\x9f\x98\x80",
        "plain words ",
    };
    const size_t npieces = sizeof pieces / sizeof pieces[0];
    unsigned seed = 12345;
    char buf[320];
    for (size_t want = 0; want <= 300; want++) {
        size_t n = random_pieces(buf, want, sizeof buf, &seed, pieces, npieces);
        json_t *v = json_stringn(buf, n);
        assert_non_null(v);
        assert_as_jansson(v);
        json_decref(v);
    }
    /* JSON text: quotes and backslashes only, several in 16 bytes (16
     * bytes without a control character are escaped on their own path). */
    static const char *const quoted[] = {"\"", "\\", "a", "\"k\": ", "\xc3\xa9", "\\\""};
    for (size_t want = 0; want <= 300; want++) {
        size_t n =
            random_pieces(buf, want, sizeof buf, &seed, quoted, sizeof quoted / sizeof quoted[0]);
        json_t *v = json_stringn(buf, n);
        assert_non_null(v);
        assert_as_jansson(v);
        json_decref(v);
    }
    /* Long strings: the sizing pass counts each 16-byte lane's escapes in
     * a byte for at most 255 rounds (4,080 bytes): strings where every
     * byte is escaped (a lane past 255 would wrap), and random
     * pieces, past several such rounds. */
    static const char fill[] = {'"', '\\', '\n', 0x01};
    const size_t big = 20011;
    char *long_text = malloc(big);
    assert_non_null(long_text);
    for (size_t k = 0; k <= sizeof fill; k++) {
        if (k < sizeof fill) {
            memset(long_text, fill[k], big);
        } else {
            size_t n = random_pieces(long_text, big, big, &seed, pieces, npieces);
            memset(long_text + n, 'a', big - n); /* not a UTF-8 sequence cut short */
        }
        json_t *v = json_stringn(long_text, big);
        assert_non_null(v);
        assert_as_jansson(v);
        json_decref(v);
    }
    free(long_text);
}

static void test_containers(void **state)
{
    (void)state;
    json_t *v = json_pack("{s:[], s:{}, s:[i, s, {s:b, s:n}], s:{s:{s:[[i, i], []]}}}", "empty",
                          "none", "list", 1, "two", "t", 1, "n", "deep", "a", "b", 1, 2);
    assert_non_null(v);
    /* insertion order, not sorted: z before a */
    json_object_set_new(v, "z", json_integer(1));
    json_object_set_new(v, "a", json_string("é"));
    json_object_set_new(v, "key \"quoted\"\n", json_null());
    assert_as_jansson(v);
    buf_t b;
    buf_init(&b, 1000);
    assert_int_equal(json_out_append(&b, v), 0);
    assert_non_null(strstr(b.data, "\"z\":1,\"a\":\"é\""));
    json_error_t je;
    json_t *back = json_loadb(b.data, b.len, JSON_ALLOW_NUL, &je);
    assert_non_null(back);
    assert_true(json_equal(back, v));
    json_decref(back);
    buf_free(&b);
    /* a key with a NUL in it (jansson writes it, but does not read it) */
    json_object_setn_new(v, "nul\0key", 7, json_true());
    assert_as_jansson(v);
    json_decref(v);
}

/* A chain of n arrays, each inside the one before. */
static json_t *nested(int n)
{
    json_t *root = json_array(), *at = root;
    for (int i = 1; i < n; i++) {
        json_t *in = json_array();
        json_array_append_new(at, in);
        at = in;
    }
    return root;
}

static void test_depth(void **state)
{
    (void)state;
    json_t *ok = nested(JSON_OUT_MAX_DEPTH), *deep = nested(JSON_OUT_MAX_DEPTH + 1);
    buf_t b;
    buf_init(&b, (size_t)1 << 20);
    assert_int_equal(json_out_append(&b, ok), 0);
    assert_int_equal(b.len, 2 * JSON_OUT_MAX_DEPTH);
    buf_reset(&b);
    assert_int_equal(json_out_append(&b, deep), UV_EINVAL);
    /* a cycle (jansson's setters allow one through a second container) */
    json_t *x = json_array(), *y = json_array();
    json_array_append(x, y);
    json_array_append(y, x);
    buf_reset(&b);
    assert_int_equal(json_out_append(&b, x), UV_EINVAL);
    json_array_clear(y);
    json_decref(x);
    json_decref(y);
    assert_int_equal(json_out_append(&b, NULL), UV_EINVAL);
    buf_free(&b);
    json_decref(ok);
    json_decref(deep);
}

static void test_limit(void **state)
{
    (void)state;
    json_t *v = json_pack("{s:s}", "text", "0123456789");
    buf_t b;
    buf_init(&b, 10);
    assert_int_equal(json_out_append(&b, v), UV_ENOBUFS);
    buf_free(&b);
    buf_init(&b, strlen("{\"text\":\"0123456789\"}"));
    assert_int_equal(json_out_append(&b, v), 0);
    assert_string_equal(b.data, "{\"text\":\"0123456789\"}");
    buf_free(&b);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),    cmocka_unit_test(test_escape_positions),
        cmocka_unit_test(test_containers), cmocka_unit_test(test_depth),
        cmocka_unit_test(test_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
