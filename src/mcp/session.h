/* session: one MCP session, whatever carries it. It parses JSON-RPC
 * messages, runs the lifecycle (initialize, version negotiation,
 * initialized, ping, logging/setLevel), lists and calls tools, tracks the
 * calls in flight (cancellation, progress), and applies backpressure: it
 * asks its transport to stop reading while too many calls are in flight or
 * too much output is queued, and closes the session past a hard output
 * limit. The session survives every bad message.
 *
 * A transport gives the session its operations and feeds it messages; it
 * tells the session when output drained and when it closed. The session is
 * freed by the server's sweep once its transport is closed and no call is
 * left in flight. */
#ifndef PARLEY_MCP_SESSION_H
#define PARLEY_MCP_SESSION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mcp/envelope.h"
#include "mcp/jsonrpc.h"
#include "mcp/server.h"

typedef struct mcp_session_s mcp_session_t;

typedef struct mcp_transport_ops_s {
    /* Queues one message for the peer; ownership of msg (malloc'd, a C
     * string of len bytes: msg[len] is its NUL, which the transport may
     * overwrite with its framing) passes to the transport, which adds its
     * own framing. related is the id of
     * the client request the message belongs to (its response, or a
     * progress, log or server request sent while it runs), NULL for none;
     * final marks the response itself (Streamable HTTP routes by these and
     * ends a POST's stream after its last response). Returns 0 or a
     * negative code (the session then closes). */
    int (*send)(void *t, char *msg, size_t len, const json_t *related, bool final);
    /* Bytes queued and not yet written. */
    size_t (*queued_bytes)(void *t);
    /* Starts or stops reading input (backpressure). */
    void (*set_reading)(void *t, bool on);
    /* Asks the transport to close; it later calls
     * mcp_session_transport_closed. */
    void (*close)(void *t);
    /* Optional: ends the response stream of the request related (the
     * client resumes it later), for transports that have one per request
     * (Streamable HTTP). */
    void (*end_stream)(void *t, const json_t *related);
    /* Optional: request related will get no response (it was cancelled). */
    void (*abandon)(void *t, const json_t *related);
} mcp_transport_ops_t;

/* What a session may use (bearer-token limits): toolsets by their index
 * in the registry, and whether only read-only tools. */
typedef struct mcp_policy_s {
    unsigned toolset_mask;
    bool read_only;
} mcp_policy_t;

/* Supported protocol revisions, newest first. */
extern const char *const mcp_protocol_versions[];

typedef enum {
    MCP_SESSION_NEW = 0,  /* waiting for initialize */
    MCP_SESSION_READY,    /* initialize answered */
    MCP_SESSION_DRAINING, /* input ended: finish calls, flush, close */
    MCP_SESSION_CLOSING,  /* close requested */
    MCP_SESSION_CLOSED,   /* transport gone; waiting for calls, then sweep */
} mcp_session_state_t;

/* Creates a session on srv for a transport. kind names the transport in
 * logs and metrics ("stdio", "unix", "tcp", "http"). NULL on ENOMEM. */
mcp_session_t *mcp_session_new(mcp_server_t *srv, const mcp_transport_ops_t *ops, void *t,
                               const char *kind);

/* Restricts what the session offers (before initialize). */
void mcp_session_set_policy(mcp_session_t *s, const mcp_policy_t *p);

/* What the session is served, whatever its token allows (before
 * initialize): the toolsets in mask, each whole (brief false: as a
 * transport's selection by URL, PATH/telegram,memory), or the default
 * selection's tools of them (brief true). A new session has every toolset
 * and the server's default_brief. */
void mcp_session_set_selection(mcp_session_t *s, unsigned mask, bool brief);

/* Names who is asking (a digest of the bearer token; at most 64
 * characters): a 2026-07-28 requestState is bound to it. */
void mcp_session_set_principal(mcp_session_t *s, const char *principal);

/* The principal of a session without a bearer token: its transport and
 * endpoint, named by label ("stdio", "unix:PATH", "tcp", "http"), so that
 * a requestState sealed on one opens on no other. The label must be the
 * same on every daemon that serves the endpoint behind a load balancer
 * (no port, no process id): an HTTP endpoint's is "http" whatever its
 * address, as anonymous HTTP is loopback-only and reached by the same
 * local clients at any port. mcp_session_new sets it to the session's
 * kind; a transport refines it (a Unix socket: its path); a bearer
 * token's principal replaces it. Never equal to a token's principal. */
void mcp_session_set_anonymous(mcp_session_t *s, const char *label);
/* Counts the session against owner's share of max_sessions (see
 * mcp_server_admit_owner) until its transport closes. Once, right after
 * the session is made. */
void mcp_session_set_owner(mcp_session_t *s, const char *owner);

/* True when version is a revision this server speaks. */
__attribute__((warn_unused_result)) bool mcp_protocol_supported(const char *version);

/* One complete message. Returns false when the session wants no more
 * input for now (the transport stops delivering until set_reading(on)). */
bool mcp_session_receive(mcp_session_t *s, const char *msg, size_t len);

/* The same for a message (an object) the transport already read
 * (jsonrpc_read): its members mm, borrowed for the call. env: NULL, or
 * for a 2026-07-28 request whose envelope the transport has read already
 * mcp_envelope_parse's success on mm's params (borrowing from them), so
 * the session does not read it again. */
bool mcp_session_receive_members(mcp_session_t *s, const jsonrpc_members_t *mm,
                                 const mcp_envelope_t *env);

/* A message longer than the limit was dropped by the framer. */
void mcp_session_oversize(mcp_session_t *s, size_t limit);

/* Output was written; the session may resume reading. */
void mcp_session_drained(mcp_session_t *s);

/* The input ended (EOF): answer what is in flight, flush, then close. */
void mcp_session_input_ended(mcp_session_t *s);

/* The transport is closed: the session never touches it again. */
void mcp_session_transport_closed(mcp_session_t *s);

/* Asks the transport to close the session (server shutdown). */
void mcp_session_close(mcp_session_t *s);

const char *mcp_session_tag(const mcp_session_t *s);
/* The transport kind given at creation ("stdio", "unix", "tcp", "http"). */
const char *mcp_session_kind(const mcp_session_t *s);
mcp_session_state_t mcp_session_state(const mcp_session_t *s);
const char *mcp_session_protocol_version(const mcp_session_t *s);

/* Requests in flight (calls waiting for their handlers). */
int mcp_session_inflight(const mcp_session_t *s);

/* Internal (call.c): sends a complete JSON-RPC message (takes ownership;
 * NULL means out of memory); a session that cannot send any more is
 * closed. related/final as in mcp_transport_ops_t.send. */
void mcp_session__send(mcp_session_t *s, char *msg, size_t len, const json_t *related, bool final);
/* Internal (call.c): asks the transport to end the stream of request id. */
void mcp_session__end_stream(mcp_session_t *s, const json_t *id);
/* Internal (call.c): the client declared capability cap at initialize. */
__attribute__((warn_unused_result)) bool mcp_session__client_has(const mcp_session_t *s,
                                                                 const char *cap);
/* Internal (call.c): the client's declaration of capability cap, or NULL. */
const json_t *mcp_session__client_cap(const mcp_session_t *s, const char *cap);
/* The longest context mcp_session__state_context makes: the prefix, a
 * kind, a name of at most 200 bytes, a principal and a digest. */
#define MCP_STATE_CONTEXT_MAX 400
/* Internal (call.c): the context a requestState of call kind/name is
 * sealed under for this session's principal and the request's digest
 * (its arguments, or its URI: mcp_session__request_digest), so that a
 * state opens only for the request it was made for (mcp/request_state.h). */
void mcp_session__state_context(const mcp_session_t *s, int kind, const char *name,
                                const char *digest, char *out, size_t cap);
/* Internal: the SHA-256 (hex, 64 characters) of a request's arguments as
 * canonical JSON (keys sorted) into out[65]. */
void mcp_session__request_digest(const json_t *args, char out[65]);
/* Internal (call.c): a fresh id for a server-to-client request. */
int64_t mcp_session__next_request_id(mcp_session_t *s);
/* Internal (server.c): notifies the listens that asked for list changes. */
void mcp_session__list_changed(mcp_session_t *s, const char *list);
/* Internal (server.c): notifies the session if it subscribed to uri. */
void mcp_session__resource_updated(mcp_session_t *s, const char *uri);
/* Internal (call.c): a call finished; remove it and resume input. */
void mcp_session__call_done(mcp_session_t *s, struct mcp_call_s *call);
/* Internal (call.c): the session's log level threshold (syslog order). */
int mcp_session__log_level(const mcp_session_t *s);
mcp_server_t *mcp_session__server(const mcp_session_t *s);
/* Internal (call.c): true when the session serves the tool named name
 * (the registry has it and the session's policy lets it see it). */
__attribute__((warn_unused_result)) bool mcp_session__serves_tool(const mcp_session_t *s,
                                                                  const char *name);
/* Internal (call.c): the name the session lists the tool named name under
 * (any of its names), or NULL when it does not serve it. */
const char *mcp_session__tool_name(const mcp_session_t *s, const char *name);
/* Internal (call.c): whether the session's policy names toolset name (see
 * mcp_call_policy_names). */
__attribute__((warn_unused_result)) bool mcp_session__policy_names(const mcp_session_t *s,
                                                                   const char *name);
/* Internal (call.c): true when the session's policy bounds its toolsets. */
__attribute__((warn_unused_result)) bool mcp_session__policy_scoped(const mcp_session_t *s);
/* Internal (server.c): frees a swept session. */
void mcp_session__free(mcp_session_t *s);
/* Loop time the session opened at. */
uint64_t mcp_session__opened_at(const mcp_session_t *s);
mcp_session_t *mcp_session__from_node(queue_node_t *node);

#endif
