/* loadgen: a load generator for parleyd's MCP endpoints. It opens N
 * concurrent sessions over a Unix socket, TCP or Streamable HTTP, each
 * running initialize and then one request after another (ping, tools/call
 * of a tool, or the tool calls of a file in turn) for a fixed time, and
 * prints throughput and latency percentiles. A response that is a JSON-RPC
 * error or a tool result with isError counts as an error. With --idle the
 * sessions only initialize and then stay open, idle, for the time given.
 * Sessions start at most LOADGEN_RAMP at a time (a listen backlog is
 * finite, and parleyd shuts down connections past its count of those
 * without a complete request): a session has started once its initialize
 * is answered, or in 2026-07-28 its first request. One libuv loop; HTTP
 * goes through libcurl's multi interface driven by that loop.
 *
 *   parley-loadgen --url unix:/path | tcp://127.0.0.1:P | http://127.0.0.1:P/mcp
 *                  [--sessions N] [--seconds S] [--tool NAME | --calls FILE]
 *                  [--idle] [--label TEXT] [--protocol 2025-11-25|2026-07-28]
 *                  [--raw --expect FILE]
 *
 * --protocol 2026-07-28: no initialize; every request carries the
 * revision's _meta envelope (and over HTTP its headers: MCP-Protocol-
 * Version, Mcp-Method, Mcp-Name), with no session id; without --tool or
 * --calls the request is server/discover (the revision has no ping).
 * --calls FILE: one {"name": ..., "arguments": {...}} per line; session k
 * starts at line k * 7919 and goes on in order, wrapping around.
 * --raw: the floors of bench/run (nginx answering a fixed body, a minimal
 * echo on a Unix socket): the same request bytes as in 2025-11-25 (with
 * --tool, the same tools/call), the same HTTP request headers, but no
 * initialize and no session id; an answer counts as good only when it is
 * (over HTTP with status 200) exactly the bytes of --expect FILE (over a
 * stream, the line without its newline). A session has started once its
 * first request is answered.
 *
 * Output: one line of key=value pairs (label, transport, sessions, requests,
 * errors, seconds, rps, p50_ms, p90_ms, p95_ms, p99_ms, max_ms); with
 * --idle, "idle_ready=N" once N sessions are initialized, then
 * label, transport, sessions, ready, errors. With errors, what failed goes
 * to stderr first, a line per kind of failure (see fail()). A request
 * unanswered for LOADGEN_TIMEOUT_S fails as a timeout. */
#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

/* LOADGEN_RAMP: sessions starting at once; half parleyd's default
 * http_max_pending_conns (256), as over HTTP a session answered meanwhile
 * may need a new connection too. */
#define MAX_SAMPLES  (20u * 1000 * 1000)
#define READ_CHUNK   (1u << 20) /* the largest response line */
#define LOADGEN_RAMP 128
/* LOADGEN_TIMEOUT_S: a request unanswered for this long fails as a
 * timeout (over HTTP curl 28; over a stream, its connection is closed). */
#define LOADGEN_TIMEOUT_S 60
#define REQ_MAX           8192

typedef enum { T_UNIX, T_TCP, T_HTTP } transport_t;

static struct {
    transport_t transport;
    const char *url;
    char path[256];
    struct sockaddr_in addr;
    int sessions;
    double seconds;
    const char *tool;
    const char *calls_file;
    bool idle;
    const char *label;
    bool modern; /* --protocol 2026-07-28 */
    bool raw;    /* --raw: no initialize; answers must be expect's bytes */
    char *expect;
    size_t expect_len;
} opt = {.sessions = 10, .seconds = 5, .label = "-"};

static char **calls;      /* --calls: the lines */
static char **call_names; /* their tools' names (Mcp-Name) */
static size_t ncalls;
static int started, ready, init_failed; /* sessions started, initialized, failed to */
static bool hold_done;
static void start_more(void);

static uv_loop_t *loop;
static double *samples;
static size_t nsamples;
static uint64_t errors, started_ns, deadline_ns;
static int live_sessions;
static bool measuring;

/* A response: a JSON-RPC error, or a tool result with isError. */
static bool is_failure(const char *p, size_t len)
{
    return memmem(p, len, "\"error\":{", 9) != NULL ||
           memmem(p, len, "\"isError\":true", 14) != NULL;
}

/* An answer that is not a good one: in --raw, anything but expect's bytes. */
static bool is_bad(const char *p, size_t len)
{
    if (opt.raw)
        return len != opt.expect_len || memcmp(p, opt.expect, len) != 0;
    return is_failure(p, len);
}

/* What failed, by kind: a kind is what a failure says without its
 * variable parts (a curl error, an HTTP status, a JSON-RPC error's code
 * and message, an isError result's text, a closed connection, a
 * timeout), with the number of failures of that kind and the first
 * answer's bytes (FAIL_EXAMPLE at most). Up to FAIL_KINDS kinds; later
 * new kinds count under the last one, "other". Printed to stderr at the
 * end of a run, one line per kind:
 *   loadgen: failed COUNT: KIND; first: EXAMPLE */
#define FAIL_KINDS   32
#define FAIL_TEXT    120 /* bytes of a message or text kept in a kind */
#define FAIL_EXAMPLE 300
typedef struct {
    char kind[FAIL_TEXT + 96];
    char example[FAIL_EXAMPLE + 1];
    uint64_t count;
} failure_t;
static failure_t failures[FAIL_KINDS];
static int nfailures;

/* Counts one failure: errors++ and its kind's count. */
static void fail(const char *kind, const char *body, size_t len)
{
    errors++;
    int i = 0;
    while (i < nfailures && strcmp(failures[i].kind, kind) != 0)
        i++;
    if (i == nfailures && nfailures == FAIL_KINDS) {
        i = FAIL_KINDS - 1; /* "other" */
    } else if (i == nfailures) {
        if (nfailures == FAIL_KINDS - 1)
            kind = "other";
        nfailures++;
        snprintf(failures[i].kind, sizeof failures[i].kind, "%s", kind);
        size_t n = len > FAIL_EXAMPLE ? FAIL_EXAMPLE : len;
        /* One line: the example's newlines become spaces. */
        for (size_t k = 0; k < n; k++)
            failures[i].example[k] = body[k] == '\n' || body[k] == '\r' ? ' ' : body[k];
        failures[i].example[n] = '\0';
    }
    failures[i].count++;
}

/* A JSON string's bytes after key (as "key":"), escapes kept, up to
 * FAIL_TEXT of them, into out; false without it. */
static bool json_text(const char *p, size_t len, const char *key, char *out, size_t cap)
{
    const char *k = memmem(p, len, key, strlen(key));
    if (k == NULL)
        return false;
    const char *v = k + strlen(key), *end = p + len;
    size_t n = 0;
    while (v < end && *v != '"' && n + 1 < cap && n < FAIL_TEXT) {
        if (*v == '\\' && v + 1 < end)
            out[n++] = *v++;
        if (n + 1 < cap)
            out[n++] = *v++;
    }
    out[n] = '\0';
    return true;
}

/* The kind of a bad answer (is_bad, or over HTTP no result): a JSON-RPC
 * error's code and message, an isError result's first text. */
static void fail_answer(const char *phase, const char *p, size_t len)
{
    char kind[FAIL_TEXT + 96], text[FAIL_TEXT + 2];
    const char *e;
    if (opt.raw) {
        snprintf(kind, sizeof kind, "%sanswer other than --expect's", phase);
    } else if ((e = memmem(p, len, "\"error\":{", 9)) != NULL) {
        size_t rest = len - (size_t)(e - p);
        const char *c = memmem(e, rest, "\"code\":", 7);
        long code = c ? strtol(c + 7, NULL, 10) : 0;
        if (!json_text(e, rest, "\"message\":\"", text, sizeof text))
            snprintf(text, sizeof text, "(no message)");
        snprintf(kind, sizeof kind, "%sJSON-RPC error %ld: %s", phase, code, text);
    } else if ((e = memmem(p, len, "\"isError\":true", 14)) != NULL) {
        if (!json_text(p, len, "\"text\":\"", text, sizeof text))
            snprintf(text, sizeof text, "(no text)");
        snprintf(kind, sizeof kind, "%sisError: %s", phase, text);
    } else {
        snprintf(kind, sizeof kind, "%sno result in the answer", phase);
    }
    fail(kind, p, len);
}

static void print_failures(void)
{
    for (int i = 0; i < nfailures; i++)
        fprintf(stderr, "loadgen: failed %llu: %s; first: %s\n",
                (unsigned long long)failures[i].count, failures[i].kind, failures[i].example);
}

/* Calls answered over the whole run, warm-up included: the server's CPU,
 * read around the whole run, is per one of these (requests_all=). */
static unsigned long long calls_all;

static void record(uint64_t t0)
{
    uint64_t now = uv_hrtime();
    calls_all++;
    if (measuring && nsamples < MAX_SAMPLES)
        samples[nsamples++] = (double)(now - t0) / 1e6;
}

/* The 2026-07-28 envelope every request of that revision carries. */
#define MODERN_META                                                                                \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{},"                                           \
    "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"parley-loadgen\",\"version\":\"1\"}}"

/* The next request of a session; cursor: its place in --calls. *name is
 * the tool it calls (NULL for ping or server/discover). */
static int request_text(char *buf, size_t cap, long id, size_t *cursor, const char **name)
{
    *name = NULL;
    if (ncalls > 0) {
        size_t k = (*cursor)++ % ncalls;
        const char *call = calls[k];
        *name = call_names[k];
        if (!opt.modern)
            return snprintf(buf, cap,
                            "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\","
                            "\"params\":%s}",
                            id, call);
        /* The call's params object, with the envelope before its brace. */
        int inner = (int)(strrchr(call, '}') - call);
        return snprintf(buf, cap,
                        "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\","
                        "\"params\":%.*s," MODERN_META "}}",
                        id, inner, call);
    }
    if (opt.tool) {
        *name = opt.tool;
        return snprintf(buf, cap,
                        "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":{"
                        "\"name\":\"%s\",\"arguments\":{}%s}}",
                        id, opt.tool, opt.modern ? "," MODERN_META : "");
    }
    if (opt.modern)
        return snprintf(buf, cap,
                        "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"server/discover\","
                        "\"params\":{" MODERN_META "}}",
                        id);
    return snprintf(buf, cap, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"ping\"}", id);
}

static const char INIT[] =
    "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"parley-loadgen\","
    "\"version\":\"1\"}}}";
static const char INITIALIZED[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";

/* ---- stream sessions (unix, tcp) ----------------------------------------- */

typedef struct {
    union {
        uv_pipe_t pipe;
        uv_tcp_t tcp;
    } h;
    uv_connect_t connect;
    char *rbuf;
    size_t rlen;
    long next_id;
    size_t cursor;
    uint64_t t0;
    bool done;
    bool up;      /* started: counted in ready */
    bool idle;    /* initialized, holding (--idle) */
    bool waiting; /* a request (or initialize) unanswered since t0 */
    int index;    /* in stream_sessions */
} ssess_t;

/* Every stream session, by start order, until closed (NULL after): the
 * idle ones are closed at the end of the hold, and a request unanswered
 * after LOADGEN_TIMEOUT_S fails as a timeout. */
static ssess_t **stream_sessions;

static void s_closed(uv_handle_t *h)
{
    ssess_t *s = h->data;
    stream_sessions[s->index] = NULL;
    free(s->rbuf);
    free(s);
    live_sessions--;
}

static void s_write_done(uv_write_t *w, int status)
{
    if (status != 0) {
        char kind[64];
        snprintf(kind, sizeof kind, "write: %s", uv_err_name(status));
        fail(kind, NULL, 0);
    }
    free(w->data);
    free(w);
}

static void s_send(ssess_t *s, const char *text, size_t len)
{
    uv_write_t *w = malloc(sizeof *w);
    char *copy = malloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = '\n';
    w->data = copy;
    uv_buf_t b = uv_buf_init(copy, (unsigned)len + 1);
    int rc = uv_write(w, (uv_stream_t *)&s->h, &b, 1, s_write_done);
    if (rc != 0) {
        char kind[64];
        snprintf(kind, sizeof kind, "write: %s", uv_err_name(rc));
        fail(kind, NULL, 0);
        free(copy);
        free(w);
    }
}

static void s_next(ssess_t *s)
{
    if (uv_hrtime() >= deadline_ns) {
        s->done = true;
        uv_close((uv_handle_t *)&s->h, s_closed);
        return;
    }
    char req[REQ_MAX];
    const char *name;
    int n = request_text(req, sizeof req, ++s->next_id, &s->cursor, &name);
    s->t0 = uv_hrtime();
    s->waiting = true;
    s_send(s, req, (size_t)n);
}

static void s_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b)
{
    ssess_t *s = h->data;
    (void)sz;
    b->base = s->rbuf + s->rlen;
    b->len = READ_CHUNK - s->rlen;
}

static void s_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    ssess_t *s = st->data;
    (void)b;
    if (n < 0) {
        if (!s->done) {
            char kind[96];
            snprintf(kind, sizeof kind, "%sconnection closed by the peer (%s)",
                     s->up ? "" : "initialize: ", uv_err_name((int)n));
            fail(kind, s->rbuf, s->rlen);
            s->done = true;
            uv_close((uv_handle_t *)&s->h, s_closed);
            if (!s->up) {
                init_failed++;
                start_more();
            }
        }
        return;
    }
    s->rlen += (size_t)n;
    char *nl;
    while (!s->done && (nl = memchr(s->rbuf, '\n', s->rlen)) != NULL) {
        size_t len = (size_t)(nl - s->rbuf) + 1;
        bool is_error = is_bad(s->rbuf, opt.raw ? len - 1 : len);
        bool is_init = !opt.modern && !opt.raw && s->next_id == 0;
        if (is_error)
            fail_answer(is_init ? "initialize: " : "", s->rbuf, len);
        memmove(s->rbuf, s->rbuf + len, s->rlen - len);
        s->rlen -= len;
        s->waiting = false;
        if ((opt.modern || opt.raw) && !s->up) {
            /* The first answer in 2026-07-28 or --raw: the session has
             * started. */
            s->up = true;
            ready++;
            start_more();
        }
        if (is_init) {
            s_send(s, INITIALIZED, sizeof INITIALIZED - 1);
            s->up = true;
            ready++;
            start_more();
            if (opt.idle) {
                s->idle = true;
                s->next_id = 1;
                continue;
            }
        } else if (!is_error) {
            record(s->t0);
        }
        s_next(s);
    }
    if (s->rlen == READ_CHUNK) {
        fail("an answer line longer than READ_CHUNK (1 MiB)", s->rbuf, s->rlen);
        s->rlen = 0;
    }
}

static void s_connected(uv_connect_t *c, int status)
{
    ssess_t *s = c->data;
    if (status != 0) {
        char kind[96];
        snprintf(kind, sizeof kind, "connect: %s (%s)", uv_err_name(status), uv_strerror(status));
        fail(kind, NULL, 0);
        s->done = true;
        uv_close((uv_handle_t *)&s->h, s_closed);
        init_failed++;
        start_more();
        return;
    }
    uv_read_start((uv_stream_t *)&s->h, s_alloc, s_read);
    if (!opt.modern && !opt.raw) {
        s->t0 = uv_hrtime();
        s->waiting = true;
        s_send(s, INIT, sizeof INIT - 1);
        return;
    }
    /* 2026-07-28: nothing to set up. An idle session is up once
     * connected; any other once its first request is answered (s_read). */
    if (opt.idle) {
        s->up = true;
        ready++;
        start_more();
        s->idle = true;
        s->next_id = 1;
        return;
    }
    s_next(s);
}

static void s_start(void)
{
    ssess_t *s = calloc(1, sizeof *s);
    s->rbuf = malloc(READ_CHUNK);
    s->connect.data = s;
    s->cursor = (size_t)started * 7919;
    s->index = started;
    stream_sessions[started] = s;
    live_sessions++;
    if (opt.transport == T_UNIX) {
        uv_pipe_init(loop, &s->h.pipe, 0);
        s->h.pipe.data = s;
        uv_pipe_connect(&s->connect, &s->h.pipe, opt.path, s_connected);
    } else {
        uv_tcp_init(loop, &s->h.tcp);
        s->h.tcp.data = s;
        uv_tcp_nodelay(&s->h.tcp, 1);
        uv_tcp_connect(&s->connect, &s->h.tcp, (struct sockaddr *)&opt.addr, s_connected);
    }
}

/* ---- HTTP sessions (libcurl multi on the loop) --------------------------- */

typedef struct {
    CURL *easy;
    struct curl_slist *headers;
    char session_id[128];
    char body[REQ_MAX];
    char *resp; /* READ_CHUNK */
    size_t resp_len;
    int phase; /* 0 initialize, 1 initialized, 2 requests */
    bool up;   /* 2026-07-28: the first request answered (counted in ready) */
    long next_id;
    size_t cursor;
    uint64_t t0;
} hsess_t;

typedef struct {
    uv_poll_t poll;
    curl_socket_t fd;
} hsock_t;

static CURLM *multi;
static uv_timer_t curl_timer;

static size_t h_write(char *p, size_t sz, size_t n, void *ud)
{
    hsess_t *h = ud;
    size_t len = sz * n;
    if (h->resp_len + len < READ_CHUNK) {
        memcpy(h->resp + h->resp_len, p, len);
        h->resp_len += len;
    }
    return len;
}

static size_t h_header(char *p, size_t sz, size_t n, void *ud)
{
    hsess_t *h = ud;
    size_t len = sz * n;
    if (len > 16 && strncasecmp(p, "mcp-session-id:", 15) == 0) {
        const char *v = p + 15;
        while (*v == ' ')
            v++;
        size_t vl = strcspn(v, "\r\n");
        if (vl < sizeof h->session_id) {
            memcpy(h->session_id, v, vl);
            h->session_id[vl] = '\0';
        }
    }
    return len;
}

/* Posts body; name: the tool a 2026-07-28 tools/call names (its Mcp-Name;
 * NULL for server/discover). */
static void h_post(hsess_t *h, const char *body, const char *name)
{
    snprintf(h->body, sizeof h->body, "%s", body);
    h->resp_len = 0;
    curl_slist_free_all(h->headers);
    h->headers = curl_slist_append(NULL, "Content-Type: application/json");
    h->headers = curl_slist_append(h->headers, "Accept: application/json, text/event-stream");
    if (opt.modern) {
        char hdr[200];
        h->headers = curl_slist_append(h->headers, "MCP-Protocol-Version: 2026-07-28");
        h->headers = curl_slist_append(h->headers, name ? "Mcp-Method: tools/call"
                                                        : "Mcp-Method: server/discover");
        if (name) {
            snprintf(hdr, sizeof hdr, "Mcp-Name: %s", name);
            h->headers = curl_slist_append(h->headers, hdr);
        }
    }
    if (h->session_id[0]) {
        char hdr[160];
        snprintf(hdr, sizeof hdr, "Mcp-Session-Id: %s", h->session_id);
        h->headers = curl_slist_append(h->headers, hdr);
        h->headers = curl_slist_append(h->headers, "MCP-Protocol-Version: 2025-11-25");
    }
    curl_easy_setopt(h->easy, CURLOPT_HTTPHEADER, h->headers);
    curl_easy_setopt(h->easy, CURLOPT_POSTFIELDS, h->body);
    h->t0 = uv_hrtime();
    curl_multi_add_handle(multi, h->easy);
}

static void h_free(hsess_t *h)
{
    curl_easy_cleanup(h->easy);
    curl_slist_free_all(h->headers);
    free(h->resp);
    free(h);
    live_sessions--;
}

/* One exchange finished: go on with the next. */
static void h_done(hsess_t *h, CURLcode res)
{
    curl_multi_remove_handle(multi, h->easy);
    long status = 0;
    curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &status);
    bool ok = res == CURLE_OK && status >= 200 && status < 300 &&
              (h->phase == 1 || (memmem(h->resp, h->resp_len, "\"result\"", 8) != NULL &&
                                 !is_failure(h->resp, h->resp_len)));
    if (opt.raw)
        ok = res == CURLE_OK && status == 200 && !is_bad(h->resp, h->resp_len);
    if (!ok) {
        static const char *const phases[] = {"initialize: ", "notifications/initialized: ", ""};
        char kind[FAIL_TEXT + 96];
        if (res != CURLE_OK) {
            /* 52: closed with nothing answered; 55/56: closed while
             * sending/receiving (errno says how); 7: refused; 28: timeout. */
            long os_errno = 0;
            curl_easy_getinfo(h->easy, CURLINFO_OS_ERRNO, &os_errno);
            snprintf(kind, sizeof kind, "%scurl %d (%s)%s%s%s", phases[h->phase], (int)res,
                     curl_easy_strerror(res), os_errno ? " (" : "",
                     os_errno ? uv_err_name(-(int)os_errno) : "", os_errno ? ")" : "");
            fail(kind, h->resp, h->resp_len);
        } else if (status < 200 || status >= 300) {
            char phase[FAIL_TEXT];
            snprintf(phase, sizeof phase, "%sHTTP %ld: ", phases[h->phase], status);
            fail_answer(phase, h->resp, h->resp_len);
        } else {
            fail_answer(phases[h->phase], h->resp, h->resp_len);
        }
    }
    if (h->phase == 2 && ok)
        record(h->t0);
    /* A session that has started (its initialize answered, or in
     * 2026-07-28 its first request) lets the next one start; that happens
     * in check_multi, once this one has asked again, so that it takes its
     * connection back before they look for one (else it opens another,
     * and a burst of new connections goes past parleyd's count of those
     * without a complete request, which it shuts down). */
    if ((opt.modern || opt.raw) && !h->up) {
        h->up = true;
        ready++;
    }
    if (!ok && h->phase < 2) {
        h_free(h);
        init_failed++;
        return;
    }
    if (h->phase < 2)
        h->phase++;
    if (h->phase == 1) {
        h_post(h, INITIALIZED, NULL);
        return;
    }
    if (h->next_id == 0 && !opt.modern)
        ready++;
    if (opt.idle) {
        /* The session lives on in the server; the connection goes back to
         * the pool for the next one. */
        h_free(h);
        return;
    }
    if (uv_hrtime() >= deadline_ns) {
        h_free(h);
        return;
    }
    char req[REQ_MAX];
    const char *name;
    request_text(req, sizeof req, ++h->next_id, &h->cursor, &name);
    h_post(h, req, name);
}

static void check_multi(void)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        hsess_t *h;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&h);
        h_done(h, m->data.result);
    }
    start_more(); /* the sessions that started above let others start */
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    hsock_t *s = p->data;
    int flags = 0;
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    int running;
    curl_multi_socket_action(multi, s->fd, flags, &running);
    check_multi();
}

static void poll_closed(uv_handle_t *h)
{
    free(h->data);
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *up, void *sp)
{
    (void)e;
    (void)up;
    hsock_t *s = sp;
    if (what == CURL_POLL_REMOVE) {
        if (s) {
            uv_poll_stop(&s->poll);
            uv_close((uv_handle_t *)&s->poll, poll_closed);
            curl_multi_assign(multi, fd, NULL);
        }
        return 0;
    }
    if (s == NULL) {
        s = calloc(1, sizeof *s);
        s->fd = fd;
        uv_poll_init_socket(loop, &s->poll, fd);
        s->poll.data = s;
        curl_multi_assign(multi, fd, s);
    }
    int ev = (what & CURL_POLL_IN ? UV_READABLE : 0) | (what & CURL_POLL_OUT ? UV_WRITABLE : 0);
    uv_poll_start(&s->poll, ev, on_poll);
    return 0;
}

static void on_curl_timer(uv_timer_t *t)
{
    (void)t;
    int running;
    curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_multi();
}

static int on_timer(CURLM *m, long ms, void *up)
{
    (void)m;
    (void)up;
    if (ms < 0)
        uv_timer_stop(&curl_timer);
    else
        uv_timer_start(&curl_timer, on_curl_timer, (uint64_t)ms, 0);
    return 0;
}

static void h_start(void)
{
    hsess_t *h = calloc(1, sizeof *h);
    h->easy = curl_easy_init();
    curl_easy_setopt(h->easy, CURLOPT_URL, opt.url);
    curl_easy_setopt(h->easy, CURLOPT_WRITEFUNCTION, h_write);
    curl_easy_setopt(h->easy, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(h->easy, CURLOPT_HEADERFUNCTION, h_header);
    curl_easy_setopt(h->easy, CURLOPT_HEADERDATA, h);
    curl_easy_setopt(h->easy, CURLOPT_PRIVATE, h);
    curl_easy_setopt(h->easy, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h->easy, CURLOPT_TIMEOUT, (long)LOADGEN_TIMEOUT_S);
    h->resp = malloc(READ_CHUNK);
    h->cursor = (size_t)started * 7919;
    live_sessions++;
    if (!opt.modern && !opt.raw) {
        h_post(h, INIT, NULL);
        return;
    }
    /* 2026-07-28 and --raw: the first request is a request; the session
     * has started once it is answered (h_done). */
    h->phase = 2;
    if (opt.idle) {
        h->up = true;
        ready++;
        h_free(h);
        return;
    }
    char req[REQ_MAX];
    const char *name;
    request_text(req, sizeof req, ++h->next_id, &h->cursor, &name);
    h_post(h, req, name);
}

/* ---- main ----------------------------------------------------------------- */

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double p)
{
    if (nsamples == 0)
        return 0;
    size_t i = (size_t)(p * (double)(nsamples - 1));
    return samples[i];
}

static void on_start_measuring(uv_timer_t *t)
{
    (void)t;
    measuring = true;
    started_ns = uv_hrtime();
}

static void s_start(void);
static void h_start(void);

static void on_hold_end(uv_timer_t *t)
{
    (void)t;
    hold_done = true;
    if (opt.transport != T_HTTP)
        for (int i = 0; i < started; i++) {
            ssess_t *s = stream_sessions[i];
            if (s && !s->done) {
                s->done = true;
                uv_close((uv_handle_t *)&s->h, s_closed);
            }
        }
}

static uv_timer_t hold_timer;
static uv_timer_t timeout_timer;

/* Every second: a stream session's request unanswered for
 * LOADGEN_TIMEOUT_S fails as a timeout, and its connection is closed. */
static void on_timeout_check(uv_timer_t *t)
{
    (void)t;
    uint64_t limit = (uint64_t)LOADGEN_TIMEOUT_S * 1000000000u, now = uv_hrtime();
    for (int i = 0; i < started; i++) {
        ssess_t *s = stream_sessions[i];
        if (s == NULL || s->done || !s->waiting || now - s->t0 < limit)
            continue;
        char kind[96];
        const char *phase = s->up ? "" : "initialize: ";
        snprintf(kind, sizeof kind, "%stimeout: no answer in %d s", phase, LOADGEN_TIMEOUT_S);
        fail(kind, s->rbuf, s->rlen);
        s->done = true;
        uv_close((uv_handle_t *)&s->h, s_closed);
        if (!s->up)
            init_failed++;
    }
    start_more();
}

/* Starts sessions while fewer than LOADGEN_RAMP are initializing; with
 * --idle, starts the hold once every session is up. */
static void start_more(void)
{
    while (started < opt.sessions && started - ready - init_failed < LOADGEN_RAMP) {
        if (opt.transport == T_HTTP)
            h_start();
        else
            s_start();
        started++;
    }
    if (opt.idle && ready + init_failed == opt.sessions &&
        !uv_is_active((uv_handle_t *)&hold_timer) && !hold_done) {
        printf("idle_ready=%d\n", ready);
        fflush(stdout);
        uv_timer_start(&hold_timer, on_hold_end, (uint64_t)(opt.seconds * 1000), 0);
    }
}

static void load_calls(void)
{
    FILE *f = fopen(opt.calls_file, "r");
    if (f == NULL) {
        perror(opt.calls_file);
        exit(2);
    }
    char line[REQ_MAX - 128];
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\r\n");
        if (len == 0)
            continue;
        line[len] = '\0';
        if (ncalls == cap) {
            cap = cap ? cap * 2 : 1024;
            calls = realloc(calls, cap * sizeof *calls);
            call_names = realloc(call_names, cap * sizeof *call_names);
        }
        const char *n = strstr(line, "\"name\":\"");
        call_names[ncalls] = n ? strndup(n + 8, strcspn(n + 8, "\"")) : strdup("");
        calls[ncalls++] = strdup(line);
    }
    fclose(f);
    if (ncalls == 0) {
        fprintf(stderr, "%s: no calls\n", opt.calls_file);
        exit(2);
    }
}

/* --expect FILE: the answer --raw expects, byte for byte. */
static void load_expect(const char *file)
{
    FILE *f = fopen(file, "rb");
    if (f == NULL) {
        perror(file);
        exit(2);
    }
    opt.expect = malloc(READ_CHUNK);
    opt.expect_len = fread(opt.expect, 1, READ_CHUNK, f);
    fclose(f);
    if (opt.expect_len == 0 || opt.expect_len == READ_CHUNK) {
        fprintf(stderr, "%s: empty or too long\n", file);
        exit(2);
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: parley-loadgen --url unix:PATH|tcp://IP:PORT|http://IP:PORT/mcp "
                    "[--sessions N] [--seconds S] [--tool NAME | --calls FILE] [--idle] "
                    "[--label TEXT] [--protocol 2025-11-25|2026-07-28] [--raw --expect FILE] "
                    "(see --help)\n");
    exit(2);
}

/* --help: what it does and every option, on stdout (help2man makes the man
 * page parley-loadgen(1) from it; cmake/install.cmake). */
static void help(void)
{
    printf("Usage: parley-loadgen --url URL [options]\n"
           "\n"
           "A load generator for parleyd's MCP endpoints: opens N concurrent sessions, each\n"
           "running initialize and then one request after another for a fixed time, and\n"
           "prints one line of key=value pairs: label, transport, sessions, requests,\n"
           "errors, seconds, rps, p50_ms, p90_ms, p95_ms, p99_ms, max_ms. A JSON-RPC error or\n"
           "a tool result with isError counts as an error; a request unanswered for %d s\n"
           "fails as a timeout. bench/run (the benchmark harness) drives it.\n"
           "\n"
           "Options:\n"
           "  --url URL             unix:PATH, tcp://IP:PORT or http://IP:PORT/mcp\n"
           "  --sessions N          concurrent sessions (default %d; at most %d start at once)\n"
           "  --seconds S           how long they run (default %g)\n"
           "  --tool NAME           call this tool (default: ping; in 2026-07-28\n"
           "                        server/discover)\n"
           "  --calls FILE          one {\"name\": ..., \"arguments\": {...}} a line; session k\n"
           "                        starts at line k * 7919 and goes on in order\n"
           "  --idle                only initialize, then stay open, idle, for the time given;\n"
           "                        prints idle_ready=N once N sessions are initialized\n"
           "  --label TEXT          the label of the output line (default -)\n"
           "  --protocol VERSION    2025-11-25 (default) or 2026-07-28: no initialize, every\n"
           "                        request with the revision's _meta (and HTTP headers)\n"
           "  --raw                 with --expect: the same request bytes, no initialize; an\n"
           "                        answer is good only when it is exactly FILE's bytes\n"
           "  --expect FILE         the answer --raw expects\n"
           "  --help                show this text\n"
           "  --version             show the version\n"
           "\n"
           "Exit status: 0 ran (errors are counted in the output), 2 usage error.\n",
           LOADGEN_TIMEOUT_S, opt.sessions, LOADGEN_RAMP, opt.seconds);
    exit(0);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            help();
        if (strcmp(argv[i], "--version") == 0) {
            printf("parley-loadgen %s\n", PARLEY_VERSION);
            return 0;
        }
        if (strcmp(argv[i], "--idle") == 0) {
            opt.idle = true;
            continue;
        }
        if (strcmp(argv[i], "--raw") == 0) {
            opt.raw = true;
            continue;
        }
        if (i + 1 >= argc)
            usage();
        if (strcmp(argv[i], "--url") == 0)
            opt.url = argv[++i];
        else if (strcmp(argv[i], "--sessions") == 0)
            opt.sessions = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0)
            opt.seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--tool") == 0)
            opt.tool = argv[++i];
        else if (strcmp(argv[i], "--calls") == 0)
            opt.calls_file = argv[++i];
        else if (strcmp(argv[i], "--label") == 0)
            opt.label = argv[++i];
        else if (strcmp(argv[i], "--expect") == 0)
            load_expect(argv[++i]);
        else if (strcmp(argv[i], "--protocol") == 0) {
            const char *v = argv[++i];
            if (strcmp(v, "2026-07-28") == 0)
                opt.modern = true;
            else if (strcmp(v, "2025-11-25") != 0)
                usage();
        } else
            usage();
    }
    if (opt.url == NULL || opt.sessions < 1 || opt.seconds <= 0 ||
        opt.raw != (opt.expect != NULL) || (opt.raw && (opt.modern || opt.idle)))
        usage();
    if (strncmp(opt.url, "unix:", 5) == 0) {
        opt.transport = T_UNIX;
        snprintf(opt.path, sizeof opt.path, "%s", opt.url + 5);
    } else if (strncmp(opt.url, "tcp://", 6) == 0) {
        opt.transport = T_TCP;
        char host[64];
        int port;
        if (sscanf(opt.url + 6, "%63[^:]:%d", host, &port) != 2 ||
            uv_ip4_addr(host, port, &opt.addr) != 0)
            usage();
    } else if (strncmp(opt.url, "http://", 7) == 0) {
        opt.transport = T_HTTP;
    } else {
        usage();
    }
    if (opt.calls_file)
        load_calls();
    samples = malloc(MAX_SAMPLES * sizeof *samples);
    stream_sessions = calloc((size_t)opt.sessions, sizeof *stream_sessions);
    loop = uv_default_loop();
    uv_timer_init(loop, &hold_timer);
    uv_timer_init(loop, &timeout_timer);
    if (opt.transport != T_HTTP)
        uv_timer_start(&timeout_timer, on_timeout_check, 1000, 1000);
    /* A short warm-up (connections, first requests) is not measured. */
    double warmup = opt.seconds > 2 && !opt.idle ? 1.0 : 0.0;
    deadline_ns = uv_hrtime() + (uint64_t)((opt.seconds + warmup) * 1e9);
    uv_timer_t warm;
    uv_timer_init(loop, &warm);
    uv_timer_start(&warm, on_start_measuring, (uint64_t)(warmup * 1000), 0);
    if (opt.transport == T_HTTP) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        multi = curl_multi_init();
        curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, on_socket);
        curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, on_timer);
        curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                          (long)(opt.idle ? LOADGEN_RAMP : opt.sessions));
        uv_timer_init(loop, &curl_timer);
    }
    start_more();
    while (live_sessions > 0 || (opt.idle && !hold_done))
        uv_run(loop, UV_RUN_ONCE);
    /* 0 when the run ended before its warm-up did (nothing measured). */
    double secs = measuring ? (double)(uv_hrtime() - started_ns) / 1e9 : 0;
    if (opt.transport == T_HTTP) {
        uv_close((uv_handle_t *)&curl_timer, NULL);
        curl_multi_cleanup(multi);
        curl_global_cleanup();
    }
    uv_close((uv_handle_t *)&warm, NULL);
    uv_close((uv_handle_t *)&hold_timer, NULL);
    uv_close((uv_handle_t *)&timeout_timer, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    print_failures();
    static const char *const names[] = {"unix", "tcp", "http"};
    if (opt.idle) {
        printf("label=%s transport=%s sessions=%d ready=%d errors=%llu\n", opt.label,
               names[opt.transport], opt.sessions, ready, (unsigned long long)errors);
        return ready == opt.sessions ? 0 : 1;
    }
    qsort(samples, nsamples, sizeof *samples, cmp);
    printf("label=%s transport=%s protocol=%s sessions=%d requests=%zu requests_all=%llu "
           "errors=%llu seconds=%.2f "
           "rps=%.0f p50_ms=%.3f p90_ms=%.3f p95_ms=%.3f p99_ms=%.3f max_ms=%.3f\n",
           opt.label, names[opt.transport],
           opt.raw      ? "raw"
           : opt.modern ? "2026-07-28"
                        : "2025-11-25",
           opt.sessions, nsamples, calls_all, (unsigned long long)errors, secs,
           secs > 0 ? (double)nsamples / secs : 0.0, pct(0.50), pct(0.90), pct(0.95), pct(0.99),
           nsamples ? samples[nsamples - 1] : 0.0);
    free(samples);
    return errors > 0 ? 1 : 0;
}
