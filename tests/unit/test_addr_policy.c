/* Tests for net/addr_policy: every refused range (IPv4 and IPv6, mapped
 * addresses included), public addresses allowed, the test allow-list, and
 * URL checks (scheme, credentials, host). */
#include <arpa/inet.h>
#include <string.h>

#include "net/addr_policy.h"
#include "testutil.h"

static bool allows(const addr_policy_t *p, const char *ip, char *why)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    if (strchr(ip, ':')) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        assert_int_equal(inet_pton(AF_INET6, ip, &a->sin6_addr), 1);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, ip, &a->sin_addr), 1);
    }
    return addr_policy_allows(p, (struct sockaddr *)&ss, why, 128);
}

static void test_ranges(void **state)
{
    (void)state;
    addr_policy_t p = {0};
    char why[128];
    const char *refused[] = {"127.0.0.1",
                             "10.1.2.3",
                             "172.16.0.1",
                             "172.31.255.255",
                             "192.168.1.1",
                             "169.254.169.254",
                             "100.64.0.1",
                             "0.0.0.0",
                             "224.0.0.1",
                             "240.0.0.1",
                             "255.255.255.255",
                             "192.0.2.1",
                             "::1",
                             "::",
                             "fe80::1",
                             "fc00::1",
                             "fd12:3456::1",
                             "ff02::1",
                             "::ffff:127.0.0.1",
                             "::ffff:8.8.8.8",
                             "64:ff9b::808:808",
                             "2001:db8::1",
                             "2002:7f00:1::1"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (allows(&p, refused[i], why))
            fail_msg("%s was allowed", refused[i]);
    assert_false(allows(&p, "169.254.169.254", why));
    assert_non_null(strstr(why, "link-local address 169.254.169.254"));
    assert_false(allows(&p, "::ffff:127.0.0.1", why));
    assert_non_null(strstr(why, "IPv4-mapped"));
    const char *ok[] = {"8.8.8.8",    "1.1.1.1",         "149.154.167.220",
                        "172.32.0.1", "2001:4860::8888", "2a00:1450::1"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!allows(&p, ok[i], why))
            fail_msg("%s was refused: %s", ok[i], why);
    strcpy(p.allow[p.nallow++], "127.0.0.1");
    assert_true(allows(&p, "127.0.0.1", why));
    assert_false(allows(&p, "127.0.0.2", why));
}

static void test_urls(void **state)
{
    (void)state;
    addr_policy_t p = {0};
    char why[128];
    assert_true(addr_policy_url_ok(&p, "https://example.org/a.jpg", why, sizeof why));
    assert_false(addr_policy_url_ok(&p, "http://example.org/a.jpg", why, sizeof why));
    assert_non_null(strstr(why, "scheme http"));
    assert_false(addr_policy_url_ok(&p, "file:///etc/passwd", why, sizeof why));
    assert_false(addr_policy_url_ok(&p, "https://user:pw@example.org/", why, sizeof why));
    assert_non_null(strstr(why, "credentials"));
    assert_false(addr_policy_url_ok(&p, "not a url", why, sizeof why));
    p.allow_http = true;
    assert_true(addr_policy_url_ok(&p, "http://example.org/", why, sizeof why));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_urls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
