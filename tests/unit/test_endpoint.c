/* Tests for transport/endpoint: every --listen form, loopback detection,
 * and clear errors for bad values. */
#include <string.h>

#include "testutil.h"
#include "transport/endpoint.h"

static void test_forms(void **state)
{
    (void)state;
    endpoint_t ep;
    char err[256];
    assert_int_equal(endpoint_parse(&ep, "unix:/tmp/p.sock", err, sizeof err), 0);
    assert_int_equal(ep.kind, ENDPOINT_UNIX);
    assert_string_equal(ep.unix_path, "/tmp/p.sock");
    assert_int_equal(endpoint_parse(&ep, "tcp://127.0.0.1:8765", err, sizeof err), 0);
    assert_int_equal(ep.kind, ENDPOINT_TCP);
    assert_int_equal(ep.port, 8765);
    assert_true(endpoint_is_loopback(&ep));
    assert_int_equal(endpoint_parse(&ep, "http://[::1]:80/x/mcp", err, sizeof err), 0);
    assert_int_equal(ep.kind, ENDPOINT_HTTP);
    assert_string_equal(ep.http_path, "/x/mcp");
    assert_true(endpoint_is_loopback(&ep));
    assert_int_equal(endpoint_parse(&ep, "https://localhost:8443", err, sizeof err), 0);
    assert_true(ep.tls);
    assert_string_equal(ep.http_path, "/mcp");
    assert_int_equal(endpoint_parse(&ep, "tcp://0.0.0.0:1", err, sizeof err), 0);
    assert_false(endpoint_is_loopback(&ep));
}

static void test_errors(void **state)
{
    (void)state;
    endpoint_t ep;
    char err[256];
    assert_int_equal(endpoint_parse(&ep, "ftp://x", err, sizeof err), UV_EINVAL);
    assert_non_null(strstr(err, "unknown endpoint"));
    assert_int_equal(endpoint_parse(&ep, "tcp://127.0.0.1", err, sizeof err), UV_EINVAL);
    assert_non_null(strstr(err, "HOST:PORT"));
    assert_int_equal(endpoint_parse(&ep, "tcp://127.0.0.1:99999", err, sizeof err), UV_EINVAL);
    assert_non_null(strstr(err, "port"));
    assert_int_equal(endpoint_parse(&ep, "tcp://example.com:80", err, sizeof err), UV_EINVAL);
    assert_non_null(strstr(err, "not an IP address"));
    assert_int_equal(endpoint_parse(&ep, "tcp://127.0.0.1:80/p", err, sizeof err), UV_EINVAL);
    assert_int_equal(endpoint_parse(&ep, "unix:", err, sizeof err), UV_EINVAL);
    assert_int_equal(endpoint_parse(&ep, "http://127.0.0.1:80/a?b", err, sizeof err), UV_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
