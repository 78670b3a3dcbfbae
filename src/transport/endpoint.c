/* endpoint: parsing of --listen values (see endpoint.h). */
#include "transport/endpoint.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "util/strutil.h"

static int parse_hostport(endpoint_t *ep, const char *s, size_t n, char *err, size_t errcap)
{
    const char *host = s, *colon;
    size_t hlen;
    if (n > 0 && s[0] == '[') {
        const char *rb = memchr(s, ']', n);
        if (rb == NULL) {
            snprintf(err, errcap, "%s: missing ']' after the IPv6 address", ep->text);
            return UV_EINVAL;
        }
        host = s + 1;
        hlen = (size_t)(rb - host);
        colon = rb + 1 < s + n && rb[1] == ':' ? rb + 1 : NULL;
    } else {
        colon = NULL;
        for (const char *p = s; p < s + n; p++)
            if (*p == ':')
                colon = p;
        hlen = colon ? (size_t)(colon - s) : n;
    }
    if (colon == NULL) {
        snprintf(err, errcap, "%s: expected HOST:PORT (e.g. 127.0.0.1:8765)", ep->text);
        return UV_EINVAL;
    }
    char port[16];
    size_t plen = (size_t)(s + n - colon - 1);
    int64_t pv;
    if (plen == 0 || plen >= sizeof port || hlen == 0 || hlen >= sizeof ep->host) {
        snprintf(err, errcap, "%s: expected HOST:PORT (e.g. 127.0.0.1:8765)", ep->text);
        return UV_EINVAL;
    }
    memcpy(port, colon + 1, plen);
    port[plen] = '\0';
    if (!str_parse_i64(port, 0, 65535, &pv)) {
        snprintf(err, errcap, "%s: port '%s' is not a number between 0 and 65535", ep->text, port);
        return UV_EINVAL;
    }
    ep->port = (int)pv;
    memcpy(ep->host, host, hlen);
    ep->host[hlen] = '\0';
    const char *ip = strcmp(ep->host, "localhost") == 0 ? "127.0.0.1" : ep->host;
    if (uv_ip4_addr(ip, ep->port, (struct sockaddr_in *)&ep->addr) != 0 &&
        uv_ip6_addr(ip, ep->port, (struct sockaddr_in6 *)&ep->addr) != 0) {
        snprintf(err, errcap,
                 "%s: host '%s' is not an IP address (use an address such as 127.0.0.1, [::1] "
                 "or 0.0.0.0, or 'localhost')",
                 ep->text, ep->host);
        return UV_EINVAL;
    }
    return 0;
}

int endpoint_parse(endpoint_t *ep, const char *spec, char *err, size_t errcap)
{
    memset(ep, 0, sizeof *ep);
    if (!str_copy(ep->text, sizeof ep->text, spec)) {
        snprintf(err, errcap, "listen endpoint is too long: %.60s...", spec);
        return UV_EINVAL;
    }
    if (strncmp(spec, "unix:", 5) == 0) {
        ep->kind = ENDPOINT_UNIX;
        const char *path = spec + 5;
        if (strncmp(path, "//", 2) == 0)
            path += 2;
        if (path[0] == '\0') {
            snprintf(err, errcap, "%s: expected unix:PATH", spec);
            return UV_EINVAL;
        }
        if (!str_copy(ep->unix_path, sizeof ep->unix_path, path)) {
            snprintf(err, errcap, "%s: socket path longer than %d bytes", spec,
                     ENDPOINT_PATH_MAX - 1);
            return UV_EINVAL;
        }
        return 0;
    }
    const char *rest;
    if (strncmp(spec, "tcp://", 6) == 0) {
        ep->kind = ENDPOINT_TCP;
        rest = spec + 6;
    } else if (strncmp(spec, "http://", 7) == 0) {
        ep->kind = ENDPOINT_HTTP;
        rest = spec + 7;
    } else if (strncmp(spec, "https://", 8) == 0) {
        ep->kind = ENDPOINT_HTTP;
        ep->tls = true;
        rest = spec + 8;
    } else {
        snprintf(err, errcap,
                 "%s: unknown endpoint (use unix:PATH, tcp://HOST:PORT, http://HOST:PORT/PATH "
                 "or https://HOST:PORT/PATH)",
                 spec);
        return UV_EINVAL;
    }
    const char *slash = strchr(rest, '/');
    size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    int rc = parse_hostport(ep, rest, n, err, errcap);
    if (rc != 0)
        return rc;
    if (ep->kind == ENDPOINT_TCP) {
        if (slash != NULL) {
            snprintf(err, errcap, "%s: a tcp:// endpoint takes no path", spec);
            return UV_EINVAL;
        }
        return 0;
    }
    const char *path = slash ? slash : "/mcp";
    if (strcmp(path, "/") == 0)
        path = "/mcp";
    if (!str_copy(ep->http_path, sizeof ep->http_path, path) || strchr(path, '?') ||
        strchr(path, '#')) {
        snprintf(err, errcap, "%s: the path must be short and have no query or fragment", spec);
        return UV_EINVAL;
    }
    return 0;
}

bool endpoint_is_loopback(const endpoint_t *ep)
{
    if (ep->kind == ENDPOINT_UNIX)
        return true;
    if (ep->addr.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ep->addr;
        return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    }
    const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&ep->addr;
    return IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
}
