/* http_stream: the responses of Streamable HTTP sessions (see
 * http_internal.h): JSON or SSE bodies pumped one h2o_send at a time, the
 * logical streams that outlive a cut response, the ring of recent events
 * replayed on a GET with Last-Event-ID, and the session's transport
 * operations for the MCP engine. */
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

#include "transport/http_internal.h"
#include "util/strutil.h"

static const mcp_transport_ops_t hsess_ops;
static void sweep_cb(uv_idle_t *idle);
static void hsess_close(void *t);

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
void http__ring_drop_newest(hsess_t *h, uint64_t seq)
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

/* Formats one SSE event ("id: S-N" unless stateless, event message, the
 * JSON as data lines). 2026-07-28: "Resumable SSE streams via
 * Last-Event-ID are not supported": its events carry no id. */
static int format_event(buf_t *b, bool with_id, uint64_t stream, uint64_t seq, const char *msg,
                        size_t len)
{
    int rc = with_id ? buf_printf(b, "id: %llu-%llu\nevent: message\n", (unsigned long long)stream,
                                  (unsigned long long)seq)
                     : buf_append_str(b, "event: message\n");
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

void http__resp_free(resp_t *r)
{
    if (r->ref)
        r->ref->r = NULL;
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

void http__resp_detach(resp_t *r)
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
    http__resp_pump(r);
    if (h && h->state == HSESS_OPEN)
        mcp_session_drained(h->session);
}

/* The client went away (or the connection failed): the stream's events
 * wait in the ring for a resumption; a stateless request is cancelled
 * (its session closes by flag and sweep: its calls are cancelled there). */
static void resp_gone(resp_t *r)
{
    hsess_t *h = r->ls ? r->ls->hsess : NULL;
    http__resp_detach(r);
    r->req = NULL;
    http__resp_free(r);
    if (h != NULL && h->stateless)
        http__stateless_gone(h);
}

void http__stateless_gone(hsess_t *h)
{
    if (h->state != HSESS_OPEN)
        return;
    log_debug(mcp_session_tag(h->session), "the client closed the stream: request cancelled");
    hsess_close(h);
}

static void resp_stop(h2o_generator_t *gen, h2o_req_t *req)
{
    (void)req;
    resp_gone(H2O_STRUCT_FROM_MEMBER(resp_t, gen, gen));
}

/* The held request's pool is disposed of: unless answered (r freed), its
 * client went away before any header was sent. */
static void ref_disposed(void *p)
{
    resp_ref_t *ref = p;
    resp_t *r = ref->r;
    if (r == NULL)
        return;
    r->ref = NULL;
    resp_gone(r);
}

/* Hands pending bytes to h2o; ends the response when asked to and
 * everything was written. May free r. */
void http__resp_pump(resp_t *r)
{
    if (r->req == NULL || r->sending || r->mode != RESP_SSE)
        return;
    if (r->finish) {
        h2o_req_t *req = r->req;
        /* The last bytes go from the request's pool: r is freed now. */
        h2o_iovec_t last = h2o_strdup(&req->pool, r->out.data ? r->out.data : "", r->out.len);
        http__resp_detach(r);
        r->req = NULL;
        http__resp_free(r);
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
void http__resp_start_sse(resp_t *r, hsess_t *h, uint64_t stream)
{
    h2o_req_t *req = r->req;
    r->mode = RESP_SSE;
    req->res.status = 200;
    req->res.reason = "OK";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   H2O_STRLIT("text/event-stream"));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL,
                   H2O_STRLIT("no-cache"));
    http__add_header(req, "x-accel-buffering", "no", 2);
    if (h && !h->stateless)
        http__add_header(req, "mcp-session-id", h->id, strlen(h->id));
    h2o_start_response(req, &r->gen);
    if (h && h->stateless) {
        http__resp_pump(r); /* no priming event: nothing to resume from */
        return;
    }
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
    http__resp_pump(r);
}

void http__resp_hold(resp_t *r, hsess_t *h, uint64_t stream)
{
    r->mode = RESP_HELD;
    r->held_at = uv_now(r->hs->loop);
    r->held_hsess = h;
    r->held_stream = stream;
    r->ref = h2o_mem_alloc_shared(&r->req->pool, sizeof *r->ref, ref_disposed);
    r->ref->r = r;
}

void http__resp_unhold(resp_t *r)
{
    hsess_t *h = r->held_hsess;
    r->mode = RESP_UNDECIDED;
    r->held_hsess = NULL;
    http__resp_start_sse(r, h->stateless || h->state == HSESS_OPEN ? h : NULL, r->held_stream);
}

resp_t *http__resp_new(http_server_t *hs, h2o_req_t *req)
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
void http__resp_end(resp_t *r)
{
    r->finish = true;
    if (r->mode == RESP_HELD)
        http__resp_unhold(r); /* headers, priming event, end */
    else if (r->mode == RESP_SSE)
        http__resp_pump(r);
}

/* ---- logical streams ---------------------------------------------------- */

lstream_t *http__lstream_new(hsess_t *h, bool standalone)
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
        http__resp_detach(ls->resp);
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

bool http__stream_known(hsess_t *h, uint64_t no)
{
    if (http__lstream_by_no(h, no) != NULL)
        return true;
    for (int i = 0; i < h->ring_count; i++)
        if (h->ring[(h->ring_head + i) % HTTP_EVENT_RING_MAX].stream == no)
            return true;
    return false;
}

lstream_t *http__lstream_by_no(hsess_t *h, uint64_t no)
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
        ls = http__lstream_by_no(h, 0);
    uint64_t stream = ls ? ls->no : 0;
    uint64_t seq = ++h->next_seq;
    resp_t *r = ls ? ls->resp : NULL;
    if (r != NULL && (r->mode == RESP_UNDECIDED || r->mode == RESP_HELD) && r->nmsgs == 0 &&
        final && related != NULL && !ls->standalone && json_array_size(ls->pending) == 1) {
        /* The whole answer to a POST still being handled or held: it goes
         * as plain JSON (by the POST's handler, or now), so it needs no
         * SSE event and no copy for resumption. */
        r->nmsgs = 1;
        r->single = msg;
        r->single_len = len;
        r->single_seq = seq;
        r->single_is_final = true;
        lstream_free(ls);
        r->finish = true;
        if (r->mode == RESP_HELD)
            http__resp_answer_json(r, h);
        if (h->stateless)
            hsess_close(h);
        return 0;
    }
    if (r != NULL && r->mode == RESP_HELD)
        http__resp_unhold(r); /* something else first: the SSE stream starts */
    buf_t ev;
    buf_init(&ev, (size_t)1 << 30);
    if (format_event(&ev, !h->stateless, stream, seq, msg, len) != 0) {
        buf_free(&ev);
        free(msg);
        return UV_ENOMEM;
    }
    if (!h->stateless)
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
                http__resp_end(r);
            else if (r)
                r->finish = true; /* decided by the POST handler */
            /* A stateless session served its one request: it ends (the
             * session is told by the sweep, not from inside its send). */
            if (h->stateless)
                hsess_close(h);
            return 0;
        }
    }
    if (r)
        http__resp_pump(r);
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
    http__resp_detach(r);
    /* Undecided (the POST handler is still running): it starts the SSE
     * stream and, seeing finish, ends it after the priming event. */
    http__resp_end(r);
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
        http__resp_end(r);
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
            http__resp_end(r);
    }
    if (!h->stateless)
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
    http__maybe_closed(hs);
}

hsess_t *http__hsess_new(http_server_t *hs, bool stateless)
{
    hsess_t *h = calloc(1, sizeof *h);
    unsigned char rnd[32];
    if (h == NULL || (!stateless && uv_random(NULL, NULL, rnd, sizeof rnd, 0, NULL) != 0)) {
        free(h);
        return NULL;
    }
    if (!stateless)
        str_hex(rnd, sizeof rnd, h->id);
    h->stateless = stateless;
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
    if (!stateless)
        json_object_set_new(hs->by_id, h->id, json_integer((json_int_t)(intptr_t)h));
    return h;
}

hsess_t *http__hsess_find(http_server_t *hs, h2o_iovec_t id)
{
    char key[80];
    if (id.len == 0 || id.len >= sizeof key)
        return NULL;
    memcpy(key, id.base, id.len);
    key[id.len] = '\0';
    json_t *v = json_object_get(hs->by_id, key);
    return v ? (hsess_t *)(intptr_t)json_integer_value(v) : NULL;
}
