/* http: MCP Streamable HTTP (revision 2025-11-25) on libh2o, which runs on
 * the daemon's libuv loop. One endpoint path (e.g. /mcp) takes:
 *
 *   POST   one JSON-RPC message. initialize (without Mcp-Session-Id)
 *          creates a session and returns its id in Mcp-Session-Id; a
 *          notification or a response is answered 202; a request is
 *          answered with application/json when its answer is ready at
 *          once, else with a text/event-stream that carries the call's
 *          progress, log messages and server requests, then its response.
 *   GET    the session's stream of server messages (text/event-stream);
 *          with Last-Event-ID, resumes a stream that was cut: the events
 *          after that id are replayed and the stream goes on.
 *   DELETE ends the session.
 *
 * Besides: /healthz (liveness) and /metrics (Prometheus text).
 *
 * Security: Host must name a loopback host when the endpoint is on
 * loopback, and Origin (when sent) must be a loopback origin or one of
 * allowed_origins (DNS rebinding) — else 403; with --token-file every
 * request needs "Authorization: Bearer TOKEN" (401), and a token may limit
 * the session's toolsets or make it read-only. Session ids are 256 random
 * bits (getrandom via uv_random).
 *
 * Every SSE event has an id "STREAM-SEQ"; a session keeps its last SSE
 * events in a bounded ring for resumption (per session and in total). A session idle (no request,
 * no open stream) for HTTP_SESSION_IDLE_MS is closed. */
#ifndef PARLEY_TRANSPORT_HTTP_H
#define PARLEY_TRANSPORT_HTTP_H

#include <stdbool.h>
#include <uv.h>

#include "mcp/server.h"
#include "transport/endpoint.h"
#include "transport/tokens.h"
#include "util/buf.h"

/* Defaults. */
#define HTTP_SESSION_IDLE_MS   (30 * 60 * 1000)
#define HTTP_EVENT_RING_MAX    256         /* events kept per session */
#define HTTP_EVENT_RING_BYTES  (1u << 20)  /* bytes of events kept per session */
#define HTTP_EVENT_BYTES_TOTAL (64u << 20) /* bytes of events kept, all sessions */
#define HTTP_SSE_RETRY_MS      1000        /* "retry:" sent to clients */
#define HTTP_TICK_MS           1000
/* How often the connections of 2026-07-28 requests in progress are looked
 * at for a client that closed its stream (which cancels the request):
 * libh2o does not read an HTTP/1 connection while it answers on it. */
#define HTTP_CLOSE_CHECK_MS 250
#define HTTP_SSE_PING_MS    15000 /* comment on idle SSE streams */
#define HTTP_DRAIN_MS       2000  /* shutdown: time given to open responses */
/* A POST whose answer did not come at once waits at least this long
 * (checked each HTTP_TICK_MS: 1-2 s in all) for it to come alone, to be
 * answered as one JSON body; anything else first (progress, a request to
 * the client, the time) starts its SSE stream. Until then the client has
 * no event id: a connection cut during the hold loses the answer, as for
 * any JSON answer. */
#define HTTP_JSON_HOLD_MS 1000
/* Connections that have not completed a request yet (slowloris): past
 * this many, the oldest of them is dropped for each new one (config key
 * http_max_pending_conns). */
#define HTTP_MAX_PENDING_CONNS 256

typedef struct http_server_s http_server_t;
typedef void (*http_close_cb)(http_server_t *hs);
/* Writes the Prometheus text of /metrics (NULL: the MCP engine's figures
 * alone, mcp_server_metrics). */
typedef void (*http_metrics_fn)(buf_t *out, void *data);

typedef struct http_options_s {
    const tokens_t *tokens;      /* NULL: no authentication (loopback only) */
    const char *allowed_origins; /* comma-separated, may be "" */
    void *ssl_ctx;               /* SSL_CTX * for https, or NULL */
    http_metrics_fn metrics;
    void *metrics_data;
    int max_pending_conns; /* 0: HTTP_MAX_PENDING_CONNS */
} http_options_t;

/* Binds and listens. Returns 0 with *out, or a negative code with err. */
int http_server_start(uv_loop_t *loop, mcp_server_t *srv, const endpoint_t *ep,
                      const http_options_t *opt, http_server_t **out, char *err, size_t errcap);

/* The port bound (for port 0). */
int http_server_port(const http_server_t *hs);

/* Stops accepting, ends every open response and session, and closes
 * connections; cb runs when the last connection closed. The h2o context
 * is released by http_server_dispose, after the loop stopped. */
void http_server_close(http_server_t *hs, http_close_cb cb);

/* Frees what h2o holds (call outside uv_run, after http_server_close's
 * callback), then the server. */
void http_server_dispose(http_server_t *hs);

void *http_server_get_data(const http_server_t *hs);
void http_server_set_data(http_server_t *hs, void *data);

#endif
