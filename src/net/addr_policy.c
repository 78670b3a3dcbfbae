/* addr_policy: address and URL checks for untrusted fetches (see
 * addr_policy.h). */
#include "net/addr_policy.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* IPv4 ranges that are never fetched (RFC 6890 and friends). */
static const struct {
    uint32_t net;
    int bits;
    const char *what;
} v4_refused[] = {
    {0x00000000, 8, "\"this network\" address"},   {0x0a000000, 8, "private address"},
    {0x64400000, 10, "carrier-grade NAT address"}, {0x7f000000, 8, "loopback address"},
    {0xa9fe0000, 16, "link-local address"},        {0xac100000, 12, "private address"},
    {0xc0000000, 24, "IETF protocol address"},     {0xc0000200, 24, "documentation address"},
    {0xc0a80000, 16, "private address"},           {0xc6120000, 15, "benchmarking address"},
    {0xc6336400, 24, "documentation address"},     {0xcb007100, 24, "documentation address"},
    {0xe0000000, 4, "multicast address"},          {0xf0000000, 4, "reserved address"},
};

static const char *v4_class(uint32_t a)
{
    for (size_t i = 0; i < sizeof v4_refused / sizeof v4_refused[0]; i++) {
        uint32_t mask = v4_refused[i].bits ? 0xffffffffu << (32 - v4_refused[i].bits) : 0;
        if ((a & mask) == v4_refused[i].net)
            return v4_refused[i].what;
    }
    return NULL;
}

static const char *v6_class(const struct in6_addr *a)
{
    const uint8_t *b = a->s6_addr;
    if (IN6_IS_ADDR_UNSPECIFIED(a))
        return "unspecified address";
    if (IN6_IS_ADDR_LOOPBACK(a))
        return "loopback address";
    if (IN6_IS_ADDR_V4MAPPED(a) || IN6_IS_ADDR_V4COMPAT(a))
        return "IPv4-mapped address";
    if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b)
        return "NAT64 address";
    if ((b[0] & 0xfe) == 0xfc)
        return "unique-local address";
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
        return "link-local address";
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
        return "site-local address";
    if (b[0] == 0xff)
        return "multicast address";
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8)
        return "documentation address";
    if (b[0] == 0x20 && b[1] == 0x02)
        return "6to4 address";
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && b[3] == 0x00)
        return "Teredo address";
    if ((b[0] & 0xe0) != 0x20)
        return "reserved address"; /* only 2000::/3 is global unicast */
    return NULL;
}

bool addr_policy_allows(const addr_policy_t *p, const struct sockaddr *sa, char *why, size_t cap)
{
    char text[INET6_ADDRSTRLEN] = "?";
    const char *cls = NULL;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
        cls = v4_class(ntohl(in->sin_addr.s_addr));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
        cls = v6_class(&in6->sin6_addr);
    } else {
        snprintf(why, cap, "address family %d", sa->sa_family);
        return false;
    }
    if (cls == NULL)
        return true;
    for (int i = 0; i < p->nallow; i++)
        if (strcmp(p->allow[i], text) == 0)
            return true;
    snprintf(why, cap, "%s %s", cls, text);
    return false;
}

bool addr_policy_url_ok(const addr_policy_t *p, const char *url, char *why, size_t cap)
{
    CURLU *u = curl_url();
    if (u == NULL) {
        snprintf(why, cap, "out of memory");
        return false;
    }
    bool ok = false;
    char *scheme = NULL, *user = NULL, *password = NULL, *host = NULL;
    if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
        snprintf(why, cap, "not a valid URL");
        goto done;
    }
    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
    curl_url_get(u, CURLUPART_USER, &user, 0);
    curl_url_get(u, CURLUPART_PASSWORD, &password, 0);
    curl_url_get(u, CURLUPART_HOST, &host, 0);
    if (scheme == NULL ||
        (strcmp(scheme, "https") != 0 && !(p->allow_http && strcmp(scheme, "http") == 0))) {
        snprintf(why, cap, "scheme %s is not allowed (use https)", scheme ? scheme : "(none)");
        goto done;
    }
    if (user != NULL || password != NULL) {
        snprintf(why, cap, "credentials in the URL are not allowed");
        goto done;
    }
    if (host == NULL || host[0] == '\0') {
        snprintf(why, cap, "the URL has no host");
        goto done;
    }
    ok = true;
done:
    curl_free(scheme);
    curl_free(user);
    curl_free(password);
    curl_free(host);
    curl_url_cleanup(u);
    return ok;
}
