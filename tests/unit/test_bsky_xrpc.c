/* Tests for upstream/bluesky/bsky_xrpc: the errors of failed XRPC calls (token,
 * rate limit, bodies that are not JSON), the rate-limit message, a JWT's
 * expiry, session answers with their PDS, feeds, and PDS trust. */
#include <jansson.h>
#include <string.h>

#include "testutil.h"
#include "upstream/bluesky/bsky_xrpc.h"

static void test_error(void **state)
{
    (void)state;
    char why[300];
    const char *b = "{\"error\":\"ExpiredToken\",\"message\":\"Token has expired\"}";
    assert_int_equal(bsky_xrpc_error(b, strlen(b), 400, why, sizeof why), BSKY_XRPC_TOKEN);
    assert_string_equal(why, "ExpiredToken: Token has expired");
    b = "{\"error\":\"InvalidToken\"}";
    assert_int_equal(bsky_xrpc_error(b, strlen(b), 400, why, sizeof why), BSKY_XRPC_TOKEN);
    assert_string_equal(why, "InvalidToken");
    b = "{\"error\":\"RateLimitExceeded\",\"message\":\"slow down\"}";
    assert_int_equal(bsky_xrpc_error(b, strlen(b), 429, why, sizeof why), BSKY_XRPC_RATE);
    b = "<html>Bad Gateway</html>";
    assert_int_equal(bsky_xrpc_error(b, strlen(b), 502, why, sizeof why), BSKY_XRPC_OTHER);
    assert_string_equal(why, "HTTP 502");
    assert_int_equal(bsky_xrpc_error(NULL, 0, 500, why, sizeof why), BSKY_XRPC_OTHER);
    assert_string_equal(why, "HTTP 500");
    /* An empty name says nothing (found by fuzz_xrpc: the reason was ""). */
    b = "{\"error\":\"\",\"message\":\"\"}";
    assert_int_equal(bsky_xrpc_error(b, strlen(b), 401, why, sizeof why), BSKY_XRPC_OTHER);
    assert_string_equal(why, "HTTP 401");
    /* A message cut to fit stays UTF-8 (found by fuzz_xrpc: half an "é"
     * made the tool's error text unencodable, and the session was closed). */
    char body[400];
    snprintf(body, sizeof body, "{\"error\":\"E\",\"message\":\"%0195d\xC3\xA9\xC3\xA9\xC3\xA9\"}",
             0);
    assert_int_equal(bsky_xrpc_error(body, strlen(body), 400, why, sizeof why), BSKY_XRPC_OTHER);
    assert_int_equal(strlen(why), 3 + 195 + 4);
    assert_memory_equal(why + strlen(why) - 2, "\xC3\xA9", 2);
    b = "{\"error\":\"Bad\",\"message\":\"\"}";
    assert_int_equal(bsky_xrpc_error(b, strlen(b), 400, why, sizeof why), BSKY_XRPC_OTHER);
    assert_string_equal(why, "Bad");
}

static void test_rate_limit(void **state)
{
    (void)state;
    char msg[300];
    bsky_rate_limit_message(msg, sizeof msg, "logins", "1700000600", 1700000000);
    assert_string_equal(
        msg, "Bluesky rate-limits logins; it resets at 2023-11-14T22:23:20Z (in 10 min).");
    bsky_rate_limit_message(msg, sizeof msg, "logins", "soon", 1700000000);
    assert_string_equal(msg, "Bluesky rate-limits logins; try again later.");
    bsky_rate_limit_message(msg, sizeof msg, "logins", "", 1700000000);
    assert_string_equal(msg, "Bluesky rate-limits logins; try again later.");
}

static void test_jwt(void **state)
{
    (void)state;
    /* {"exp":1763900000,"sub":"did:plc:abc"} */
    assert_int_equal(bsky_jwt_exp("h.eyJleHAiOjE3NjM5MDAwMDAsInN1YiI6ImRpZDpwbGM6YWJjIn0.s"),
                     1763900000);
    assert_int_equal(bsky_jwt_exp("no dots"), 0);
    assert_int_equal(bsky_jwt_exp("a.!!!.b"), 0);
    assert_int_equal(bsky_jwt_exp(NULL), 0);
}

static void test_session(void **state)
{
    (void)state;
    const char *b =
        "{\"accessJwt\":\"a\",\"refreshJwt\":\"r\",\"handle\":\"h\",\"did\":\"d\","
        "\"didDoc\":{\"service\":[{\"id\":\"#other\",\"serviceEndpoint\":\"https://x\"},"
        "{\"id\":\"#atproto_pds\",\"serviceEndpoint\":\"ftp://no\"},"
        "{\"id\":\"did:plc:d#atproto_pds\",\"serviceEndpoint\":\"https://pds\"}]}}";
    bsky_session_answer_t a;
    assert_int_equal(bsky_session_answer(b, strlen(b), &a), 0);
    assert_string_equal(a.access, "a");
    assert_string_equal(a.refresh, "r");
    assert_string_equal(a.handle, "h");
    assert_string_equal(a.did, "d");
    assert_string_equal(a.pds, "https://pds");
    bsky_session_answer_free(&a);
    b = "{\"accessJwt\":\"a\"}";
    assert_int_equal(bsky_session_answer(b, strlen(b), &a), UV_EPROTO);
    bsky_session_answer_free(&a);
}

static void test_feed(void **state)
{
    (void)state;
    json_t *doc = json_loads("{\"feed\":[{\"post\":{\"uri\":\"1\"}},{\"reply\":{}},{\"post\":2},"
                             "{\"post\":{\"uri\":\"3\"}}]}",
                             0, NULL);
    json_t *posts = bsky_feed_posts(doc);
    json_t *want = json_loads("[{\"uri\":\"1\"},{\"uri\":\"3\"}]", 0, NULL);
    assert_true(json_equal(posts, want));
    json_decref(want);
    json_decref(posts);
    json_decref(doc);
}

static void test_trust(void **state)
{
    (void)state;
    const char *svc = "https://bsky.social";
    const char *sfx = ".bsky.network";
    assert_true(bsky_pds_trusted(svc, "https://bsky.social", sfx));
    assert_true(bsky_pds_trusted(svc, "https://morel.us-east.host.bsky.network", sfx));
    assert_false(bsky_pds_trusted(svc, "http://morel.us-east.host.bsky.network", sfx));
    assert_false(bsky_pds_trusted(svc, "https://evil.example/x.bsky.network", sfx));
    assert_false(bsky_pds_trusted(svc, "https://a@b.bsky.network", sfx));
    assert_false(bsky_pds_trusted(svc, "https://b.bsky.network:8443", sfx));
    assert_false(bsky_pds_trusted(svc, "https://bsky.network", sfx));
    char o[64];
    bsky_url_origin(o, sizeof o, "https://h:1/p?q#f");
    assert_string_equal(o, "https://h:1");
    bsky_url_origin(o, sizeof o, "no scheme");
    assert_string_equal(o, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error), cmocka_unit_test(test_rate_limit),
        cmocka_unit_test(test_jwt),   cmocka_unit_test(test_session),
        cmocka_unit_test(test_feed),  cmocka_unit_test(test_trust),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
