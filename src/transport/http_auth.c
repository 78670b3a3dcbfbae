/* http_auth: the checks every Streamable HTTP request passes first (see
 * http_internal.h): its framing and single-valued headers, the Host header
 * against DNS rebinding, the Origin against the allowed origins, and the
 * bearer token with its principal. */
#include "transport/http.h"

#include <h2o.h>
#include <h2o/http2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "mcp/jsonrpc.h"
#include "mcp/session.h"
#include "util/log.h"

#include "transport/http_headers.h"
#include "transport/http_internal.h"

/* ---- request checks ----------------------------------------------------- */

static bool host_is_loopback(const char *h, size_t n)
{
    return (n == 9 && strncasecmp(h, "localhost", 9) == 0) ||
           (n == 9 && memcmp(h, "127.0.0.1", 9) == 0) || (n == 5 && memcmp(h, "[::1]", 5) == 0);
}

/* The host part of "host[:port]" or "[v6][:port]". */
static size_t host_part(const char *a, size_t n)
{
    if (n > 0 && a[0] == '[') {
        const char *rb = memchr(a, ']', n);
        return rb ? (size_t)(rb - a) + 1 : n;
    }
    const char *colon = memchr(a, ':', n);
    return colon ? (size_t)(colon - a) : n;
}

/* True when a[0..n) is "host" or "host:PORT" with a loopback host and a
 * port of digits only (no userinfo, no path: "localhost:evil.com" and
 * "localhost:1@evil.com" are not loopback authorities). */
static bool authority_is_loopback(const char *a, size_t n)
{
    size_t h = host_part(a, n);
    if (!host_is_loopback(a, h))
        return false;
    if (h == n)
        return true;
    if (a[h] != ':' || n - h - 1 < 1 || n - h - 1 > 5)
        return false;
    unsigned port = 0;
    for (size_t i = h + 1; i < n; i++) {
        if (a[i] < '0' || a[i] > '9')
            return false;
        port = port * 10 + (unsigned)(a[i] - '0');
    }
    return port >= 1 && port <= 65535;
}

static bool origin_allowed(const http_server_t *hs, h2o_iovec_t origin)
{
    const char *o = origin.base;
    size_t n = origin.len;
    const char *list = hs->opt.allowed_origins ? hs->opt.allowed_origins : "";
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len > 0 && *p == ' ') {
            p++;
            len--;
        }
        if (len == n && strncasecmp(p, o, n) == 0)
            return true;
        p += len + (comma ? 1 : 0);
        if (!comma)
            break;
    }
    size_t skip = 0;
    if (n > 7 && strncasecmp(o, "http://", 7) == 0)
        skip = 7;
    else if (n > 8 && strncasecmp(o, "https://", 8) == 0)
        skip = 8;
    else
        return false;
    return authority_is_loopback(o + skip, n - skip);
}

bool http__check_framing(h2o_req_t *req)
{
    char why[96];
    if (http_headers_single_ok(req, why, sizeof why))
        return true;
    /* What follows on the connection cannot be trusted to start a request
     * (it may be a second one hidden in the body): answer and close. */
    req->http1_is_persistent = 0;
    http__send_rpc_error(req, 400, "Bad Request", JSONRPC_INVALID_REQUEST, why);
    return false;
}

/* DNS rebinding and tokens. Returns true when the request may go on;
 * otherwise it was answered. */
bool http__check_access(http_server_t *hs, h2o_req_t *req, const token_t **tok)
{
    *tok = NULL;
    h2o_iovec_t host = req->input.authority;
    if (endpoint_is_loopback(&hs->ep) && !authority_is_loopback(host.base, host.len)) {
        http__send_rpc_error(req, 403, "Forbidden", JSONRPC_INVALID_REQUEST,
                             "Forbidden: the Host header must name a loopback host");
        return false;
    }
    h2o_iovec_t origin = http__header(req, H2O_STRLIT("origin"));
    if (origin.base != NULL && !origin_allowed(hs, origin)) {
        http__send_rpc_error(req, 403, "Forbidden", JSONRPC_INVALID_REQUEST,
                             "Forbidden: Origin not allowed (see allowed_origins)");
        return false;
    }
    if (hs->opt.tokens) {
        h2o_iovec_t auth = http__header(req, H2O_STRLIT("authorization"));
        *tok = tokens_check(hs->opt.tokens, auth.base, auth.len);
        if (*tok == NULL) {
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL,
                           H2O_STRLIT("Bearer"));
            http__send_rpc_error(req, 401, "Unauthorized", JSONRPC_INVALID_REQUEST,
                                 "Unauthorized: send Authorization: Bearer TOKEN");
            return false;
        }
    }
    return true;
}
