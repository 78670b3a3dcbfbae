/* session_internal: what the files of the MCP session share (internal to
 * src/mcp): session.c is the protocol state machine (lifecycle, output,
 * backpressure, dispatch, ending); session_methods.c answers the feature
 * methods (tools, resources, prompts, completion). */
#ifndef PARLEY_MCP_SESSION_INTERNAL_H
#define PARLEY_MCP_SESSION_INTERNAL_H

#include "mcp/call.h"
#include "mcp/envelope.h"
#include "mcp/session.h"

/* Which revision a connection speaks: decided by its first request
 * ("A dual-era server selects its behavior from how the client opens":
 * versioning, Backward Compatibility). A modern connection answers a
 * request without the envelope with -32602; a legacy one (initialize)
 * still serves an enveloped request statelessly. */
typedef enum {
    MCP_ERA_UNDECIDED = 0,
    MCP_ERA_LEGACY, /* initialize came first: 2025-11-25 and older */
    MCP_ERA_MODERN, /* an enveloped request came first: 2026-07-28 */
} mcp_era_t;

struct mcp_session_s {
    queue_node_t node; /* in server->sessions, then server->sweep */
    mcp_server_t *srv;
    const mcp_transport_ops_t *ops;
    void *t;
    mcp_session_state_t state;
    char tag[32];
    const char *kind;
    char protocol[16];
    json_t *client_info;
    json_t *client_caps;
    int log_level; /* notifications/message at or above this are sent */
    queue_node_t calls;
    int inflight;
    int64_t next_request_id;
    mcp_policy_t policy;
    bool policy_private;  /* a token's policy applies: answers are per token */
    unsigned select_mask; /* mcp_session_set_selection: the toolsets served */
    bool brief;           /* the default selection's tools only */
    /* mcp_session_set_principal (64 hex digits), or "anon:" and 64 hex
     * digits (mcp_session_set_anonymous) without a token. */
    char principal[72];
    char owner[128]; /* mcp_session_set_owner: counted in the server's owners */
    mcp_era_t era;
    /* The 2026-07-28 request being dispatched (its handler runs inside
     * mcp_session_receive_json), NULL for a 2025-11-25 one. Calls copy
     * what they need from it (mcp_call_t.modern, caps, log_level). */
    const mcp_envelope_t *env;
    /* Subscribed resource URIs: room for MCP_SESSION_MAX_SUBSCRIPTIONS,
     * allocated at the first subscribe (a 2026-07-28 request's session
     * never has one, and is made per request). */
    char **subs;
    int nsubs;
    queue_node_t listens; /* open 2026-07-28 subscriptions/listen (session_listen.c) */
    int nlistens;
    bool ending; /* mcp_session_close is ending the listens */
    /* initialize said the lists may change (a toolset was held back):
     * list changes are notified to this 2025-11-25 session. */
    bool told_lists_change;
    bool reading; /* what we last asked of the transport */
    bool transport_gone;
    bool swept;         /* handed to the server's sweep */
    uint64_t opened_at; /* loop time */
};

/* session.c */
/* The string v holds, or NULL when v is not a string or holds a NUL (a
 * name "ping\u0000evil" must not run as "ping"). */
const char *mcp_session__str(const json_t *v);
void mcp_session__send_error(mcp_session_t *s, const json_t *id, int code, const char *message,
                             const json_t *data);
/* Sends result (stolen); for a 2026-07-28 request with resultType and
 * the server's identity. */
void mcp_session__send_result(mcp_session_t *s, const json_t *id, json_t *result);
/* The same for a list result: for a 2026-07-28 request with the cache
 * hint too (MCP_CACHE_LIST_TTL_MS; private under a token's policy). */
void mcp_session__send_listing(mcp_session_t *s, const json_t *id, json_t *result);
/* The server's capabilities, for initialize and server/discover. */
json_t *mcp_session__capabilities(mcp_session_t *s);
void mcp_session__maybe_finish(mcp_session_t *s);
void mcp_session__update_reading(mcp_session_t *s);
/* What the session's policy (its token's toolsets and read-only flag)
 * lets it see and use: a tool of an allowed toolset, not a writing tool
 * under read-only. Resources, templates, prompts and completions are
 * bound by the toolsets alone (they only read); every method looks them
 * up with the session's toolset_mask. */
__attribute__((warn_unused_result)) bool mcp_session__tool_allowed(const mcp_session_t *s,
                                                                   const mcp_tool_t *t);
/* The toolsets the session may use now: its token's, within its
 * selection; in the default selection, without those hidden for now. */
__attribute__((warn_unused_result)) unsigned mcp_session__mask(const mcp_session_t *s);

/* session_methods.c */
void mcp_session__handle_complete(mcp_session_t *s, const json_t *id, const json_t *params);
void mcp_session__handle_prompts_get(mcp_session_t *s, json_t *id, const json_t *params);
void mcp_session__handle_prompts_list(mcp_session_t *s, const json_t *id, const json_t *params);
void mcp_session__handle_resources_list(mcp_session_t *s, const json_t *id, const json_t *params,
                                        bool templates);
void mcp_session__handle_resources_read(mcp_session_t *s, json_t *id, const json_t *params);
/* Starts a probe of uri for the session (see mcp_call_t.probe_done): the
 * watch (or read) handler of the resource the session's policy finds for
 * uri runs as a call with id that sends nothing; done(call, msg, len) gets
 * its answer unless owner is cleared first. Returns 0 (done may have run
 * already), UV_ENOENT when the policy finds no such resource, UV_EBUSY at
 * the cap on calls in flight, UV_ENOMEM. */
int mcp_session__probe_resource(mcp_session_t *s, const json_t *id, const char *uri, void *owner,
                                void (*done)(mcp_call_t *c, char *msg, size_t len));
/* True when a probe's answer (msg, len) allows watching: a complete
 * result, not an error. */
__attribute__((warn_unused_result)) bool mcp_session__probe_allows(const char *msg, size_t len);
void mcp_session__handle_subscribe(mcp_session_t *s, const json_t *id, const json_t *params,
                                   bool on);
void mcp_session__handle_tools_call(mcp_session_t *s, json_t *id, const json_t *params);
void mcp_session__handle_tools_list(mcp_session_t *s, const json_t *id, const json_t *params);

/* session_listen.c */
void mcp_session__handle_listen(mcp_session_t *s, json_t *id, const json_t *params);
/* Ends the listen of request id (cancelled): true when there was one. */
bool mcp_session__cancel_listen(mcp_session_t *s, const json_t *id);
/* Tells the listens that watch uri. */
void mcp_session__listen_updated(mcp_session_t *s, const char *uri);
/* Tells the listens that asked for list ("tools", "prompts", "resources"). */
void mcp_session__list_changed(mcp_session_t *s, const char *list);
/* Ends every listen: with a "complete" result when graceful (shutdown),
 * silently when the connection is gone. */
void mcp_session__end_listens(mcp_session_t *s, bool graceful);

#endif
