/* Tests for transport/http_headers: the head parser's framing check (two
 * Content-Lengths, Content-Length with Transfer-Encoding, a length that is
 * not digits, two Hosts) through the phr_parse_request libh2o calls, and
 * the single-valued headers a handler reads (each refused twice, named in
 * the reason; other headers may repeat). */
#include <string.h>

#include "testutil.h"
#include "transport/http_headers.h"

struct phr_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};
int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len,
                      const char **path, size_t *path_len, int *minor_version,
                      struct phr_header *headers, size_t *num_headers, size_t last_len);

/* What the parser libh2o calls returns for a request head. */
static int parse(const char *head)
{
    const char *method, *path;
    size_t method_len, path_len, n = 16;
    int minor;
    struct phr_header h[16];
    return phr_parse_request(head, strlen(head), &method, &method_len, &path, &path_len, &minor, h,
                             &n, 0);
}

static void test_framing(void **state)
{
    (void)state;
    assert_true(http_headers_guarded());
    assert_true(parse("POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n") > 0);
    assert_true(parse("POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n") > 0);
    assert_int_equal(
        parse("POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\n"),
        -1);
    assert_int_equal(parse("POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n"),
                     -1);
    assert_int_equal(parse("POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n"),
                     -1);
    assert_int_equal(parse("POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: +2\r\n\r\n"), -1);
    assert_int_equal(parse("POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n"), -1);
    assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\nHOST: b\r\n\r\n"), -1);
    /* An incomplete head is still libh2o's answer (-2: more to read). */
    assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\n"), -2);
}

static const char *const singles[] = {"origin",       "authorization",        "mcp-session-id",
                                      "content-type", "mcp-protocol-version", "last-event-id"};

static void add(h2o_mem_pool_t *pool, h2o_req_t *req, const char *name, const char *value)
{
    h2o_add_header_by_str(pool, &req->headers, name, strlen(name), 1, NULL, value, strlen(value));
}

static void test_single(void **state)
{
    (void)state;
    char why[96];
    for (size_t twice = 0; twice <= sizeof singles / sizeof singles[0]; twice++) {
        h2o_mem_pool_t pool;
        h2o_mem_init_pool(&pool);
        h2o_req_t req;
        memset(&req, 0, sizeof req);
        /* Headers that may repeat, around each single one once. */
        add(&pool, &req, "accept", "application/json");
        for (size_t i = 0; i < sizeof singles / sizeof singles[0]; i++) {
            add(&pool, &req, singles[i], "x");
            add(&pool, &req, "x-other", "y");
        }
        add(&pool, &req, "accept", "text/event-stream");
        assert_int_equal(req.headers.size, 14);
        if (twice == sizeof singles / sizeof singles[0]) {
            assert_true(http_headers_single_ok(&req, why, sizeof why));
        } else {
            /* This one again, last. */
            add(&pool, &req, singles[twice], "z");
            assert_false(http_headers_single_ok(&req, why, sizeof why));
            char want[96];
            snprintf(want, sizeof want, "Bad Request: more than one %s header", singles[twice]);
            assert_string_equal(why, want);
        }
        h2o_mem_clear_pool(&pool);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_framing),
        cmocka_unit_test(test_single),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
