/* bsky: the Bluesky connector's accounts, sessions and XRPC calls (see
 * bsky.h).
 *
 * Invariants:
 * - Every operation (op_t) is in b->ops from op_new to op_end, and ends
 *   exactly once: its callback (or its job's finish) runs from op_end.
 * - Tokens and passwords live only in op_t / refresh_t fields that are
 *   wiped when freed; none is ever logged or put into an error message.
 * - At most one refresh per account runs in this daemon (refresh tokens
 *   are single-use); operations that need it wait in its list. */
#include "upstream/bsky.h"

#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sync/jobs.h"
#include "upstream/bsky_xrpc.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/queue.h"
#include "util/sealed.h"
#include "util/strutil.h"

#define TAG "bluesky"

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

/* ---- small helpers ------------------------------------------------------ */

static void wipe_free(char *s)
{
    if (s == NULL)
        return;
    OPENSSL_cleanse(s, strlen(s));
    free(s);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static char *hex_encode(const uint8_t *b, size_t n)
{
    char *s = malloc(2 * n + 3);
    if (s == NULL)
        return NULL;
    s[0] = '\\';
    s[1] = 'x';
    for (size_t i = 0; i < n; i++)
        snprintf(s + 2 + 2 * i, 3, "%02x", b[i]);
    s[2 * n + 2] = '\0';
    return s;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static uint8_t *hex_decode(const char *s, size_t *n)
{
    size_t len = s ? strlen(s) : 0;
    if (len % 2)
        return NULL;
    uint8_t *b = malloc(len / 2 + 1);
    for (size_t i = 0; b && i < len / 2; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(b);
            return NULL;
        }
        b[i] = (uint8_t)(hi << 4 | lo);
    }
    *n = len / 2;
    return b;
}

/* Releases a response that carried tokens, wiping its body first. */
static void wipe_release(net_req_t *r)
{
    if (r->body_buf.data)
        OPENSSL_cleanse(r->body_buf.data, r->body_buf.len);
    net_req_release(r);
}

/* "bluesky:DID": what a session is sealed under. */
static void seal_context(char *out, size_t cap, const char *did)
{
    snprintf(out, cap, "bluesky:%s", did ? did : "");
}

/* The session as sealed hex ("\x..."), or NULL. */
static char *session_seal(bsky_t *b, const char *did, const char *pds, const char *access,
                          const char *refresh, bool trusted)
{
    json_t *j = json_pack("{s:s, s:s, s:s, s:b}", "pds", pds, "access", access, "refresh", refresh,
                          "trusted", trusted);
    char *plain = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j); /* jansson does not wipe; the copies are short-lived */
    if (plain == NULL)
        return NULL;
    char ctx[300];
    seal_context(ctx, sizeof ctx, did);
    uint8_t *sealed;
    size_t n;
    int rc = sealed_seal(&b->key, ctx, plain, strlen(plain), &sealed, &n);
    wipe_free(plain);
    if (rc != 0)
        return NULL;
    char *hex = hex_encode(sealed, n);
    free(sealed);
    return hex;
}

/* Opens an account row's sealed session: the tokens, the PDS they go to
 * (sealed with them, so a changed row cannot redirect them) and whether it
 * is trusted. Returns 0 (the caller frees the strings) or UV_EINVAL. */
static int session_open(bsky_t *b, const char *did, const char *hex, char **access, char **refresh,
                        char **pds, bool *trusted)
{
    size_t n;
    uint8_t *sealed = hex_decode(hex, &n);
    if (sealed == NULL)
        return UV_EINVAL;
    char ctx[300], *plain;
    size_t plen;
    seal_context(ctx, sizeof ctx, did);
    int rc = sealed_open(&b->key, ctx, sealed, n, &plain, &plen);
    free(sealed);
    if (rc != 0)
        return UV_EINVAL;
    json_t *j = json_loadb(plain, plen, 0, NULL);
    sealed_free(plain, plen);
    const char *a = jstr(j, "access"), *r = jstr(j, "refresh"), *p = jstr(j, "pds");
    rc = a && r && p ? 0 : UV_EINVAL;
    if (rc == 0) {
        *access = strdup(a);
        *refresh = strdup(r);
        *pds = strdup(p);
        *trusted = json_is_true(json_object_get(j, "trusted"));
        if (*access == NULL || *refresh == NULL || *pds == NULL) {
            wipe_free(*access);
            wipe_free(*refresh);
            free(*pds);
            *access = *refresh = *pds = NULL;
            rc = UV_ENOMEM;
        }
    }
    json_decref(j);
    return rc;
}

/* A URL without its trailing slashes into out. */
static void url_trim(char *out, size_t cap, const char *url)
{
    snprintf(out, cap, "%s", url);
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '/')
        out[--n] = '\0';
}

/* ---- operations --------------------------------------------------------- */

static void maybe_closed(bsky_t *b)
{
    for (queue_node_t *n = b->unsaved.next; n != &b->unsaved; n = n->next)
        if (queue_entry(n, unsaved_t, node)->storing)
            return;
    if (b->closing && b->nops == 0 && b->nrefreshes == 0 && !b->timer_open && !b->soon_open &&
        !b->scheduling && b->close_cb) {
        void (*cb)(void *) = b->close_cb;
        b->close_cb = NULL;
        cb(b->close_data);
    }
}

static op_t *op_new(bsky_t *b, op_kind_t kind, connector_cb cb, void *data, int *rc)
{
    *rc = 0;
    if (b->closing) {
        *rc = UV_ECANCELED;
        return NULL;
    }
    if (b->nops >= BSKY_MAX_OPS) {
        *rc = UV_EBUSY;
        return NULL;
    }
    op_t *op = calloc(1, sizeof *op);
    if (op == NULL) {
        *rc = UV_ENOMEM;
        return NULL;
    }
    op->b = b;
    op->kind = kind;
    op->cb = cb;
    op->data = data;
    queue_push_tail(&b->ops, &op->node);
    b->nops++;
    return op;
}

static void op_free(op_t *op)
{
    free(op->account);
    free(op->method);
    free(op->query);
    free(op->service);
    if (op->body) {
        OPENSSL_cleanse(op->body, op->body_len);
        free(op->body);
    }
    free(op->handle);
    free(op->did);
    free(op->pds);
    wipe_free(op->access);
    wipe_free(op->refresh);
    free(op->url);
    wipe_free(op->auth);
    free(op->end_error);
    free(op);
}

/* Ends op: its callback (or job finish) with the outcome. */
static void op_end(op_t *op, int status, const char *json, const char *error)
{
    bsky_t *b = op->b;
    op->state = OPS_DONE;
    queue_remove(&op->node);
    b->nops--;
    if (status != 0 && (op->kind == OP_QUERY || op->kind == OP_JOB))
        b->call_errors++;
    if (op->kind == OP_JOB) {
        sync_outcome_t out = status == 0                                  ? SYNC_IDLE
                             : status == UV_ENOENT || status == UV_EACCES ? SYNC_ERROR
                                                                          : SYNC_RETRY;
        long fetched = status == 0 && json ? strtol(json, NULL, 10) : 0;
        sync_job_finish(op->job, out, status == 0 ? NULL : error, fetched, 0);
    } else {
        op->cb(op->data, status, json, error);
    }
    op_free(op);
    maybe_closed(b);
}

static void op_fail(op_t *op, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void op_fail(op_t *op, int status, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    str_utf8_trim_end(msg); /* a tool's error text must stay UTF-8 */
    op_end(op, status, NULL, msg);
}

/* Ends the operations that failed inside a verb call: a verb calls back
 * later, never from inside (connector.h). */
static void soon_cb(uv_timer_t *t)
{
    bsky_t *b = t->data;
    while (!queue_empty(&b->ending_soon)) {
        op_t *op = queue_entry(queue_head(&b->ending_soon), op_t, wait_node);
        queue_remove(&op->wait_node);
        op_end(op, op->end_status, NULL, op->end_error);
    }
}

static void op_end_soon(op_t *op, int status, const char *error)
{
    bsky_t *b = op->b;
    op->state = OPS_DONE;
    op->end_status = status;
    op->end_error = error ? strdup(error) : NULL;
    queue_push_tail(&b->ending_soon, &op->wait_node);
    uv_timer_start(&b->soon, soon_cb, 0, 0);
}

static void soon_closed(uv_handle_t *h)
{
    bsky_t *b = h->data;
    b->soon_open = false;
    maybe_closed(b);
}

static void op_http(op_t *op);
static void refresh_join(op_t *op);
static unsaved_t *unsaved_find(bsky_t *b, int64_t id);
static void unsaved_use(op_t *op, unsaved_t *u);

/* ---- accounts in the store ---------------------------------------------- */

static void account_loaded(void *data, int status, const char *value, const char *sqlstate,
                           const char *error)
{
    op_t *op = data;
    bsky_t *b = op->b;
    (void)sqlstate;
    if (status != 0) {
        op_fail(op, UV_EIO, "the store could not be read: %s", error);
        return;
    }
    json_t *row = value ? json_loads(value, 0, NULL) : NULL;
    if (row == NULL) {
        if (op->account)
            op_fail(op, UV_ENOENT, "no Bluesky account %s is logged in", op->account);
        else
            op_fail(op, UV_ENOENT, "no Bluesky account is logged in");
        return;
    }
    op->id = json_integer_value(json_object_get(row, "id"));
    op->handle = dup_or_null(jstr(row, "handle"));
    op->did = dup_or_null(jstr(row, "did"));
    int rc = op->did ? session_open(b, op->did, jstr(row, "credentials"), &op->access, &op->refresh,
                                    &op->pds, &op->trusted)
                     : UV_EINVAL;
    json_decref(row);
    if (rc != 0) {
        op_fail(op, UV_EACCES,
                "the stored session of @%s cannot be opened (a different credentials key?); "
                "log in again",
                op->handle ? op->handle : "?");
        return;
    }
    unsaved_t *u = unsaved_find(b, op->id);
    if (u)
        unsaved_use(op, u);
    if (op->kind == OP_JOB) { /* the account's own posts */
        char *actor = curl_easy_escape(NULL, op->did, 0);
        size_t qlen = (actor ? strlen(actor) : 0) + 32;
        op->query = actor ? malloc(qlen) : NULL;
        if (op->query)
            snprintf(op->query, qlen, "actor=%s&limit=%d", actor, BSKY_REFRESH_POSTS);
        curl_free(actor);
        if (op->query == NULL) {
            op_fail(op, UV_ENOMEM, "out of memory");
            return;
        }
    }
    int64_t exp = bsky_jwt_exp(op->access);
    if (exp != 0 && exp - (int64_t)time(NULL) < BSKY_REFRESH_MARGIN_S)
        refresh_join(op);
    else
        op_http(op);
}

static int account_load(op_t *op)
{
    const char *params[1] = {op->account};
    op->state = OPS_LOAD;
    return pg_pool_call(op->b->rw, "bsky_account_get", "SELECT parley_bsky_account_get($1)::text",
                        1, params, account_loaded, op, NULL);
}

/* ---- XRPC calls --------------------------------------------------------- */

static void query_stored(void *data, int status, const char *value, const char *sqlstate,
                         const char *error)
{
    op_t *op = data;
    (void)sqlstate;
    if (status != 0)
        op_fail(op, UV_EIO, "posts could not be stored: %s", error);
    else
        op_end(op, 0, value ? value : "0", NULL);
}

/* A JOB's feed into the store. */
static void job_store(op_t *op, json_t *doc)
{
    json_t *posts = bsky_feed_posts(doc);
    char *text = json_dumps(posts, JSON_COMPACT);
    json_decref(posts);
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)op->id);
    const char *params[2] = {id, text};
    op->state = OPS_STORE;
    int rc = text ? pg_pool_call(op->b->rw, "bsky_store_posts",
                                 "SELECT parley_bsky_store_posts($1::bigint, $2::jsonb)::text", 2,
                                 params, query_stored, op, NULL)
                  : UV_ENOMEM;
    free(text);
    if (rc != 0)
        op_fail(op, rc, "posts could not be stored: %s", uv_strerror(rc));
}

static void query_done(net_req_t *r, int status)
{
    op_t *op = r->data;
    bsky_t *b = op->b;
    if (status != 0) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s: %s", op->method,
                 r->error[0] ? r->error : uv_strerror(status));
        net_req_release(r);
        op_end(op, status == UV_EACCES ? UV_EACCES : status, NULL, msg);
        return;
    }
    json_t *doc;
    char why[300];
    if (r->http_status == 200) {
        doc = json_loadb(r->body_buf.data ? r->body_buf.data : "", r->body_buf.len, 0, NULL);
        net_req_release(r);
        if (!json_is_object(doc)) {
            json_decref(doc);
            op_fail(op, UV_EPROTO, "%s: the service answered something that is not JSON",
                    op->method);
            return;
        }
        if (op->kind == OP_JOB) {
            job_store(op, doc);
            json_decref(doc);
            return;
        }
        json_t *res =
            json_pack("{s:{s:I, s:s, s:s}, s:o}", "account", "id", (json_int_t)op->id, "handle",
                      op->handle ? op->handle : "", "did", op->did ? op->did : "", "data", doc);
        char *text = res ? json_dumps(res, JSON_COMPACT) : NULL;
        json_decref(res);
        if (text == NULL)
            op_fail(op, UV_ENOMEM, "out of memory");
        else
            op_end(op, 0, text, NULL);
        free(text);
        return;
    }
    bsky_xrpc_error_t kind =
        bsky_xrpc_error(r->body_buf.data, r->body_buf.len, r->http_status, why, sizeof why);
    long http = r->http_status;
    char reset[64];
    snprintf(reset, sizeof reset, "%s", r->captured);
    net_req_release(r);
    bool token = kind == BSKY_XRPC_TOKEN, rate = kind == BSKY_XRPC_RATE;
    if (token && op->attempts == 0) {
        op->attempts++;
        log_debug(TAG, "@%s: %s; refreshing the session", op->handle, why);
        refresh_join(op);
        return;
    }
    if (token || http == 401) {
        op_fail(op, UV_EACCES, "the Bluesky session of @%s is no longer valid (%s); log in again",
                op->handle, why);
        return;
    }
    if (http == 429 || rate) {
        b->rate_limited++;
        char msg[300];
        bsky_rate_limit_message(msg, sizeof msg, "these calls", reset, time(NULL));
        op_fail(op, UV_EAGAIN, "%s: %s", op->method, msg);
        return;
    }
    op_fail(op, UV_EPROTO, "%s: %s", op->method, why);
}

/* Runs op's XRPC read call with its access token. */
static void op_http(op_t *op)
{
    bsky_t *b = op->b;
    if (b->closing) {
        op_fail(op, UV_ECANCELED, "parleyd is stopping");
        return;
    }
    net_client_t *client = op->trusted ? b->net : b->untrusted;
    if (client == NULL) {
        op_fail(op, UV_EACCES, "the account's service is not trusted and URL fetching is off");
        return;
    }
    free(op->url);
    wipe_free(op->auth);
    size_t ulen = strlen(op->pds) + strlen(op->method) + (op->query ? strlen(op->query) : 0) + 16;
    op->url = malloc(ulen);
    size_t alen = strlen(op->access) + 32;
    op->auth = malloc(alen);
    if (op->url == NULL || op->auth == NULL) {
        op_fail(op, UV_ENOMEM, "out of memory");
        return;
    }
    snprintf(op->url, ulen, "%s/xrpc/%s%s%s", op->pds, op->method, op->query ? "?" : "",
             op->query ? op->query : "");
    snprintf(op->auth, alen, "Authorization: Bearer %s", op->access);
    int n = 0;
    op->headers[n++] = op->auth;
    op->headers[n++] = "Accept: application/json";
    /* app.bsky.* lives on the AppView; the PDS forwards it there. */
    if (strncmp(op->method, "app.bsky.", 9) == 0)
        op->headers[n++] = "atproto-proxy: " BSKY_APPVIEW_PROXY;
    op->headers[n] = NULL;
    memset(&op->req, 0, sizeof op->req);
    op->req.url = op->url;
    op->req.extra_headers = op->headers;
    op->req.capture_header = "ratelimit-reset";
    op->req.untrusted = !op->trusted;
    op->req.max_bytes = 16u << 20;
    op->req.cb = query_done;
    op->req.data = op;
    op->state = OPS_HTTP;
    b->calls++;
    int rc = net_request(client, &op->req);
    if (rc != 0) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s: %s", op->method,
                 op->req.error[0] ? op->req.error : uv_strerror(rc));
        net_req_release(&op->req);
        op_end(op, rc, NULL, msg);
    }
}

/* ---- refresh ------------------------------------------------------------ */

static void refresh_free(refresh_t *rf)
{
    bsky_t *b = rf->b;
    queue_remove(&rf->node);
    b->nrefreshes--;
    free(rf->handle);
    free(rf->did);
    free(rf->pds);
    wipe_free(rf->refresh);
    wipe_free(rf->new_access);
    wipe_free(rf->new_refresh);
    free(rf->url);
    wipe_free(rf->auth);
    free(rf);
    maybe_closed(b);
}

/* Wakes the waiters: with the new tokens (status 0), else failed. */
static void refresh_end(refresh_t *rf, int status, const char *error)
{
    while (!queue_empty(&rf->waiters)) {
        op_t *op = queue_entry(queue_head(&rf->waiters), op_t, wait_node);
        queue_remove(&op->wait_node);
        if (status != 0) {
            op_end(op, status, NULL, error);
            continue;
        }
        wipe_free(op->access);
        wipe_free(op->refresh);
        op->access = strdup(rf->new_access);
        op->refresh = strdup(rf->new_refresh);
        if (op->access == NULL || op->refresh == NULL)
            op_fail(op, UV_ENOMEM, "out of memory");
        else
            op_http(op);
    }
    refresh_free(rf);
}

static unsaved_t *unsaved_find(bsky_t *b, int64_t id)
{
    for (queue_node_t *n = b->unsaved.next; n != &b->unsaved; n = n->next) {
        unsaved_t *u = queue_entry(n, unsaved_t, node);
        if (u->id == id)
            return u;
    }
    return NULL;
}

static void unsaved_free(unsaved_t *u)
{
    queue_remove(&u->node);
    free(u->did);
    free(u->pds);
    wipe_free(u->access);
    wipe_free(u->refresh);
    free(u);
}

/* Remembers rf's new session (replacing an older one of the account). */
static void unsaved_keep(refresh_t *rf)
{
    unsaved_t *u = unsaved_find(rf->b, rf->id);
    if (u && u->storing)
        return; /* a store runs; it sees its own tokens go */
    if (u)
        unsaved_free(u);
    u = calloc(1, sizeof *u);
    if (u == NULL)
        return;
    u->b = rf->b;
    u->id = rf->id;
    u->trusted = rf->trusted;
    u->did = dup_or_null(rf->did);
    u->pds = dup_or_null(rf->pds);
    u->access = dup_or_null(rf->new_access);
    u->refresh = dup_or_null(rf->new_refresh);
    queue_push_tail(&rf->b->unsaved, &u->node);
    if (!u->did || !u->pds || !u->access || !u->refresh)
        unsaved_free(u);
}

static void unsaved_stored(void *data, int status, const char *value, const char *sqlstate,
                           const char *error)
{
    unsaved_t *u = data;
    (void)value;
    (void)sqlstate;
    u->storing = false;
    if (status == 0) {
        log_info(TAG, "a refreshed session kept in memory is stored now");
        unsaved_free(u);
    } else {
        log_warn(TAG, "a refreshed session still could not be stored: %s", error);
    }
    maybe_closed(u->b);
}

/* op's account has a session only this daemon holds: use it, and try to
 * store it again. */
static void unsaved_use(op_t *op, unsaved_t *u)
{
    bsky_t *b = op->b;
    char *access = strdup(u->access), *refresh = strdup(u->refresh);
    if (access == NULL || refresh == NULL) {
        wipe_free(access);
        wipe_free(refresh);
        return;
    }
    wipe_free(op->access);
    wipe_free(op->refresh);
    op->access = access;
    op->refresh = refresh;
    if (u->storing || b->closing)
        return;
    char *hex = session_seal(b, u->did, u->pds, u->access, u->refresh, u->trusted);
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)u->id);
    const char *params[2] = {id, hex};
    if (hex && pg_pool_call(b->rw, "bsky_session_set",
                            "SELECT parley_bsky_session_set($1::bigint, $2::bytea)", 2, params,
                            unsaved_stored, u, NULL) == 0)
        u->storing = true;
    free(hex);
}

static void refresh_stored(void *data, int status, const char *value, const char *sqlstate,
                           const char *error)
{
    refresh_t *rf = data;
    (void)value;
    (void)sqlstate;
    if (status != 0) {
        log_warn(TAG,
                 "@%s: the refreshed session could not be stored (%s); kept in memory and "
                 "stored again at the next call",
                 rf->handle, error);
        unsaved_keep(rf);
    }
    refresh_end(rf, 0, NULL);
}

/* Another daemon may have refreshed first (the token we sent is then
 * spent): the stored session is the current one when it differs. */
static void refresh_reloaded(void *data, int status, const char *value, const char *sqlstate,
                             const char *error)
{
    refresh_t *rf = data;
    (void)sqlstate;
    (void)error;
    json_t *row = status == 0 && value ? json_loads(value, 0, NULL) : NULL;
    char *access = NULL, *refresh = NULL, *pds = NULL;
    bool trusted;
    if (row &&
        session_open(rf->b, rf->did, jstr(row, "credentials"), &access, &refresh, &pds, &trusted) ==
            0 &&
        strcmp(refresh, rf->refresh) != 0) {
        json_decref(row);
        free(pds);
        rf->new_access = access;
        rf->new_refresh = refresh;
        refresh_end(rf, 0, NULL);
        return;
    }
    json_decref(row);
    wipe_free(access);
    wipe_free(refresh);
    free(pds);
    char msg[500];
    snprintf(msg, sizeof msg,
             "the Bluesky session of @%s has ended (%s); log in again with the login tool",
             rf->handle, rf->error);
    refresh_end(rf, UV_EACCES, msg);
}

static void refresh_done(net_req_t *r, int status)
{
    refresh_t *rf = r->data;
    bsky_t *b = rf->b;
    rf->http_running = false;
    if (status != 0) {
        char msg[400];
        snprintf(msg, sizeof msg, "refreshSession: %s",
                 r->error[0] ? r->error : uv_strerror(status));
        net_req_release(r);
        refresh_end(rf, status, msg);
        return;
    }
    if (r->http_status == 200) {
        bsky_session_answer_t ans;
        int arc = bsky_session_answer(r->body_buf.data, r->body_buf.len, &ans);
        wipe_release(r);
        if (arc != 0) {
            refresh_end(rf, UV_EPROTO, "refreshSession: the answer has no tokens");
            return;
        }
        rf->new_access = strdup(ans.access);
        rf->new_refresh = strdup(ans.refresh);
        bsky_session_answer_free(&ans);
        if (rf->new_access == NULL || rf->new_refresh == NULL) {
            refresh_end(rf, UV_ENOMEM, "out of memory");
            return;
        }
        b->refreshes_done++;
        log_info(TAG, "@%s: session refreshed", rf->handle);
        char *hex = session_seal(b, rf->did, rf->pds, rf->new_access, rf->new_refresh, rf->trusted);
        char id[24];
        snprintf(id, sizeof id, "%lld", (long long)rf->id);
        const char *params[2] = {id, hex};
        int rc = hex ? pg_pool_call(b->rw, "bsky_session_set",
                                    "SELECT parley_bsky_session_set($1::bigint, $2::bytea)", 2,
                                    params, refresh_stored, rf, NULL)
                     : UV_ENOMEM;
        free(hex);
        if (rc != 0)
            refresh_stored(rf, rc, NULL, "", uv_strerror(rc));
        return;
    }
    (void)bsky_xrpc_error(r->body_buf.data, r->body_buf.len, r->http_status, rf->error,
                          sizeof rf->error);
    long http = r->http_status;
    if (http == 429) {
        b->rate_limited++;
        bsky_rate_limit_message(rf->error, sizeof rf->error, "session refreshes", r->captured,
                                time(NULL));
    }
    net_req_release(r);
    if ((http == 400 || http == 401) && !b->closing) {
        /* Spent or expired: see whether another daemon holds a newer one. */
        const char *params[1] = {rf->did};
        if (pg_pool_call(b->rw, "bsky_account_get", "SELECT parley_bsky_account_get($1)::text", 1,
                         params, refresh_reloaded, rf, NULL) == 0)
            return;
    }
    char msg[400];
    snprintf(msg, sizeof msg, "refreshSession: %s", rf->error);
    refresh_end(rf, http == 429 ? UV_EAGAIN : UV_EPROTO, msg);
}

/* Has op wait for its account's refresh, starting one when none runs. */
static void refresh_join(op_t *op)
{
    bsky_t *b = op->b;
    if (b->closing) {
        op_fail(op, UV_ECANCELED, "parleyd is stopping");
        return;
    }
    op->state = OPS_WAIT;
    queue_node_t *n;
    for (n = b->refreshes.next; n != &b->refreshes; n = n->next) {
        refresh_t *rf = queue_entry(n, refresh_t, node);
        if (rf->id == op->id) {
            queue_push_tail(&rf->waiters, &op->wait_node);
            return;
        }
    }
    refresh_t *rf = calloc(1, sizeof *rf);
    if (rf == NULL) {
        op_fail(op, UV_ENOMEM, "out of memory");
        return;
    }
    rf->b = b;
    rf->id = op->id;
    queue_init(&rf->waiters);
    queue_push_tail(&b->refreshes, &rf->node);
    b->nrefreshes++;
    queue_push_tail(&rf->waiters, &op->wait_node);
    rf->handle = dup_or_null(op->handle);
    rf->did = dup_or_null(op->did);
    rf->pds = dup_or_null(op->pds);
    rf->trusted = op->trusted;
    rf->refresh = dup_or_null(op->refresh);
    size_t ulen = strlen(op->pds) + 48, alen = strlen(op->refresh) + 32;
    rf->url = malloc(ulen);
    rf->auth = malloc(alen);
    net_client_t *client = rf->trusted ? b->net : b->untrusted;
    if (rf->handle == NULL || rf->did == NULL || rf->refresh == NULL || rf->url == NULL ||
        rf->auth == NULL || client == NULL) {
        refresh_end(rf, UV_ENOMEM, "the session could not be refreshed");
        return;
    }
    snprintf(rf->url, ulen, "%s/xrpc/com.atproto.server.refreshSession", op->pds);
    snprintf(rf->auth, alen, "Authorization: Bearer %s", op->refresh);
    rf->headers[0] = rf->auth;
    rf->headers[1] = "Accept: application/json";
    rf->headers[2] = NULL;
    rf->req.url = rf->url;
    rf->req.method = "POST";
    rf->req.extra_headers = rf->headers;
    rf->req.capture_header = "ratelimit-reset";
    rf->req.untrusted = !rf->trusted;
    rf->req.max_bytes = 1u << 20;
    rf->req.cb = refresh_done;
    rf->req.data = rf;
    rf->http_running = true;
    int rc = net_request(client, &rf->req);
    if (rc != 0) {
        rf->http_running = false;
        net_req_release(&rf->req);
        refresh_end(rf, rc, "refreshSession could not be sent");
    }
}

/* ---- the refresh job's schedule ----------------------------------------- */

static void schedule_done(void *data, int status, const char *value, const char *sqlstate,
                          const char *error)
{
    bsky_t *b = data;
    (void)sqlstate;
    b->scheduling = false;
    if (status != 0)
        log_warn(TAG, "bluesky.refresh could not be queued: %s", error);
    else if (value && strcmp(value, "t") == 0)
        log_debug(TAG, "bluesky.refresh queued");
    maybe_closed(b);
}

/* Queues bluesky.refresh when it is due (now: at once, e.g. after a
 * login). */
static void schedule(bsky_t *b, bool now)
{
    if (b->closing || b->scheduling || b->refresh_s == 0)
        return;
    char interval[16];
    snprintf(interval, sizeof interval, "%d", b->refresh_s);
    const char *params[2] = {interval, now ? "true" : "false"};
    if (pg_pool_call(b->rw, "bsky_refresh_schedule",
                     "SELECT parley_bsky_refresh_schedule($1::integer, $2::boolean)", 2, params,
                     schedule_done, b, NULL) == 0)
        b->scheduling = true;
}

static void timer_cb(uv_timer_t *t)
{
    schedule(t->data, false);
}

static void timer_closed(uv_handle_t *h)
{
    bsky_t *b = h->data;
    b->timer_open = false;
    maybe_closed(b);
}

/* ---- login -------------------------------------------------------------- */

static void login_saved(void *data, int status, const char *value, const char *sqlstate,
                        const char *error)
{
    op_t *op = data;
    (void)sqlstate;
    if (status != 0 || value == NULL) {
        op_fail(op, UV_EIO, "the session could not be stored: %s", error ? error : "no row");
        return;
    }
    op->b->logins++;
    log_info(TAG, "@%s logged in", op->handle);
    schedule(op->b, true);
    op_end(op, 0, value, NULL);
}

static void login_done(net_req_t *r, int status)
{
    op_t *op = r->data;
    bsky_t *b = op->b;
    OPENSSL_cleanse(op->body, op->body_len);
    if (status != 0) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s: %s", op->url, r->error[0] ? r->error : uv_strerror(status));
        net_req_release(r);
        b->login_errors++;
        op_end(op, status == UV_EACCES ? UV_EINVAL : status, NULL, msg);
        return;
    }
    char why[300];
    if (r->http_status != 200) {
        bsky_xrpc_error_t kind =
            bsky_xrpc_error(r->body_buf.data, r->body_buf.len, r->http_status, why, sizeof why);
        long http = r->http_status;
        char reset[64];
        snprintf(reset, sizeof reset, "%s", r->captured);
        net_req_release(r);
        b->login_errors++;
        if (http == 429 || kind == BSKY_XRPC_RATE) {
            b->rate_limited++;
            char msg[300];
            bsky_rate_limit_message(msg, sizeof msg, "logins (createSession)", reset, time(NULL));
            op_fail(op, UV_EAGAIN, "%s", msg);
            return;
        }
        if (http == 401 || http == 400)
            op_fail(op, UV_EACCES, "Bluesky refused the login: %s", why);
        else
            op_fail(op, UV_EPROTO, "createSession: %s", why);
        return;
    }
    bsky_session_answer_t ans;
    int arc = bsky_session_answer(r->body_buf.data, r->body_buf.len, &ans);
    wipe_release(r);
    if (arc != 0 || ans.handle == NULL || ans.did == NULL) {
        bsky_session_answer_free(&ans);
        op_fail(op, UV_EPROTO, "createSession: the answer lacks the session");
        return;
    }
    const char *access = ans.access, *refresh = ans.refresh, *handle = ans.handle, *did = ans.did;
    const char *pds = ans.pds;
    char service[512];
    url_trim(service, sizeof service, pds ? pds : op->url);
    if (pds == NULL) { /* the service itself: drop the method from the URL */
        char *x = strstr(service, "/xrpc/");
        if (x)
            *x = '\0';
    }
    op->handle = strdup(handle);
    /* The DID document is the account owner's word: its PDS is trusted only
     * where the operator's service is (same origin, or the service's own
     * hosts); elsewhere the address policy applies to every call. */
    bool trusted = op->trusted && bsky_pds_trusted(b->service, service, BSKY_TRUSTED_PDS_SUFFIX);
    if (op->trusted && !trusted)
        log_info(TAG,
                 "@%s: PDS %s is outside the configured service; its calls go through the "
                 "address policy",
                 handle, service);
    char *hex = session_seal(b, did, service, access, refresh, trusted);
    const char *params[4] = {handle, did, service, hex};
    op->state = OPS_STORE;
    int rc = hex && op->handle ? pg_pool_call(b->rw, "bsky_account_save",
                                              "SELECT parley_bsky_account_save($1, $2, $3, "
                                              "$4::bytea)::text",
                                              4, params, login_saved, op, NULL)
                               : UV_ENOMEM;
    free(hex);
    bsky_session_answer_free(&ans);
    if (rc != 0)
        op_fail(op, rc, "the session could not be stored: %s", uv_strerror(rc));
}

/* {"identifier": ..., "password": ...} in one buffer sized up front (no
 * realloc leaves a copy of the password behind); op_free wipes it. */
static char *login_body(const char *identifier, const char *secret)
{
    size_t bound = 40 + 6 * (strlen(identifier) + strlen(secret));
    buf_t q = {.data = malloc(bound), .len = 0, .cap = bound, .limit = bound};
    if (q.data == NULL)
        return NULL;
    if (buf_append_str(&q, "{\"identifier\":\"") ||
        buf_append_json_escaped(&q, identifier, strlen(identifier)) ||
        buf_append_str(&q, "\",\"password\":\"") ||
        buf_append_json_escaped(&q, secret, strlen(secret)) || buf_append(&q, "\"}", 3)) {
        OPENSSL_cleanse(q.data, q.cap);
        free(q.data);
        return NULL;
    }
    return q.data;
}

static int bsky_login(void *impl, const char *identifier, const char *secret, const char *service,
                      connector_cb cb, void *data)
{
    bsky_t *b = impl;
    char base[512];
    url_trim(base, sizeof base, service && *service ? service : b->service);
    bool trusted = service == NULL || *service == '\0' || strcmp(base, b->service) == 0;
    if (!trusted && b->untrusted == NULL)
        return UV_ENOTSUP;
    int rc;
    op_t *op = op_new(b, OP_LOGIN, cb, data, &rc);
    if (op == NULL)
        return rc;
    op->trusted = trusted;
    op->body = login_body(identifier, secret);
    size_t ulen = strlen(base) + 48;
    op->url = malloc(ulen);
    if (op->body == NULL || op->url == NULL) {
        op->cb = NULL;
        queue_remove(&op->node);
        b->nops--;
        op_free(op);
        return UV_ENOMEM;
    }
    op->body_len = strlen(op->body);
    snprintf(op->url, ulen, "%s/xrpc/com.atproto.server.createSession", base);
    op->req.url = op->url;
    op->req.body = op->body;
    op->req.body_len = op->body_len;
    op->req.content_type = "application/json";
    op->req.capture_header = "ratelimit-reset";
    op->req.untrusted = !trusted;
    op->req.max_bytes = 1u << 20;
    op->req.cb = login_done;
    op->req.data = op;
    op->state = OPS_HTTP;
    rc = net_request(trusted ? b->net : b->untrusted, &op->req);
    if (rc != 0) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", op->req.error[0] ? op->req.error : uv_strerror(rc));
        net_req_release(&op->req);
        OPENSSL_cleanse(op->body, op->body_len);
        /* The message (e.g. the address policy's) reaches the caller
         * through the callback, which runs later. */
        op_end_soon(op, rc == UV_EACCES ? UV_EINVAL : rc, msg);
    }
    return 0;
}

/* ---- accounts and queries ----------------------------------------------- */

static void accounts_done(void *data, int status, const char *value, const char *sqlstate,
                          const char *error)
{
    op_t *op = data;
    if (status != 0 && strcmp(sqlstate, "PT404") == 0)
        op_fail(op, UV_ENOENT, "no Bluesky account %s is logged in",
                op->account ? op->account : "");
    else if (status != 0)
        op_fail(op, UV_EIO, "%s", error);
    else
        op_end(op, 0, value ? value : "null", NULL);
}

static int bsky_accounts(void *impl, const char *command, const char *account, connector_cb cb,
                         void *data)
{
    bsky_t *b = impl;
    const char *fn;
    int nparams = 1;
    if (strcmp(command, "list") == 0) {
        fn = "SELECT parley_bsky_account_list()::text";
        nparams = 0;
    } else if (strcmp(command, "default") == 0) {
        fn = "SELECT parley_bsky_account_default($1)::text";
    } else if (strcmp(command, "delete") == 0) {
        fn = "SELECT parley_bsky_account_delete($1)::text";
    } else {
        return UV_EINVAL;
    }
    int rc;
    op_t *op = op_new(b, OP_ACCOUNTS, cb, data, &rc);
    if (op == NULL)
        return rc;
    op->account = dup_or_null(account);
    const char *params[1] = {account};
    op->state = OPS_STORE;
    rc = pg_pool_call(b->rw, NULL, fn, nparams, params, accounts_done, op, NULL);
    if (rc != 0) {
        op->cb = NULL;
        queue_remove(&op->node);
        b->nops--;
        op_free(op);
    }
    return rc;
}

/* The URL query string of a JSON object of parameters (arrays repeat the
 * key), or NULL when params is not an object. */
static char *query_string(const json_t *params)
{
    if (!json_is_object(params))
        return NULL;
    buf_t q;
    buf_init(&q, 64u << 10);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)params, key, v)
    {
        size_t n = json_is_array(v) ? json_array_size(v) : 1;
        for (size_t i = 0; i < n; i++) {
            json_t *x = json_is_array(v) ? json_array_get(v, i) : v;
            char num[32];
            const char *s = json_string_value(x);
            if (json_is_integer(x))
                snprintf(num, sizeof num, "%lld", (long long)json_integer_value(x));
            else if (json_is_boolean(x))
                snprintf(num, sizeof num, "%s", json_is_true(x) ? "true" : "false");
            else if (s == NULL)
                continue;
            char *ek = curl_easy_escape(NULL, key, 0);
            char *ev = curl_easy_escape(NULL, s ? s : num, 0);
            int rc = !ek || !ev || (q.len && buf_append_str(&q, "&")) || buf_append_str(&q, ek) ||
                     buf_append_str(&q, "=") || buf_append_str(&q, ev);
            curl_free(ek);
            curl_free(ev);
            if (rc) {
                buf_free(&q);
                return NULL;
            }
        }
    }
    if (buf_append(&q, "", 1) != 0) {
        buf_free(&q);
        return NULL;
    }
    return q.data; /* buf_t's data is malloc'd: the caller frees it */
}

/* An XRPC method name (NSID: "app.bsky.feed.searchPosts"): it goes into the
 * URL path. */
static bool nsid_valid(const char *m)
{
    size_t n = m ? strlen(m) : 0;
    return n > 0 && n <= 317 &&
           strspn(m, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789.-") == n;
}

static int bsky_query(void *impl, const char *account, const char *method, const char *params_json,
                      connector_cb cb, void *data)
{
    bsky_t *b = impl;
    if (!nsid_valid(method))
        return UV_EINVAL;
    json_t *params = json_loads(params_json ? params_json : "{}", 0, NULL);
    char *q = query_string(params);
    json_decref(params);
    if (q == NULL)
        return UV_EINVAL;
    int rc;
    op_t *op = op_new(b, OP_QUERY, cb, data, &rc);
    if (op == NULL) {
        free(q);
        return rc;
    }
    op->account = account && *account ? strdup(account) : NULL;
    op->method = strdup(method);
    op->query = q[0] ? q : NULL;
    if (op->query == NULL)
        free(q);
    bool oom = op->method == NULL || (account && *account && op->account == NULL);
    if ((rc = oom ? UV_ENOMEM : account_load(op)) != 0) {
        op->cb = NULL;
        queue_remove(&op->node);
        b->nops--;
        op_free(op);
    }
    return rc;
}

/* ---- the job ------------------------------------------------------------ */

/* bluesky.refresh: the default account's own posts into the archive. */
static void job_refresh(sync_job_t *job, void *ctx)
{
    bsky_t *b = ctx;
    int rc;
    op_t *op = op_new(b, OP_JOB, NULL, NULL, &rc);
    if (op == NULL) {
        sync_job_finish(job, SYNC_RETRY, uv_strerror(rc), 0, 0);
        return;
    }
    op->job = job;
    op->method = strdup("app.bsky.feed.getAuthorFeed");
    if (op->method == NULL || account_load(op) != 0)
        op_fail(op, UV_EBUSY, "database busy");
}

/* ---- connector ---------------------------------------------------------- */

static unsigned bsky_caps(void *impl)
{
    (void)impl;
    return CONNECTOR_CAN_LOGIN | CONNECTOR_CAN_QUERY;
}

static const char *bsky_why_not(void *impl, connector_cap_t cap)
{
    (void)impl;
    (void)cap;
    return "a Bluesky account has no chats to send to or administer here; parley reads posts, "
           "profiles and threads";
}

static const char *bsky_state(void *impl)
{
    bsky_t *b = impl;
    return b->closing ? "closing" : "ready";
}

static bool bsky_realtime(void *impl)
{
    (void)impl;
    return false;
}

static void bsky_set_realtime(void *impl, bool on)
{
    (void)impl;
    (void)on;
}

static int bsky_job_classes(void *impl, const sync_class_t **classes)
{
    bsky_t *b = impl;
    *classes = b->classes;
    return 1;
}

static void bsky_metrics(void *impl, buf_t *out)
{
    bsky_t *b = impl;
    char s[1024];
    snprintf(s, sizeof s,
             "# TYPE parley_bluesky_logins_total counter\n"
             "parley_bluesky_logins_total %llu\n"
             "# TYPE parley_bluesky_login_errors_total counter\n"
             "parley_bluesky_login_errors_total %llu\n"
             "# TYPE parley_bluesky_session_refreshes_total counter\n"
             "parley_bluesky_session_refreshes_total %llu\n"
             "# TYPE parley_bluesky_calls_total counter\n"
             "parley_bluesky_calls_total %llu\n"
             "# TYPE parley_bluesky_call_errors_total counter\n"
             "parley_bluesky_call_errors_total %llu\n"
             "# TYPE parley_bluesky_rate_limited_total counter\n"
             "parley_bluesky_rate_limited_total %llu\n",
             (unsigned long long)b->logins, (unsigned long long)b->login_errors,
             (unsigned long long)b->refreshes_done, (unsigned long long)b->calls,
             (unsigned long long)b->call_errors, (unsigned long long)b->rate_limited);
    (void)buf_append_str(out, s);
}

static const connector_ops_t bsky_ops = {
    .caps = bsky_caps,
    .why_not = bsky_why_not,
    .state = bsky_state,
    .realtime = bsky_realtime,
    .set_realtime = bsky_set_realtime,
    .login = bsky_login,
    .accounts = bsky_accounts,
    .query = bsky_query,
    .job_classes = bsky_job_classes,
    .metrics = bsky_metrics,
};

int bsky_new(uv_loop_t *loop, net_client_t *net, net_client_t *untrusted, pg_pool_t *rw,
             const bsky_config_t *cfg, bsky_t **out, char *err, size_t errcap)
{
    bsky_t *b = calloc(1, sizeof *b);
    if (b == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    int rc = sealed_key_load(cfg->key_path, &b->key, err, errcap);
    if (rc != 0) {
        free(b);
        return rc;
    }
    b->loop = loop;
    b->net = net;
    b->untrusted = untrusted;
    b->rw = rw;
    url_trim(b->service, sizeof b->service,
             cfg->service && *cfg->service ? cfg->service : BSKY_DEFAULT_SERVICE);
    queue_init(&b->ops);
    queue_init(&b->refreshes);
    queue_init(&b->ending_soon);
    queue_init(&b->unsaved);
    uv_timer_init(loop, &b->soon);
    b->soon.data = b;
    b->soon_open = true;
    b->conn = (connector_t){.name = "bluesky", .ops = &bsky_ops, .impl = b};
    b->classes[0] =
        (sync_class_t){.name = "bluesky.refresh", .concurrency = 1, .exec = job_refresh, .ctx = b};
    b->refresh_s = cfg->refresh_s;
    if (b->refresh_s > 0) {
        uv_timer_init(loop, &b->timer);
        b->timer.data = b;
        b->timer_open = true;
        /* The SQL decides whether the job is due: ticking at the interval
         * itself would find it just short of due every other time. */
        uint64_t every = (uint64_t)b->refresh_s * 1000, tick = every < 60000 ? every : 60000;
        uv_timer_start(&b->timer, timer_cb, tick, tick);
    }
    *out = b;
    return 0;
}

connector_t *bsky_connector(bsky_t *b)
{
    return &b->conn;
}

void bsky_close(bsky_t *b, void (*cb)(void *data), void *data)
{
    b->closing = true;
    b->close_cb = cb;
    b->close_data = data;
    if (b->timer_open && !uv_is_closing((uv_handle_t *)&b->timer))
        uv_close((uv_handle_t *)&b->timer, timer_closed);
    soon_cb(&b->soon);
    if (b->soon_open && !uv_is_closing((uv_handle_t *)&b->soon))
        uv_close((uv_handle_t *)&b->soon, soon_closed);
    /* Cancelling calls back from inside: walk a snapshot. */
    for (;;) {
        bool cancelled = false;
        queue_node_t *n;
        for (n = b->ops.next; n != &b->ops; n = n->next) {
            op_t *op = queue_entry(n, op_t, node);
            if (op->state == OPS_HTTP) {
                net_request_cancel(&op->req);
                cancelled = true;
                break;
            }
        }
        for (n = b->refreshes.next; n != &b->refreshes; n = n->next) {
            refresh_t *rf = queue_entry(n, refresh_t, node);
            if (!cancelled && rf->http_running) {
                net_request_cancel(&rf->req);
                cancelled = true;
                break;
            }
        }
        if (!cancelled)
            break;
    }
    maybe_closed(b);
}

void bsky_free(bsky_t *b)
{
    if (b == NULL)
        return;
    while (!queue_empty(&b->unsaved)) {
        unsaved_t *u = queue_entry(queue_head(&b->unsaved), unsaved_t, node);
        log_warn(TAG, "a refreshed session was never stored; that account must log in again");
        unsaved_free(u);
    }
    sealed_key_wipe(&b->key);
    free(b);
}
