/* bsky_calls: the Bluesky connector's calls (see bsky_internal.h): login
 * (createSession, the session sealed into the store), the accounts in the
 * store (list, default, delete), query (an XRPC read call with the
 * account's session, refreshed first when its access token is about to
 * expire or has expired), and the bluesky.refresh job (queued when due,
 * the account's own feed fetched and stored). */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sync/jobs.h"
#include "upstream/bluesky/bsky_internal.h"
#include "upstream/bluesky/bsky_xrpc.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/queue.h"

/* ---- accounts in the store ---------------------------------------------- */

static void account_loaded(void *data, int status, const char *value, const char *sqlstate,
                           const char *error)
{
    op_t *op = data;
    bsky_t *b = op->b;
    (void)sqlstate;
    if (status != 0) {
        bsky__op_fail(op, UV_EIO, "the store could not be read: %s", error);
        return;
    }
    json_t *row = value ? json_loads(value, 0, NULL) : NULL;
    if (row == NULL) {
        if (op->account)
            bsky__op_fail(op, UV_ENOENT, "no Bluesky account %s is logged in", op->account);
        else
            bsky__op_fail(op, UV_ENOENT, "no Bluesky account is logged in");
        return;
    }
    op->id = json_integer_value(json_object_get(row, "id"));
    op->handle = bsky__dup_or_null(bsky__jstr(row, "handle"));
    op->did = bsky__dup_or_null(bsky__jstr(row, "did"));
    int rc = op->did ? bsky__session_open(b, op->did, bsky__jstr(row, "credentials"), &op->access,
                                          &op->refresh, &op->pds, &op->trusted)
                     : UV_EINVAL;
    json_decref(row);
    if (rc != 0) {
        bsky__op_fail(op, UV_EACCES,
                      "the stored session of @%s cannot be opened (a different credentials key?); "
                      "log in again",
                      op->handle ? op->handle : "?");
        return;
    }
    unsaved_t *u = bsky__unsaved_find(b, op->id);
    if (u)
        bsky__unsaved_use(op, u);
    if (op->kind == OP_JOB) { /* the account's own posts */
        char *actor = curl_easy_escape(NULL, op->did, 0);
        size_t qlen = (actor ? strlen(actor) : 0) + 32;
        op->query = actor ? malloc(qlen) : NULL;
        if (op->query)
            snprintf(op->query, qlen, "actor=%s&limit=%d", actor, BSKY_REFRESH_POSTS);
        curl_free(actor);
        if (op->query == NULL) {
            bsky__op_fail(op, UV_ENOMEM, "out of memory");
            return;
        }
    }
    int64_t exp = bsky_jwt_exp(op->access);
    if (exp != 0 && exp - (int64_t)time(NULL) < BSKY_REFRESH_MARGIN_S)
        bsky__refresh_join(op);
    else
        bsky__op_http(op);
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
        bsky__op_fail(op, UV_EIO, "posts could not be stored: %s", error);
    else
        bsky__op_end(op, 0, value ? value : "0", NULL);
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
        bsky__op_fail(op, rc, "posts could not be stored: %s", uv_strerror(rc));
}

/* A failed XRPC answer: its kind, HTTP status, rate-limit reset header
 * and the service's reason. */
typedef struct {
    bsky_xrpc_error_t kind;
    long http;
    char reset[64];
    char why[300];
} xrpc_failure_t;

/* Reads r's failed answer into f, then releases r. */
static void failure_read(net_req_t *r, xrpc_failure_t *f)
{
    f->kind =
        bsky_xrpc_error(r->body_buf.data, r->body_buf.len, r->http_status, f->why, sizeof f->why);
    f->http = r->http_status;
    snprintf(f->reset, sizeof f->reset, "%s", r->captured);
    net_req_release(r);
}

/* When f is a rate limit (HTTP 429 or the service's RateLimitExceeded):
 * counts it and fails op with UV_EAGAIN, saying when what may be tried
 * again (after "prefix: " when prefix is not NULL); true. Else false. */
static bool failed_rate_limited(bsky_t *b, op_t *op, const xrpc_failure_t *f, const char *what,
                                const char *prefix)
{
    if (f->http != 429 && f->kind != BSKY_XRPC_RATE)
        return false;
    b->rate_limited++;
    char msg[300];
    bsky_rate_limit_message(msg, sizeof msg, what, f->reset, time(NULL));
    if (prefix != NULL)
        bsky__op_fail(op, UV_EAGAIN, "%s: %s", prefix, msg);
    else
        bsky__op_fail(op, UV_EAGAIN, "%s", msg);
    return true;
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
        bsky__op_end(op, status == UV_EACCES ? UV_EACCES : status, NULL, msg);
        return;
    }
    json_t *doc;
    if (r->http_status == 200) {
        doc = json_loadb(r->body_buf.data ? r->body_buf.data : "", r->body_buf.len, 0, NULL);
        net_req_release(r);
        if (!json_is_object(doc)) {
            json_decref(doc);
            bsky__op_fail(op, UV_EPROTO, "%s: the service answered something that is not JSON",
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
            bsky__op_fail(op, UV_ENOMEM, "out of memory");
        else
            bsky__op_end(op, 0, text, NULL);
        free(text);
        return;
    }
    xrpc_failure_t f;
    failure_read(r, &f);
    bool token = f.kind == BSKY_XRPC_TOKEN;
    if (token && op->attempts == 0) {
        op->attempts++;
        log_debug(BSKY_TAG, "@%s: %s; refreshing the session", op->handle, f.why);
        bsky__refresh_join(op);
        return;
    }
    if (token || f.http == 401) {
        bsky__op_fail(op, UV_EACCES,
                      "the Bluesky session of @%s is no longer valid (%s); log in again",
                      op->handle, f.why);
        return;
    }
    if (!failed_rate_limited(b, op, &f, "these calls", op->method))
        bsky__op_fail(op, UV_EPROTO, "%s: %s", op->method, f.why);
}

/* Runs op's XRPC read call with its access token. */
void bsky__op_http(op_t *op)
{
    bsky_t *b = op->b;
    if (b->closing) {
        bsky__op_fail(op, UV_ECANCELED, "parleyd is stopping");
        return;
    }
    net_client_t *client = op->trusted ? b->net : b->untrusted;
    if (client == NULL) {
        bsky__op_fail(op, UV_EACCES,
                      "the account's service is not trusted and URL fetching is off");
        return;
    }
    free(op->url);
    bsky__wipe_free(op->auth);
    size_t ulen = strlen(op->pds) + strlen(op->method) + (op->query ? strlen(op->query) : 0) + 16;
    op->url = malloc(ulen);
    size_t alen = strlen(op->access) + 32;
    op->auth = malloc(alen);
    if (op->url == NULL || op->auth == NULL) {
        bsky__op_fail(op, UV_ENOMEM, "out of memory");
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
    bsky__xrpc_req(&op->req, op->url, op->headers, op->trusted, 16u << 20, query_done, op);
    op->state = OPS_HTTP;
    b->calls++;
    int rc = net_request(client, &op->req);
    if (rc != 0) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s: %s", op->method,
                 op->req.error[0] ? op->req.error : uv_strerror(rc));
        net_req_release(&op->req);
        bsky__op_end(op, rc, NULL, msg);
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
        log_warn(BSKY_TAG, "bluesky.refresh could not be queued: %s", error);
    else if (value && strcmp(value, "t") == 0)
        log_debug(BSKY_TAG, "bluesky.refresh queued");
    bsky__maybe_closed(b);
}

/* Queues bluesky.refresh when it is due (now: at once, e.g. after a
 * login). */
void bsky__schedule(bsky_t *b, bool now)
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

/* ---- login -------------------------------------------------------------- */

static void login_saved(void *data, int status, const char *value, const char *sqlstate,
                        const char *error)
{
    op_t *op = data;
    (void)sqlstate;
    if (status != 0 || value == NULL) {
        bsky__op_fail(op, UV_EIO, "the session could not be stored: %s", error ? error : "no row");
        return;
    }
    op->b->logins++;
    log_info(BSKY_TAG, "@%s logged in", op->handle);
    bsky__schedule(op->b, true);
    bsky__op_end(op, 0, value, NULL);
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
        bsky__op_end(op, status == UV_EACCES ? UV_EINVAL : status, NULL, msg);
        return;
    }
    if (r->http_status != 200) {
        xrpc_failure_t f;
        failure_read(r, &f);
        b->login_errors++;
        if (failed_rate_limited(b, op, &f, "logins (createSession)", NULL))
            return;
        if (f.http == 401 || f.http == 400)
            bsky__op_fail(op, UV_EACCES, "Bluesky refused the login: %s", f.why);
        else
            bsky__op_fail(op, UV_EPROTO, "createSession: %s", f.why);
        return;
    }
    bsky_session_answer_t ans;
    int arc = bsky_session_answer(r->body_buf.data, r->body_buf.len, &ans);
    bsky__wipe_release(r);
    if (arc != 0 || ans.handle == NULL || ans.did == NULL) {
        bsky_session_answer_free(&ans);
        bsky__op_fail(op, UV_EPROTO, "createSession: the answer lacks the session");
        return;
    }
    const char *access = ans.access, *refresh = ans.refresh, *handle = ans.handle, *did = ans.did;
    const char *pds = ans.pds;
    char service[512];
    bsky__url_trim(service, sizeof service, pds ? pds : op->url);
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
        log_info(BSKY_TAG,
                 "@%s: PDS %s is outside the configured service; its calls go through the "
                 "address policy",
                 handle, service);
    char *hex = bsky__session_seal(b, did, service, access, refresh, trusted);
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
        bsky__op_fail(op, rc, "the session could not be stored: %s", uv_strerror(rc));
}

/* {"identifier": ..., "password": ...} in one buffer sized up front (no
 * realloc leaves a copy of the password behind); bsky__op_free wipes it. */
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

int bsky__login(void *impl, const char *identifier, const char *secret, const char *service,
                connector_cb cb, void *data)
{
    bsky_t *b = impl;
    char base[512];
    bsky__url_trim(base, sizeof base, service && *service ? service : b->service);
    bool trusted = service == NULL || *service == '\0' || strcmp(base, b->service) == 0;
    if (!trusted && b->untrusted == NULL)
        return UV_ENOTSUP;
    int rc;
    op_t *op = bsky__op_new(b, OP_LOGIN, cb, data, &rc);
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
        bsky__op_free(op);
        return UV_ENOMEM;
    }
    op->body_len = strlen(op->body);
    snprintf(op->url, ulen, "%s/xrpc/com.atproto.server.createSession", base);
    bsky__xrpc_req(&op->req, op->url, NULL, trusted, 1u << 20, login_done, op);
    op->req.body = op->body;
    op->req.body_len = op->body_len;
    op->req.content_type = "application/json";
    op->state = OPS_HTTP;
    rc = net_request(trusted ? b->net : b->untrusted, &op->req);
    if (rc != 0) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", op->req.error[0] ? op->req.error : uv_strerror(rc));
        net_req_release(&op->req);
        OPENSSL_cleanse(op->body, op->body_len);
        /* The message (e.g. the address policy's) reaches the caller
         * through the callback, which runs later. */
        bsky__op_end_soon(op, rc == UV_EACCES ? UV_EINVAL : rc, msg);
    }
    return 0;
}

/* ---- accounts and queries ----------------------------------------------- */

static void accounts_done(void *data, int status, const char *value, const char *sqlstate,
                          const char *error)
{
    op_t *op = data;
    if (status != 0 && strcmp(sqlstate, "PT404") == 0)
        bsky__op_fail(op, UV_ENOENT, "no Bluesky account %s is logged in",
                      op->account ? op->account : "");
    else if (status != 0)
        bsky__op_fail(op, UV_EIO, "%s", error);
    else
        bsky__op_end(op, 0, value ? value : "null", NULL);
}

int bsky__accounts(void *impl, const char *command, const char *account, connector_cb cb,
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
    op_t *op = bsky__op_new(b, OP_ACCOUNTS, cb, data, &rc);
    if (op == NULL)
        return rc;
    op->account = bsky__dup_or_null(account);
    const char *params[1] = {account};
    op->state = OPS_STORE;
    rc = pg_pool_call(b->rw, NULL, fn, nparams, params, accounts_done, op, NULL);
    if (rc != 0) {
        op->cb = NULL;
        queue_remove(&op->node);
        b->nops--;
        bsky__op_free(op);
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

int bsky__query(void *impl, const char *account, const char *method, const char *params_json,
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
    op_t *op = bsky__op_new(b, OP_QUERY, cb, data, &rc);
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
        bsky__op_free(op);
    }
    return rc;
}

/* ---- the job ------------------------------------------------------------ */

/* bluesky.refresh: the default account's own posts into the archive. */
void bsky__job_refresh(sync_job_t *job, void *ctx)
{
    bsky_t *b = ctx;
    int rc;
    op_t *op = bsky__op_new(b, OP_JOB, NULL, NULL, &rc);
    if (op == NULL) {
        sync_job_finish(job, SYNC_RETRY, uv_strerror(rc), 0, 0);
        return;
    }
    op->job = job;
    op->method = strdup("app.bsky.feed.getAuthorFeed");
    if (op->method == NULL || account_load(op) != 0)
        bsky__op_fail(op, UV_EBUSY, "database busy");
}
