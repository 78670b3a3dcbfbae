/* bsky_session: the Bluesky connector's sessions (see bsky_internal.h):
 * sealing them for the store and opening them again (util/sealed.h, under
 * "bluesky:DID", as bytea hex), and refreshing them (refreshSession, one
 * per account at a time, its waiters woken with the new tokens), with a
 * refreshed session the store did not take kept in memory and stored again
 * until it is. */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "upstream/bluesky/bsky_internal.h"
#include "upstream/bluesky/bsky_xrpc.h"
#include "util/log.h"
#include "util/queue.h"
#include "util/sealed.h"
#include "util/strutil.h"

/* ---- sealed sessions ---------------------------------------------------- */

static char *hex_encode(const uint8_t *b, size_t n)
{
    char *s = malloc(2 * n + 3);
    if (s == NULL)
        return NULL;
    s[0] = '\\';
    s[1] = 'x';
    str_hex(b, n, s + 2);
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

/* "bluesky:DID": what a session is sealed under. */
static void seal_context(char *out, size_t cap, const char *did)
{
    snprintf(out, cap, "bluesky:%s", did ? did : "");
}

/* The session as sealed hex ("\x..."), or NULL. */
char *bsky__session_seal(bsky_t *b, const char *did, const char *pds, const char *access,
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
    bsky__wipe_free(plain);
    if (rc != 0)
        return NULL;
    char *hex = hex_encode(sealed, n);
    free(sealed);
    return hex;
}

/* Opens an account row's sealed session: the tokens, the PDS they go to
 * (sealed with them, so a changed row cannot redirect them) and whether it
 * is trusted. Returns 0 (the caller frees the strings) or UV_EINVAL. */
int bsky__session_open(bsky_t *b, const char *did, const char *hex, char **access, char **refresh,
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
    const char *a = bsky__jstr(j, "access"), *r = bsky__jstr(j, "refresh"),
               *p = bsky__jstr(j, "pds");
    rc = a && r && p ? 0 : UV_EINVAL;
    if (rc == 0) {
        *access = strdup(a);
        *refresh = strdup(r);
        *pds = strdup(p);
        *trusted = json_is_true(json_object_get(j, "trusted"));
        if (*access == NULL || *refresh == NULL || *pds == NULL) {
            bsky__wipe_free(*access);
            bsky__wipe_free(*refresh);
            free(*pds);
            *access = *refresh = *pds = NULL;
            rc = UV_ENOMEM;
        }
    }
    json_decref(j);
    return rc;
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
    bsky__wipe_free(rf->refresh);
    bsky__wipe_free(rf->new_access);
    bsky__wipe_free(rf->new_refresh);
    free(rf->url);
    bsky__wipe_free(rf->auth);
    free(rf);
    bsky__maybe_closed(b);
}

/* Wakes the waiters: with the new tokens (status 0), else failed. */
static void refresh_end(refresh_t *rf, int status, const char *error)
{
    while (!queue_empty(&rf->waiters)) {
        op_t *op = queue_entry(queue_head(&rf->waiters), op_t, wait_node);
        queue_remove(&op->wait_node);
        if (status != 0) {
            bsky__op_end(op, status, NULL, error);
            continue;
        }
        bsky__wipe_free(op->access);
        bsky__wipe_free(op->refresh);
        op->access = strdup(rf->new_access);
        op->refresh = strdup(rf->new_refresh);
        if (op->access == NULL || op->refresh == NULL)
            bsky__op_fail(op, UV_ENOMEM, "out of memory");
        else
            bsky__op_http(op);
    }
    refresh_free(rf);
}

unsaved_t *bsky__unsaved_find(bsky_t *b, int64_t id)
{
    for (queue_node_t *n = b->unsaved.next; n != &b->unsaved; n = n->next) {
        unsaved_t *u = queue_entry(n, unsaved_t, node);
        if (u->id == id)
            return u;
    }
    return NULL;
}

void bsky__unsaved_free(unsaved_t *u)
{
    queue_remove(&u->node);
    free(u->did);
    free(u->pds);
    bsky__wipe_free(u->access);
    bsky__wipe_free(u->refresh);
    free(u);
}

/* Remembers rf's new session (replacing an older one of the account). */
static void unsaved_keep(refresh_t *rf)
{
    unsaved_t *u = bsky__unsaved_find(rf->b, rf->id);
    if (u && u->storing)
        return; /* a store runs; it sees its own tokens go */
    if (u)
        bsky__unsaved_free(u);
    u = calloc(1, sizeof *u);
    if (u == NULL)
        return;
    u->b = rf->b;
    u->id = rf->id;
    u->trusted = rf->trusted;
    u->did = bsky__dup_or_null(rf->did);
    u->pds = bsky__dup_or_null(rf->pds);
    u->access = bsky__dup_or_null(rf->new_access);
    u->refresh = bsky__dup_or_null(rf->new_refresh);
    queue_push_tail(&rf->b->unsaved, &u->node);
    if (!u->did || !u->pds || !u->access || !u->refresh)
        bsky__unsaved_free(u);
}

static void unsaved_stored(void *data, int status, const char *value, const char *sqlstate,
                           const char *error)
{
    unsaved_t *u = data;
    (void)value;
    (void)sqlstate;
    u->storing = false;
    if (status == 0) {
        log_info(BSKY_TAG, "a refreshed session kept in memory is stored now");
        bsky__unsaved_free(u);
    } else {
        log_warn(BSKY_TAG, "a refreshed session still could not be stored: %s", error);
    }
    bsky__maybe_closed(u->b);
}

/* op's account has a session only this daemon holds: use it, and try to
 * store it again. */
void bsky__unsaved_use(op_t *op, unsaved_t *u)
{
    bsky_t *b = op->b;
    char *access = strdup(u->access), *refresh = strdup(u->refresh);
    if (access == NULL || refresh == NULL) {
        bsky__wipe_free(access);
        bsky__wipe_free(refresh);
        return;
    }
    bsky__wipe_free(op->access);
    bsky__wipe_free(op->refresh);
    op->access = access;
    op->refresh = refresh;
    if (u->storing || b->closing)
        return;
    char *hex = bsky__session_seal(b, u->did, u->pds, u->access, u->refresh, u->trusted);
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
        log_warn(BSKY_TAG,
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
        bsky__session_open(rf->b, rf->did, bsky__jstr(row, "credentials"), &access, &refresh, &pds,
                           &trusted) == 0 &&
        strcmp(refresh, rf->refresh) != 0) {
        json_decref(row);
        free(pds);
        rf->new_access = access;
        rf->new_refresh = refresh;
        refresh_end(rf, 0, NULL);
        return;
    }
    json_decref(row);
    bsky__wipe_free(access);
    bsky__wipe_free(refresh);
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
        bsky__wipe_release(r);
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
        log_info(BSKY_TAG, "@%s: session refreshed", rf->handle);
        char *hex =
            bsky__session_seal(b, rf->did, rf->pds, rf->new_access, rf->new_refresh, rf->trusted);
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
void bsky__refresh_join(op_t *op)
{
    bsky_t *b = op->b;
    if (b->closing) {
        bsky__op_fail(op, UV_ECANCELED, "parleyd is stopping");
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
        bsky__op_fail(op, UV_ENOMEM, "out of memory");
        return;
    }
    rf->b = b;
    rf->id = op->id;
    queue_init(&rf->waiters);
    queue_push_tail(&b->refreshes, &rf->node);
    b->nrefreshes++;
    queue_push_tail(&rf->waiters, &op->wait_node);
    rf->handle = bsky__dup_or_null(op->handle);
    rf->did = bsky__dup_or_null(op->did);
    rf->pds = bsky__dup_or_null(op->pds);
    rf->trusted = op->trusted;
    rf->refresh = bsky__dup_or_null(op->refresh);
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
    bsky__xrpc_req(&rf->req, rf->url, rf->headers, rf->trusted, 1u << 20, refresh_done, rf);
    rf->req.method = "POST";
    rf->http_running = true;
    int rc = net_request(client, &rf->req);
    if (rc != 0) {
        rf->http_running = false;
        net_req_release(&rf->req);
        refresh_end(rf, rc, "refreshSession could not be sent");
    }
}
