/* bsky_internal: what the files of the Bluesky connector share (internal
 * to src/upstream): bsky.c runs the connector's lifecycle, its operations
 * (op_t, from bsky__op_new to bsky__op_end) and its connector interface;
 * bsky_session.c seals and opens the sessions kept in the store and
 * refreshes them (refresh_t, unsaved_t); bsky_calls.c makes the calls for
 * the connector's callers (login, accounts, query) and runs the
 * bluesky.refresh job (its schedule and its run).
 *
 * Ownership: b owns its operations (b->ops; each freed by bsky__op_end),
 * its refreshes (b->refreshes; each freed when its waiters are woken) and
 * the sessions the store did not take (b->unsaved; bsky__unsaved_free).
 *
 * Invariants:
 * - Every operation (op_t) is in b->ops from bsky__op_new to bsky__op_end, and ends
 *   exactly once: its callback (or its job's finish) runs from bsky__op_end.
 * - Tokens and passwords live only in op_t / refresh_t fields that are
 *   wiped when freed; none is ever logged or put into an error message.
 * - At most one refresh per account runs in this daemon (refresh tokens
 *   are single-use); operations that need it wait in its list. */
#ifndef PARLEY_UPSTREAM_BLUESKY_BSKY_INTERNAL_H
#define PARLEY_UPSTREAM_BLUESKY_BSKY_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sync/jobs.h"
#include "upstream/bluesky/bsky.h"
#include "util/queue.h"
#include "util/sealed.h"

#define BSKY_TAG "bluesky"

typedef enum { OP_LOGIN = 0, OP_ACCOUNTS, OP_QUERY, OP_JOB } op_kind_t;

/* One state enum per operation. */
typedef enum {
    OPS_NEW = 0,
    OPS_LOAD,  /* reading the account and its session */
    OPS_WAIT,  /* waiting for the account's refresh */
    OPS_HTTP,  /* the XRPC request runs */
    OPS_STORE, /* storing the result */
    OPS_DONE,
} op_state_t;

typedef struct refresh_s refresh_t;

typedef struct op_s {
    queue_node_t node;      /* in b->ops */
    queue_node_t wait_node; /* in a refresh's waiters (OPS_WAIT) */
    bsky_t *b;
    op_kind_t kind;
    op_state_t state;
    connector_cb cb;
    void *data;
    sync_job_t *job;
    char *account; /* as asked (NULL: the default) */
    char *method;  /* QUERY, JOB */
    char *query;   /* its URL query string */
    char *service; /* LOGIN: a tool's service URL, or NULL */
    char *body;    /* LOGIN: holds the password; wiped */
    size_t body_len;
    /* The account. */
    int64_t id;
    char *handle, *did, *pds;
    bool trusted;
    char *access, *refresh;
    int attempts;
    net_req_t req;
    char *url;
    char *auth; /* "Authorization: Bearer ..."; wiped */
    const char *headers[4];
    int end_status; /* ending soon (b->soon): the outcome */
    char *end_error;
} op_t;

struct refresh_s {
    queue_node_t node; /* in b->refreshes */
    bsky_t *b;
    int64_t id;
    char *handle, *did, *pds;
    bool trusted;
    char *refresh; /* the token sent; wiped */
    char *new_access, *new_refresh;
    queue_node_t waiters;
    net_req_t req;
    bool http_running;
    char *url, *auth;
    const char *headers[3];
    char error[300];
    int status;
};

/* A refreshed session the store did not take (its refresh token is the
 * only valid one now): used instead of the stored one, and stored again,
 * until a store succeeds. */
typedef struct unsaved_s {
    queue_node_t node; /* in b->unsaved */
    bsky_t *b;
    int64_t id;
    char *did, *pds;
    bool trusted;
    char *access, *refresh;
    bool storing;
} unsaved_t;

struct bsky_s {
    uv_loop_t *loop;
    net_client_t *net, *untrusted;
    pg_pool_t *rw;
    char service[512];
    sealed_key_t key;
    connector_t conn;
    queue_node_t ops;
    queue_node_t refreshes;
    queue_node_t unsaved;
    int nops, nrefreshes;
    bool closing;
    void (*close_cb)(void *data);
    void *close_data;
    sync_class_t classes[1];
    int refresh_s;    /* bluesky.refresh every this many seconds; 0: never */
    uv_timer_t timer; /* schedules it */
    bool timer_open;  /* until the timer's close callback */
    uv_timer_t soon;  /* ends the operations in ending_soon on the next turn */
    bool soon_open;
    queue_node_t ending_soon; /* ops (wait_node) that failed inside a verb */
    bool scheduling;          /* parley_bsky_refresh_schedule runs */
    uint64_t logins, login_errors, refreshes_done, calls, call_errors, rate_limited;
};

/* bsky.c */
void bsky__wipe_free(char *s);
char *bsky__dup_or_null(const char *s);
const char *bsky__jstr(const json_t *o, const char *key);
/* Releases a response that carried tokens, wiping its body first. */
void bsky__wipe_release(net_req_t *r);
/* A URL without its trailing slashes into out. */
void bsky__url_trim(char *out, size_t cap, const char *url);
/* Sets req up (zeroed first) for an XRPC call to url with headers
 * (NULL-terminated, or NULL), both borrowed until cb(req) runs with data:
 * every call of the connector keeps the ratelimit-reset header (for
 * bsky_rate_limit_message), goes through the address policy unless its
 * service is trusted (the operator's, or a PDS as trusted), and fails past
 * max_bytes of answer. The caller adds a method and a body. */
void bsky__xrpc_req(net_req_t *req, const char *url, const char *const *headers, bool trusted,
                    size_t max_bytes, net_req_cb cb, void *data);
/* Calls bsky_close's callback once everything has ended. */
void bsky__maybe_closed(bsky_t *b);
/* A new operation in b->ops, or NULL with *rc (UV_ECANCELED when closing,
 * UV_EBUSY past BSKY_MAX_OPS, UV_ENOMEM). */
op_t *bsky__op_new(bsky_t *b, op_kind_t kind, connector_cb cb, void *data, int *rc);
void bsky__op_free(op_t *op);
/* Ends op: its callback (or job finish) with the outcome. */
void bsky__op_end(op_t *op, int status, const char *json, const char *error);
void bsky__op_fail(op_t *op, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Ends op on the next loop turn (it failed inside a verb call). */
void bsky__op_end_soon(op_t *op, int status, const char *error);

/* bsky_session.c */
/* The session as sealed hex ("\x..."), or NULL. */
char *bsky__session_seal(bsky_t *b, const char *did, const char *pds, const char *access,
                         const char *refresh, bool trusted);
/* Opens an account row's sealed session (the caller frees the strings):
 * 0, UV_EINVAL or UV_ENOMEM. */
int bsky__session_open(bsky_t *b, const char *did, const char *hex, char **access, char **refresh,
                       char **pds, bool *trusted);
/* Has op wait for its account's refresh, starting one when none runs. */
void bsky__refresh_join(op_t *op);
unsaved_t *bsky__unsaved_find(bsky_t *b, int64_t id);
/* op's account has a session only this daemon holds: use it, and try to
 * store it again. */
void bsky__unsaved_use(op_t *op, unsaved_t *u);
void bsky__unsaved_free(unsaved_t *u);

/* bsky_calls.c */
/* Runs op's XRPC read call with its access token. */
void bsky__op_http(op_t *op);
/* Queues bluesky.refresh when it is due (now: at once, e.g. after a
 * login). */
void bsky__schedule(bsky_t *b, bool now);
/* The connector's verbs (connector.h) and the bluesky.refresh executor. */
int bsky__login(void *impl, const char *identifier, const char *secret, const char *service,
                connector_cb cb, void *data);
int bsky__accounts(void *impl, const char *command, const char *account, connector_cb cb,
                   void *data);
int bsky__query(void *impl, const char *account, const char *method, const char *params_json,
                connector_cb cb, void *data);
void bsky__job_refresh(sync_job_t *job, void *ctx);

#endif
