/* request_state: the requestState of MCP 2026-07-28's multi round-trip
 * requests, sealed. "requestState is attacker-controlled: integrity-
 * protect it when it drives logic, and SHOULD bind principal, TTL and
 * request digest" (basic/patterns/mrtr). Here it is AES-256-GCM
 * (util/sealed.h) over {"e": expiry in Unix ms, "s": the handler's
 * state}, bound to a context naming the request kind, the tool, prompt
 * or resource, and the principal (a digest of the bearer token; without
 * one, of the transport and endpoint: mcp_session_set_anonymous), then
 * base64. Any daemon holding the same key opens it: nothing is kept in
 * the daemon that sealed it.
 *
 * Pure: the key and the time are arguments. */
#ifndef PARLEY_MCP_REQUEST_STATE_H
#define PARLEY_MCP_REQUEST_STATE_H

#include <jansson.h>
#include <stdint.h>

#include "util/sealed.h"

/* How long a round's state stays valid: a person answering a form. */
#define MCP_REQUEST_STATE_TTL_MS (15 * 60 * 1000)
/* Longest requestState accepted (base64 text). */
#define MCP_REQUEST_STATE_MAX (48u * 1024)

/* Seals state (borrowed) under context at now_ms into a malloc'd
 * NUL-terminated base64 text (*out). Returns 0, UV_EINVAL (too large) or
 * UV_ENOMEM. */
int mcp_request_state_seal(const sealed_key_t *key, const char *context, const json_t *state,
                           uint64_t now_ms, char **out);

/* Opens text sealed under context; *state is a new reference. Returns 0;
 * UV_EINVAL when it is not one of ours for this context (changed, another
 * key, tool or principal); UV_ETIMEDOUT when it expired. */
int mcp_request_state_open(const sealed_key_t *key, const char *context, const char *text,
                           uint64_t now_ms, json_t **state);

#endif
