/* tg_bot: Telegram Bot API connector (see tg_bot.h): identifying the bot,
 * the getUpdates poller under its lease, applying batches with their
 * offset, and the lifecycle. Sending is tg_send.c's. */
#include "upstream/telegram/bot/tg_bot.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "upstream/telegram/bot/tg_bot_internal.h"
#include "upstream/telegram/bot/tg_media.h"
#include "util/log.h"
#include "util/prom_text.h"

static void poll_next(tg_bot_t *b);
static void apply_next(tg_bot_t *b);
static void lease_renew(tg_bot_t *b);
static int lock_start(tg_bot_t *b);

void tg_bot__set_url(tg_bot_t *b, char *url, size_t cap, const char *method)
{
    snprintf(url, cap, "%s/bot%s/%s", b->api_url, b->token, method);
}

/* ---- backoff ---------------------------------------------------------------- */

static void backoff_cb(uv_timer_t *t)
{
    tg_bot_t *b = t->data;
    if (b->state == BOT_BACKOFF || b->state == BOT_STANDBY) {
        b->state = BOT_STARTING;
        poll_next(b);
    }
}

/* The next delay of an exponential backoff whose last delay is *last_ms
 * (0: none yet), with jitter: between 3/4 and 5/4 of it. */
static uint32_t backoff_next(uint32_t *last_ms)
{
    *last_ms = *last_ms ? *last_ms * 2 : TG_BOT_BACKOFF_MIN_MS;
    if (*last_ms > TG_BOT_BACKOFF_MAX_MS)
        *last_ms = TG_BOT_BACKOFF_MAX_MS;
    return *last_ms - *last_ms / 4 + (uint32_t)(rand() % (int)(*last_ms / 2 + 1));
}

static void backoff(tg_bot_t *b, uint32_t ms, const char *why)
{
    if (b->state == BOT_CLOSING)
        return;
    if (ms == 0)
        ms = backoff_next(&b->backoff_ms);
    log_warn(BOT_TAG, "%s; retrying in %u ms", why, ms);
    b->state = BOT_BACKOFF;
    uv_timer_start(&b->timer, backoff_cb, ms, 0);
}

/* ---- database steps ---------------------------------------------------------- */

/* The poller's database step: one at a time (q_busy). */
static void q_submit(tg_bot_t *b, const char *name, const char *sql, int n,
                     const char *const *params, pg_call_cb cb)
{
    if (pg_pool_call(b->rw, name, sql, n, params, cb, b, NULL) != 0) {
        backoff(b, 0, "database busy");
        return;
    }
    b->q_busy = true;
}

/* The answer of a batch stored (parley_bot_stage or parley_bot_ingest;
 * q_busy cleared): false after a failed statement (backing off; *out
 * untouched), else true with the update offset moved to the answer's
 * "offset", the backoff reset, and *out the answer's integer member key (0
 * when it has none). */
__attribute__((warn_unused_result)) static bool
q_batch(tg_bot_t *b, int status, const char *v, const char *error, const char *key, json_int_t *out)
{
    b->q_busy = false;
    if (status != 0) {
        char why[PG_QUERY_ERROR_MAX + 32];
        snprintf(why, sizeof why, "storing updates failed: %s", error);
        backoff(b, 0, why);
        tg_bot__maybe_closed(b);
        return false;
    }
    json_error_t je;
    json_t *r = v ? json_loads(v, 0, &je) : NULL;
    b->offset = json_integer_value(json_object_get(r, "offset"));
    *out = json_integer_value(json_object_get(r, key));
    json_decref(r);
    b->backoff_ms = 0;
    return true;
}

/* The bigint a start query answers (q_busy cleared): true with it in
 * *out; false after a failed statement or no value (backing off with
 * failed, the close going on if the bot closes; *out untouched). */
__attribute__((warn_unused_result)) static bool q_bigint(tg_bot_t *b, int status, const char *v,
                                                         const char *failed, int64_t *out)
{
    b->q_busy = false;
    if (status == 0 && v != NULL) {
        *out = strtoll(v, NULL, 10);
        return true;
    }
    backoff(b, 0, failed);
    tg_bot__maybe_closed(b);
    return false;
}

/* True, the close going on, when the bot closes: a callback stops there. */
__attribute__((warn_unused_result)) static bool closing(tg_bot_t *b)
{
    if (b->state != BOT_CLOSING)
        return false;
    tg_bot__maybe_closed(b);
    return true;
}

/* A batch staged with its offset: poll again at once (confirming it) and
 * apply it beside the poll. */
static void stage_done(void *data, int status, const char *v, const char *sqlstate,
                       const char *error)
{
    tg_bot_t *b = data;
    (void)sqlstate;
    json_int_t pending;
    if (!q_batch(b, status, v, error, "pending", &pending))
        return;
    b->pending = pending;
    if (b->a_busy) /* that apply's count of what is left may predate this batch */
        b->staged_since = true;
    if (closing(b))
        return;
    apply_next(b);
    poll_next(b);
}

/* A small batch staged and applied in one transaction (parley_bot_ingest),
 * with everything staged before it. */
static void ingest_done(void *data, int status, const char *v, const char *sqlstate,
                        const char *error)
{
    tg_bot_t *b = data;
    (void)sqlstate;
    json_int_t applied;
    if (!q_batch(b, status, v, error, "applied", &applied))
        return;
    if (!b->a_busy)
        b->pending = 0;
    b->applied += (uint64_t)(applied > 0 ? applied : 0);
    if (b->media && applied > 0)
        tg_media_kick(b->media);
    if (closing(b))
        return;
    poll_next(b);
}

/* The applier's retry: staged batches are applied again after a backoff of
 * their own (a standby daemon stays standing by, a poll in flight goes on;
 * the poller waits for them only at TG_BOT_STAGED_MAX), or sooner when a
 * newly staged batch calls apply_next. */
static void apply_timer_cb(uv_timer_t *t)
{
    tg_bot_t *b = t->data;
    apply_next(b);
    /* A poller waiting for the staged batches to drain polls from
     * apply_done once they have. */
}

static void apply_retry(tg_bot_t *b, const char *why)
{
    if (b->state == BOT_CLOSING)
        return;
    uint32_t ms = backoff_next(&b->apply_backoff_ms);
    log_warn(BOT_TAG, "%s; retrying in %u ms", why, ms);
    uv_timer_start(&b->apply_timer, apply_timer_cb, ms, 0);
}

static void apply_done(void *data, int status, const char *v, const char *sqlstate,
                       const char *error)
{
    tg_bot_t *b = data;
    (void)sqlstate;
    b->a_busy = false;
    if (status != 0) {
        /* The batches stay staged, retried on the applier's timer. */
        b->staged_since = false;
        if (b->pending <= 0)
            b->pending = 1;
        char why[PG_QUERY_ERROR_MAX + 32];
        snprintf(why, sizeof why, "applying updates failed: %s", error);
        apply_retry(b, why);
        tg_bot__maybe_closed(b);
        return;
    }
    b->apply_backoff_ms = 0;
    uv_timer_stop(&b->apply_timer);
    json_error_t je;
    json_t *r = v ? json_loads(v, 0, &je) : NULL;
    json_int_t applied = json_integer_value(json_object_get(r, "applied"));
    b->pending = json_integer_value(json_object_get(r, "pending"));
    json_decref(r);
    if (b->staged_since && b->pending <= 0) /* staged after this apply's snapshot */
        b->pending = 1;
    b->staged_since = false;
    if (applied > 0) {
        b->applied += (uint64_t)applied;
        if (b->media)
            tg_media_kick(b->media);
    }
    if (closing(b))
        return;
    apply_next(b);
    /* The poll may have waited for the staged batches to drain; one backing
     * off (a failed getUpdates, Telegram's retry_after) waits for its timer. */
    if (b->state != BOT_BACKOFF)
        poll_next(b);
}

/* Applies staged batches while there are any, one transaction at a time,
 * beside the poller (the poller lock is not needed: appliers of an account
 * take turns in the database, and each batch is applied once). */
static void apply_next(tg_bot_t *b)
{
    if (b->state == BOT_CLOSING || b->a_busy || b->pending <= 0 || b->account == 0)
        return;
    char account[32], limit[16];
    snprintf(account, sizeof account, "%lld", (long long)b->account);
    snprintf(limit, sizeof limit, "%d", TG_BOT_APPLY_BATCHES_MAX);
    const char *params[2] = {account, limit};
    if (pg_pool_call(b->rw, "parley_bot_apply_staged",
                     "SELECT parley_bot_apply_staged($1::bigint, $2::integer)::text", 2, params,
                     apply_done, b, NULL) != 0) {
        apply_retry(b, "applying updates: database busy");
        return;
    }
    b->a_busy = true;
}

static void offset_done(void *data, int status, const char *v, const char *sqlstate,
                        const char *error)
{
    tg_bot_t *b = data;
    (void)sqlstate;
    (void)error;
    if (!q_bigint(b, status, v, "reading the update offset failed", &b->offset))
        return;
    b->pending = 1; /* batches a previous run staged: the apply says how many */
    if (closing(b))
        return;
    b->state = BOT_POLLING;
    poll_next(b);
}

/* The lock was taken or lost. */
static void lock_changed(pg_lock_t *l, bool held)
{
    tg_bot_t *b = pg_lock_data(l);
    if (b->state == BOT_CLOSING)
        return;
    if (held) {
        b->lease_until = 0; /* record it before the next poll */
        if (b->state == BOT_STANDBY) {
            b->state = BOT_STARTING;
            poll_next(b);
        }
        return;
    }
    if (b->state != BOT_POLLING && b->state != BOT_BACKOFF) { /* it was never ours */
        if (!b->standby)
            log_info(BOT_TAG, "another daemon polls this bot; standing by");
        b->standby = true;
        return;
    }
    log_warn(BOT_TAG, "the poller lock was lost; standing by");
    b->standby = true;
    if (b->req_busy && b->state == BOT_POLLING)
        net_request_cancel(&b->req); /* updates_done, then poll_next stands by */
}

/* The poller's lock, named after the bot's account. Returns 0, or backs
 * off and returns a negative code. */
static int lock_start(tg_bot_t *b)
{
    char key[64], err[256];
    snprintf(key, sizeof key, "telegram_bot:%lld", (long long)b->account);
    int rc = pg_lock_start(b->loop, &b->conninfo, key, b->connect_timeout_ms, lock_changed, b,
                           &b->lock, err, sizeof err);
    if (rc != 0) {
        char why[320];
        snprintf(why, sizeof why, "the poller lock could not start: %s", err);
        backoff(b, 0, why);
        return rc;
    }
    b->lock_open = true;
    return 0;
}

static void account_done(void *data, int status, const char *v, const char *sqlstate,
                         const char *error)
{
    tg_bot_t *b = data;
    (void)sqlstate;
    (void)error;
    if (!q_bigint(b, status, v, "storing the bot account failed", &b->account))
        return;
    if (b->media)
        tg_media_set_account(b->media, b->account);
    if (closing(b))
        return;
    char account[32];
    snprintf(account, sizeof account, "%lld", (long long)b->account);
    if (b->lock == NULL && lock_start(b) != 0)
        return;
    const char *params[1] = {account};
    q_submit(b, "parley_bot_offset", "SELECT parley_bot_offset($1::bigint)", 1, params,
             offset_done);
}

/* ---- Bot API requests ----------------------------------------------------------- */

/* Parses a Bot API answer. Returns the result (borrowed from *doc), or
 * NULL after arranging a retry. */
static json_t *api_parse(tg_bot_t *b, net_req_t *r, int status, json_t **doc, const char *method)
{
    *doc = NULL;
    char why[320];
    if (status != 0) {
        snprintf(why, sizeof why, "%s: %s", method, r->error[0] ? r->error : uv_strerror(status));
        backoff(b, 0, why);
        return NULL;
    }
    json_error_t je;
    *doc = json_loadb(r->body_buf.data ? r->body_buf.data : "", r->body_buf.len, 0, &je);
    if (*doc == NULL || !json_is_object(*doc)) {
        snprintf(why, sizeof why, "%s: HTTP %ld with a body that is not JSON", method,
                 r->http_status);
        backoff(b, 0, why);
        return NULL;
    }
    if (json_is_true(json_object_get(*doc, "ok")))
        return json_object_get(*doc, "result");
    long code = (long)json_integer_value(json_object_get(*doc, "error_code"));
    const char *desc = json_string_value(json_object_get(*doc, "description"));
    if (code == 0)
        code = r->http_status;
    if (code == 429) {
        json_int_t after =
            json_integer_value(json_object_get(json_object_get(*doc, "parameters"), "retry_after"));
        snprintf(why, sizeof why, "%s: rate limited by Telegram (429)", method);
        backoff(b, (uint32_t)(after > 0 ? after * 1000 : 1000), why);
    } else if (code == 409) {
        b->detail = "conflict";
        snprintf(why, sizeof why,
                 "%s: 409 conflict: another getUpdates poller or a webhook uses this bot (%s)",
                 method, desc ? desc : "");
        backoff(b, 5000, why);
    } else if (code == 401 || code == 404) {
        b->detail = "unauthorized";
        snprintf(why, sizeof why, "%s: the bot token was refused (%ld); check it", method, code);
        backoff(b, 60000, why);
    } else {
        snprintf(why, sizeof why, "%s: error %ld: %s", method, code, desc ? desc : "");
        backoff(b, 0, why);
    }
    return NULL;
}

/* The result of a Bot API answer (borrowed from *doc, which the caller
 * decrefs), the failure detail cleared; or NULL (*doc NULL) after
 * arranging a retry. Releases r either way. */
static json_t *api_result(tg_bot_t *b, net_req_t *r, int status, json_t **doc, const char *method)
{
    json_t *result = api_parse(b, r, status, doc, method);
    net_req_release(r);
    if (result == NULL) {
        json_decref(*doc);
        *doc = NULL;
        return NULL;
    }
    b->detail = NULL;
    return result;
}

static void updates_done(net_req_t *r, int status)
{
    tg_bot_t *b = r->data;
    b->req_busy = false;
    free(b->req_body);
    b->req_body = NULL;
    if (b->state == BOT_CLOSING || status == UV_ECANCELED) {
        net_req_release(r);
        if (b->state != BOT_CLOSING) {
            b->state = BOT_STOPPED;
            poll_next(b); /* polls again if realtime was turned back on */
        }
        tg_bot__maybe_closed(b);
        return;
    }
    json_t *doc;
    json_t *result = api_result(b, r, status, &doc, "getUpdates");
    if (result == NULL)
        return;
    if (!json_is_array(result) || json_array_size(result) == 0) {
        json_decref(doc);
        b->backoff_ms = 0;
        poll_next(b);
        return;
    }
    bool direct = json_array_size(result) <= TG_BOT_DIRECT_MAX && !b->a_busy && b->pending <= 0;
    char *updates = json_dumps(result, JSON_COMPACT);
    json_decref(doc);
    char account[32];
    snprintf(account, sizeof account, "%lld", (long long)b->account);
    const char *params[2] = {account, updates ? updates : "[]"};
    if (direct)
        q_submit(b, "parley_bot_ingest", "SELECT parley_bot_ingest($1::bigint, $2::jsonb)::text", 2,
                 params, ingest_done);
    else
        q_submit(b, "parley_bot_stage", "SELECT parley_bot_stage($1::bigint, $2::jsonb)::text", 2,
                 params, stage_done);
    free(updates);
}

static void me_done(net_req_t *r, int status)
{
    tg_bot_t *b = r->data;
    b->req_busy = false;
    if (b->state == BOT_CLOSING) {
        net_req_release(r);
        tg_bot__maybe_closed(b);
        return;
    }
    json_t *doc;
    json_t *me = api_result(b, r, status, &doc, "getMe");
    if (me == NULL)
        return;
    log_info(BOT_TAG, "bot @%s (%lld) connected",
             json_string_value(json_object_get(me, "username"))
                 ? json_string_value(json_object_get(me, "username"))
                 : "?",
             (long long)json_integer_value(json_object_get(me, "id")));
    char *mejson = json_dumps(me, JSON_COMPACT);
    json_decref(doc);
    const char *params[2] = {mejson ? mejson : "{}", b->api_url};
    q_submit(b, "parley_bot_account", "SELECT parley_bot_account($1::jsonb, $2::text)", 2, params,
             account_done);
    free(mejson);
}

static void start_request(tg_bot_t *b, const char *method, const char *body, net_req_cb cb)
{
    memset(&b->req, 0, sizeof b->req);
    tg_bot__set_url(b, b->url, sizeof b->url, method);
    b->req.url = b->url;
    b->req.body = body;
    b->req.body_len = body ? strlen(body) : 0;
    b->req.content_type = body ? "application/json" : NULL;
    b->req.cb = cb;
    b->req.data = b;
    b->req.max_bytes = 64u << 20;
    int rc = net_request(b->net, &b->req);
    if (rc != 0) {
        net_req_release(&b->req);
        backoff(b, 0, "cannot start a Bot API request");
        return;
    }
    b->req_busy = true;
}

/* The lease outlives one long poll with room to spare: it is renewed only
 * between polls. */
static int lease_seconds(const tg_bot_t *b)
{
    return TG_BOT_LEASE_S + b->poll_timeout_s;
}

static void lease_done(void *data, int status, const char *value, const char *sqlstate,
                       const char *error)
{
    tg_bot_t *b = data;
    (void)sqlstate;
    (void)error;
    b->q_busy = false;
    const char *v = status == 0 ? value : NULL;
    bool held = v != NULL && strcmp(v, "t") == 0;
    if (closing(b))
        return;
    if (v == NULL || !held) {
        backoff(b, 0, "recording the poller lease failed");
        return;
    }
    if (b->standby)
        log_info(BOT_TAG, "took over polling this bot");
    b->standby = false;
    /* Recorded for lease_seconds; record again well before it ends. */
    b->lease_until = uv_now(b->loop) + (uint64_t)lease_seconds(b) * 1000 / 2;
    b->state = BOT_POLLING;
    poll_next(b);
}

static void lease_renew(tg_bot_t *b)
{
    char account[32], seconds[32];
    snprintf(account, sizeof account, "%lld", (long long)b->account);
    snprintf(seconds, sizeof seconds, "%d", lease_seconds(b));
    const char *params[3] = {account, b->owner, seconds};
    q_submit(b, "parley_bot_lease_take",
             "SELECT parley_bot_lease_take($1::bigint, $2::text, $3::integer)", 3, params,
             lease_done);
}

/* The next step: identify the bot, or poll. */
static void poll_next(tg_bot_t *b)
{
    /* Staged batches left by a previous run; after a failed apply, its own
     * timer (or the next batch staged) retries. */
    if (!uv_is_active((uv_handle_t *)&b->apply_timer))
        apply_next(b);
    if (b->state == BOT_CLOSING || b->req_busy || b->q_busy)
        return;
    if (!b->want_realtime) {
        b->state = BOT_STOPPED;
        return;
    }
    if (b->account == 0) {
        b->state = BOT_STARTING;
        start_request(b, "getMe", NULL, me_done);
        return;
    }
    if (b->lock == NULL && lock_start(b) != 0)
        return;
    if (!pg_lock_held(b->lock)) { /* lock_changed polls once it is ours */
        b->state = BOT_STANDBY;
        return;
    }
    if (uv_now(b->loop) >= b->lease_until) {
        lease_renew(b);
        return;
    }
    if (b->pending >= TG_BOT_STAGED_MAX) { /* apply_done polls once they drain */
        b->state = BOT_POLLING;
        return;
    }
    b->state = BOT_POLLING;
    char body[512];
    snprintf(body, sizeof body,
             "{\"offset\":%lld,\"timeout\":%d,\"allowed_updates\":[\"message\",\"edited_message\","
             "\"channel_post\",\"edited_channel_post\",\"message_reaction\",\"my_chat_member\","
             "\"chat_member\"]}",
             (long long)b->offset, b->poll_timeout_s);
    b->req_body = strdup(body);
    start_request(b, "getUpdates", b->req_body, updates_done);
}

/* ---- lifecycle -------------------------------------------------------------------- */

int tg_bot_start(uv_loop_t *loop, net_client_t *net, pg_pool_t *rw, const tg_bot_config_t *cfg,
                 tg_bot_t **out, char *err, size_t errcap)
{
    if (cfg->token == NULL || strlen(cfg->token) < 8 || strlen(cfg->token) >= 256 ||
        strpbrk(cfg->token, "/?# ") != NULL) {
        snprintf(err, errcap, "telegram_bot_token does not look like a bot token (ID:SECRET)");
        return UV_EINVAL;
    }
    tg_bot_t *b = calloc(1, sizeof *b);
    if (b == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    b->loop = loop;
    b->net = net;
    b->rw = rw;
    snprintf(b->token, sizeof b->token, "%s", cfg->token);
    snprintf(b->api_url, sizeof b->api_url, "%s",
             cfg->api_url && cfg->api_url[0] ? cfg->api_url : TG_BOT_DEFAULT_API_URL);
    size_t n = strlen(b->api_url);
    while (n > 0 && b->api_url[n - 1] == '/')
        b->api_url[--n] = '\0';
    b->poll_timeout_s = cfg->poll_timeout_s > 0 ? cfg->poll_timeout_s : TG_BOT_POLL_TIMEOUT_S;
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    snprintf(b->owner, sizeof b->owner, "%s:%d", host, (int)getpid());
    b->want_realtime = cfg->realtime;
    b->connect_timeout_ms = cfg->connect_timeout_ms;
    if (cfg->conninfo == NULL || pg_conninfo_copy(&b->conninfo, cfg->conninfo) != 0) {
        snprintf(err, errcap, "the Bot API poller needs the database's conninfo");
        free(b);
        return UV_EINVAL;
    }
    b->last_by_chat = json_object();
    queue_init(&b->sends);
    queue_init(&b->calls);
    uv_timer_init(loop, &b->timer);
    uv_timer_init(loop, &b->send_timer);
    uv_timer_init(loop, &b->apply_timer);
    b->timer.data = b->send_timer.data = b->apply_timer.data = b;
    b->handles = 3;
    if (cfg->media_root) {
        tg_media_config_t mc = {.api_url = b->api_url,
                                .token = b->token,
                                .media_root = cfg->media_root,
                                .max_bytes = cfg->file_limit,
                                .stall_ms = cfg->media_stall_ms,
                                .retry_max_ms = cfg->media_retry_max_ms,
                                .owner = cfg->owner};
        if (tg_media_new(loop, net, rw, &mc, &b->media) == 0)
            b->media_open = true;
    }
    *out = b;
    poll_next(b);
    return 0;
}

void tg_bot_set_realtime(tg_bot_t *b, bool on)
{
    if (b->state == BOT_CLOSING)
        return;
    b->want_realtime = on;
    if (on) {
        if (b->state == BOT_STOPPED || b->state == BOT_BACKOFF || b->state == BOT_STANDBY) {
            uv_timer_stop(&b->timer);
            b->state = BOT_STARTING;
            poll_next(b);
        }
    } else if (b->req_busy && b->state == BOT_POLLING) {
        net_request_cancel(&b->req); /* poll_next then sees want_realtime off */
    }
}

bool tg_bot_realtime(const tg_bot_t *b)
{
    return b->want_realtime && b->state != BOT_CLOSING;
}

int64_t tg_bot_account(const tg_bot_t *b)
{
    return b ? b->account : 0;
}

const char *tg_bot_state(const tg_bot_t *b)
{
    if (b->detail && b->state == BOT_BACKOFF)
        return b->detail;
    static const char *const names[] = {"starting", "polling", "backoff",
                                        "stopped",  "closing", "standby"};
    return names[b->state];
}

void tg_bot_stats(const tg_bot_t *b, tg_bot_stats_t *out)
{
    out->updates_applied = b->applied;
    out->sends_queued = b->nsends;
    out->media_active = b->media ? tg_media_active(b->media) : 0;
    out->media_stored = b->media ? tg_media_stored(b->media) : 0;
    out->media_failed_upstream = b->media ? tg_media_failures(b->media, false) : 0;
    out->media_failed_store = b->media ? tg_media_failures(b->media, true) : 0;
}

tg_media_t *tg_bot_media(const tg_bot_t *b)
{
    return b->media;
}

uint64_t tg_bot_updates_applied(const tg_bot_t *b)
{
    return b->applied;
}

static void handle_closed(uv_handle_t *h)
{
    tg_bot_t *b = h->data;
    b->handles--;
    tg_bot__maybe_closed(b);
}

static void media_closed(void *data)
{
    tg_bot_t *b = data;
    b->media_open = false;
    b->media = NULL;
    tg_bot__maybe_closed(b);
}

static void released(void *data, int status, const char *value, const char *sqlstate,
                     const char *error)
{
    tg_bot_t *b = data;
    (void)status;
    (void)value;
    (void)sqlstate;
    (void)error;
    b->releasing = false;
    tg_bot__maybe_closed(b);
}

/* Gives the poller lease back at a clean stop, so another daemon (or this
 * one restarted) takes over at once. Called once nothing else is in
 * flight: a renewal still running could otherwise re-create it. */
static void release_lease(tg_bot_t *b)
{
    if (b->lease_until == 0 || b->account == 0)
        return;
    b->lease_until = 0;
    char account[32];
    snprintf(account, sizeof account, "%lld", (long long)b->account);
    const char *params[2] = {account, b->owner};
    if (pg_pool_call(b->rw, NULL, "SELECT parley_bot_lease_release($1::bigint, $2::text)", 2,
                     params, released, b, NULL) == 0)
        b->releasing = true;
}

static void lock_closed(void *data)
{
    tg_bot_t *b = data;
    b->lock_open = false;
    b->lock = NULL;
    tg_bot__maybe_closed(b);
}

void tg_bot__maybe_closed(tg_bot_t *b)
{
    if (b->state != BOT_CLOSING || b->in_close || b->req_busy || b->q_busy || b->a_busy ||
        b->sending != NULL || b->media_open || !queue_empty(&b->calls) || b->releasing)
        return;
    /* Only now, with no renewal in flight that could bring it back. */
    if (!b->released) {
        b->released = true;
        release_lease(b);
        if (b->releasing)
            return;
    }
    if (b->lock_open) { /* closing its connection releases the lock */
        if (!b->lock_closing) {
            b->lock_closing = true;
            pg_lock_close(b->lock, lock_closed, b);
        }
        return;
    }
    if (b->handles == 3 && !uv_is_closing((uv_handle_t *)&b->timer)) {
        uv_close((uv_handle_t *)&b->timer, handle_closed);
        uv_close((uv_handle_t *)&b->send_timer, handle_closed);
        uv_close((uv_handle_t *)&b->apply_timer, handle_closed);
        return;
    }
    if (b->handles > 0)
        return;
    void (*cb)(tg_bot_t *, void *) = b->close_cb;
    void *data = b->close_data;
    json_decref(b->last_by_chat);
    free(b->req_body);
    pg_conninfo_free(&b->conninfo);
    free(b);
    if (cb)
        cb(NULL, data);
}

void tg_bot_close(tg_bot_t *b, void (*cb)(tg_bot_t *b, void *data), void *data)
{
    if (b->state == BOT_CLOSING)
        return;
    b->state = BOT_CLOSING;
    b->close_cb = cb;
    b->close_data = data;
    b->in_close = true; /* cancels below call back at once */
    uv_timer_stop(&b->timer);
    uv_timer_stop(&b->send_timer);
    uv_timer_stop(&b->apply_timer);
    while (!queue_empty(&b->sends)) {
        send_t *s = queue_entry(queue_head(&b->sends), send_t, node);
        queue_remove(&s->node);
        b->nsends--;
        tg_bot__send_end(s, UV_ECANCELED, NULL, "the daemon is stopping");
    }
    if (b->req_busy)
        net_request_cancel(&b->req);
    if (b->sending != NULL)
        net_request_cancel(&b->sreq);
    if (b->media)
        tg_media_close(b->media, media_closed, b);
    for (queue_node_t *n = b->calls.next; n != &b->calls;) {
        call_t *c = queue_entry(n, call_t, node);
        n = n->next;
        net_request_cancel(&c->req); /* calls back at once */
    }
    b->in_close = false;
    tg_bot__maybe_closed(b);
}

void tg_bot_metrics(const tg_bot_t *b, buf_t *out)
{
    tg_bot_stats_t bs;
    tg_bot_stats(b, &bs);
    prom_text_counter(out, "parley_telegram_updates_applied_total", "Bot API updates applied.",
                      bs.updates_applied);
    prom_text_gauge(out, "parley_telegram_send_queue", "Messages and files waiting to be sent.",
                    bs.sends_queued);
    prom_text_gauge(out, "parley_media_downloads_active", "Media downloads in flight.",
                    bs.media_active);
    prom_text_counter(out, "parley_media_downloads_total", "Files downloaded into the store.",
                      bs.media_stored);
    prom_text_family(out, "parley_media_download_failures_total", PROM_TEXT_COUNTER,
                     "Failed download attempts (each retried), by where they failed.");
    prom_text_uint(out, "parley_media_download_failures_total", PROM_LABELS("reason", "upstream"),
                   bs.media_failed_upstream);
    prom_text_uint(out, "parley_media_download_failures_total", PROM_LABELS("reason", "store"),
                   bs.media_failed_store);
}
