/* bsky: Bluesky (AT Protocol XRPC) as a connector (see upstream/connector.h).
 * It logs accounts in with app passwords (com.atproto.server.createSession)
 * and keeps their sessions in the store (accounts.credentials, sealed with
 * util/sealed.h), refreshing them before the access token expires and when
 * the service answers ExpiredToken (one refresh per account at a time:
 * refresh tokens are single-use). It never logs in per call: createSession
 * is rate-limited upstream, and its 429 / RateLimitExceeded is reported
 * with the time it resets.
 *
 * Read calls (query) go to the account's PDS with the header
 * "atproto-proxy: did:web:api.bsky.app#bsky_appview", which has the PDS
 * forward them to the Bluesky AppView; identity calls (com.atproto.*) go
 * to the PDS itself. The service the operator configures is trusted; a
 * service a tool passes goes through the address policy (the untrusted
 * HTTP client), and so does every later call of an account logged in
 * there.
 *
 * Job class "bluesky.refresh": fetches the default account's own feed
 * (getAuthorFeed) into the archive; queued after each login and then
 * every refresh_s (a timer, first run within a minute of the start). */
#ifndef PARLEY_UPSTREAM_BLUESKY_BSKY_H
#define PARLEY_UPSTREAM_BLUESKY_BSKY_H

#include <stddef.h>
#include <uv.h>

#include "db/pool.h"
#include "net/http_client.h"
#include "upstream/connector.h"
#include "upstream/connectors.h"

#define BSKY_DEFAULT_SERVICE "https://bsky.social"
#define BSKY_APPVIEW_PROXY   "did:web:api.bsky.app#bsky_appview"
/* Refresh a session whose access token expires within this. */
#define BSKY_REFRESH_MARGIN_S 120
/* Operations in flight at once; beyond, verbs answer UV_EBUSY. */
#define BSKY_MAX_OPS 256
/* Posts the bluesky.refresh job fetches per run. */
#define BSKY_REFRESH_POSTS 50
/* The credentials key file, in the data directory. */
#define BSKY_KEY_FILE "credentials.key"
/* A PDS the DID document names is trusted like the operator's service when
 * it has the service's origin or is an https host ending with this (the
 * public entryway's PDS hosts); any other goes through the address policy. */
#define BSKY_TRUSTED_PDS_SUFFIX ".bsky.network"

typedef struct bsky_s bsky_t;

typedef struct bsky_config_s {
    const char *service;  /* the operator's service URL (trusted) */
    const char *key_path; /* the sealing key (created 0600 when missing) */
    int refresh_s;        /* queue bluesky.refresh this often (0: never) */
} bsky_config_t;

/* Creates the connector. net: the trusted client; untrusted: the client
 * under the address policy (NULL: tools cannot name a service). rw: where
 * sessions and fetched posts are stored. Returns 0, or a negative code
 * with err. */
int bsky_new(uv_loop_t *loop, net_client_t *net, net_client_t *untrusted, pg_pool_t *rw,
             const bsky_config_t *cfg, bsky_t **out, char *err, size_t errcap);

/* The connector interface of b (valid until bsky_free). */
connector_t *bsky_connector(bsky_t *b);

/* Cancels the requests in flight; cb(data) once every operation ended
 * (database calls finish on their own). Call before the HTTP clients and
 * the pool close. */
void bsky_close(bsky_t *b, void (*cb)(void *data), void *data);

/* Frees b after bsky_close's callback. */
void bsky_free(bsky_t *b);

/* Bluesky as the entry starts it (connectors.h): wanted when a selected
 * toolset uses run-time accounts (CONNECTOR_CAPS_ACCOUNTS); owns its HTTP
 * client for bluesky_service; the key file DATA_DIR/BSKY_KEY_FILE. */
extern const connector_def_t bsky_connector_def;

#endif
