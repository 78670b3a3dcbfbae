/* http_internal: what the files of the Streamable HTTP transport share
 * (internal to src/transport): http.c takes requests (POST, GET, DELETE,
 * /metrics, /healthz) and runs the server's lifecycle; http_stream.c the
 * sessions' responses and SSE streams with their event ring (resumption
 * with Last-Event-ID); http_auth.c the Host, Origin and bearer-token
 * checks; http_principal.c who a request is (its owner's share, the
 * toolsets its path selects, its token's policy); http_ticker.c the
 * periodic work (close checks, idle expiry, pings, draining at close).
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
#ifndef PARLEY_TRANSPORT_HTTP_INTERNAL_H
#define PARLEY_TRANSPORT_HTTP_INTERNAL_H

#include <h2o.h>

#include "mcp/session.h"
#include "transport/http.h"

#define HTTP_TAG "http"

_Static_assert(H2O_USE_LIBUV, "parley needs the libuv flavour of libh2o");

typedef struct hsess_s hsess_t;
typedef struct lstream_s lstream_t;

typedef enum {
    RESP_UNDECIDED = 0, /* the POST's handler runs: the answer may come at once */
    RESP_HELD,          /* no headers yet: waiting for the answer alone (JSON) */
    RESP_SSE,
} resp_mode_t;

typedef struct resp_s resp_t;

/* Allocated in a held request's memory pool: the pool's disposal (the
 * client reset an HTTP/2 stream or went away before any header was sent:
 * h2o has no generator to stop then) finds the response through it. r is
 * NULL once the response is freed. */
typedef struct resp_ref_s {
    resp_t *r;
} resp_ref_t;

struct resp_s {
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
    /* RESP_HELD: since when, the session and stream it answers for (the
     * SSE stream started at the end of the hold needs them), and the
     * pool's reference. */
    uint64_t held_at;
    hsess_t *held_hsess;
    uint64_t held_stream;
    resp_ref_t *ref;
    queue_node_t node; /* in hs->resps */
};

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
    /* What it is served (http__selection of the path it was opened at):
     * a 2025-11-25 session answers at that path only. */
    unsigned select_mask;
    bool select_brief;
    /* One 2026-07-28 request (http_modern.c): no id, no ring, no event
     * ids; closed once its response is sent, or when its client closes
     * the stream ("Closing the SSE response stream MUST be treated by the
     * server as cancellation of that request"). */
    bool stateless;
};

typedef struct hconn_s {
    uv_tcp_t tcp; /* data belongs to h2o */
    queue_node_t node;
    http_server_t *hs;
    struct sockaddr_storage peer; /* matches requests to their connection */
    bool pending;                 /* no request completed on it yet */
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
    int npending; /* connections without a completed request */
    queue_node_t sessions;
    queue_node_t sweep;
    json_t *by_id; /* session id -> hsess_t * (as an integer) */
    queue_node_t resps;
    uv_idle_t sweeper;
    uv_timer_t ticker;
    uint64_t close_started;
    uint64_t last_ping;
    uint64_t last_tick; /* the once-a-second work of the ticker */
    size_t ring_bytes_total;
    bool timers_closing;
    int handles_open;
    http_close_cb close_cb;
    void *data;
    /* http__owner_of without a token ("endpoint:ADDRESS"), made at start:
     * every 2026-07-28 request is a session counted against it. */
    char anon_owner[40];
};

/* What the POST handler read of a message (an object), handed down so
 * that no member is looked up twice. Borrowed from mm. */
typedef struct http_msg_s {
    const jsonrpc_members_t *mm;
    json_t *id;                 /* or NULL */
    const char *method;         /* or NULL (not a string) */
    json_t *params;             /* or NULL */
    mcp_envelope_claim_t claim; /* of params */
} http_msg_t;

/* http.c */
/* Answers request msg (its id a valid one) on session h: feeds it to the
 * MCP session and answers JSON when the response came at once, else an
 * SSE stream. env: its envelope as http_modern.c read it (a 2026-07-28
 * request), or NULL. */
void http__serve_request(http_server_t *hs, h2o_req_t *req, hsess_t *h, const http_msg_t *msg,
                         const mcp_envelope_t *env);
/* Answers r's one message (r->single, the POST's response) as a JSON body,
 * and frees r. h: the session it answers for. */
void http__resp_answer_json(resp_t *r, hsess_t *h);
/* Starts the SSE stream of the responses held longer than
 * HTTP_JSON_HOLD_MS. */
void http__release_held(http_server_t *hs);
/* A body sent as is with status (a copy of body is made). */
void http__send_body(h2o_req_t *req, int status, const char *reason, const char *ctype,
                     const char *body, size_t len);
void http__add_header(h2o_req_t *req, const char *name, const char *value, size_t len);
h2o_iovec_t http__header(h2o_req_t *req, const char *lcname, size_t len);
void http__maybe_closed(http_server_t *hs);
void http__send_rpc_error(h2o_req_t *req, int status, const char *reason, int code,
                          const char *message);

/* http_stream.c */
hsess_t *http__hsess_find(http_server_t *hs, h2o_iovec_t id);
/* A session for initialize (in hs->by_id under a fresh id), or, when
 * stateless, for one 2026-07-28 request. NULL on ENOMEM. */
hsess_t *http__hsess_new(http_server_t *hs, bool stateless);
lstream_t *http__lstream_by_no(hsess_t *h, uint64_t no);
/* True when stream no is open or has events kept for replay. */
bool http__stream_known(hsess_t *h, uint64_t no);
lstream_t *http__lstream_new(hsess_t *h, bool standalone);
void http__resp_detach(resp_t *r);
void http__resp_end(resp_t *r);
void http__resp_free(resp_t *r);
resp_t *http__resp_new(http_server_t *hs, h2o_req_t *req);
void http__resp_pump(resp_t *r);
void http__resp_start_sse(resp_t *r, hsess_t *h, uint64_t stream);
/* Holds r (nothing sent yet) for its answer: see HTTP_JSON_HOLD_MS. */
void http__resp_hold(resp_t *r, hsess_t *h, uint64_t stream);
/* Ends r's hold: its SSE stream starts (priming event, what is queued). */
void http__resp_unhold(resp_t *r);
void http__ring_drop_newest(hsess_t *h, uint64_t seq);
/* The client of stateless session h closed its stream: the request is
 * cancelled (the session closes; its calls are cancelled by the sweep). */
void http__stateless_gone(hsess_t *h);

/* http_modern.c */
/* True when POST message msg (NULL: a request without one) is for the
 * 2026-07-28 path: its params claim the envelope, it is server/discover,
 * or the request's MCP-Protocol-Version header names a revision without
 * initialize. */
__attribute__((warn_unused_result)) bool http__is_modern(h2o_req_t *req, const http_msg_t *msg);
/* Serves one 2026-07-28 POST (msg borrowed): the validation ladder
 * (envelope, standard headers), then the request on a stateless session. */
void http__post_modern(http_server_t *hs, h2o_req_t *req, const token_t *tok,
                       const http_msg_t *msg);
/* The HTTP status of a 2026-07-28 response answered as one JSON text:
 * 404 for -32601 ("If the server does not implement the requested RPC
 * method, it MUST respond with 404 Not Found"), 400 for -32021 and for
 * the errors that say the request is not a valid one (-32700, -32600,
 * which the session finds too: a "jsonrpc" other than "2.0", a method
 * name with a NUL), as the transport's own checks answer them; 200 for
 * the rest (errors of a method's handling are answered in band, as the
 * SDK's reference server does; the envelope's -32602 never gets here:
 * the transport answers it first). */
int http__modern_status(const char *msg, size_t len);
/* http_principal.c */
/* The owner a session of tok counts against (mcp_server_admit_owner):
 * the token, or without one this endpoint. */
void http__owner_of(const http_server_t *hs, const token_t *tok, char *out, size_t cap);
/* True when a new session of tok may open; else answers 503 (max_sessions)
 * or 429 (tok holds its share), with Retry-After, and returns false. id:
 * the request's (may be NULL). */
__attribute__((warn_unused_result)) bool http__admit(http_server_t *hs, h2o_req_t *req,
                                                     const token_t *tok, const json_t *id);
/* Applies tok's policy to a new session (nothing allowed if it fails),
 * the selection of req's path (http__selection) and counts the session
 * against its owner (http__owner_of). */
void http__apply_token(http_server_t *hs, hsess_t *h, const token_t *tok, h2o_req_t *req);

/* The selection a request's path makes: the endpoint's path itself
 * serves the server's default (*mask every toolset, *brief the server's
 * default_brief); PATH/NAME[,NAME...] the toolsets named, each whole
 * ("all": every one). Returns 0, or UV_ENOENT with err when the path is
 * not the endpoint's or names a toolset the server does not have. Pure:
 * nothing is kept (2026-07-28: the path decides each request). */
int http__selection(const http_server_t *hs, const char *path, size_t len, unsigned *mask,
                    bool *brief, char *err, size_t errcap);

/* http_ticker.c */
/* The server's periodic work, from its timer every HTTP_CLOSE_CHECK_MS
 * (see http_ticker.c). */
void http__tick(http_server_t *hs);

/* http_auth.c */
/* The request's single-valued headers: a second Origin, Authorization,
 * Mcp-Session-Id, Content-Type, MCP-Protocol-Version or Last-Event-ID is
 * answered 400 and the connection closed (framing and Host are checked
 * where libh2o parses the head: http_headers.h). Returns true when the
 * request may go on. */
__attribute__((warn_unused_result)) bool http__check_framing(h2o_req_t *req);
bool http__check_access(http_server_t *hs, h2o_req_t *req, const token_t **tok);

#endif
