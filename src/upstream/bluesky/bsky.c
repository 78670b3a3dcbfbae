/* bsky: the Bluesky connector (see bsky.h and, for what its files share,
 * bsky_internal.h): its lifecycle, its operations from start to end
 * (ending one later when it failed inside a verb call), the small helpers
 * its files share, and its connector interface (capabilities, state,
 * metrics, the ops table). Sessions are bsky_session.c's; the calls
 * (login, accounts, query, the bluesky.refresh job) bsky_calls.c's. */
#include "upstream/bluesky/bsky.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sync/jobs.h"
#include "upstream/connectors.h"
#include "upstream/bluesky/bsky_internal.h"
#include "util/dirs.h"
#include "util/log.h"
#include "util/prom_text.h"
#include "util/queue.h"
#include "util/sealed.h"
#include "util/strutil.h"

/* ---- small helpers ------------------------------------------------------ */

void bsky__wipe_free(char *s)
{
    if (s == NULL)
        return;
    OPENSSL_cleanse(s, strlen(s));
    free(s);
}

char *bsky__dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

const char *bsky__jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* Releases a response that carried tokens, wiping its body first. */
void bsky__wipe_release(net_req_t *r)
{
    if (r->body_buf.data)
        OPENSSL_cleanse(r->body_buf.data, r->body_buf.len);
    net_req_release(r);
}

/* A URL without its trailing slashes into out. */
void bsky__url_trim(char *out, size_t cap, const char *url)
{
    snprintf(out, cap, "%s", url);
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '/')
        out[--n] = '\0';
}

void bsky__xrpc_req(net_req_t *req, const char *url, const char *const *headers, bool trusted,
                    size_t max_bytes, net_req_cb cb, void *data)
{
    memset(req, 0, sizeof *req);
    req->url = url;
    req->extra_headers = headers;
    req->capture_header = "ratelimit-reset";
    req->untrusted = !trusted;
    req->max_bytes = max_bytes;
    req->cb = cb;
    req->data = data;
}

/* ---- operations --------------------------------------------------------- */

void bsky__maybe_closed(bsky_t *b)
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

op_t *bsky__op_new(bsky_t *b, op_kind_t kind, connector_cb cb, void *data, int *rc)
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

void bsky__op_free(op_t *op)
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
    bsky__wipe_free(op->access);
    bsky__wipe_free(op->refresh);
    free(op->url);
    bsky__wipe_free(op->auth);
    free(op->end_error);
    free(op);
}

/* Ends op: its callback (or job finish) with the outcome. */
void bsky__op_end(op_t *op, int status, const char *json, const char *error)
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
    bsky__op_free(op);
    bsky__maybe_closed(b);
}

void bsky__op_fail(op_t *op, int status, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    str_utf8_trim_end(msg); /* a tool's error text must stay UTF-8 */
    bsky__op_end(op, status, NULL, msg);
}

/* Ends the operations that failed inside a verb call: a verb calls back
 * later, never from inside (connector.h). */
static void soon_cb(uv_timer_t *t)
{
    bsky_t *b = t->data;
    while (!queue_empty(&b->ending_soon)) {
        op_t *op = queue_entry(queue_head(&b->ending_soon), op_t, wait_node);
        queue_remove(&op->wait_node);
        bsky__op_end(op, op->end_status, NULL, op->end_error);
    }
}

void bsky__op_end_soon(op_t *op, int status, const char *error)
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
    bsky__maybe_closed(b);
}

/* ---- the bluesky.refresh timer ---------------------------------------- */

static void timer_cb(uv_timer_t *t)
{
    bsky__schedule(t->data, false);
}

static void timer_closed(uv_handle_t *h)
{
    bsky_t *b = h->data;
    b->timer_open = false;
    bsky__maybe_closed(b);
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

static int bsky_job_classes(void *impl, const sync_class_t **classes)
{
    bsky_t *b = impl;
    *classes = b->classes;
    return 1;
}

static void bsky_metrics(void *impl, buf_t *out)
{
    bsky_t *b = impl;
    prom_text_counter(out, "parley_bluesky_logins_total", NULL, b->logins);
    prom_text_counter(out, "parley_bluesky_login_errors_total", NULL, b->login_errors);
    prom_text_counter(out, "parley_bluesky_session_refreshes_total", NULL, b->refreshes_done);
    prom_text_counter(out, "parley_bluesky_calls_total", NULL, b->calls);
    prom_text_counter(out, "parley_bluesky_call_errors_total", NULL, b->call_errors);
    prom_text_counter(out, "parley_bluesky_rate_limited_total", NULL, b->rate_limited);
}

static const connector_accounts_ops_t bsky_accounts_ops = {
    .login = bsky__login,
    .accounts = bsky__accounts,
    .query = bsky__query,
};

static const connector_ops_t bsky_ops = {
    .caps = bsky_caps,
    .why_not = bsky_why_not,
    .state = bsky_state,
    .job_classes = bsky_job_classes,
    .metrics = bsky_metrics,
    .accounts = &bsky_accounts_ops,
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
    bsky__url_trim(b->service, sizeof b->service,
                   cfg->service && *cfg->service ? cfg->service : BSKY_DEFAULT_SERVICE);
    queue_init(&b->ops);
    queue_init(&b->refreshes);
    queue_init(&b->ending_soon);
    queue_init(&b->unsaved);
    uv_timer_init(loop, &b->soon);
    b->soon.data = b;
    b->soon_open = true;
    b->conn = (connector_t){.name = "bluesky", .ops = &bsky_ops, .impl = b};
    b->classes[0] = (sync_class_t){
        .name = "bluesky.refresh", .concurrency = 1, .exec = bsky__job_refresh, .ctx = b};
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
    bsky__maybe_closed(b);
}

void bsky_free(bsky_t *b)
{
    if (b == NULL)
        return;
    while (!queue_empty(&b->unsaved)) {
        unsaved_t *u = queue_entry(queue_head(&b->unsaved), unsaved_t, node);
        log_warn(BSKY_TAG, "a refreshed session was never stored; that account must log in again");
        bsky__unsaved_free(u);
    }
    sealed_key_wipe(&b->key);
    free(b);
}

/* ---- the definition (connectors.h) ---------------------------------------- */

/* What the entry runs: the connector and its own HTTP client for the
 * operator's service (a service a tool names goes through env->fetch). */
typedef struct {
    bsky_t *b;
    net_client_t *net;
    void (*cb)(void *data);
    void *data;
} bsky_run_t;

/* Runs when a selected toolset queries run-time accounts (a toolset that
 * only signs accounts in, CONNECTOR_CAN_LOGIN, is another service's). */
static bool def_wanted(const connector_env_t *env)
{
    return (env->caps_wanted & CONNECTOR_CAN_QUERY) != 0;
}

static int def_open(const connector_env_t *env, void **obj, connector_t **conn, char *err,
                    size_t errcap)
{
    bsky_run_t *run = calloc(1, sizeof *run);
    if (run == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    /* The data directory holds the key file also when the database is
     * external. */
    int rc = dirs_make(env->data_dir, err, errcap);
    net_config_t nc = {0};
    if (rc == 0)
        rc = net_client_new(env->loop, &nc, NULL, &run->net, err, errcap);
    if (rc != 0) {
        free(run);
        return rc;
    }
    char key[4096 + 32], service[2048];
    snprintf(key, sizeof key, "%s/%s", env->data_dir, BSKY_KEY_FILE);
    connector_env_text(env, "bluesky_service", service, sizeof service);
    bsky_config_t bc = {.service = service,
                        .key_path = key,
                        .refresh_s = (int)connector_env_int(env, "bluesky_refresh_s")};
    if ((rc = bsky_new(env->loop, run->net, env->fetch, env->rw, &bc, &run->b, err, errcap))) {
        net_client_close(run->net, NULL, NULL); /* nothing else uses it */
        free(run);
        return rc;
    }
    *obj = run;
    *conn = bsky_connector(run->b);
    log_info(BSKY_TAG, "connector ready (service %s)", run->b->service);
    return 0;
}

static void def_net_closed(void *data)
{
    bsky_run_t *run = data;
    run->net = NULL;
    run->cb(run->data);
}

/* The operations ended: then the HTTP client. */
static void def_closed(void *data)
{
    bsky_run_t *run = data;
    net_client_close(run->net, def_net_closed, run);
}

static void def_close(void *obj, void (*cb)(void *data), void *data)
{
    bsky_run_t *run = obj;
    run->cb = cb;
    run->data = data;
    bsky_close(run->b, def_closed, run);
}

static void def_free(void *obj)
{
    bsky_run_t *run = obj;
    if (run == NULL)
        return;
    bsky_free(run->b);
    free(run);
}

const connector_def_t bsky_connector_def = {
    .name = "bluesky",
    .wanted = def_wanted,
    .open = def_open,
    .close = def_close,
    .free = def_free,
};
