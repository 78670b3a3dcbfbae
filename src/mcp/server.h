/* server: the MCP server shared by every session: identity and
 * instructions, the tool registry, limits, counters for /metrics and
 * serverStatus, and the sweep that frees closed sessions (sessions are
 * closed by flagging; they are freed here, from an idle handle on the next
 * loop turn, never inside the callback that noticed the close). */
#ifndef PARLEY_MCP_SERVER_H
#define PARLEY_MCP_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <uv.h>

#include "mcp/envelope.h"
#include "mcp/registry.h"
#include "util/buf.h"
#include "util/sealed.h"
#include "util/queue.h"

/* Defaults of the limits (config keys of the same name in lower case). */
#define MCP_DEFAULT_MAX_MESSAGE_BYTES    (4u * 1024 * 1024)
#define MCP_DEFAULT_SESSION_MAX_INFLIGHT 64
#define MCP_DEFAULT_OUTPUT_HIGH_WATER    (1u * 1024 * 1024)
#define MCP_DEFAULT_OUTPUT_LOW_WATER     (256u * 1024)
#define MCP_DEFAULT_OUTPUT_HARD_LIMIT    (16u * 1024 * 1024)
#define MCP_DEFAULT_MAX_ACTIVE_CALLS     4096
#define MCP_DEFAULT_TOOLS_PAGE_SIZE      100
#define MCP_DEFAULT_MAX_SESSIONS         10000
/* The share of max_sessions (percent) one principal may hold: a bearer
 * token, or for clients without one the endpoint they came through. The
 * rest is a reserve no single principal can take (config
 * principal_session_share; 100 turns the reserve off). */
#define MCP_DEFAULT_PRINCIPAL_SHARE    50
#define MCP_DEFAULT_REQUEST_TIMEOUT_MS 300000
#define MCP_DEFAULT_INIT_TIMEOUT_MS    10000 /* a connection must initialize within */
/* How often waiting server-to-client requests are checked for timeouts. */
#define MCP_WAIT_TICK_MS 100
#define MCP_INIT_TICK_MS 1000
/* Resource subscriptions one session (or one listen) may hold. */
#define MCP_SESSION_MAX_SUBSCRIPTIONS 256
/* 2026-07-28 subscriptions/listen open on one connection at once. */
#define MCP_SESSION_MAX_LISTENS 16
/* retryAfterMs suggested with a "server busy" error. */
#define MCP_BUSY_RETRY_AFTER_MS 200

typedef struct mcp_limits_s {
    size_t max_message_bytes;
    int session_max_inflight;
    size_t output_high_water;
    size_t output_low_water;
    size_t output_hard_limit;
    int max_active_calls;
    int tools_page_size;
    int max_sessions;
    int principal_share; /* percent of max_sessions, 1..100 */
    int request_timeout_ms;
    int init_timeout_ms; /* 0: sessions may wait for initialize forever */
} mcp_limits_t;

/* Methods counted in the statistics (the last one counts the others). */
typedef enum {
    MCP_M_INITIALIZE = 0,
    MCP_M_PING,
    MCP_M_TOOLS_LIST,
    MCP_M_TOOLS_CALL,
    MCP_M_RESOURCES_LIST,
    MCP_M_RESOURCES_TEMPLATES_LIST,
    MCP_M_RESOURCES_READ,
    MCP_M_RESOURCES_SUBSCRIBE,
    MCP_M_RESOURCES_UNSUBSCRIBE,
    MCP_M_PROMPTS_LIST,
    MCP_M_PROMPTS_GET,
    MCP_M_COMPLETION_COMPLETE,
    MCP_M_LOGGING_SET_LEVEL,
    MCP_M_SERVER_DISCOVER,
    MCP_M_SUBSCRIPTIONS_LISTEN,
    MCP_M_OTHER,
    MCP_M_COUNT
} mcp_method_t;

extern const char *const mcp_method_names[MCP_M_COUNT];

/* Upper bounds (seconds) of the call-duration histogram buckets. */
#define MCP_LATENCY_BUCKETS 12
extern const double mcp_latency_bounds[MCP_LATENCY_BUCKETS];

typedef struct mcp_server_stats_s {
    uint64_t sessions_opened, sessions_closed;
    int sessions_open;
    uint64_t requests, notifications, errors, tool_calls, tool_errors, busy_rejections;
    uint64_t oversize_messages;
    uint64_t refused_sessions; /* past max_sessions */
    uint64_t refused_share;    /* past a principal's share of them */
    int active_calls;
    uint64_t by_method[MCP_M_COUNT];
    uint64_t latency_count[MCP_LATENCY_BUCKETS + 1]; /* last: +Inf */
    double latency_sum;
} mcp_server_stats_t;

typedef struct mcp_server_s {
    uv_loop_t *loop;
    const char *name, *version, *instructions; /* the entry point may set instructions */
    mcp_registry_t registry;
    mcp_limits_t limits;
    mcp_server_stats_t stats;
    queue_node_t sessions; /* live sessions */
    queue_node_t sweep;    /* closed sessions waiting to be freed */
    uv_idle_t sweeper;
    queue_node_t waiting; /* calls waiting for a client's answer */
    uv_timer_t wait_ticker;
    uv_timer_t init_ticker; /* closes connections that never initialize */
    uint64_t next_session_id;
    /* Open sessions by owner (mcp_session_set_owner): key -> count;
     * created on first use, a key dropped at 0. */
    json_t *owners;
    /* ,"resultType":"complete","_meta":{serverInfo} for 2026-07-28 results
     * built as text; filled on first use (mcp_server__complete_text). */
    char complete_text[256];
    /* Seals 2026-07-28 requestState (mcp/request_state.h): random per
     * process unless the entry sets a shared one (mcp_server_set_state_key),
     * which several daemons behind one balancer need. */
    sealed_key_t state_key;
    bool state_key_ok;
    /* The last 2026-07-28 envelope read on this loop (sessions and the
     * HTTP transport). */
    mcp_envelope_memo_t envelope_memo;
    /* A session that names no selection gets the default (the compact
     * surface of mcp_registry_set_default) when set; else every toolset
     * of the registry whole. The entry point sets it ("auto"). */
    bool default_brief;
    bool closing;
    void (*close_cb)(struct mcp_server_s *);
} mcp_server_t;

/* Initialises srv (owned by the caller) with an already built registry
 * (ownership passes). */
void mcp_server_init(mcp_server_t *srv, uv_loop_t *loop, mcp_registry_t *registry,
                     const mcp_limits_t *limits);

/* Sets the key that seals requestState (copied). */
void mcp_server_set_state_key(mcp_server_t *srv, const sealed_key_t *key);

/* Default limits. */
void mcp_limits_default(mcp_limits_t *l);

/* Asks every session to close; cb runs once all are freed. Transports must
 * stop accepting first. */
void mcp_server_close(mcp_server_t *srv, void (*cb)(mcp_server_t *));

/* True when another session may open (max_sessions); counts a refusal. */
__attribute__((warn_unused_result)) bool mcp_server_admit(mcp_server_t *srv);

typedef enum {
    MCP_ADMIT_OK = 0,
    MCP_ADMIT_FULL,  /* max_sessions are open, or the server is closing */
    MCP_ADMIT_SHARE, /* the owner holds its share (mcp_server_owner_cap) */
} mcp_admit_t;

/* Whether another session of owner (who opens it: "token:N", or
 * "endpoint:TEXT" for clients without a token; NULL or "" for none) may
 * open. Counts a refusal. The transport then names the session's owner
 * (mcp_session_set_owner) before the next loop turn. */
__attribute__((warn_unused_result)) mcp_admit_t mcp_server_admit_owner(mcp_server_t *srv,
                                                                       const char *owner);

/* The sessions one owner may hold at once: principal_share percent of
 * max_sessions, at least 1. */
int mcp_server_owner_cap(const mcp_server_t *srv);

/* Sessions open under owner. */
int mcp_server_owner_open(const mcp_server_t *srv, const char *owner);

/* Sends notifications/resources/updated to every session subscribed to
 * uri. */
void mcp_server_resource_updated(mcp_server_t *srv, const char *uri);

/* Sends notifications/LIST/list_changed (list: "tools", "prompts",
 * "resources") to the 2026-07-28 listens that asked for it. */
void mcp_server_list_changed(mcp_server_t *srv, const char *list);

/* Appends the engine's Prometheus figures (sessions by transport, requests
 * by method, errors, calls, the call-duration histogram) to out. */
void mcp_server_metrics(const mcp_server_t *srv, buf_t *out);

/* Records a finished call's duration for the histogram. */
void mcp_server_observe_latency(mcp_server_t *srv, double seconds);

/* Internal: queues a session for freeing on the next loop turn. */
/* A session opened: from now on it must initialize within
 * limits.init_timeout_ms (stdio excepted). */
void mcp_server__session_opened(mcp_server_t *srv);

void mcp_server__sweep_later(mcp_server_t *srv, queue_node_t *session_node);
/* Internal (session.c): a session of owner opened (+1) or closed (-1). */
void mcp_server__owner_add(mcp_server_t *srv, const char *owner, int delta);
/* Internal (call.c, session.c): the text a 2026-07-28 result built as
 * text ends with (see mcp_envelope_complete_text); NULL when it cannot be
 * built (out of memory, a name and version too long for it). */
const char *mcp_server__complete_text(mcp_server_t *srv);
/* Internal (call.c): a call starts or stops waiting for a client answer. */
struct mcp_call_s;
void mcp_server__wait_start(mcp_server_t *srv, struct mcp_call_s *c);
void mcp_server__wait_stop(mcp_server_t *srv, struct mcp_call_s *c);

#endif
