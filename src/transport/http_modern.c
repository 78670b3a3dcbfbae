/* http_modern: MCP 2026-07-28 on the Streamable HTTP endpoint (see
 * http_internal.h). One POST is one request, answered by a stateless
 * session made for it: no Mcp-Session-Id is read or sent, no event ids,
 * no GET stream. Before the request reaches the session it passes the
 * revision's checks, each answered with a JSON-RPC error of that revision
 * and HTTP 400, in the order the official SDK applies them: the
 * MCP-Protocol-Version header against the body's envelope (-32020), the
 * envelope itself (-32602, -32022), then the standard headers Mcp-Method
 * and Mcp-Name against the body (-32020). A POST that claims the
 * envelope is always answered here, an unsupported version or bad header
 * included, so a client that speaks both revisions never falls back to
 * initialize wrongly (transports/streamable-http, Backward
 * Compatibility). */
#include <ctype.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/envelope.h"
#include "mcp/jsonrpc.h"
#include "util/log.h"

#include "transport/http_internal.h"

/* Longest Mcp-Name compared (a tool name, prompt name or resource URI). */
#define HTTP_MCP_NAME_MAX 4096

/* v without the optional whitespace around it (RFC 9110 5.5: "a field
 * value does not include leading or trailing whitespace"). */
static h2o_iovec_t trimmed(h2o_iovec_t v)
{
    while (v.len > 0 && (v.base[0] == ' ' || v.base[0] == '\t'))
        v.base++, v.len--;
    while (v.len > 0 && (v.base[v.len - 1] == ' ' || v.base[v.len - 1] == '\t'))
        v.len--;
    return v;
}

/* header_once's reading of the value of a header given once (entry i):
 * false when it holds a character a field value may not. */
static bool once_value(h2o_req_t *req, ssize_t i, h2o_iovec_t *v)
{
    *v = h2o_iovec_init(NULL, 0);
    if (i < 0)
        return true;
    h2o_iovec_t raw = req->headers.entries[i].value;
    for (size_t k = 0; k < raw.len; k++) {
        unsigned char ch = (unsigned char)raw.base[k];
        if ((ch < 0x20 && ch != '\t') || ch > 0x7e)
            return false;
    }
    *v = trimmed(raw);
    if (v->base == NULL)
        v->base = raw.base; /* present and empty */
    return true;
}

/* Header lcname's value, trimmed, into *v (base NULL when absent).
 * False when it is given twice or holds a character a field value may not
 * (RFC 9110 5.5: visible ASCII, space and tab; "A header value contains
 * invalid characters" is a validation failure): a balancer that routes on
 * another occurrence than the one checked here would see another request. */
static bool header_once(h2o_req_t *req, const char *lcname, size_t len, h2o_iovec_t *v)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, lcname, len, -1);
    *v = h2o_iovec_init(NULL, 0);
    if (i >= 0 && h2o_find_header_by_str(&req->headers, lcname, len, i) >= 0)
        return false;
    return once_value(req, i, v);
}

/* The standard headers of a 2026-07-28 POST, read in one pass over the
 * request's headers. */
typedef struct std_headers_s {
    h2o_iovec_t pv;           /* MCP-Protocol-Version (http__header), trimmed */
    h2o_iovec_t method, name; /* Mcp-Method, Mcp-Name (header_once) */
    bool method_once, name_once;
} std_headers_t;

static void std_headers_read(h2o_req_t *req, std_headers_t *sh)
{
    ssize_t pv = -1, method = -1, name = -1;
    int nmethod = 0, nname = 0;
    for (size_t i = 0; i < req->headers.size; i++) {
        const h2o_iovec_t *n = req->headers.entries[i].name;
        if (h2o_memis(n->base, n->len, H2O_STRLIT("mcp-method"))) {
            if (nmethod++ == 0)
                method = (ssize_t)i;
        } else if (h2o_memis(n->base, n->len, H2O_STRLIT("mcp-name"))) {
            if (nname++ == 0)
                name = (ssize_t)i;
        } else if (pv < 0 && h2o_memis(n->base, n->len, H2O_STRLIT("mcp-protocol-version"))) {
            pv = (ssize_t)i;
        }
    }
    sh->pv = trimmed(pv < 0 ? h2o_iovec_init(NULL, 0) : req->headers.entries[pv].value);
    sh->method = sh->name = h2o_iovec_init(NULL, 0);
    sh->method_once = nmethod <= 1 && once_value(req, method, &sh->method);
    sh->name_once = nname <= 1 && once_value(req, name, &sh->name);
}

static bool iovec_is(h2o_iovec_t v, const char *s)
{
    return v.base != NULL && strlen(s) == v.len && memcmp(v.base, s, v.len) == 0;
}

bool http__is_modern(h2o_req_t *req, const http_msg_t *msg)
{
    if (msg != NULL && (msg->claim.version != NULL ||
                        (msg->method && strcmp(msg->method, "server/discover") == 0)))
        return true;
    /* "A request whose protocol-version header names a modern revision
     * but whose body carries no _meta envelope" is refused by this path
     * (-32602), not served as a 2025-11-25 one. */
    return iovec_is(trimmed(http__header(req, H2O_STRLIT("mcp-protocol-version"))),
                    MCP_MODERN_VERSION);
}

/* Answers status with a JSON-RPC error for request id (may be NULL). */
static void reject(h2o_req_t *req, int status, const json_t *id, int code, const char *message,
                   const json_t *data)
{
    size_t len = 0;
    char *e = jsonrpc_error(id, code, message, data, &len);
    http__send_body(req, status, status == 404 ? "Not Found" : "Bad Request", "application/json",
                    e ? e : "", e ? len : 0);
    free(e);
}

/* Answers 400 with -32020 ("Header mismatch: ..."), its message formatted
 * from fmt; false, for the check that found it to return. */
__attribute__((format(printf, 3, 4))) static bool mismatch(h2o_req_t *req, const json_t *id,
                                                           const char *fmt, ...)
{
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    reject(req, 400, id, MCP_ERROR_HEADER_MISMATCH, msg, NULL);
    return false;
}

/* Decodes an Mcp-Name value into out (NUL-terminated): as is, or the
 * "=?base64?...?=" sentinel form ("servers MUST decode an encoded
 * Mcp-Name ... before comparing it"). Returns its length, or -1 when the
 * value is malformed or too long. */
static int header_value(h2o_iovec_t v, char *out, size_t cap)
{
    static const char pre[] = "=?base64?", post[] = "?=";
    size_t np = sizeof pre - 1, nq = sizeof post - 1;
    if (v.len >= np + nq && memcmp(v.base, pre, np) == 0 &&
        memcmp(v.base + v.len - nq, post, nq) == 0) {
        size_t n = v.len - np - nq;
        const unsigned char *b64 = (const unsigned char *)v.base + np;
        if (n % 4 != 0 || n / 4 * 3 + 1 > cap)
            return -1;
        int got = EVP_DecodeBlock((unsigned char *)out, b64, (int)n);
        if (got < 0)
            return -1;
        /* EVP_DecodeBlock counts the padding's zero bytes. */
        for (size_t i = n; i > 0 && b64[i - 1] == '='; i--)
            got--;
        if (got < 0)
            return -1;
        out[got] = '\0';
        return memchr(out, '\0', (size_t)got) ? -1 : got;
    }
    if (v.len + 1 > cap)
        return -1;
    memcpy(out, v.base, v.len);
    out[v.len] = '\0';
    return (int)v.len;
}

/* The Mcp-Param-{Name} headers of tool arguments marked x-mcp-header
 * (transports/streamable-http, Custom Headers from Tool Parameters):
 * "Servers MUST reject requests with a 400 Bad Request HTTP status and
 * JSON-RPC error code -32020 (HeaderMismatch) if any validation fails";
 * a value in the arguments needs its header, decoded equal to it. Walks
 * the schema's properties (nested ones by properties alone, as the rule
 * says). Returns true when all agree; else answers 400 -32020. */
static bool params_agree(h2o_req_t *req, const json_t *id, const json_t *schema, const json_t *args,
                         int depth)
{
    const char *key;
    json_t *prop;
    json_object_foreach(json_object_get(schema, "properties"), key, prop)
    {
        const json_t *value = json_object_get(args, key);
        if (value == NULL || json_is_null(value))
            continue;
        if (json_is_object(value) && depth < 8 && !params_agree(req, id, prop, value, depth + 1))
            return false;
        const char *hname = json_string_value(json_object_get(prop, "x-mcp-header"));
        if (hname == NULL)
            continue;
        char lc[128], want[64], got[HTTP_MCP_NAME_MAX + 1];
        int n = snprintf(lc, sizeof lc, "mcp-param-%s", hname);
        for (int i = 0; i < n && i < (int)sizeof lc; i++)
            lc[i] = (char)tolower((unsigned char)lc[i]);
        const char *text = json_string_value(value);
        if (json_is_integer(value)) {
            snprintf(want, sizeof want, "%lld", (long long)json_integer_value(value));
            text = want;
        } else if (json_is_boolean(value)) {
            text = json_is_true(value) ? "true" : "false";
        }
        h2o_iovec_t hv = h2o_iovec_init(NULL, 0);
        bool once = n > 0 && (size_t)n < sizeof lc && header_once(req, lc, (size_t)n, &hv);
        int got_len = once && hv.base ? header_value(hv, got, sizeof got) : -1;
        if (text == NULL || hv.base == NULL || got_len < 0 || strlen(text) != (size_t)got_len ||
            memcmp(text, got, (size_t)got_len) != 0) {
            return mismatch(
                req, id,
                hv.base == NULL && once ? "Header mismatch: the Mcp-Param-%.60s header is required "
                                          "(argument %.60s is marked x-mcp-header)"
                : got_len < 0 ? "Header mismatch: the Mcp-Param-%.60s header is malformed "
                                "(argument %.60s: as is, or =?base64?...?=)"
                              : "Header mismatch: the Mcp-Param-%.60s header does not "
                                "match argument %.60s",
                hname, key);
        }
    }
    return true;
}

/* True when the token (NULL: none) may see tool t, as its session will
 * judge: a hidden tool's argument names are not told by a header error. */
static bool tool_visible(http_server_t *hs, const token_t *tok, const mcp_tool_t *t)
{
    if (tok == NULL)
        return true;
    mcp_policy_t pol;
    char err[160];
    if (tokens_policy(tok, &hs->srv->registry, &pol, err, sizeof err) != 0)
        return false;
    if (pol.read_only && !(t->def->annotations & MCP_TOOL_READ_ONLY))
        return false;
    return mcp_registry_toolset_in(&hs->srv->registry, t->toolset, pol.toolset_mask);
}

/* The standard headers against the body: "A required standard header
 * (MCP-Protocol-Version, Mcp-Method, Mcp-Name) is missing", "A header
 * value does not match the corresponding request body value". Returns
 * true when they agree; else answers 400 -32020. */
static bool headers_agree(http_server_t *hs, h2o_req_t *req, const token_t *tok, const json_t *id,
                          const char *method, const json_t *params, const std_headers_t *sh)
{
    h2o_iovec_t pv = sh->pv;
    h2o_iovec_t mm = sh->method;
    if (!sh->method_once) {
        return mismatch(
            req, id,
            "Header mismatch: Mcp-Method given twice or with characters a header may not hold");
    }
    if (pv.base == NULL) {
        return mismatch(
            req, id,
            "Header mismatch: the MCP-Protocol-Version header is required (" MCP_MODERN_VERSION
            ", as in params._meta)");
    }
    if (mm.base == NULL || !iovec_is(mm, method)) {
        return mismatch(req, id,
                        mm.base == NULL
                            ? "Header mismatch: the Mcp-Method header is required (%.100s)"
                            : "Header mismatch: the Mcp-Method header does not match the "
                              "body's method %.100s",
                        method);
    }
    const char *field = strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0
                            ? "name"
                        : strcmp(method, "resources/read") == 0 ? "uri"
                                                                : NULL;
    if (field == NULL)
        return true;
    h2o_iovec_t nm = sh->name;
    if (!sh->name_once) {
        return mismatch(
            req, id,
            "Header mismatch: Mcp-Name given twice or with characters a header may not hold "
            "(encode such a name as =?base64?...?=)");
    }
    const json_t *body = json_object_get(params, field);
    static char name[HTTP_MCP_NAME_MAX + 1]; /* one request at a time: the loop's */
    int n = nm.base ? header_value(nm, name, sizeof name) : -1;
    if (nm.base == NULL || n < 0 || !json_is_string(body) ||
        json_string_length(body) != (size_t)n || memcmp(json_string_value(body), name, n) != 0) {
        return mismatch(req, id,
                        nm.base == NULL
                            ? "Header mismatch: the Mcp-Name header is required for %.60s "
                              "(params.%s)"
                        : n < 0 ? "Header mismatch: the Mcp-Name header of %.60s is malformed "
                                  "(params.%s as is, or =?base64?...?=)"
                                : "Header mismatch: the Mcp-Name header does not match the body "
                                  "of %.60s (params.%s)",
                        method, field);
    }
    if (strcmp(method, "tools/call") == 0) {
        const mcp_tool_t *tool = mcp_registry_find(&hs->srv->registry, name);
        if (tool != NULL && tool_visible(hs, tok, tool) &&
            !params_agree(req, id, tool->input_schema, json_object_get(params, "arguments"), 0))
            return false;
    }
    return true;
}

void http__post_modern(http_server_t *hs, h2o_req_t *req, const token_t *tok, const http_msg_t *msg)
{
    const json_t *id = msg->id;
    const char *method = msg->method;
    const json_t *params = msg->params;
    if (method == NULL) {
        /* "The client MUST NOT send JSON-RPC responses." */
        reject(req, 400, NULL, JSONRPC_INVALID_REQUEST,
               "Invalid Request: a POST carries one JSON-RPC request or notification "
               "(MCP " MCP_MODERN_VERSION " has no server-to-client requests to answer)",
               NULL);
        return;
    }
    if (params != NULL && !json_is_object(params)) {
        reject(req, 400, id, JSONRPC_INVALID_PARAMS, "Invalid params: \"params\" must be an object",
               NULL);
        return;
    }
    /* Era classification: the header cross-checks the body's claim. */
    std_headers_t sh;
    std_headers_read(req, &sh);
    h2o_iovec_t pv = sh.pv;
    const char *claim = json_string_value(msg->claim.version);
    if (pv.base != NULL && claim != NULL && !iovec_is(pv, claim)) {
        char why[200];
        snprintf(why, sizeof why,
                 "Header mismatch: the MCP-Protocol-Version header (%.*s) does not match "
                 "params._meta (%.40s)",
                 (int)(pv.len < 40 ? pv.len : 40), pv.base, claim);
        reject(req, 400, id, MCP_ERROR_HEADER_MISMATCH, why, NULL);
        return;
    }
    mcp_envelope_t env;
    char text[320];
    json_t *data = NULL;
    int code = mcp_envelope_parse_memo(&hs->srv->envelope_memo, &msg->claim, &env, text,
                                       sizeof text, &data);
    if (code != 0) {
        reject(req, 400, id, code, text, data);
        json_decref(data);
        return;
    }
    if (id == NULL) {
        /* A notification: this revision defines none over HTTP
         * (cancellation is closing the stream); accepted and dropped. */
        req->res.status = 202;
        req->res.reason = "Accepted";
        req->res.content_length = 0;
        h2o_send_inline(req, "", 0);
        return;
    }
    if (!headers_agree(hs, req, tok, id, method, params, &sh))
        return;
    if (!http__admit(hs, req, tok, id))
        return;
    hsess_t *h = http__hsess_new(hs, true);
    if (h == NULL) {
        http__send_rpc_error(req, 500, "Internal Server Error", JSONRPC_INTERNAL_ERROR,
                             "out of memory");
        return;
    }
    http__apply_token(hs, h, tok, req);
    http__serve_request(hs, req, h, msg, &env);
}

int http__modern_status(const char *msg, size_t len)
{
    /* The text is jsonrpc_error's or a result's: {"jsonrpc":"2.0","id":ID,
     * then "error" or "result". ID is a number or a string, in which a
     * quote is escaped. */
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":", err[] = ",\"error\":{\"code\":";
    const char *p = msg, *end = msg + len;
    if (len < sizeof head || memcmp(p, head, sizeof head - 1) != 0)
        return 200;
    p += sizeof head - 1;
    if (p < end && *p == '"') {
        for (p++; p < end && *p != '"'; p++)
            if (*p == '\\')
                p++;
        p++;
    } else {
        while (p < end && *p != ',')
            p++;
    }
    if (p >= end || (size_t)(end - p) <= sizeof err || memcmp(p, err, sizeof err - 1) != 0)
        return 200;
    long code = strtol(p + sizeof err - 1, NULL, 10);
    if (code == JSONRPC_METHOD_NOT_FOUND)
        return 404;
    /* -32700 and -32600 say the message is not a valid request, whoever
     * found it (the transport's checks or the session's): 400 alike. */
    if (code == MCP_ERROR_MISSING_CAPABILITY || code == JSONRPC_PARSE_ERROR ||
        code == JSONRPC_INVALID_REQUEST)
        return 400;
    return 200;
}
