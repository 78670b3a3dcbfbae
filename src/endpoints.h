/* endpoints: where serve takes MCP sessions: the --listen endpoints (Unix
 * and TCP sockets, Streamable HTTP, each with TLS when configured), the
 * bearer tokens they check, and stdio. Every endpoint is checked before
 * any binds; non-loopback endpoints need tokens, and tcp:// stays on
 * loopback (it carries no credentials). */
#ifndef PARLEY_ENDPOINTS_H
#define PARLEY_ENDPOINTS_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "config.h"
#include "mcp/server.h"
#include "transport/http.h"

/* At most this many --listen endpoints. */
#define ENDPOINTS_MAX 16

typedef struct endpoints_s endpoints_t;

typedef struct endpoints_config_s {
    const config_t *cfg;
    mcp_server_t *mcp;
    http_metrics_fn metrics; /* /metrics of the HTTP endpoints */
    void *metrics_data;
    /* stdin ended (the stdio session closed) while serving. */
    void (*stdio_ended)(void *data);
    void *data;
} endpoints_config_t;

/* Starts every configured endpoint. Returns 0, or a negative code with err
 * saying what failed; *out is set either way (close it). */
/* Checks the --listen endpoints, the TLS files (present, regular, the key
 * private: util/secret_file.h) and the token
 * file against the toolsets registry serves, as endpoints_start would,
 * without binding anything. Returns 0, or a negative code with err. */
int endpoints_check(const config_t *cfg, const mcp_registry_t *registry, char *err, size_t errcap);

int endpoints_start(uv_loop_t *loop, const endpoints_config_t *ec, endpoints_t **out, char *err,
                    size_t errcap);

/* Stops accepting and closes the stdio session; cb(data) once every
 * listener, HTTP server and stdio is closed. */
void endpoints_close(endpoints_t *e, void (*cb)(void *data), void *data);

/* True when the loop must be stopped to end (h2o's handles keep it alive
 * until endpoints_dispose). */
__attribute__((warn_unused_result)) bool endpoints_hold_loop(const endpoints_t *e);

/* After uv_run returned: disposes h2o's contexts, which must happen
 * outside uv_run; true when the loop must run once more to close them. */
__attribute__((warn_unused_result)) bool endpoints_dispose(endpoints_t *e);

/* Frees e (NULL is fine); after endpoints_dispose and the last loop run. */
void endpoints_free(endpoints_t *e);

#endif
