/* Fuzz target: MCP 2026-07-28 over the Streamable HTTP transport
 * (transport/http_modern.c above http.c and libh2o, then the stateless
 * session: mcp/envelope, session_methods, session_listen, call): the
 * revision's ladder of checks (MCP-Protocol-Version against the body's
 * _meta, the envelope, Mcp-Method, Mcp-Name and its base64 form,
 * Mcp-Param-* of x-mcp-header arguments, bearer tokens), then
 * server/discover, the lists, tools/call with the conformance toolset,
 * resources/read, prompts/get, subscriptions/listen and the multi
 * round-trip requests with requestState.
 *
 * One server on 127.0.0.1 (an ephemeral port) with bearer tokens (one
 * full, one read-only, one for the harness's own checks) serves every
 * input; it is closed at exit, which must end cleanly. Per input: when it
 * holds "$R", the harness first calls test_input_required_result_multi_round
 * with the full token and puts the requestState it answered in place of
 * each "$R" (so a second round can be tried); the input is then written as
 * raw bytes (one or more HTTP/1.1 requests) on a connection of its own.
 * Once the server is idle (no event ready, nothing in flight, no timer due
 * within IDLE_TIMER_MS) the answers are read:
 *   - each answer's status is one the transport or libh2o gives (never
 *     500 or 429; 503 only while streams of earlier inputs may still be
 *     open, since the server may give a principal a share of its sessions);
 *   - a JSON body parses, and a JSON-RPC one is a response with a result
 *     or an error (an integer code and a message); each event of a
 *     text/event-stream body is such a JSON-RPC message;
 *   - each request the harness reads as complete and plain (HTTP/1.1, a
 *     head of visible ASCII, one Host, Content-Length or no body, no
 *     Expect, Upgrade or Transfer-Encoding) gets an answer, unless an
 *     earlier answer on the connection is still streaming or closed it;
 *   - an answer to such a request that carries the 2026-07-28 envelope
 *     names no Mcp-Session-Id and its stream no event id.
 * The client then resets the connection, and deletes any 2025-11-25
 * session the input opened (initialize); every session must then be freed
 * within CLOSE_MS, except those of streams still open, which the server
 * notices when it next writes to them (STREAM_GONE_MS); and a well-formed
 * 2026-07-28 server/discover on a new connection must get 200 with the
 * revision among supportedVersions.
 *
 * PARLEY_FUZZ_SHOW set prints the start of each input's answers. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "fuzz_http_client.h"
#include "mcp/envelope.h"
#include "mcp/server.h"
#include "toolsets/conformance.h"
#include "transport/endpoint.h"
#include "transport/http.h"
#include "transport/tokens.h"
#include "util/log.h"

#define RESP_MAX      (1u << 20) /* bytes of an answer kept (the rest is read and dropped) */
#define IDLE_TIMER_MS 200        /* a timer due later than this does not keep the server busy */
#define CLOSE_MS      5000       /* answers and cleanup must come within this */
#define MAX_REQS      64         /* requests of one input read by the harness */
#define HEAD_MAX      4096       /* a longer head is not "plain" (libh2o's limit is 8 KiB) */
#define MAX_SESSIONS  64         /* 2025-11-25 session ids collected from one input's answers */
#define SESSION_ID    64         /* hex characters */
/* A stream the client reset is noticed when the server next writes to it:
 * its ping, at most HTTP_SSE_PING_MS later (issue 44, finding 14). */
#define STREAM_GONE_MS (HTTP_SSE_PING_MS + 2 * HTTP_TICK_MS + CLOSE_MS)
#define STREAMED_MAX   16384 /* inputs that ended streaming, remembered */

#define TOKEN_FULL "fuzz-token-full-0123456789"
#define TOKEN_READ "fuzz-token-read-0123456789"
/* The harness's own checks: a principal of their own, whose share of the
 * server the inputs' cannot take. */
#define TOKEN_CHECK "fuzz-token-check-0123456789"

static uv_loop_t loop;
static mcp_server_t srv;
static http_server_t *hs;
static tokens_t toks;
static int port;
static uint64_t streamed[STREAMED_MAX]; /* when inputs that ended streaming ended */
static int nstreamed;

typedef fuzz_client_t client_t;

static void fail(const char *what, const char *resp, size_t len)
{
    fprintf(stderr, "fuzz_http_modern: %s\n", what);
    if (resp && len)
        fprintf(stderr, "answer: %.*s\n", (int)(len < 3000 ? len : 3000), resp);
    abort();
}

static uint64_t now_ms(void)
{
    return fuzz_now_ms();
}

/* ---- the client (fuzz_http_client.h) ------------------------------------- */

static void client_open(client_t *c, char *buf)
{
    const char *why = fuzz_client_open(&loop, c, buf, port, CLOSE_MS);
    if (why != NULL)
        fail(why, NULL, 0);
}

static void client_close(client_t *c)
{
    fuzz_client_close(c);
}

/* Runs the loop while writing out[0..n) to c and reading its answer,
 * until the server closed c or, when quiet, everything was sent and the
 * server is idle (a call that steps on a timer is waited for; one held for
 * the once-a-second tick is not). Returns false when limit_ms passed
 * first. */
static bool pump(client_t *c, const char *out, size_t n, bool quiet, uint64_t limit_ms)
{
    /* quiet_ms past limit_ms: only the server's idleness ends it early. */
    return fuzz_client_pump(&loop, c, out, n, false, quiet ? limit_ms + 1 : 0, limit_ms, RESP_MAX,
                            IDLE_TIMER_MS);
}

/* One request on its own connection ("Connection: close"), answered in
 * full; its status. */
static int raw_request(const char *req, size_t n, client_t *c)
{
    static char buf[RESP_MAX];
    client_open(c, buf);
    if (!pump(c, req, n, false, CLOSE_MS))
        fail("a well-formed request got no complete answer", c->resp, c->len);
    int status = 0;
    if (c->len > 12 && memcmp(c->resp, "HTTP/1.1 ", 9) == 0)
        status = atoi(c->resp + 9);
    return status;
}

/* One well-formed 2026-07-28 POST; its status. */
static int post_modern(const char *token, const char *method, const char *name, const char *body,
                       client_t *c)
{
    char req[4096];
    int n = snprintf(req, sizeof req,
                     "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                     "Authorization: Bearer %s\r\n"
                     "Accept: application/json, text/event-stream\r\n"
                     "Content-Type: application/json\r\nMCP-Protocol-Version: " MCP_MODERN_VERSION
                     "\r\nMcp-Method: %s\r\n%s%s%sContent-Length: %zu\r\n\r\n%s",
                     token, method, name ? "Mcp-Name: " : "", name ? name : "", name ? "\r\n" : "",
                     strlen(body), body);
    return raw_request(req, (size_t)n, c);
}

/* The JSON body of a complete Content-Length answer in c, or NULL. */
static json_t *answer_json(const client_t *c)
{
    const char *end = memmem(c->resp, c->len, "\r\n\r\n", 4);
    if (end == NULL)
        return NULL;
    end += 4;
    return json_loadb(end, c->len - (size_t)(end - c->resp), 0, NULL);
}

/* The 2025-11-25 session ids in answers (mcp-session-id headers) into
 * ids[0..cap); returns how many. */
static int session_ids(const client_t *c, char ids[][SESSION_ID + 1], int cap)
{
    static const char h[] = "\r\nmcp-session-id: ";
    int n = 0;
    for (size_t i = 0; i + sizeof h - 1 + SESSION_ID <= c->len && n < cap; i++) {
        if (strncasecmp(c->resp + i, h, sizeof h - 1) != 0)
            continue;
        const char *id = c->resp + i + sizeof h - 1;
        bool dup = false;
        for (int k = 0; k < n; k++)
            dup |= memcmp(ids[k], id, SESSION_ID) == 0;
        if (!dup) {
            memcpy(ids[n], id, SESSION_ID);
            ids[n++][SESSION_ID] = '\0';
        }
    }
    return n;
}

/* Deletes a 2025-11-25 session with whichever token opened it. */
static void session_delete(const char *id)
{
    static const char *const tokens[] = {TOKEN_FULL, TOKEN_READ};
    int st = 0;
    for (int i = 0; i < 2; i++) {
        char req[512];
        int n = snprintf(req, sizeof req,
                         "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                         "Authorization: Bearer %s\r\nMcp-Session-Id: %s\r\n\r\n",
                         tokens[i], id);
        client_t c;
        st = raw_request(req, (size_t)n, &c);
        client_close(&c);
        if (st == 200 || st == 404)
            return;
        if (st != 403)
            break;
    }
    fprintf(stderr, "DELETE: %d\n", st);
    fail("a 2025-11-25 session could not be deleted", NULL, 0);
}

#define ENVELOPE                                                                                   \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"" MCP_MODERN_VERSION                 \
    "\",\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{}},"                      \
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"fuzz\",\"version\":\"1\"}}"

/* The server still serves: server/discover with 200 and the revision. */
static void check_discover(void)
{
    client_t c;
    int st = post_modern(TOKEN_CHECK, "server/discover", NULL,
                         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\","
                         "\"params\":{" ENVELOPE "}}",
                         &c);
    json_t *m = answer_json(&c);
    json_t *versions = json_object_get(json_object_get(m, "result"), "supportedVersions");
    bool ok = false;
    for (size_t i = 0; st == 200 && i < json_array_size(versions); i++)
        ok |= json_is_string(json_array_get(versions, i)) &&
              strcmp(json_string_value(json_array_get(versions, i)), MCP_MODERN_VERSION) == 0;
    json_decref(m);
    if (!ok)
        fail("server/discover was not answered with 200 and the revision", c.resp, c.len);
    client_close(&c);
}

/* A first round's requestState (multi_round, the full token). */
static char *first_round_state(void)
{
    client_t c;
    int st = post_modern(
        TOKEN_FULL, "tools/call", "test_input_required_result_multi_round",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
        "\"name\":\"test_input_required_result_multi_round\",\"arguments\":{}," ENVELOPE "}}",
        &c);
    if (st == 503) {
        client_close(&c); /* the token's share is taken (see recent_streams): "$R" stays */
        return NULL;
    }
    json_t *m = answer_json(&c);
    const char *s =
        json_string_value(json_object_get(json_object_get(m, "result"), "requestState"));
    if (st != 200 || s == NULL)
        fail("the first round gave no requestState", c.resp, c.len);
    char *out = strdup(s);
    json_decref(m);
    client_close(&c);
    return out;
}

/* ---- reading the input's requests ----------------------------------------- */

typedef struct {
    bool plain;  /* complete, and read the same way by any HTTP/1.1 parser */
    bool head;   /* HEAD: its answer has no body */
    bool modern; /* its body claims the 2026-07-28 envelope */
} req_t;

static bool is_tchar(int ch)
{
    return ch != 0 && (isalnum(ch) || strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* Reads the requests at in[0..n) into r (at most MAX_REQS) while they are
 * plain; returns how many were read (the last may be not plain). */
static int read_requests(const char *in, size_t n, req_t *r)
{
    int k = 0;
    size_t at = 0;
    while (at < n && k < MAX_REQS) {
        req_t *q = &r[k++];
        memset(q, 0, sizeof *q);
        const char *p = in + at, *end = in + n;
        /* A HEAD as libh2o reads one, whatever follows. */
        q->head = end - p >= 5 && memcmp(p, "HEAD ", 5) == 0;
        const char *he = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
        if (he == NULL || he - p > HEAD_MAX)
            return k;
        /* Request line: METHOD SP /path SP HTTP/1.1 CRLF. */
        const char *s = p;
        while (s < he && is_tchar((unsigned char)*s))
            s++;
        if (s == p || s >= he || *s != ' ')
            return k;
        const char *target = ++s;
        while (s<he && * s> ' ' && *s < 0x7f)
            s++;
        if (s == target || *target != '/' || he - s < 10 || memcmp(s, " HTTP/1.1\r\n", 11) != 0)
            return k;
        s += 11;
        long long clen = -1;
        int nh = 0;
        bool ok = true;
        int hosts = 0;
        while (s < he + 2 && ok) {
            const char *le = memmem(s, (size_t)(he + 2 - s), "\r\n", 2);
            const char *colon = s;
            while (colon < le && is_tchar((unsigned char)*colon))
                colon++;
            if (colon == s || colon >= le || *colon != ':' || ++nh > 64) {
                ok = false;
                break;
            }
            for (const char *v = colon + 1; v < le; v++)
                if ((unsigned char)*v < 0x20 || (unsigned char)*v > 0x7e)
                    ok = false;
            size_t nl = (size_t)(colon - s);
            const char *v = colon + 1;
            while (v < le && *v == ' ')
                v++;
            if ((nl == 6 && !strncasecmp(s, "expect", 6)) ||
                (nl == 7 && !strncasecmp(s, "upgrade", 7)) ||
                (nl == 17 && !strncasecmp(s, "transfer-encoding", 17)))
                ok = false;
            if (nl == 14 && !strncasecmp(s, "content-length", 14)) {
                if (clen >= 0 || v == le || le - v > 7)
                    ok = false;
                clen = 0;
                for (; v < le && ok; v++) {
                    if (*v < '0' || *v > '9')
                        ok = false;
                    clen = clen * 10 + (*v - '0');
                }
            }
            if (nl == 4 && !strncasecmp(s, "host", 4) && hosts++ > 0)
                ok = false; /* refused as framing by http_headers.c */
            s = le + 2;
        }
        if (!ok)
            return k;
        const char *body = he + 4;
        size_t blen = clen > 0 ? (size_t)clen : 0;
        if ((size_t)(end - body) < blen)
            return k;
        json_t *m = json_loadb(body, blen, 0, NULL);
        q->modern = json_is_string(json_object_get(
            json_object_get(json_object_get(m, "params"), "_meta"), MCP_META_PROTOCOL_VERSION));
        json_decref(m);
        q->plain = true;
        at = (size_t)(body + blen - in);
    }
    return k;
}

/* ---- reading the answers -------------------------------------------------- */

/* Statuses an answer may have here: the transport's (200, 202, 400, 401,
 * 403, 404, 405, 406, 415) and libh2o's for what it refuses itself (413
 * too large, 417 an unknown Expect, 431 a long head, 501 a
 * Transfer-Encoding it does not know, 100 Continue). */
static int recent_streams(void);

/* 503 too while streams of earlier inputs may still be open: the server
 * may give a principal only a share of its sessions. */
static bool status_expected(int st)
{
    if (st == 503 && recent_streams() > 0)
        return true;
    static const int ok[] = {100, 200, 202, 400, 401, 403, 404, 405, 406, 413, 415, 417, 431, 501};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (st == ok[i])
            return true;
    return false;
}

/* A JSON-RPC message as the server writes one: a response with an id and
 * a result or an error, or a notification. */
static bool rpc_ok(const json_t *m)
{
    if (!json_is_object(m))
        return false;
    const char *v = json_string_value(json_object_get(m, "jsonrpc"));
    if (v == NULL || strcmp(v, "2.0") != 0)
        return false;
    if (json_is_string(json_object_get(m, "method")))
        return json_object_get(m, "id") == NULL || json_object_get(m, "result") == NULL;
    json_t *res = json_object_get(m, "result"), *err = json_object_get(m, "error");
    if (json_object_get(m, "id") == NULL || (res == NULL) == (err == NULL))
        return false;
    if (err != NULL)
        return json_is_integer(json_object_get(err, "code")) &&
               json_is_string(json_object_get(err, "message"));
    return json_is_object(res);
}

/* Header lcname's value in head[0..n) (a pointer into it, length in
 * *vlen), or NULL. */
static const char *header_in(const char *head, size_t n, const char *lcname, size_t *vlen)
{
    size_t ln = strlen(lcname);
    for (const char *p = head; p && p < head + n;) {
        const char *le = memmem(p, (size_t)(head + n - p), "\r\n", 2);
        if (le == NULL)
            return NULL;
        if ((size_t)(le - p) > ln && p[ln] == ':' && strncasecmp(p, lcname, ln) == 0) {
            const char *v = p + ln + 1;
            while (v < le && *v == ' ')
                v++;
            *vlen = (size_t)(le - v);
            return v;
        }
        p = le + 2;
    }
    return NULL;
}

/* Checks the events of an SSE body: each data is one JSON-RPC message. */
static void check_sse(const char *b, size_t n, bool modern, const char *resp, size_t rlen)
{
    static char data[RESP_MAX];
    for (size_t at = 0; at < n;) {
        const char *ee = memmem(b + at, n - at, "\n\n", 2);
        if (ee == NULL)
            return; /* an event still coming */
        size_t dl = 0;
        for (const char *p = b + at; p < ee;) {
            const char *le = memchr(p, '\n', (size_t)(ee - p));
            if (le == NULL)
                le = ee;
            if (le - p >= 6 && memcmp(p, "data: ", 6) == 0) {
                memcpy(data + dl, p + 6, (size_t)(le - p - 6));
                dl += (size_t)(le - p - 6);
            } else if (modern && le - p >= 3 && memcmp(p, "id:", 3) == 0) {
                fail("a 2026-07-28 stream sent an event id", resp, rlen);
            }
            p = le + 1;
        }
        if (dl > 0) {
            json_t *m = json_loadb(data, dl, 0, NULL);
            bool ok = rpc_ok(m);
            json_decref(m);
            if (!ok)
                fail("an event is not a JSON-RPC message", resp, rlen);
        }
        at = (size_t)(ee + 2 - b);
    }
}

/* Checks the answers in c against the requests r[0..nr); see the top.
 * Returns true when the last answer is still coming (a stream). */
static bool check_answers(const client_t *c, const req_t *r, int nr)
{
    const char *p = c->resp, *end = c->resp + c->len;
    int i = 0;              /* the request the next final answer is for */
    bool may_follow = true; /* the previous answer ended and kept the connection */
    static char body[RESP_MAX];
    while (p < end) {
        if (end - p < 12 || memcmp(p, "HTTP/1.1 ", 9) != 0) {
            if (i > 0 && i <= nr && r[i - 1].plain)
                fail("an answer does not start with a status line", c->resp, c->len);
            return false; /* after a request the harness could not frame */
        }
        int st = atoi(p + 9);
        if (!status_expected(st))
            fail("an unexpected status", c->resp, c->len);
        const char *he = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
        if (he == NULL)
            return true;
        size_t hn = (size_t)(he + 2 - p), vl = 0;
        const char *b = he + 4;
        if (st == 100) {
            p = b;
            continue;
        }
        const req_t *q = i < nr && r[i].plain ? &r[i] : NULL;
        /* The answer to a HEAD has no body, unless libh2o could not read
         * the request (then it does not know it was a HEAD), and the
         * harness may not have read that request: told apart by what
         * follows (no body here starts with a status line). */
        bool head =
            (end - b >= 7 && memcmp(b, "HTTP/1.", 7) == 0) || (b == end && i < nr && r[i].head);
        i++;
        const char *ct = header_in(p, hn, "content-type", &vl);
        bool json = ct && vl >= 16 && strncasecmp(ct, "application/json", 16) == 0;
        bool sse = ct && vl >= 17 && strncasecmp(ct, "text/event-stream", 17) == 0;
        bool close = false;
        const char *cn = header_in(p, hn, "connection", &vl);
        if (cn && vl == 5 && strncasecmp(cn, "close", 5) == 0)
            close = true;
        if (q && q->modern && header_in(p, hn, "mcp-session-id", &vl) != NULL)
            fail("a 2026-07-28 answer named a session", c->resp, c->len);
        const char *cl = header_in(p, hn, "content-length", &vl);
        const char *te = header_in(p, hn, "transfer-encoding", &vl);
        size_t blen = 0;
        bool complete = true;
        if (head) {
            blen = 0;
        } else if (cl != NULL) {
            size_t want = strtoul(cl, NULL, 10);
            if ((size_t)(end - b) < want) {
                complete = false;
                want = (size_t)(end - b);
            }
            memcpy(body, b, want);
            blen = want;
            b += want;
        } else if (te != NULL) {
            /* Chunked: SIZE CRLF DATA CRLF ..., 0 CRLF CRLF. */
            complete = false;
            while (b < end) {
                char *ce;
                unsigned long sz = strtoul(b, &ce, 16);
                if (ce == b || end - ce < 2 || memcmp(ce, "\r\n", 2) != 0)
                    break;
                ce += 2;
                if (sz == 0) {
                    if (end - ce >= 2 && memcmp(ce, "\r\n", 2) == 0) {
                        b = ce + 2;
                        complete = true;
                    }
                    break;
                }
                if ((size_t)(end - ce) < sz + 2)
                    break;
                memcpy(body + blen, ce, sz);
                blen += sz;
                b = ce + sz + 2;
            }
        } else {
            blen = (size_t)(end - b);
            memcpy(body, b, blen);
            b = end;
            complete = c->eof;
        }
        if (json && complete && !head) {
            json_t *m = json_loadb(body, blen, 0, NULL);
            if (m == NULL)
                fail("a JSON answer does not parse", c->resp, c->len);
            if (json_object_get(m, "jsonrpc") != NULL && !rpc_ok(m))
                fail("a JSON answer is not a JSON-RPC response", c->resp, c->len);
            json_decref(m);
        }
        if (sse)
            check_sse(body, blen, q && q->modern, c->resp, c->len);
        if (!complete)
            return true; /* still streaming (a listen), or cut at RESP_MAX */
        may_follow = !close;
        p = b;
    }
    /* Every plain request up to here was answered, unless one was not
     * plain, an answer closed, or the connection was closed. */
    (void)may_follow;
    for (int k = 0; k < nr && r[k].plain; k++)
        if (k >= i && may_follow && !c->eof)
            fail("a complete request got no answer", c->resp, c->len);
    return false;
}

/* ---- the server ----------------------------------------------------------- */

static bool closed;
static void server_closed(mcp_server_t *s)
{
    (void)s;
    closed = true;
}

static bool http_closed;
static void on_http_closed(http_server_t *h)
{
    (void)h;
    http_closed = true;
}

/* At exit: the server closes cleanly with every handle (each input was
 * followed by a server/discover already; OpenSSL, which a token's digest
 * needs, may be cleaned up by now). */
static void shutdown_server(void)
{
    http_server_close(hs, on_http_closed);
    for (uint64_t start = now_ms(); !http_closed && now_ms() - start < 10000;)
        uv_run(&loop, UV_RUN_ONCE);
    mcp_server_close(&srv, server_closed);
    for (uint64_t start = now_ms(); !closed && now_ms() - start < 10000;)
        uv_run(&loop, UV_RUN_ONCE);
    if (!http_closed || !closed)
        fail("the server did not close", NULL, 0);
    http_server_dispose(hs);
    uv_run(&loop, UV_RUN_NOWAIT);
    if (uv_loop_close(&loop) != 0)
        fail("a handle was left open", NULL, 0);
    free(toks.tokens);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_set_level(LOG_OFF);
    uv_loop_init(&loop);
    static const mcp_toolset_t *const available[] = {&toolset_conformance, NULL};
    mcp_registry_t r;
    char err[256];
    if (mcp_registry_build(&r, available, "conformance", false, err, sizeof err) != 0)
        fail(err, NULL, 0);
    mcp_limits_t lim;
    mcp_limits_default(&lim);
    lim.max_message_bytes = 16384;
    mcp_server_init(&srv, &loop, &r, &lim);
    toks.tokens = calloc(3, sizeof *toks.tokens);
    toks.n = 3;
    snprintf(toks.tokens[0].secret, sizeof toks.tokens[0].secret, "%s", TOKEN_FULL);
    toks.tokens[0].len = strlen(TOKEN_FULL);
    snprintf(toks.tokens[1].secret, sizeof toks.tokens[1].secret, "%s", TOKEN_READ);
    toks.tokens[1].len = strlen(TOKEN_READ);
    toks.tokens[1].read_only = true;
    snprintf(toks.tokens[2].secret, sizeof toks.tokens[2].secret, "%s", TOKEN_CHECK);
    toks.tokens[2].len = strlen(TOKEN_CHECK);
    endpoint_t ep;
    if (endpoint_parse(&ep, "http://127.0.0.1:0/mcp", err, sizeof err) != 0)
        fail(err, NULL, 0);
    http_options_t opt = {.tokens = &toks, .allowed_origins = "https://app.example"};
    if (http_server_start(&loop, &srv, &ep, &opt, &hs, err, sizeof err) != 0)
        fail(err, NULL, 0);
    port = http_server_port(hs);
    atexit(shutdown_server);
    return 0;
}

/* Inputs that ended with a stream open within STREAM_GONE_MS. */
static int recent_streams(void)
{
    uint64_t t = now_ms();
    int recent = 0;
    for (int i = 0; i < STREAMED_MAX && i < nstreamed; i++)
        recent += t - streamed[i] < STREAM_GONE_MS;
    return recent;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The input with "$R" as a first round's requestState. */
    char *state = memmem(data, size, "$R", 2) ? first_round_state() : NULL;
    size_t sl = state ? strlen(state) : 0;
    char *in = malloc(size * (sl > 2 ? sl : 2) + 1);
    size_t n = 0;
    for (size_t i = 0; i < size; i++) {
        if (state && data[i] == '$' && i + 1 < size && data[i + 1] == 'R') {
            memcpy(in + n, state, sl);
            n += sl;
            i++;
        } else {
            in[n++] = (char)data[i];
        }
    }
    free(state);
    static char buf[RESP_MAX];
    static req_t reqs[MAX_REQS];
    int nr = read_requests(in, n, reqs);
    client_t c;
    client_open(&c, buf);
    /* Still busy after CLOSE_MS: what came is read, and the requests
     * after the one in progress are not expected to be answered. */
    bool idle = pump(&c, in, n, true, CLOSE_MS);
    free(in);
    if (getenv("PARLEY_FUZZ_SHOW"))
        fprintf(stderr, "---- %d requests\n%.*s\n", nr, (int)(c.len < 700 ? c.len : 700), c.resp);
    bool streaming = check_answers(&c, reqs, idle ? nr : 0);
    /* 2025-11-25 sessions the input opened (initialize) are deleted, as
     * their client would. */
    char ids[MAX_SESSIONS][SESSION_ID + 1];
    int nids = session_ids(&c, ids, MAX_SESSIONS);
    client_close(&c);
    for (int i = 0; i < nids; i++)
        session_delete(ids[i]);
    /* Every other session ends with its connection; a stream's only when
     * the server next writes to it (its ping). */
    uint64_t t0 = now_ms();
    if (streaming)
        streamed[nstreamed++ % STREAMED_MAX] = t0;
    for (;;) {
        uv_run(&loop, UV_RUN_NOWAIT);
        uint64_t t = now_ms();
        int recent = recent_streams();
        if (srv.stats.sessions_open <= recent)
            break;
        if (t - t0 > CLOSE_MS) {
            fprintf(stderr, "%d sessions open, %d streams closed within %d ms\n",
                    srv.stats.sessions_open, recent, STREAM_GONE_MS);
            fail("a session outlived its connection", NULL, 0);
        }
        struct pollfd p = {.fd = uv_backend_fd(&loop), .events = POLLIN};
        poll(&p, 1, 1);
    }
    check_discover();
    return 0;
}
