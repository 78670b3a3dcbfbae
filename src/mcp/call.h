/* call: one request in flight that a handler answers: tools/call,
 * resources/read or prompts/get. The handler owns it until it finishes it
 * with exactly one mcp_call_finish_* (at once or from a later callback).
 * While it runs it may send progress and log notifications, and ask the
 * client something (elicitation/create, sampling/createMessage) with
 * mcp_call_request: the call waits, suspended, for the answer.
 * A cancelled call (notifications/cancelled, or its session gone) still
 * has to be finished, but nothing is sent: "the receiver SHOULD NOT send a
 * response for the cancelled request". Handlers that start work which can
 * be stopped (a database query) set on_cancel. */
#ifndef PARLEY_MCP_CALL_H
#define PARLEY_MCP_CALL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "mcp/registry.h"
#include "util/queue.h"

typedef struct mcp_session_s mcp_session_t;

/* MCP log levels (RFC 5424 order, as logging/setLevel names them). */
typedef enum {
    MCP_LOG_DEBUG = 0,
    MCP_LOG_INFO,
    MCP_LOG_NOTICE,
    MCP_LOG_WARNING,
    MCP_LOG_ERROR,
    MCP_LOG_CRITICAL,
    MCP_LOG_ALERT,
    MCP_LOG_EMERGENCY,
} mcp_log_level_t;

extern const char *const mcp_log_level_names[];

typedef enum {
    MCP_CALL_TOOL = 0,
    MCP_CALL_RESOURCE,
    MCP_CALL_PROMPT,
} mcp_call_kind_t;

/* The answer to a server-to-client request. status: 0 with result (the
 * client's result object, borrowed); UV_EPROTO with error (the client's
 * JSON-RPC error object, borrowed); UV_ETIMEDOUT; UV_EOF when the client's
 * input ended; UV_ECANCELED when the call was cancelled or its session closed (the handler must
 * still finish the call; nothing will be sent). */
typedef void (*mcp_reply_fn)(mcp_call_t *c, int status, const json_t *result, const json_t *error);

typedef struct mcp_call_s {
    queue_node_t node; /* in the session's list of calls */
    mcp_session_t *session;
    mcp_call_kind_t kind;
    const char *name;       /* tool, resource URI or prompt name, for logs */
    const mcp_tool_t *tool; /* MCP_CALL_TOOL */
    json_t *id;             /* request id */
    json_t *args;           /* validated arguments (an object) */
    json_t *progress_token; /* NULL when the client asked for none */
    double last_progress;
    uint64_t started_ns; /* uv_hrtime() at the start */
    bool cancelled;
    bool finished;
    void (*on_cancel)(struct mcp_call_s *call); /* set by the handler */
    void *data;                                 /* the handler's */
    void *context;                              /* the toolset's (mcp_call_context) */
    /* A request of 2026-07-28: what its envelope declared (capabilities,
     * log level) holds for this call alone, and its result carries
     * resultType and the server's identity. */
    bool modern;
    json_t *caps;  /* the client's capabilities when modern */
    int log_level; /* when modern: mcp_log_level_t, or MCP_ENVELOPE_LOG_OFF */
    /* Multi round-trip requests (2026-07-28): the client's answers to an
     * earlier input_required round (params.inputResponses, an object of
     * objects) and the state that round returned, opened and checked by
     * the session (mcp_call_request_state). NULL when absent. */
    json_t *input_responses;
    json_t *request_state;
    /* The request's digest its requestState is bound to (its arguments
     * as they came, mcp_session__request_digest): made when a state came
     * with it, before normalising when they hold a real number, or when
     * one is sealed; "" until then. */
    char state_digest[65];
    /* A server-to-client request waiting for its answer. */
    queue_node_t wait_node; /* in the server's list of waiting calls */
    int64_t wait_id;        /* its JSON-RPC id; 0 when not waiting */
    uint64_t wait_deadline; /* loop time in ms */
    mcp_reply_fn wait_cb;
    /* A probe (mcp_session__probe_resource): the session asks a resource's
     * watch (or read) handler whether the caller may watch a URI. Its
     * answer is never sent: probe_done gets the message that would have
     * gone (malloc'd, handed over; NULL when out of memory), unless
     * probe_owner was cleared (the subscription that asked is gone). A
     * probe sends nothing else either (no progress, no log). */
    void (*probe_done)(struct mcp_call_s *call, char *msg, size_t len);
    void *probe_owner;
} mcp_call_t;

/* The context of the toolset the call's tool, resource or prompt belongs
 * to (see mcp_registry_set_context). */
void *mcp_call_context(const mcp_call_t *c);

/* Whose call it is: the session's principal (a digest of its bearer
 * token; "" without one), for fair shares of what calls wait for. */
const char *mcp_call_principal(const mcp_call_t *c);

/* The loop the call runs on (for the handler's timers). */
uv_loop_t *mcp_call_loop(const mcp_call_t *c);

/* Ends the transport's response stream for this call, where there is one
 * (Streamable HTTP: the client resumes with Last-Event-ID); a no-op on
 * stream transports. */
void mcp_call_end_stream(mcp_call_t *c);

/* Sends notifications/progress when the client gave a progressToken;
 * values that do not increase are dropped (progress is monotonic). */
void mcp_call_progress(mcp_call_t *c, double progress, double total, const char *message);

/* Sends notifications/message at level if the session wants it. data is
 * stolen. */
void mcp_call_log(mcp_call_t *c, mcp_log_level_t level, const char *logger, json_t *data);

/* Sends a request to the client on behalf of the call (method, params
 * stolen) and suspends it until cb runs (exactly once). capability is the
 * client capability the request needs ("elicitation", "sampling").
 * Returns 0; UV_ENOTSUP when the client did not declare the capability,
 * or the request is a 2026-07-28 one, which has no server-to-client
 * requests (cb is not called; tell the model what to do instead); UV_EALREADY when the
 * call already waits; UV_ECANCELED when the call is cancelled. */
int mcp_call_request(mcp_call_t *c, const char *capability, const char *method, json_t *params,
                     mcp_reply_fn cb);

/* True when the client declared capability cap (at initialize, or in a
 * 2026-07-28 request's envelope) and, when
 * mode is not NULL, that mode of it. For "elicitation" the 2025-11-25
 * revision says an empty object means form mode alone: "elicitation": {}
 * has "form" but not "url". */
__attribute__((warn_unused_result)) bool mcp_call_client_has(const mcp_call_t *c, const char *cap,
                                                             const char *mode);

/* True when the caller may call the tool named name (as tools/list names
 * it): the server has it and the session's policy (its token's toolsets,
 * read-only) lets it see it. For answers that name a tool to call next. */
__attribute__((warn_unused_result)) bool mcp_call_serves_tool(const mcp_call_t *c,
                                                              const char *name);

/* The name under which the caller's session lists the tool named name
 * (by any of its names: a default selection lists some under names of
 * their own), or NULL when it does not serve it. Borrowed from the
 * registry. */
const char *mcp_call_tool_name(const mcp_call_t *c, const char *name);

/* True when the caller's policy (its bearer token's toolsets=) bounds the
 * toolsets it may use; false without a token or for a token without
 * toolsets=. */
__attribute__((warn_unused_result)) bool mcp_call_policy_scoped(const mcp_call_t *c);

/* True when the caller's policy names toolset name: always when it is not
 * scoped; else when its token lists that toolset (served now or held
 * back until its data arrives). For a toolset that answers from other
 * toolsets' sources (recall). */
__attribute__((warn_unused_result)) bool mcp_call_policy_names(const mcp_call_t *c,
                                                               const char *name);

/* ---- multi round-trip requests (2026-07-28) -------------------------------
 * A 2026-07-28 server asks the client nothing by a request of its own:
 * tools/call, prompts/get and resources/read answer "input_required"
 * with what they need (inputRequests: key -> {method, params}, the
 * methods elicitation/create, sampling/createMessage, roots/list) and a
 * requestState; the client calls again, same params, with inputResponses
 * (key -> its answer) and that requestState. The handler runs afresh for
 * each round: what it needs from the last one is in the state. */

/* True when the call may finish with mcp_call_finish_input_required (a
 * 2026-07-28 request). */
__attribute__((warn_unused_result)) bool mcp_call_can_ask(const mcp_call_t *c);

/* The answer to input request key of the last round (an object: an
 * ElicitResult, CreateMessageResult or ListRootsResult), or NULL. */
const json_t *mcp_call_input_response(const mcp_call_t *c, const char *key);

/* The state the last round returned, or NULL. The session opened it: it
 * was sealed by a server with this server's state key, for this tool,
 * prompt or resource and this bearer token, within MCP_REQUEST_STATE_TTL_MS
 * (a changed, foreign or stale one is refused with -32602 before the
 * handler runs). */
const json_t *mcp_call_request_state(const mcp_call_t *c);

/* Finishes with resultType "input_required": input_requests (stolen,
 * key -> {method, params}) and state (stolen, any JSON or NULL; sealed
 * into requestState). A sealed state can be sent again by the same
 * principal, with the same arguments, until it expires: it must not
 * authorise an action by itself (a round that would, e.g. a send after a
 * confirmation, must record the state as used where every daemon sees
 * it); naming a one-time thing the daemon holds (a login page) is fine
 * (docs/mcp.md says why each round is safe to replay). A request the
 * client's capabilities do not allow
 * (elicitation, its url mode, sampling, roots) finishes the call with
 * -32021 and data.requiredCapabilities instead: check with
 * mcp_call_client_has first. Only for mcp_call_can_ask calls (others get
 * an internal error). */
void mcp_call_finish_input_required(mcp_call_t *c, json_t *input_requests, json_t *state);

/* Tells 2026-07-28 listeners that list ("tools", "prompts", "resources")
 * changed (for toolsets whose lists change: mcp_toolset_t.lists_change). */
void mcp_call_list_changed(mcp_call_t *c, const char *list);

/* Sends a notification (method, params stolen) related to the call, unless
 * it is finished or cancelled: e.g. notifications/elicitation/complete. */
void mcp_call_notify(mcp_call_t *c, const char *method, json_t *params);

/* Finishes with structuredContent = json (a JSON object as text, e.g. built
 * by PostgreSQL) and the same JSON as a text block. Not re-serialised. */
void mcp_call_finish_json(mcp_call_t *c, const char *json, size_t len);

/* Finishes with a complete result given as JSON text (len bytes): one
 * object, such as a constant or PostgreSQL's text. Not re-serialised: the
 * caller vouches that it is valid JSON; 2026-07-28's resultType and _meta
 * are spliced in. A resource read in 2026-07-28 (its cache hints), a text
 * naming "_meta" or "resultType" there (merged), or one that does not look
 * like an object, is parsed and finished as mcp_call_finish_result does
 * (not a JSON object: an internal error). */
void mcp_call_finish_result_text(mcp_call_t *c, const char *json, size_t len);

/* Finishes with a complete CallToolResult object (stolen). */
void mcp_call_finish_result(mcp_call_t *c, json_t *result);

/* Finishes with isError: true and a message telling the model what to
 * change (a resource read or prompt get, which have no isError, gets a
 * JSON-RPC internal error with the message). */
__attribute__((format(printf, 2, 3))) void mcp_call_finish_error(mcp_call_t *c, const char *fmt,
                                                                 ...);

/* Finishes with a JSON-RPC error instead of a result (data stolen, may be
 * NULL). */
void mcp_call_finish_rpc_error(mcp_call_t *c, int code, const char *message, json_t *data);

/* Internal (session.c). */
mcp_call_t *mcp_call__new(mcp_session_t *s, mcp_call_kind_t kind, const char *name, json_t *id,
                          json_t *args, json_t *progress_token);
void mcp_call__cancel(mcp_call_t *c);
/* Internal (session_methods.c): before a tool's arguments are normalised
 * (schema_normalize turns whole reals into integers), makes the digest a
 * requestState sealed later is bound to, when normalising may change them
 * and it is not made yet. */
void mcp_call__pin_digest(mcp_call_t *c);
/* Internal (session.c): the client answered wait_id (result or error). */
void mcp_call__answer(mcp_call_t *c, const json_t *result, const json_t *error);
/* Internal (server.c): the answer did not come in time. */
void mcp_call__wait_expired(mcp_call_t *c);
/* Internal (session.c): no answer can come (status, e.g. UV_EOF). */
void mcp_call__wait_abort(mcp_call_t *c, int status);

#endif
