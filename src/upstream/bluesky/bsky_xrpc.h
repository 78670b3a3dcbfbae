/* bsky_xrpc: how the Bluesky connector (bsky.h) reads what an XRPC service
 * answers, apart from any I/O or state (the fuzz target xrpc drives it):
 * the error of a failed call, the rate-limit message, the tokens and PDS
 * of a createSession or refreshSession answer, a JWT's expiry, the posts
 * of a feed, and whether a PDS is as trusted as the operator's service.
 * The bodies are the upstream's and untrusted: any bytes. */
#ifndef PARLEY_UPSTREAM_BLUESKY_BSKY_XRPC_H
#define PARLEY_UPSTREAM_BLUESKY_BSKY_XRPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef enum {
    BSKY_XRPC_OTHER = 0,
    BSKY_XRPC_TOKEN, /* ExpiredToken or InvalidToken: the access token is spent */
    BSKY_XRPC_RATE,  /* RateLimitExceeded */
} bsky_xrpc_error_t;

/* The error of a failed XRPC response (body[0..len), any bytes) into why
 * (cap > 0): "Name: message", "Name", or "HTTP n" when the body names
 * none (an empty name or message counts as none), so it is never empty;
 * valid UTF-8 even where cut to fit (it ends up in a tool's JSON result).
 * Returns what kind of error the name says. */
bsky_xrpc_error_t bsky_xrpc_error(const char *body, size_t len, long http_status, char *why,
                                  size_t cap);

/* The message for a rate-limited call of what into out (cap > 0); reset
 * is the ratelimit-reset header as sent (epoch seconds; "" when absent),
 * now the current time. */
void bsky_rate_limit_message(char *out, size_t cap, const char *what, const char *reset,
                             time_t now);

/* The exp claim of a JWT (seconds since the epoch), or 0 when unreadable
 * (NULL, not three parts, not base64url JSON). */
int64_t bsky_jwt_exp(const char *jwt);

/* A createSession or refreshSession answer. */
typedef struct bsky_session_answer_s {
    json_t *doc;                  /* holds the strings below */
    const char *access, *refresh; /* the tokens */
    const char *handle, *did;     /* NULL when absent */
    const char *pds;              /* the http(s) URL its DID document names for the PDS, or NULL */
} bsky_session_answer_t;

/* Reads a session answer (body[0..len), any bytes). Returns 0 when it
 * carries both tokens, else UV_EPROTO; either way out is freed with
 * bsky_session_answer_free. */
int bsky_session_answer(const char *body, size_t len, bsky_session_answer_t *out);
void bsky_session_answer_free(bsky_session_answer_t *a);

/* The post objects of a feed answer ({"feed": [{"post": {...}}, ...]}),
 * in order, as a new array (items without a post object are left out). */
json_t *bsky_feed_posts(const json_t *doc);

/* The scheme and host[:port] of url into out ("" when it has none). */
void bsky_url_origin(char *out, size_t cap, const char *url);

/* True when a PDS URL is as trusted as the operator's service: the same
 * origin, or an https host under suffix (the hosts the public entryway
 * hands out; no userinfo, no port). */
bool bsky_pds_trusted(const char *service, const char *pds, const char *suffix);

#endif
