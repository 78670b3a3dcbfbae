/* http: MCP Streamable HTTP on libh2o (see http.h).
 *
 * Objects: an http_server_t per endpoint (h2o configuration and context on
 * the daemon's loop, the listener, the accepted connections, the sessions
 * by id); an hsess_t per MCP session (its logical streams and its ring of
 * recent events); an lstream_t per POST that carries requests (the ids
 * still to be answered) plus one standalone stream for GET; a resp_t per
 * HTTP response in progress, attached to at most one lstream. A logical
 * stream outlives a response that was cut: its events wait in the ring
 * until a GET with Last-Event-ID attaches a new response to it.
 *
 * h2o rules followed here: one h2o_send at a time, the next only after
 * the generator's proceed; the bytes handed to h2o stay valid until then;
 * after stop or a final send the request is never touched again. Sessions
 * are closed by flagging and freed from an idle handle on a later loop
 * turn, never inside an h2o callback. */
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

#define HTTP_TAG "http"

_Static_assert(H2O_USE_LIBUV, "parley needs the libuv flavour of libh2o");

typedef struct hsess_s hsess_t;
typedef struct lstream_s lstream_t;

typedef enum {
    RESP_UNDECIDED = 0, /* the POST's answer may still come at once (JSON) */
    RESP_SSE,
} resp_mode_t;

typedef struct resp_s {
    h2o_generator_t gen;
    h2o_req_t *req; /* NULL once finished or stopped */
    http_server_t *hs;
    lstream_t *ls; /* attached stream, or NULL */
    resp_mode_t mode;
    buf_t out;      /* SSE bytes not yet handed to h2o */
    char *inflight; /* handed to h2o; freed on proceed or stop */
    size_t inflight_len;
    bool sending; /* waiting for proceed */
    bool finish;  /* end once out is written */
    char *single; /* RESP_UNDECIDED: the one message so far */
    size_t single_len;
    uint64_t single_seq;  /* its event's sequence number */
    bool single_is_final; /* it is the request's response */
    uint64_t prime_seq;   /* sequence number of the priming event */
    int nmsgs;
    queue_node_t node; /* in hs->resps */
} resp_t;

struct lstream_s {
    queue_node_t node; /* in hsess->streams */
    hsess_t *hsess;
    uint64_t no;
    json_t *pending; /* request ids not yet answered */
    resp_t *resp;
    bool standalone; /* the GET stream */
};

typedef struct event_s {
    uint64_t stream, seq;
    char *text; /* formatted SSE event */
    size_t len;
} event_t;

typedef enum {
    HSESS_OPEN = 0,
    HSESS_CLOSING, /* waiting for the sweep */
} hsess_state_t;

struct hsess_s {
    queue_node_t node; /* in hs->sessions, then hs->sweep */
    http_server_t *hs;
    mcp_session_t *session;
    hsess_state_t state;
    char id[65];
    queue_node_t streams;
    uint64_t next_stream, next_seq;
    event_t *ring; /* HTTP_EVENT_RING_MAX */
    int ring_head, ring_count;
    size_t ring_bytes;
    size_t queued; /* bytes in attached responses not yet written */
    bool reading;
    uint64_t last_active;
    const token_t *token;
};

typedef struct hconn_s {
    uv_tcp_t tcp; /* data belongs to h2o */
    queue_node_t node;
    http_server_t *hs;
} hconn_t;

typedef enum {
    HTTP_ACTIVE = 0,
    HTTP_CLOSING,
    HTTP_CLOSED,
} http_state_t;

struct http_server_s {
    http_state_t state;
    uv_loop_t *loop;
    mcp_server_t *srv;
    endpoint_t ep;
    http_options_t opt;
    h2o_globalconf_t conf;
    h2o_context_t ctx;
    h2o_accept_ctx_t actx;
    uv_tcp_t listener;
    bool listener_open;
    queue_node_t conns;
    int nconns;
    queue_node_t sessions;
    queue_node_t sweep;
    json_t *by_id; /* session id -> hsess_t * (as an integer) */
    queue_node_t resps;
    uv_idle_t sweeper;
    uv_timer_t ticker;
    uint64_t close_started;
    uint64_t last_ping;
    size_t ring_bytes_total;
    bool timers_closing;
    int handles_open;
    http_close_cb close_cb;
    void *data;
};

static const mcp_transport_ops_t hsess_ops;
static void resp_pump(resp_t *r);
static void sweep_cb(uv_idle_t *idle);
static void http_maybe_closed(http_server_t *hs);

/* ---- small helpers ------------------------------------------------------ */

static h2o_iovec_t header(h2o_req_t *req, const char *lcname, size_t len)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, lcname, len, -1);
    return i < 0 ? h2o_iovec_init(NULL, 0) : req->headers.entries[i].value;
}

static bool method_is(h2o_req_t *req, const char *m)
{
    return h2o_memis(req->method.base, req->method.len, m, strlen(m));
}

static void add_header(h2o_req_t *req, const char *name, const char *value, size_t len)
{
    h2o_iovec_t v = h2o_strdup(&req->pool, value, len);
    h2o_add_header_by_str(&req->pool, &req->res.headers, name, strlen(name), 0, NULL, v.base,
                          v.len);
}

static void send_body(h2o_req_t *req, int status, const char *reason, const char *ctype,
                      const char *body, size_t len)
{
    req->res.status = status;
    req->res.reason = reason;
    req->res.content_length = len;
    if (ctype)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, ctype,
                       strlen(ctype));
    h2o_iovec_t copy = h2o_strdup(&req->pool, body, len);
    h2o_send_inline(req, copy.base, copy.len);
}

/* An HTTP error whose body is a JSON-RPC error (id null). */
static void send_rpc_error(h2o_req_t *req, int status, const char *reason, int code,
                           const char *message)
{
    size_t len = 0;
    char *m = jsonrpc_error(NULL, code, message, NULL, &len);
    send_body(req, status, reason, "application/json", m ? m : "", m ? len : 0);
    free(m);
}

/* ---- the event ring ----------------------------------------------------- */

static void ring_drop_oldest(hsess_t *h)
{
    event_t *e = &h->ring[h->ring_head];
    h->ring_bytes -= e->len;
    h->hs->ring_bytes_total -= e->len;
    free(e->text);
    e->text = NULL;
    h->ring_head = (h->ring_head + 1) % HTTP_EVENT_RING_MAX;
    h->ring_count--;
}

/* Keeps a copy of an event for resumption; the session's oldest go first.
 * Past the total for all sessions an event is not kept (that stream then
 * cannot be resumed past it). */
static void ring_add(hsess_t *h, uint64_t stream, uint64_t seq, const char *text, size_t len)
{
    while (h->ring_count > 0 &&
           (h->ring_count == HTTP_EVENT_RING_MAX || h->ring_bytes + len > HTTP_EVENT_RING_BYTES ||
            h->hs->ring_bytes_total + len > HTTP_EVENT_BYTES_TOTAL))
        ring_drop_oldest(h);
    if (len > HTTP_EVENT_RING_BYTES || h->hs->ring_bytes_total + len > HTTP_EVENT_BYTES_TOTAL)
        return;
    if (h->ring == NULL && (h->ring = calloc(HTTP_EVENT_RING_MAX, sizeof *h->ring)) == NULL)
        return;
    char *copy = malloc(len);
    if (copy == NULL)
        return;
    memcpy(copy, text, len);
    event_t *e = &h->ring[(h->ring_head + h->ring_count) % HTTP_EVENT_RING_MAX];
    *e = (event_t){stream, seq, copy, len};
    h->ring_count++;
    h->ring_bytes += len;
    h->hs->ring_bytes_total += len;
}

/* Drops the newest event when it is seq. */
static void ring_drop_newest(hsess_t *h, uint64_t seq)
{
    if (h->ring_count == 0)
        return;
    int last = (h->ring_head + h->ring_count - 1) % HTTP_EVENT_RING_MAX;
    event_t *e = &h->ring[last];
    if (e->seq != seq)
        return;
    h->ring_bytes -= e->len;
    h->hs->ring_bytes_total -= e->len;
    free(e->text);
    e->text = NULL;
    h->ring_count--;
}

/* Formats one SSE event ("id: S-N", event message, the JSON as data lines). */
static int format_event(buf_t *b, uint64_t stream, uint64_t seq, const char *msg, size_t len)
{
    int rc = buf_printf(b, "id: %llu-%llu\nevent: message\n", (unsigned long long)stream,
                        (unsigned long long)seq);
    const char *p = msg, *end = msg + len;
    while (rc == 0) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        rc = buf_append_str(b, "data: ") || buf_append(b, p, (size_t)(stop - p)) ||
             buf_append_str(b, "\n");
        if (nl == NULL)
            break;
        p = nl + 1;
    }
    return rc ? rc : buf_append_str(b, "\n");
}

/* ---- responses ---------------------------------------------------------- */

static void resp_free(resp_t *r)
{
    queue_remove(&r->node);
    buf_free(&r->out);
    free(r->inflight);
    free(r->single);
    free(r);
}

/* Bytes of r counted in its session's queue. */
static size_t resp_bytes(const resp_t *r)
{
    return r->out.len + (r->sending ? r->inflight_len : 0);
}

static void resp_detach(resp_t *r)
{
    lstream_t *ls = r->ls;
    if (ls == NULL)
        return;
    ls->hsess->queued -= resp_bytes(r);
    ls->resp = NULL;
    r->ls = NULL;
}

static void resp_proceed(h2o_generator_t *gen, h2o_req_t *req)
{
    resp_t *r = H2O_STRUCT_FROM_MEMBER(resp_t, gen, gen);
    (void)req;
    r->sending = false;
    if (r->ls)
        r->ls->hsess->queued -= r->inflight_len;
    free(r->inflight);
    r->inflight = NULL;
    r->inflight_len = 0;
    hsess_t *h = r->ls ? r->ls->hsess : NULL;
    resp_pump(r);
    if (h && h->state == HSESS_OPEN)
        mcp_session_drained(h->session);
}

/* The client went away (or the connection failed): the stream's events
 * wait in the ring for a resumption. */
static void resp_stop(h2o_generator_t *gen, h2o_req_t *req)
{
    resp_t *r = H2O_STRUCT_FROM_MEMBER(resp_t, gen, gen);
    (void)req;
    resp_detach(r);
    r->req = NULL;
    resp_free(r);
}

/* Hands pending bytes to h2o; ends the response when asked to and
 * everything was written. May free r. */
static void resp_pump(resp_t *r)
{
    if (r->req == NULL || r->sending || r->mode != RESP_SSE)
        return;
    if (r->finish) {
        h2o_req_t *req = r->req;
        /* The last bytes go from the request's pool: r is freed now. */
        h2o_iovec_t last = h2o_strdup(&req->pool, r->out.data ? r->out.data : "", r->out.len);
        resp_detach(r);
        r->req = NULL;
        resp_free(r);
        h2o_send(req, &last, last.len ? 1 : 0, H2O_SEND_STATE_FINAL);
        return;
    }
    if (r->out.len == 0)
        return;
    size_t len = 0;
    r->inflight = buf_steal(&r->out, &len);
    r->inflight_len = len;
    if (r->inflight == NULL)
        return;
    r->sending = true;
    h2o_iovec_t b = h2o_iovec_init(r->inflight, len);
    h2o_send(r->req, &b, 1, H2O_SEND_STATE_IN_PROGRESS);
}

/* Starts the SSE response: headers, then a priming event (an id and
 * empty data) carrying the retry interval. */
static void resp_start_sse(resp_t *r, hsess_t *h, uint64_t stream)
{
    h2o_req_t *req = r->req;
    r->mode = RESP_SSE;
    req->res.status = 200;
    req->res.reason = "OK";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("text/event-stream"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL,
                   H2O_STRLIT("no-cache"));
    if (h)
        add_header(req, "mcp-session-id", h->id, strlen(h->id));
    h2o_start_response(req, &r->gen);
    buf_t pre;
    buf_init(&pre, r->out.limit);
    /* The priming event's id comes before the events already queued (it
     * was reserved when the response began), so a client that resumes from
     * it misses none of them. */
    uint64_t seq = r->prime_seq ? r->prime_seq : h ? ++h->next_seq : 0;
    if (buf_printf(&pre, "id: %llu-%llu\nretry: %d\ndata: \n\n", (unsigned long long)stream,
                   (unsigned long long)seq, HTTP_SSE_RETRY_MS) == 0 &&
        buf_append(&pre, r->out.data, r->out.len) == 0) {
        if (r->ls)
            h->queued += pre.len - r->out.len;
        buf_free(&r->out);
        r->out = pre;
    } else {
        buf_free(&pre);
    }
    resp_pump(r);
}

static resp_t *resp_new(http_server_t *hs, h2o_req_t *req)
{
    resp_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->gen.proceed = resp_proceed;
    r->gen.stop = resp_stop;
    r->req = req;
    r->hs = hs;
    buf_init(&r->out, (size_t)1 << 30);
    queue_push_tail(&hs->resps, &r->node);
    return r;
}

/* Ends r after what it holds was written (may free r). */
static void resp_end(resp_t *r)
{
    r->finish = true;
    if (r->mode == RESP_SSE)
        resp_pump(r);
}

/* ---- logical streams ---------------------------------------------------- */

static lstream_t *lstream_new(hsess_t *h, bool standalone)
{
    lstream_t *ls = calloc(1, sizeof *ls);
    if (ls == NULL)
        return NULL;
    ls->hsess = h;
    ls->no = standalone ? 0 : ++h->next_stream;
    ls->standalone = standalone;
    ls->pending = json_array();
    queue_push_tail(&h->streams, &ls->node);
    return ls;
}

static void lstream_free(lstream_t *ls)
{
    if (ls->resp)
        resp_detach(ls->resp);
    queue_remove(&ls->node);
    json_decref(ls->pending);
    free(ls);
}

static lstream_t *lstream_by_id(hsess_t *h, const json_t *id, size_t *index)
{
    for (queue_node_t *n = h->streams.next; n != &h->streams; n = n->next) {
        lstream_t *ls = queue_entry(n, lstream_t, node);
        size_t i;
        json_t *v;
        json_array_foreach(ls->pending, i, v)
        {
            if (json_equal(v, (json_t *)id)) {
                if (index)
                    *index = i;
                return ls;
            }
        }
    }
    return NULL;
}

static lstream_t *lstream_by_no(hsess_t *h, uint64_t no)
{
    for (queue_node_t *n = h->streams.next; n != &h->streams; n = n->next) {
        lstream_t *ls = queue_entry(n, lstream_t, node);
        if (ls->no == no)
            return ls;
    }
    return NULL;
}

/* ---- the session's transport operations --------------------------------- */

static int hsess_send(void *t, char *msg, size_t len, const json_t *related, bool final)
{
    hsess_t *h = t;
    if (h->state != HSESS_OPEN) {
        free(msg);
        return UV_ECANCELED;
    }
    /* Response newlines are JSON whitespace; keep one event per message. */
    size_t idx = 0;
    lstream_t *ls = related ? lstream_by_id(h, related, &idx) : NULL;
    if (ls == NULL)
        ls = lstream_by_no(h, 0);
    uint64_t stream = ls ? ls->no : 0;
    uint64_t seq = ++h->next_seq;
    buf_t ev;
    buf_init(&ev, (size_t)1 << 30);
    if (format_event(&ev, stream, seq, msg, len) != 0) {
        buf_free(&ev);
        free(msg);
        return UV_ENOMEM;
    }
    resp_t *r = ls ? ls->resp : NULL;
    ring_add(h, stream, seq, ev.data, ev.len);
    if (r != NULL && r->mode == RESP_UNDECIDED && r->nmsgs == 0)
        r->single_seq = seq;
    if (r != NULL && r->mode == RESP_UNDECIDED && r->nmsgs++ == 0) {
        r->single = msg;
        r->single_len = len;
        r->single_is_final = final && related != NULL;
        msg = NULL;
    }
    if (r != NULL) {
        if (buf_append(&r->out, ev.data, ev.len) == 0)
            h->queued += ev.len;
    }
    buf_free(&ev);
    free(msg);
    if (ls && final && related) {
        json_array_remove(ls->pending, idx);
        if (json_array_size(ls->pending) == 0 && !ls->standalone) {
            /* The POST is answered: its response ends after this. */
            lstream_free(ls);
            if (r && r->mode == RESP_SSE)
                resp_end(r);
            else if (r)
                r->finish = true; /* decided by the POST handler */
            return 0;
        }
    }
    if (r)
        resp_pump(r);
    return 0;
}

static size_t hsess_queued(void *t)
{
    return ((hsess_t *)t)->queued;
}

static void hsess_set_reading(void *t, bool on)
{
    ((hsess_t *)t)->reading = on;
}

static void hsess_end_stream(void *t, const json_t *related)
{
    hsess_t *h = t;
    lstream_t *ls = lstream_by_id(h, related, NULL);
    if (ls == NULL || ls->resp == NULL)
        return;
    resp_t *r = ls->resp;
    resp_detach(r);
    /* Undecided (the POST handler is still running): it starts the SSE
     * stream and, seeing finish, ends it after the priming event. */
    resp_end(r);
}

/* A cancelled request gets no response: take it off its stream, and end
 * the stream when nothing else is pending on it. */
static void hsess_abandon(void *t, const json_t *related)
{
    hsess_t *h = t;
    size_t idx = 0;
    lstream_t *ls = lstream_by_id(h, related, &idx);
    if (ls == NULL)
        return;
    json_array_remove(ls->pending, idx);
    if (json_array_size(ls->pending) > 0 || ls->standalone)
        return;
    resp_t *r = ls->resp;
    lstream_free(ls);
    if (r)
        resp_end(r);
}

static void hsess_close(void *t)
{
    hsess_t *h = t;
    if (h->state != HSESS_OPEN)
        return;
    h->state = HSESS_CLOSING;
    while (!queue_empty(&h->streams)) {
        lstream_t *ls = queue_entry(queue_head(&h->streams), lstream_t, node);
        resp_t *r = ls->resp;
        lstream_free(ls);
        if (r)
            resp_end(r);
    }
    json_object_del(h->hs->by_id, h->id);
    queue_remove(&h->node);
    queue_push_tail(&h->hs->sweep, &h->node);
    uv_idle_start(&h->hs->sweeper, sweep_cb);
}

static const mcp_transport_ops_t hsess_ops = {
    .send = hsess_send,
    .queued_bytes = hsess_queued,
    .set_reading = hsess_set_reading,
    .close = hsess_close,
    .end_stream = hsess_end_stream,
    .abandon = hsess_abandon,
};

static void hsess_free(hsess_t *h)
{
    while (h->ring_count > 0)
        ring_drop_oldest(h);
    free(h->ring);
    free(h);
}

static void sweep_cb(uv_idle_t *idle)
{
    http_server_t *hs = idle->data;
    while (!queue_empty(&hs->sweep)) {
        hsess_t *h = queue_entry(queue_head(&hs->sweep), hsess_t, node);
        queue_remove(&h->node);
        mcp_session_transport_closed(h->session);
        hsess_free(h);
    }
    uv_idle_stop(idle);
    http_maybe_closed(hs);
}

static hsess_t *hsess_new(http_server_t *hs)
{
    hsess_t *h = calloc(1, sizeof *h);
    unsigned char rnd[32];
    if (h == NULL || uv_random(NULL, NULL, rnd, sizeof rnd, 0, NULL) != 0) {
        free(h);
        return NULL;
    }
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(h->id + 2 * i, 3, "%02x", rnd[i]);
    h->hs = hs;
    h->reading = true;
    h->last_active = uv_now(hs->loop);
    queue_init(&h->streams);
    h->session = mcp_session_new(hs->srv, &hsess_ops, h, "http");
    if (h->session == NULL) {
        free(h);
        return NULL;
    }
    queue_push_tail(&hs->sessions, &h->node);
    json_object_set_new(hs->by_id, h->id, json_integer((json_int_t)(intptr_t)h));
    return h;
}

static hsess_t *hsess_find(http_server_t *hs, h2o_iovec_t id)
{
    char key[80];
    if (id.len == 0 || id.len >= sizeof key)
        return NULL;
    memcpy(key, id.base, id.len);
    key[id.len] = '\0';
    json_t *v = json_object_get(hs->by_id, key);
    return v ? (hsess_t *)(intptr_t)json_integer_value(v) : NULL;
}

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
    return host_is_loopback(o + skip, host_part(o + skip, n - skip));
}

/* DNS rebinding and tokens. Returns true when the request may go on;
 * otherwise it was answered. */
static bool check_access(http_server_t *hs, h2o_req_t *req, const token_t **tok)
{
    *tok = NULL;
    h2o_iovec_t host = req->input.authority;
    if (endpoint_is_loopback(&hs->ep) &&
        !host_is_loopback(host.base, host_part(host.base, host.len))) {
        send_rpc_error(req, 403, "Forbidden", JSONRPC_INVALID_REQUEST,
                       "Forbidden: the Host header must name a loopback host");
        return false;
    }
    h2o_iovec_t origin = header(req, H2O_STRLIT("origin"));
    if (origin.base != NULL && !origin_allowed(hs, origin)) {
        send_rpc_error(req, 403, "Forbidden", JSONRPC_INVALID_REQUEST,
                       "Forbidden: Origin not allowed (see allowed_origins)");
        return false;
    }
    if (hs->opt.tokens) {
        h2o_iovec_t auth = header(req, H2O_STRLIT("authorization"));
        *tok = tokens_check(hs->opt.tokens, auth.base, auth.len);
        if (*tok == NULL) {
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL,
                           H2O_STRLIT("Bearer"));
            send_rpc_error(req, 401, "Unauthorized", JSONRPC_INVALID_REQUEST,
                           "Unauthorized: send Authorization: Bearer TOKEN");
            return false;
        }
    }
    return true;
}

/* ---- /metrics and /healthz ---------------------------------------------- */

static void serve_metrics(http_server_t *hs, h2o_req_t *req)
{
    buf_t b;
    buf_init(&b, 1u << 20);
    if (hs->opt.metrics)
        hs->opt.metrics(&b, hs->opt.metrics_data);
    else
        mcp_server_metrics(hs->srv, &b);
    send_body(req, 200, "OK", "text/plain; version=0.0.4", b.data ? b.data : "", b.len);
    buf_free(&b);
}

/* ---- the MCP endpoint ---------------------------------------------------- */

static bool accepts(h2o_req_t *req, const char *type)
{
    h2o_iovec_t a = header(req, H2O_STRLIT("accept"));
    if (a.base == NULL)
        return true;
    return h2o_strstr(a.base, a.len, type, strlen(type)) != SIZE_MAX ||
           h2o_strstr(a.base, a.len, H2O_STRLIT("*/*")) != SIZE_MAX;
}

/* The session named by Mcp-Session-Id; answers 400/404 and returns NULL
 * when there is none. */
static hsess_t *session_of(http_server_t *hs, h2o_req_t *req, const token_t *tok)
{
    h2o_iovec_t sid = header(req, H2O_STRLIT("mcp-session-id"));
    if (sid.base == NULL) {
        send_rpc_error(req, 400, "Bad Request", JSONRPC_INVALID_REQUEST,
                       "Bad Request: Mcp-Session-Id header is required (initialize first)");
        return NULL;
    }
    hsess_t *h = hsess_find(hs, sid);
    if (h == NULL || h->state != HSESS_OPEN) {
        send_rpc_error(req, 404, "Not Found", -32001,
                       "Session not found: it ended or expired; initialize a new one");
        return NULL;
    }
    if (h->token != tok) {
        send_rpc_error(req, 403, "Forbidden", JSONRPC_INVALID_REQUEST,
                       "Forbidden: the session belongs to another token");
        return NULL;
    }
    h2o_iovec_t pv = header(req, H2O_STRLIT("mcp-protocol-version"));
    if (pv.base != NULL) {
        char v[32];
        snprintf(v, sizeof v, "%.*s", (int)(pv.len < 31 ? pv.len : 31), pv.base);
        if (!mcp_protocol_supported(v)) {
            send_rpc_error(req, 400, "Bad Request", JSONRPC_INVALID_REQUEST,
                           "Bad Request: unsupported MCP-Protocol-Version");
            return NULL;
        }
    }
    h->last_active = uv_now(hs->loop);
    return h;
}

static void handle_post(http_server_t *hs, h2o_req_t *req, const token_t *tok)
{
    h2o_iovec_t ct = header(req, H2O_STRLIT("content-type"));
    if (ct.base == NULL ||
        h2o_strstr(ct.base, ct.len, H2O_STRLIT("application/json")) == SIZE_MAX) {
        send_rpc_error(req, 415, "Unsupported Media Type", JSONRPC_INVALID_REQUEST,
                       "Content-Type must be application/json");
        return;
    }
    if (!accepts(req, "application/json") && !accepts(req, "text/event-stream")) {
        send_rpc_error(req, 406, "Not Acceptable", JSONRPC_INVALID_REQUEST,
                       "Accept must allow application/json and text/event-stream");
        return;
    }
    json_error_t je;
    json_t *m =
        json_loadb(req->entity.base ? req->entity.base : "", req->entity.len, JSON_DECODE_ANY, &je);
    if (m == NULL) {
        char text[200];
        snprintf(text, sizeof text, "Parse error: %s at byte %d", je.text, je.position);
        send_rpc_error(req, 400, "Bad Request", JSONRPC_PARSE_ERROR, text);
        return;
    }
    if (!json_is_object(m)) {
        send_rpc_error(req, 400, "Bad Request", JSONRPC_INVALID_REQUEST,
                       json_is_array(m) ? "Invalid Request: batches are not supported"
                                        : "Invalid Request: a message must be a JSON object");
        json_decref(m);
        return;
    }
    const char *method = json_string_value(json_object_get(m, "method"));
    json_t *id = json_object_get(m, "id");
    bool is_request = method != NULL && id != NULL;
    bool is_init = method != NULL && strcmp(method, "initialize") == 0;
    if (is_request && !json_is_string(id) && !json_is_integer(id)) {
        send_rpc_error(req, 400, "Bad Request", JSONRPC_INVALID_REQUEST,
                       "Invalid Request: \"id\" must be a string or an integer");
        json_decref(m);
        return;
    }
    if (is_init && !is_request) {
        send_rpc_error(req, 400, "Bad Request", JSONRPC_INVALID_REQUEST,
                       "Invalid Request: initialize is a request (it needs an \"id\")");
        json_decref(m);
        return;
    }
    hsess_t *h;
    if (is_init && header(req, H2O_STRLIT("mcp-session-id")).base == NULL) {
        if (!mcp_server_admit(hs->srv)) {
            send_rpc_error(req, 503, "Service Unavailable", JSONRPC_SERVER_BUSY,
                           "too many sessions; retry later");
            json_decref(m);
            return;
        }
        h = hsess_new(hs);
        if (h == NULL) {
            send_rpc_error(req, 500, "Internal Server Error", JSONRPC_INTERNAL_ERROR,
                           "out of memory");
            json_decref(m);
            return;
        }
        h->token = tok;
        if (tok) {
            mcp_policy_t pol;
            char err[160];
            if (tokens_policy(tok, &hs->srv->registry, &pol, err, sizeof err) == 0)
                mcp_session_set_policy(h->session, &pol);
        }
    } else if ((h = session_of(hs, req, tok)) == NULL) {
        json_decref(m);
        return;
    }
    if (!is_request) {
        /* A notification or a response to one of our requests. */
        mcp_session_receive_json(h->session, m);
        json_decref(m);
        req->res.status = 202;
        req->res.reason = "Accepted";
        req->res.content_length = 0;
        h2o_send_inline(req, "", 0);
        return;
    }
    if (!h->reading) {
        /* Backpressure: too much in flight or unread on this session. */
        add_header(req, "retry-after", "1", 1);
        char *e = jsonrpc_error(id, JSONRPC_SERVER_BUSY, "session busy, retry later", NULL, NULL);
        send_body(req, 429, "Too Many Requests", "application/json", e ? e : "", e ? strlen(e) : 0);
        free(e);
        json_decref(m);
        return;
    }
    resp_t *r = resp_new(hs, req);
    lstream_t *ls = r ? lstream_new(h, false) : NULL;
    if (ls == NULL) {
        if (r)
            resp_free(r);
        send_rpc_error(req, 500, "Internal Server Error", JSONRPC_INTERNAL_ERROR, "out of memory");
        json_decref(m);
        return;
    }
    json_array_append(ls->pending, id);
    ls->resp = r;
    r->ls = ls;
    r->prime_seq = ++h->next_seq;
    uint64_t stream_no = ls->no;
    mcp_session_receive_json(h->session, m);
    json_decref(m);
    /* ls may be gone (answered); r is still ours (undecided). */
    if (r->finish && r->nmsgs == 1 && r->single_is_final) {
        req->res.status = 200;
        req->res.reason = "OK";
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                       H2O_STRLIT("application/json"));
        if (h->state == HSESS_OPEN && mcp_session_state(h->session) >= MCP_SESSION_READY)
            add_header(req, "mcp-session-id", h->id, strlen(h->id));
        req->res.content_length = r->single_len;
        h2o_iovec_t body = h2o_strdup(&req->pool, r->single, r->single_len);
        /* Answered as plain JSON: its event is not needed for resumption. */
        ring_drop_newest(h, r->single_seq);
        resp_detach(r);
        r->req = NULL;
        resp_free(r);
        h2o_send_inline(req, body.base, body.len);
    } else {
        resp_start_sse(r, h->state == HSESS_OPEN ? h : NULL, stream_no);
    }
    if (is_init && h->state == HSESS_OPEN && mcp_session_state(h->session) < MCP_SESSION_READY)
        mcp_session_close(h->session); /* initialize failed: no session */
}

static void handle_get(http_server_t *hs, h2o_req_t *req, const token_t *tok)
{
    if (!accepts(req, "text/event-stream")) {
        send_rpc_error(req, 406, "Not Acceptable", JSONRPC_INVALID_REQUEST,
                       "Accept must allow text/event-stream");
        return;
    }
    hsess_t *h = session_of(hs, req, tok);
    if (h == NULL)
        return;
    h2o_iovec_t last = header(req, H2O_STRLIT("last-event-id"));
    unsigned long long stream = 0, seq = 0;
    if (last.base != NULL) {
        char v[64];
        snprintf(v, sizeof v, "%.*s", (int)(last.len < 63 ? last.len : 63), last.base);
        if (sscanf(v, "%llu-%llu", &stream, &seq) != 2) {
            send_rpc_error(req, 400, "Bad Request", JSONRPC_INVALID_REQUEST,
                           "Bad Request: Last-Event-ID is not one of this server's event ids");
            return;
        }
    }
    lstream_t *ls = lstream_by_no(h, stream);
    if (ls == NULL && stream == 0)
        ls = lstream_new(h, true);
    resp_t *r = resp_new(hs, req);
    if (r == NULL) {
        send_rpc_error(req, 500, "Internal Server Error", JSONRPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    if (ls && ls->resp) {
        if (last.base == NULL) {
            resp_free(r);
            send_rpc_error(req, 409, "Conflict", JSONRPC_INVALID_REQUEST,
                           "Conflict: this session already has a GET stream open");
            return;
        }
        resp_t *old = ls->resp;
        resp_detach(old);
        resp_end(old);
    }
    /* Replay what the client missed on that stream. */
    for (int i = 0; i < h->ring_count; i++) {
        const event_t *e = &h->ring[(h->ring_head + i) % HTTP_EVENT_RING_MAX];
        if (e->stream == stream && e->seq > seq)
            buf_append(&r->out, e->text, e->len);
    }
    if (ls) {
        ls->resp = r;
        r->ls = ls;
        h->queued += r->out.len;
    } else {
        r->finish = true; /* that stream is complete: replay and end */
    }
    resp_start_sse(r, h, stream);
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    http_server_t *hs = *(http_server_t **)(self + 1);
    h2o_iovec_t p = req->path_normalized;
    if (h2o_memis(p.base, p.len, H2O_STRLIT("/healthz"))) {
        bool ok = hs->state == HTTP_ACTIVE;
        const char *body = ok ? "{\"status\":\"ok\"}" : "{\"status\":\"stopping\"}";
        send_body(req, ok ? 200 : 503, ok ? "OK" : "Service Unavailable", "application/json", body,
                  strlen(body));
        return 0;
    }
    const token_t *tok;
    if (h2o_memis(p.base, p.len, H2O_STRLIT("/metrics"))) {
        if (check_access(hs, req, &tok))
            serve_metrics(hs, req);
        return 0;
    }
    if (!h2o_memis(p.base, p.len, hs->ep.http_path, strlen(hs->ep.http_path)))
        return -1; /* 404 */
    if (!check_access(hs, req, &tok))
        return 0;
    if (hs->state != HTTP_ACTIVE) {
        send_rpc_error(req, 503, "Service Unavailable", JSONRPC_SERVER_BUSY,
                       "the server is shutting down");
        return 0;
    }
    if (method_is(req, "POST")) {
        handle_post(hs, req, tok);
    } else if (method_is(req, "GET")) {
        handle_get(hs, req, tok);
    } else if (method_is(req, "DELETE")) {
        hsess_t *h = session_of(hs, req, tok);
        if (h != NULL) {
            mcp_session_close(h->session);
            send_body(req, 200, "OK", NULL, "", 0);
        }
    } else {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL,
                       H2O_STRLIT("GET, POST, DELETE"));
        h2o_send_error_405(req, "Method Not Allowed", "use GET, POST or DELETE\n",
                           H2O_SEND_ERROR_KEEP_HEADERS);
    }
    return 0;
}

/* ---- connections and lifecycle ------------------------------------------ */

static void conn_closed(uv_handle_t *h)
{
    hconn_t *c = H2O_STRUCT_FROM_MEMBER(hconn_t, tcp, (uv_tcp_t *)h);
    http_server_t *hs = c->hs;
    queue_remove(&c->node);
    free(c);
    hs->nconns--;
    http_maybe_closed(hs);
}

static void refused_closed(uv_handle_t *h)
{
    free(H2O_STRUCT_FROM_MEMBER(hconn_t, tcp, (uv_tcp_t *)h));
}

static void on_accept(uv_stream_t *listener, int status)
{
    http_server_t *hs = listener->data;
    if (status != 0 || hs->state != HTTP_ACTIVE)
        return;
    hconn_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    c->hs = hs;
    uv_tcp_init(hs->loop, &c->tcp);
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, refused_closed);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    queue_push_tail(&hs->conns, &c->node);
    hs->nconns++;
    h2o_socket_t *sock = h2o_uv_socket_create((uv_stream_t *)&c->tcp, conn_closed);
    h2o_accept(&hs->actx, sock);
}

static void expire_idle(http_server_t *hs)
{
    uint64_t now = uv_now(hs->loop);
    for (queue_node_t *n = hs->sessions.next; n != &hs->sessions;) {
        hsess_t *h = queue_entry(n, hsess_t, node);
        n = n->next;
        bool streaming = false;
        for (queue_node_t *s = h->streams.next; s != &h->streams; s = s->next)
            streaming |= queue_entry(s, lstream_t, node)->resp != NULL;
        if (!streaming && mcp_session_inflight(h->session) == 0 &&
            now - h->last_active > HTTP_SESSION_IDLE_MS) {
            log_info(mcp_session_tag(h->session), "closing the idle HTTP session");
            mcp_session_close(h->session);
        }
    }
}

/* h2o does not read an HTTP/1 connection while it writes a response, so a
 * client that went away is noticed only when a write fails: idle SSE
 * streams get a comment line now and then. */
static void ping_streams(http_server_t *hs)
{
    uint64_t now = uv_now(hs->loop);
    if (now - hs->last_ping < HTTP_SSE_PING_MS)
        return;
    hs->last_ping = now;
    for (queue_node_t *n = hs->resps.next; n != &hs->resps;) {
        resp_t *r = queue_entry(n, resp_t, node);
        n = n->next;
        if (r->mode == RESP_SSE && r->req && !r->sending && r->out.len == 0 &&
            buf_append_str(&r->out, ": ping\n\n") == 0) {
            if (r->ls)
                r->ls->hsess->queued += r->out.len;
            resp_pump(r);
        }
    }
}

static void shutdown_conns(http_server_t *hs, int how)
{
    for (queue_node_t *n = hs->conns.next; n != &hs->conns; n = n->next) {
        hconn_t *c = queue_entry(n, hconn_t, node);
        uv_os_fd_t fd;
        if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
            shutdown(fd, how);
    }
}

static void tick_cb(uv_timer_t *t)
{
    http_server_t *hs = t->data;
    if (hs->state == HTTP_ACTIVE) {
        expire_idle(hs);
        ping_streams(hs);
        return;
    }
    /* Closing: idle keep-alive connections see EOF at once; responses
     * still being written get HTTP_DRAIN_MS. */
    shutdown_conns(hs, uv_now(hs->loop) - hs->close_started > HTTP_DRAIN_MS ? SHUT_RDWR : SHUT_RD);
    http_maybe_closed(hs);
}

static void handle_closed(uv_handle_t *h)
{
    http_server_t *hs = h->data;
    hs->handles_open--;
    http_maybe_closed(hs);
}

static void http_maybe_closed(http_server_t *hs)
{
    if (hs->state != HTTP_CLOSING || hs->nconns > 0 || !queue_empty(&hs->sessions) ||
        !queue_empty(&hs->sweep))
        return;
    if (!hs->timers_closing) {
        /* Everything is closed but our own handles. */
        hs->timers_closing = true;
        uv_close((uv_handle_t *)&hs->ticker, handle_closed);
        uv_close((uv_handle_t *)&hs->sweeper, handle_closed);
        if (hs->listener_open) {
            hs->listener_open = false;
            uv_close((uv_handle_t *)&hs->listener, handle_closed);
        }
        return;
    }
    if (hs->handles_open == 0) {
        hs->state = HTTP_CLOSED;
        if (hs->close_cb)
            hs->close_cb(hs);
    }
}

int http_server_start(uv_loop_t *loop, mcp_server_t *srv, const endpoint_t *ep,
                      const http_options_t *opt, http_server_t **out, char *err, size_t errcap)
{
    http_server_t *hs = calloc(1, sizeof *hs);
    if (hs == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    hs->loop = loop;
    hs->srv = srv;
    hs->ep = *ep;
    hs->opt = *opt;
    queue_init(&hs->conns);
    queue_init(&hs->sessions);
    queue_init(&hs->sweep);
    queue_init(&hs->resps);
    hs->by_id = json_object();
    h2o_config_init(&hs->conf);
    hs->conf.max_request_entity_size = srv->limits.max_message_bytes;
    hs->conf.server_name = h2o_iovec_init(H2O_STRLIT("parley"));
    /* No cleartext HTTP/2 (h2c): HTTP/1.1, and HTTP/2 over TLS by ALPN. */
    hs->conf.http1.upgrade_to_http2 = 0;
    h2o_hostconf_t *host =
        h2o_config_register_host(&hs->conf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    h2o_handler_t *handler = h2o_create_handler(path, sizeof(*handler) + sizeof(hs));
    handler->on_req = on_req;
    *(http_server_t **)(handler + 1) = hs;
    h2o_context_init(&hs->ctx, loop, &hs->conf);
    hs->actx.ctx = &hs->ctx;
    hs->actx.hosts = hs->conf.hosts;
    hs->actx.ssl_ctx = opt->ssl_ctx;
    if (opt->ssl_ctx)
        h2o_ssl_register_alpn_protocols(opt->ssl_ctx, h2o_http2_alpn_protocols);

    uv_idle_init(loop, &hs->sweeper);
    hs->sweeper.data = hs;
    uv_timer_init(loop, &hs->ticker);
    hs->ticker.data = hs;
    uv_tcp_init(loop, &hs->listener);
    hs->listener.data = hs;
    hs->listener_open = true;
    hs->handles_open = 3;
    uv_timer_start(&hs->ticker, tick_cb, HTTP_TICK_MS, HTTP_TICK_MS);
    int rc = uv_tcp_bind(&hs->listener, (const struct sockaddr *)&ep->addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&hs->listener, 511, on_accept);
    if (rc != 0) {
        snprintf(err, errcap, "%s: %s", ep->text, uv_strerror(rc));
        *out = hs; /* the caller closes and disposes it */
        return rc;
    }
    struct sockaddr_storage sa;
    int len = sizeof sa;
    if (uv_tcp_getsockname(&hs->listener, (struct sockaddr *)&sa, &len) == 0)
        hs->ep.port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
    log_info(HTTP_TAG, "serving MCP on %s (port %d)", ep->text, hs->ep.port);
    *out = hs;
    return 0;
}

int http_server_port(const http_server_t *hs)
{
    return hs->ep.port;
}

void *http_server_get_data(const http_server_t *hs)
{
    return hs->data;
}

void http_server_set_data(http_server_t *hs, void *data)
{
    hs->data = data;
}

void http_server_close(http_server_t *hs, http_close_cb cb)
{
    if (hs->state != HTTP_ACTIVE)
        return;
    hs->state = HTTP_CLOSING;
    hs->close_cb = cb;
    hs->close_started = uv_now(hs->loop);
    if (hs->listener_open) {
        hs->listener_open = false;
        uv_close((uv_handle_t *)&hs->listener, handle_closed);
    }
    h2o_context_request_shutdown(&hs->ctx);
    for (queue_node_t *n = hs->sessions.next; n != &hs->sessions;) {
        hsess_t *h = queue_entry(n, hsess_t, node);
        n = n->next;
        mcp_session_close(h->session);
    }
    /* Responses not tied to a session (replays) end too. */
    for (queue_node_t *n = hs->resps.next; n != &hs->resps;) {
        resp_t *r = queue_entry(n, resp_t, node);
        n = n->next;
        if (r->req)
            r->req->http1_is_persistent = 0;
        if (r->mode == RESP_SSE)
            resp_end(r);
    }
    uv_timer_start(&hs->ticker, tick_cb, 50, 100);
    http_maybe_closed(hs);
}

void http_server_dispose(http_server_t *hs)
{
    /* h2o_context_request_shutdown links a timeout nothing unlinks; the
     * context's dispose asserts the list is empty. */
    if (h2o_timeout_is_linked(&hs->ctx.http2._graceful_shutdown_timeout))
        h2o_timeout_unlink(&hs->ctx.http2._graceful_shutdown_timeout);
    h2o_context_dispose(&hs->ctx);
    h2o_config_dispose(&hs->conf);
    json_decref(hs->by_id);
    free(hs);
}
