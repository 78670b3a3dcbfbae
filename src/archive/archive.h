/* archive: the store as the toolsets see it: an opaque handle and one
 * generic operation, a call of an SQL function that answers JSON built by
 * PostgreSQL. A toolset's table names the function of each tool; the
 * function takes (args jsonb, ctx jsonb) and returns jsonb (see
 * src/db/sql/). Toolsets never see libpq or the pools: they get the JSON,
 * or an error with its class (SQLSTATE mapped to archive_err_t). */
#ifndef PARLEY_ARCHIVE_ARCHIVE_H
#define PARLEY_ARCHIVE_ARCHIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct archive_s archive_t;
typedef struct archive_call_s archive_call_t;
struct pg_pool_s;

/* The longest SQL function name archive_call takes. */
#define ARCHIVE_FN_MAX 63

/* Errors a tool reports to the model as its own (isError): */
typedef enum {
    ARCHIVE_ERR_NONE = 0,
    ARCHIVE_ERR_ARGUMENT,  /* the caller's mistake (unknown id, bad date): PT400, 22xxx */
    ARCHIVE_ERR_CONNECTOR, /* needs an upstream connector that is not there: PT501 */
    ARCHIVE_ERR_BUSY,      /* the database is busy, slow or unreachable: retry */
    ARCHIVE_ERR_TOO_SLOW,  /* a regex search ran past the archive's regex time limit */
    ARCHIVE_ERR_INTERNAL,
} archive_err_t;

/* Where a call runs: the read-only pool (a replica, read-only sessions) or
 * the read-write one. ARCHIVE_SEARCH reads in the read-only pool's limited
 * class: a search may take a while, and at most search_max_conns of them
 * hold a connection at once, so other reads keep connections. */
typedef enum {
    ARCHIVE_READ = 0,
    ARCHIVE_WRITE,
    ARCHIVE_SEARCH,
} archive_mode_t;

/* json (valid during the callback) on success; else status < 0, err and a
 * message. */
typedef void (*archive_call_cb)(void *data, int status, const char *json, archive_err_t err,
                                const char *message);

/* The default time limit of a search that matches a caller's regex, once
 * it holds a connection (config key search_regex_timeout_ms): PostgreSQL's
 * regex engine can take exponential time on some patterns, and a search
 * holds one of the few search connections. */
#define ARCHIVE_REGEX_TIMEOUT_MS 5000

/* How archive_call_opts runs a call (all zero: as archive_call). */
typedef struct archive_call_opts_s {
    /* Whose call it is (any string, e.g. a digest of the bearer token; NULL
     * or "": the anonymous one): ARCHIVE_SEARCH calls of different
     * principals take turns for the search connections, and one principal
     * holds at most the pool's share of them. */
    const char *principal;
    /* It matches a regex the caller gave: it runs under the regex time
     * limit (archive_set_regex_timeout), and past it fails with
     * ARCHIVE_ERR_TOO_SLOW. */
    bool regex;
} archive_call_opts_t;

/* Creates the handle over the two pools (borrowed; they outlive it).
 * ro_may_lag: the read-only pool is another server (--db-ro), possibly a
 * streaming replica: then every read's answer (a JSON object) says how far
 * behind the primary it is, when it is in recovery: "replica": {"lagMs":
 * now() - pg_last_xact_replay_timestamp(), "replayedAt"} ("the time of the
 * last transaction replayed": on an idle primary the lag grows though
 * nothing is missing). Returns 0 or UV_ENOMEM. */
int archive_new(struct pg_pool_s *rw, struct pg_pool_s *ro, bool ro_may_lag, archive_t **out);
void archive_free(archive_t *ar);

/* Sets the regex time limit (ms > 0; ARCHIVE_REGEX_TIMEOUT_MS until
 * set). */
void archive_set_regex_timeout(archive_t *ar, uint32_t ms);

/* True when fn can name an SQL function here: ^[a-z_][a-z0-9_]*$, at most
 * ARCHIVE_FN_MAX characters. Toolsets check their tables at start. */
__attribute__((warn_unused_result)) bool archive_fn_valid(const char *fn);

/* Runs SELECT fn(args, ctx) (args and ctx JSON text; NULL: {}) as a
 * statement prepared once per connection. fn must pass archive_fn_valid:
 * it comes from a static table, never from a request. Returns 0 with *op
 * (for archive_call_cancel until the callback; op may be NULL), or a
 * negative code (UV_EINVAL, UV_EBUSY, UV_ENOMEM) without calling back. */
int archive_call(archive_t *ar, archive_mode_t mode, const char *fn, const char *args_json,
                 const char *ctx_json, archive_call_cb cb, void *data, archive_call_t **op);

/* archive_call with opts (NULL: none). */
int archive_call_opts(archive_t *ar, archive_mode_t mode, const archive_call_opts_t *opts,
                      const char *fn, const char *args_json, const char *ctx_json,
                      archive_call_cb cb, void *data, archive_call_t **op);

/* Cancels the query on the server; the callback still runs. */
void archive_call_cancel(archive_call_t *op);

#endif
