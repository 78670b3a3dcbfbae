/* envelope: what a request of MCP revision 2026-07-28 says about itself.
 * That revision has no initialize handshake and no session: "all the
 * information needed to process a request is contained in the request
 * itself" (basic/index, Statelessness). Each request carries in
 * params._meta its protocol version and the client's capabilities
 * (required), the client's identity and a log level (optional); each
 * result carries resultType and the server's identity, and list and read
 * results a cache hint (ttlMs, cacheScope).
 *
 * This file is pure: it reads a request's params and decorates results,
 * so the parser can be fuzzed and unit-tested alone. The session
 * (session.c) decides which requests are modern and applies it. */
#ifndef PARLEY_MCP_ENVELOPE_H
#define PARLEY_MCP_ENVELOPE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The stateless revision parleyd speaks. */
#define MCP_MODERN_VERSION "2026-07-28"

/* Reserved _meta keys (basic/index, "_meta"). */
#define MCP_META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_META_CLIENT_CAPS      "io.modelcontextprotocol/clientCapabilities"
#define MCP_META_CLIENT_INFO      "io.modelcontextprotocol/clientInfo"
#define MCP_META_LOG_LEVEL        "io.modelcontextprotocol/logLevel"
#define MCP_META_SERVER_INFO      "io.modelcontextprotocol/serverInfo"
#define MCP_META_SUBSCRIPTION_ID  "io.modelcontextprotocol/subscriptionId"

/* Error codes of 2026-07-28 (basic/index, "Error Codes"). */
#define MCP_ERROR_HEADER_MISMATCH     (-32020)
#define MCP_ERROR_MISSING_CAPABILITY  (-32021)
#define MCP_ERROR_UNSUPPORTED_VERSION (-32022)

/* Cache hints (server/utilities/caching). Lists and server/discover are
 * fixed while a daemon runs: five minutes, so a rolling upgrade of the
 * daemons behind one balancer is seen within five minutes. A read is the
 * store's data as it is now: immediately stale. */
#define MCP_CACHE_LIST_TTL_MS 300000
#define MCP_CACHE_READ_TTL_MS 0

/* "Log nothing": the level of a request that did not ask for logs. */
#define MCP_ENVELOPE_LOG_OFF 8

typedef struct mcp_envelope_s {
    const json_t *meta;        /* params._meta (an object), borrowed */
    const char *version;       /* borrowed from the request */
    const json_t *caps;        /* the client's capabilities (an object), borrowed */
    const json_t *client_info; /* or NULL; borrowed */
    int log_level;             /* mcp_log_level_t, or MCP_ENVELOPE_LOG_OFF */
} mcp_envelope_t;

/* What a request's params say of the envelope before it is read: their
 * _meta and its protocol-version member, each NULL when absent. Found
 * once (mcp_envelope_claim) and handed to what needs them, so a
 * transport that classifies the request and then reads its envelope
 * looks neither up twice. */
typedef struct mcp_envelope_claim_s {
    const json_t *meta;
    const json_t *version; /* not NULL: params claim the envelope */
} mcp_envelope_claim_t;

/* Every revision parleyd answers, newest first (NULL-terminated): the
 * stateless one, then those of initialize. */
extern const char *const mcp_envelope_all_versions[];

/* True when params (a request's params, or NULL) claim the per-request
 * envelope: params._meta holds the protocol-version key, whatever its
 * value. A claim is served statelessly, a malformed one answered with an
 * error of this revision, never as a 2025-11-25 request. */
__attribute__((warn_unused_result)) bool mcp_envelope_claimed(const json_t *params);

/* The claim of params (a request's params, or NULL). */
mcp_envelope_claim_t mcp_envelope_claim(const json_t *params);

/* Reads the envelope of params into env (borrowing from params). Returns
 * 0; JSONRPC_INVALID_PARAMS when a required key is missing or a key has
 * the wrong type ("A request missing any required field is malformed;
 * the server MUST reject it with -32602"); MCP_ERROR_UNSUPPORTED_VERSION
 * for a version other than MCP_MODERN_VERSION. The message (for the
 * model and the developer) goes to msg; *data (new reference, or NULL) is
 * the error's data: {"supported": [...], "requested": V} for an
 * unsupported version. */
int mcp_envelope_parse(const json_t *params, mcp_envelope_t *env, char *msg, size_t cap,
                       json_t **data);

/* mcp_envelope_parse of the params whose claim is c (mcp_envelope_claim
 * of them). */
int mcp_envelope_parse_claim(const mcp_envelope_claim_t *c, mcp_envelope_t *env, char *msg,
                             size_t cap, json_t **data);

/* The last envelope read through it, with a reference to its _meta: a
 * request whose params._meta is that very object has the same claim and
 * envelope, read again from nothing. Requests share equal _meta objects
 * (json_simd_load_members: a 2026-07-28 client sends the same _meta with
 * every request), and a shared one is never changed. Zero-initialised
 * by its owner, which drops it with mcp_envelope_memo_clear. */
typedef struct mcp_envelope_memo_s {
    json_t *meta;
    mcp_envelope_claim_t claim;
    mcp_envelope_t env;
} mcp_envelope_memo_t;
/* mcp_envelope_claim of params, from memo when params._meta is memo's. */
mcp_envelope_claim_t mcp_envelope_claim_memo(const mcp_envelope_memo_t *memo, const json_t *params);
/* mcp_envelope_parse_claim, from memo when c's _meta is memo's; an
 * envelope read whole and valid is kept in memo in place of the last. */
int mcp_envelope_parse_memo(mcp_envelope_memo_t *memo, const mcp_envelope_claim_t *c,
                            mcp_envelope_t *env, char *msg, size_t cap, json_t **data);
void mcp_envelope_memo_clear(mcp_envelope_memo_t *memo);

/* Adds resultType "complete" and _meta[serverInfo] {name, version} to a
 * result object (keeping a _meta the result has). Returns 0 or UV_ENOMEM. */
int mcp_envelope_complete(json_t *result, const char *name, const char *version);

/* Adds the cache hint: ttlMs and cacheScope ("private" when the answer
 * depends on who asks: a bearer token's toolsets, or the store's data). */
int mcp_envelope_cache(json_t *result, int ttl_ms, bool private_scope);

/* True when result is an object the complete envelope can be spliced into
 * as text (mcp_envelope_complete_text): it has no _meta or resultType of
 * its own. */
__attribute__((warn_unused_result)) bool mcp_envelope_spliceable(const json_t *result);

/* The text to splice before the closing brace of a result object built
 * as text: ,"resultType":"complete","_meta":{...serverInfo...}. Written
 * to out (NUL-terminated). Returns its length, or -1 when cap is too
 * small. */
int mcp_envelope_complete_text(const char *name, const char *version, char *out, size_t cap);

#endif
