/* http_headers: a request head's framing, Host and single-valued headers
 * (see http_headers.h). */
#include "transport/http_headers.h"

#include <dlfcn.h>
#include <stdio.h>
#include <strings.h>

/* picohttpparser's header, as libh2o 2.2.5 is built with it (its header
 * is not installed). */
struct phr_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};

typedef int (*phr_parse_request_fn)(const char *buf, size_t len, const char **method,
                                    size_t *method_len, const char **path, size_t *path_len,
                                    int *minor_version, struct phr_header *headers,
                                    size_t *num_headers, size_t last_len);

int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len,
                      const char **path, size_t *path_len, int *minor_version,
                      struct phr_header *headers, size_t *num_headers, size_t last_len);

static bool name_is(const struct phr_header *h, const char *lcname, size_t n)
{
    return h->name != NULL && h->name_len == n && strncasecmp(h->name, lcname, n) == 0;
}

/* True when a parsed head frames its body one way at most and names one
 * Host at most. */
static bool head_ok(const struct phr_header *h, size_t n)
{
    int cl = 0, te = 0, host = 0;
    for (size_t i = 0; i < n; i++) {
        if (name_is(&h[i], "content-length", 14)) {
            cl++;
            if (h[i].value_len == 0)
                return false;
            for (size_t j = 0; j < h[i].value_len; j++)
                if (h[i].value[j] < '0' || h[i].value[j] > '9')
                    return false;
        } else if (name_is(&h[i], "transfer-encoding", 17)) {
            te++;
        } else if (name_is(&h[i], "host", 4)) {
            host++;
        }
    }
    return cl + te <= 1 && host <= 1;
}

/* The parser libh2o calls for every request head (see http_headers.h):
 * libh2o's own, then the framing check; -1 ("failed") for a head that
 * does not pass. */
int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len,
                      const char **path, size_t *path_len, int *minor_version,
                      struct phr_header *headers, size_t *num_headers, size_t last_len)
{
    static phr_parse_request_fn next;
    if (next == NULL)
        next = (phr_parse_request_fn)dlsym(RTLD_NEXT, "phr_parse_request");
    if (next == NULL)
        return -1; /* no parser to call: nothing is served */
    int rc = next(buf, len, method, method_len, path, path_len, minor_version, headers, num_headers,
                  last_len);
    if (rc > 0 && !head_ok(headers, *num_headers))
        return -1;
    return rc;
}

bool http_headers_guarded(void)
{
    return dlsym(RTLD_DEFAULT, "phr_parse_request") == (void *)phr_parse_request;
}

/* Headers a request may carry once at most, among those libh2o hands on. */
static const h2o_iovec_t single_headers[] = {
    {H2O_STRLIT("origin")},
    {H2O_STRLIT("authorization")},
    {H2O_STRLIT("mcp-session-id")},
    {H2O_STRLIT("content-type")},
    {H2O_STRLIT("mcp-protocol-version")},
    {H2O_STRLIT("last-event-id")},
};

/* One pass over the headers (libh2o keeps their names in lower case), not
 * one a name: this runs for every request. */
bool http_headers_single_ok(h2o_req_t *req, char *why, size_t cap)
{
    unsigned seen = 0;
    for (size_t i = 0; i < req->headers.size; i++) {
        const h2o_iovec_t *name = req->headers.entries[i].name;
        for (unsigned k = 0; k < sizeof single_headers / sizeof single_headers[0]; k++) {
            if (!h2o_memis(name->base, name->len, single_headers[k].base, single_headers[k].len))
                continue;
            if (seen & 1u << k) {
                snprintf(why, cap, "Bad Request: more than one %s header", single_headers[k].base);
                return false;
            }
            seen |= 1u << k;
            break;
        }
    }
    return true;
}
