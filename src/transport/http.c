/* http: MCP Streamable HTTP on libh2o (see http.h and, for the objects
 * and h2o's rules, http_internal.h): the requests (POST, GET, DELETE,
 * /metrics, /healthz) and the server's lifecycle (listener, connections,
 * its timer, close); who a request is, http_principal.c; the timer's
 * work, http_ticker.c. */
#include "transport/http.h"

#include <assert.h>
#include <errno.h>

#include <h2o.h>
#include <h2o/http2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "mcp/envelope.h"
#include "mcp/jsonrpc.h"
#include "mcp/session.h"
#include "util/log.h"

#include "transport/http_headers.h"
#include "transport/http_internal.h"

/* ---- small helpers ------------------------------------------------------ */

h2o_iovec_t http__header(h2o_req_t *req, const char *lcname, size_t len)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, lcname, len, -1);
    return i < 0 ? h2o_iovec_init(NULL, 0) : req->headers.entries[i].value;
}

static bool method_is(h2o_req_t *req, const char *m)
{
    return h2o_memis(req->method.base, req->method.len, m, strlen(m));
}

void http__add_header(h2o_req_t *req, const char *name, const char *value, size_t len)
{
    h2o_iovec_t v = h2o_strdup(&req->pool, value, len);
    h2o_add_header_by_str(&req->pool, &req->res.headers, name, strlen(name), 0, NULL, v.base,
                          v.len);
}

void http__send_body(h2o_req_t *req, int status, const char *reason, const char *ctype,
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
void http__send_rpc_error(h2o_req_t *req, int status, const char *reason, int code,
                          const char *message)
{
    size_t len = 0;
    char *m = jsonrpc_error(NULL, code, message, NULL, &len);
    http__send_body(req, status, reason, "application/json", m ? m : "", m ? len : 0);
    free(m);
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
    http__send_body(req, 200, "OK", "text/plain; version=0.0.4", b.data ? b.data : "", b.len);
    buf_free(&b);
}

/* ---- the MCP endpoint ---------------------------------------------------- */

/* True when the media range r[0..n) (optional whitespace around it, then
 * parameters) admits type: the same type, its major type with any subtype,
 * or any type, and no "q=0" (RFC 9110 12.4.2: "a value of 0 means not
 * acceptable"). A range that is not TYPE/SUBTYPE admits nothing. */
static bool range_admits(const char *r, size_t n, const char *type)
{
    while (n > 0 && (*r == ' ' || *r == '\t'))
        r++, n--;
    const char *semi = memchr(r, ';', n);
    size_t rl = semi ? (size_t)(semi - r) : n;
    while (rl > 0 && (r[rl - 1] == ' ' || r[rl - 1] == '\t'))
        rl--;
    size_t tl = strlen(type), major = strcspn(type, "/");
    const char *slash = memchr(r, '/', rl);
    if (slash == NULL)
        return false;
    size_t rmajor = (size_t)(slash - r);
    bool match = (rl == tl && strncasecmp(r, type, tl) == 0) ||
                 (rl == major + 2 && rmajor == major && strncasecmp(r, type, major) == 0 &&
                  slash[1] == '*') ||
                 (rl == 3 && memcmp(r, "*/*", 3) == 0);
    if (!match)
        return false;
    /* Parameters: find q. */
    for (const char *p = semi; p != NULL && p < r + n;) {
        p++;
        size_t left = (size_t)(r + n - p);
        while (left > 0 && (*p == ' ' || *p == '\t'))
            p++, left--;
        const char *next = memchr(p, ';', left);
        size_t pl = next ? (size_t)(next - p) : left;
        if (pl >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
            char q[16];
            size_t ql = pl - 2;
            while (ql > 0 && (p[2 + ql - 1] == ' ' || p[2 + ql - 1] == '\t'))
                ql--;
            if (ql == 0 || ql >= sizeof q)
                return false;
            memcpy(q, p + 2, ql);
            q[ql] = '\0';
            char *end = NULL;
            double v = strtod(q, &end);
            return *end == '\0' && v > 0 && v <= 1;
        }
        p = next;
    }
    return true;
}

/* True when the Accept headers (a comma-separated list of media ranges,
 * possibly over several headers) admit type. The spec: "The client MUST
 * include an Accept header" (a request without one is refused). */
static bool accepts(h2o_req_t *req, const char *type)
{
    for (ssize_t i = -1; (i = h2o_find_header(&req->headers, H2O_TOKEN_ACCEPT, i)) != -1;) {
        h2o_iovec_t a = req->headers.entries[i].value;
        for (size_t at = 0; at <= a.len;) {
            const char *comma = memchr(a.base + at, ',', a.len - at);
            size_t el = comma ? (size_t)(comma - (a.base + at)) : a.len - at;
            if (range_admits(a.base + at, el, type))
                return true;
            at += el + 1;
        }
    }
    return false;
}

/* True when a Content-Type is application/json, with parameters or not
 * ("application/json; charset=utf-8"), not "application/jsonfoo". */
static bool is_json_type(h2o_iovec_t ct)
{
    static const char t[] = "application/json";
    size_t n = sizeof t - 1, i = n;
    if (ct.base == NULL || ct.len < n || strncasecmp(ct.base, t, n) != 0)
        return false;
    while (i < ct.len && (ct.base[i] == ' ' || ct.base[i] == '\t'))
        i++;
    return i == ct.len || ct.base[i] == ';';
}

/* Parses an event id "STREAM-SEQ" (decimal digits only, as this server
 * writes them). */
static bool parse_event_id(h2o_iovec_t v, unsigned long long *stream, unsigned long long *seq)
{
    char s[48];
    if (v.len == 0 || v.len >= sizeof s)
        return false;
    memcpy(s, v.base, v.len);
    s[v.len] = '\0';
    char *dash = strchr(s, '-');
    if (dash == NULL || dash == s || dash[1] == '\0' ||
        strspn(s, "0123456789") != (size_t)(dash - s) ||
        strspn(dash + 1, "0123456789") != strlen(dash + 1) || dash - s > 19 ||
        strlen(dash + 1) > 19)
        return false;
    *dash = '\0';
    *stream = strtoull(s, NULL, 10);
    *seq = strtoull(dash + 1, NULL, 10);
    return true;
}

/* The session named by Mcp-Session-Id; answers 400/404 and returns NULL
 * when there is none. */
static hsess_t *session_of(http_server_t *hs, h2o_req_t *req, const token_t *tok)
{
    h2o_iovec_t sid = http__header(req, H2O_STRLIT("mcp-session-id"));
    if (sid.base == NULL) {
        http__send_rpc_error(req, 400, "Bad Request", JSONRPC_INVALID_REQUEST,
                             "Bad Request: Mcp-Session-Id header is required (initialize first)");
        return NULL;
    }
    hsess_t *h = http__hsess_find(hs, sid);
    if (h == NULL || h->state != HSESS_OPEN) {
        http__send_rpc_error(req, 404, "Not Found", -32001,
                             "Session not found: it ended or expired; initialize a new one");
        return NULL;
    }
    unsigned mask = 0;
    bool brief = false;
    char why[8];
    if (http__selection(hs, req->path_normalized.base, req->path_normalized.len, &mask, &brief, why,
                        sizeof why) != 0 ||
        mask != h->select_mask || brief != h->select_brief) {
        http__send_rpc_error(req, 404, "Not Found", -32001,
                             "Session not found at this path: a session answers at the path "
                             "(the toolsets) it was initialized at");
        return NULL;
    }
    if (h->token != tok) {
        http__send_rpc_error(req, 403, "Forbidden", JSONRPC_INVALID_REQUEST,
                             "Forbidden: the session belongs to another token");
        return NULL;
    }
    h2o_iovec_t pv = http__header(req, H2O_STRLIT("mcp-protocol-version"));
    if (pv.base != NULL) {
        char v[32];
        size_t n = pv.len < sizeof v - 1 ? pv.len : sizeof v - 1;
        memcpy(v, pv.base, n);
        v[n] = '\0';
        if (!mcp_protocol_supported(v)) {
            http__send_rpc_error(req, 400, "Bad Request", JSONRPC_INVALID_REQUEST,
                                 "Bad Request: unsupported MCP-Protocol-Version");
            return NULL;
        }
    }
    h->last_active = uv_now(hs->loop);
    return h;
}

/* The POST of message rm (read; the caller releases it). */
static void post_message(http_server_t *hs, h2o_req_t *req, const token_t *tok,
                         const jsonrpc_msg_t *rm)
{
    if (rm->other != NULL) {
        http__send_rpc_error(req, 400, "Bad Request", JSONRPC_INVALID_REQUEST,
                             json_is_array(rm->other)
                                 ? "Invalid Request: batches are not supported"
                                 : "Invalid Request: a message must be a JSON object");
        return;
    }
    const jsonrpc_members_t *mm = &rm->mm;
    const char *method = json_string_value(mm->method);
    json_t *id = mm->id;
    json_t *params = mm->params;
    const http_msg_t msg = {.mm = mm,
                            .id = id,
                            .method = method,
                            .params = params,
                            .claim = mcp_envelope_claim_memo(&hs->srv->envelope_memo, params)};
    bool is_request = method != NULL && id != NULL;
    bool is_init = method != NULL && strcmp(method, "initialize") == 0;
    if (is_request && !json_is_string(id) && !json_is_integer(id)) {
        http__send_rpc_error(req, 400, "Bad Request", JSONRPC_INVALID_REQUEST,
                             "Invalid Request: \"id\" must be a string or an integer");
        return;
    }
    if (is_init && !is_request) {
        http__send_rpc_error(req, 400, "Bad Request", JSONRPC_INVALID_REQUEST,
                             "Invalid Request: initialize is a request (it needs an \"id\")");
        return;
    }
    if (http__is_modern(req, &msg)) {
        http__post_modern(hs, req, tok, &msg);
        return;
    }
    hsess_t *h;
    if (is_init && http__header(req, H2O_STRLIT("mcp-session-id")).base == NULL) {
        if (!http__admit(hs, req, tok, id))
            return;
        h = http__hsess_new(hs, false);
        if (h == NULL) {
            http__send_rpc_error(req, 500, "Internal Server Error", JSONRPC_INTERNAL_ERROR,
                                 "out of memory");
            return;
        }
        http__apply_token(hs, h, tok, req);
    } else if ((h = session_of(hs, req, tok)) == NULL) {
        return;
    }
    if (!is_request) {
        /* A notification or a response to one of our requests. */
        mcp_session_receive_members(h->session, mm, NULL);
        req->res.status = 202;
        req->res.reason = "Accepted";
        req->res.content_length = 0;
        h2o_send_inline(req, "", 0);
        return;
    }
    http__serve_request(hs, req, h, &msg, NULL);
    if (is_init && h->state == HSESS_OPEN && mcp_session_state(h->session) < MCP_SESSION_READY)
        mcp_session_close(h->session); /* initialize failed: no session */
}

static void handle_post(http_server_t *hs, h2o_req_t *req, const token_t *tok)
{
    h2o_iovec_t ct = http__header(req, H2O_STRLIT("content-type"));
    if (!is_json_type(ct)) {
        http__send_rpc_error(req, 415, "Unsupported Media Type", JSONRPC_INVALID_REQUEST,
                             "Content-Type must be application/json");
        return;
    }
    if (!accepts(req, "application/json") || !accepts(req, "text/event-stream")) {
        http__send_rpc_error(req, 406, "Not Acceptable", JSONRPC_INVALID_REQUEST,
                             "Accept must allow application/json and text/event-stream");
        return;
    }
    json_error_t je;
    jsonrpc_msg_t rm;
    if (jsonrpc_read(req->entity.base ? req->entity.base : "", req->entity.len, &rm, &je) != 0) {
        char text[200];
        jsonrpc_parse_error(&je, text, sizeof text);
        http__send_rpc_error(req, 400, "Bad Request", JSONRPC_PARSE_ERROR, text);
        return;
    }
    post_message(hs, req, tok, &rm);
    jsonrpc_msg_release(&rm);
}

void http__serve_request(http_server_t *hs, h2o_req_t *req, hsess_t *h, const http_msg_t *msg,
                         const mcp_envelope_t *env)
{
    json_t *id = msg->id;
    if (!h->reading) {
        /* Backpressure: too much in flight or unread on this session. */
        http__add_header(req, "retry-after", "1", 1);
        char *e = jsonrpc_error(id, JSONRPC_SERVER_BUSY, "session busy, retry later", NULL, NULL);
        http__send_body(req, 429, "Too Many Requests", "application/json", e ? e : "",
                        e ? strlen(e) : 0);
        free(e);
        return;
    }
    resp_t *r = http__resp_new(hs, req);
    lstream_t *ls = r ? http__lstream_new(h, false) : NULL;
    if (ls == NULL) {
        if (r)
            http__resp_free(r);
        http__send_rpc_error(req, 500, "Internal Server Error", JSONRPC_INTERNAL_ERROR,
                             "out of memory");
        return;
    }
    json_array_append(ls->pending, id);
    ls->resp = r;
    r->ls = ls;
    r->prime_seq = h->stateless ? 0 : ++h->next_seq;
    uint64_t stream_no = ls->no;
    mcp_session_receive_members(h->session, msg->mm, env);
    /* ls may be gone (answered); r is still ours (undecided). */
    if (r->finish && r->nmsgs == 1 && r->single_is_final)
        http__resp_answer_json(r, h);
    else if (r->nmsgs == 0 && !r->finish && h->state == HSESS_OPEN && hs->state == HTTP_ACTIVE)
        http__resp_hold(r, h, stream_no);
    else
        http__resp_start_sse(r, h->stateless || h->state == HSESS_OPEN ? h : NULL, stream_no);
}

void http__resp_answer_json(resp_t *r, hsess_t *h)
{
    h2o_req_t *req = r->req;
    req->res.status = h->stateless ? http__modern_status(r->single, r->single_len) : 200;
    req->res.reason = req->res.status == 200   ? "OK"
                      : req->res.status == 404 ? "Not Found"
                                               : "Bad Request";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("application/json"));
    if (!h->stateless && h->state == HSESS_OPEN &&
        mcp_session_state(h->session) >= MCP_SESSION_READY)
        http__add_header(req, "mcp-session-id", h->id, strlen(h->id));
    req->res.content_length = r->single_len;
    h2o_iovec_t body = h2o_strdup(&req->pool, r->single, r->single_len);
    /* Answered as plain JSON: its event is not needed for resumption. */
    if (!h->stateless)
        http__ring_drop_newest(h, r->single_seq);
    http__resp_detach(r);
    r->req = NULL;
    http__resp_free(r);
    h2o_send_inline(req, body.base, body.len);
}

void http__release_held(http_server_t *hs)
{
    uint64_t now = uv_now(hs->loop);
    for (queue_node_t *n = hs->resps.next; n != &hs->resps;) {
        resp_t *r = queue_entry(n, resp_t, node);
        n = n->next;
        if (r->mode == RESP_HELD && now - r->held_at >= HTTP_JSON_HOLD_MS)
            http__resp_unhold(r); /* r stays: its stream is not finished */
    }
}

static void handle_get(http_server_t *hs, h2o_req_t *req, const token_t *tok)
{
    if (!accepts(req, "text/event-stream")) {
        http__send_rpc_error(req, 406, "Not Acceptable", JSONRPC_INVALID_REQUEST,
                             "Accept must allow text/event-stream");
        return;
    }
    hsess_t *h = session_of(hs, req, tok);
    if (h == NULL)
        return;
    h2o_iovec_t last = http__header(req, H2O_STRLIT("last-event-id"));
    unsigned long long stream = 0, seq = 0;
    /* An id this session never sent (malformed, or of a stream it does not
     * know) is ignored: a fresh stream starts, and it is never echoed. */
    if (last.base != NULL &&
        (!parse_event_id(last, &stream, &seq) || !http__stream_known(h, stream))) {
        last = h2o_iovec_init(NULL, 0);
        stream = seq = 0;
    }
    lstream_t *ls = http__lstream_by_no(h, stream);
    if (ls == NULL && stream == 0)
        ls = http__lstream_new(h, true);
    resp_t *r = http__resp_new(hs, req);
    if (r == NULL) {
        http__send_rpc_error(req, 500, "Internal Server Error", JSONRPC_INTERNAL_ERROR,
                             "out of memory");
        return;
    }
    if (ls && ls->resp) {
        /* The newest GET of the session takes the stream over: the older
         * one is ended. A client whose stream was cut (it may take the
         * server until its next write to notice) reconnects at once, with
         * or without Last-Event-ID; only the session's own token gets
         * here. */
        resp_t *old = ls->resp;
        http__resp_detach(old);
        http__resp_end(old);
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
    http__resp_start_sse(r, h, stream);
}

static void conn_served(http_server_t *hs, h2o_req_t *req);

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    http_server_t *hs = *(http_server_t **)(self + 1);
    conn_served(hs, req);
    if (!http__check_framing(req))
        return 0;
    h2o_iovec_t p = req->path_normalized;
    if (h2o_memis(p.base, p.len, H2O_STRLIT("/healthz"))) {
        bool ok = hs->state == HTTP_ACTIVE;
        const char *body = ok ? "{\"status\":\"ok\"}" : "{\"status\":\"stopping\"}";
        http__send_body(req, ok ? 200 : 503, ok ? "OK" : "Service Unavailable", "application/json",
                        body, strlen(body));
        return 0;
    }
    const token_t *tok;
    if (h2o_memis(p.base, p.len, H2O_STRLIT("/metrics"))) {
        /* The figures tell about every principal's use: a narrowed token
         * is not told them (without tokens, as for the MCP path). */
        if (!http__check_access(hs, req, &tok))
            return 0;
        if (tok != NULL && !tokens_may_read_metrics(tok))
            http__send_rpc_error(req, 403, "Forbidden", JSONRPC_INVALID_REQUEST,
                                 "Forbidden: /metrics needs a token with every toolset and not "
                                 "read_only, or one marked metrics in the token file");
        else
            serve_metrics(hs, req);
        return 0;
    }
    unsigned sel_mask;
    bool sel_brief;
    char why[400];
    if (http__selection(hs, p.base, p.len, &sel_mask, &sel_brief, why, sizeof why) != 0) {
        size_t base = strlen(hs->ep.http_path), cut = base == 1 ? 0 : base;
        if (p.len <= base || memcmp(p.base, hs->ep.http_path, base) != 0 || p.base[cut] != '/')
            return -1; /* 404: not the MCP endpoint's */
        if (!http__check_access(hs, req, &tok))
            return 0;
        http__send_rpc_error(req, 404, "Not Found", JSONRPC_INVALID_REQUEST, why);
        return 0;
    }
    if (!http__check_access(hs, req, &tok))
        return 0;
    if (hs->state != HTTP_ACTIVE) {
        http__send_rpc_error(req, 503, "Service Unavailable", JSONRPC_SERVER_BUSY,
                             "the server is shutting down");
        return 0;
    }
    bool get_or_delete = method_is(req, "GET") || method_is(req, "DELETE");
    if (get_or_delete && (http__header(req, H2O_STRLIT("mcp-session-id")).base == NULL ||
                          http__is_modern(req, NULL))) {
        /* 2026-07-28 is POST only ("A server that supports only this
         * revision ... HTTP GET or DELETE to the MCP endpoint: respond
         * with 405"); a 2025-11-25 session names itself. */
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("POST"));
        http__send_rpc_error(req, 405, "Method Not Allowed", JSONRPC_INVALID_REQUEST,
                             "Method Not Allowed: MCP " MCP_MODERN_VERSION
                             " sends every request as a POST (subscriptions/listen replaces the "
                             "GET stream); GET and DELETE belong to a 2025-11-25 session "
                             "(Mcp-Session-Id)");
    } else if (method_is(req, "POST")) {
        handle_post(hs, req, tok);
    } else if (method_is(req, "GET")) {
        handle_get(hs, req, tok);
    } else if (method_is(req, "DELETE")) {
        hsess_t *h = session_of(hs, req, tok);
        if (h != NULL) {
            mcp_session_close(h->session);
            http__send_body(req, 200, "OK", NULL, "", 0);
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
    if (c->pending)
        hs->npending--; /* closed before a complete request: no longer pending */
    free(c);
    hs->nconns--;
    http__maybe_closed(hs);
}

static void refused_closed(uv_handle_t *h)
{
    free(H2O_STRUCT_FROM_MEMBER(hconn_t, tcp, (uv_tcp_t *)h));
}

/* Past HTTP_MAX_PENDING_CONNS connections without a completed request,
 * the oldest one is shut down (h2o then closes it): slow or silent clients
 * cannot hold every socket. */
static void drop_oldest_pending(http_server_t *hs)
{
    int cap = hs->opt.max_pending_conns > 0 ? hs->opt.max_pending_conns : HTTP_MAX_PENDING_CONNS;
    for (queue_node_t *n = hs->conns.next; hs->npending > cap && n != &hs->conns; n = n->next) {
        hconn_t *c = queue_entry(n, hconn_t, node);
        uv_os_fd_t fd;
        if (!c->pending)
            continue;
        c->pending = false;
        hs->npending--;
        if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
            shutdown(fd, SHUT_RDWR);
        log_debug(HTTP_TAG, "dropped a connection that sent no complete request (%d pending)", cap);
    }
}

/* A request arrived: its connection is no longer pending. */
static void conn_served(http_server_t *hs, h2o_req_t *req)
{
    if (hs->npending == 0 || req->conn->callbacks->get_peername == NULL)
        return;
    struct sockaddr_storage sa;
    socklen_t n = req->conn->callbacks->get_peername(req->conn, (struct sockaddr *)&sa);
    if (n == 0)
        return;
    for (queue_node_t *q = hs->conns.next; q != &hs->conns; q = q->next) {
        hconn_t *c = queue_entry(q, hconn_t, node);
        if (c->pending && memcmp(&c->peer, &sa, n) == 0) {
            c->pending = false;
            hs->npending--;
            return;
        }
    }
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
    int len = sizeof c->peer;
    uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&c->peer, &len);
    c->pending = true;
    hs->npending++;
    drop_oldest_pending(hs);
    queue_push_tail(&hs->conns, &c->node);
    hs->nconns++;
    h2o_socket_t *sock = h2o_uv_socket_create((uv_stream_t *)&c->tcp, conn_closed);
    h2o_accept(&hs->actx, sock);
}

static void tick_cb(uv_timer_t *t)
{
    http__tick(t->data);
}

static void handle_closed(uv_handle_t *h)
{
    http_server_t *hs = h->data;
    hs->handles_open--;
    http__maybe_closed(hs);
}

void http__maybe_closed(http_server_t *hs)
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
    snprintf(hs->anon_owner, sizeof hs->anon_owner, "endpoint:%p", (const void *)hs);
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
    hs->last_tick = uv_now(loop);
    uv_timer_start(&hs->ticker, tick_cb, HTTP_CLOSE_CHECK_MS, HTTP_CLOSE_CHECK_MS);
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
    if (!http_headers_guarded())
        log_warn(HTTP_TAG, "libh2o's request parser is not checked (libh2o linked statically?): "
                           "a request framed both by Content-Length and Transfer-Encoding is "
                           "not refused");
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
        if (r->mode != RESP_UNDECIDED)
            http__resp_end(r);
    }
    uv_timer_start(&hs->ticker, tick_cb, 50, 100);
    http__maybe_closed(hs);
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
