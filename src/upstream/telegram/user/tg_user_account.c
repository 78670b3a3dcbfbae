/* tg_user_account: one Telegram user account while serving (see
 * tg_user_internal.h). Its life:
 *
 *   STANDBY   asks for the advisory lock "telegram_user:NAME" (db/lock.h):
 *             one daemon on the database runs the account's TDLib client;
 *             another stands by and takes over within PG_LOCK_CHECK_MS of
 *             the holder's end
 *   STARTING  lock held: a TDLib client on the account's directory signs
 *             in from its database (no question asked: a session that
 *             wants a code is SIGNED_OUT)
 *   LOADING   getMe stored as the account; loadChats on chatListMain until
 *             TDLib answers 404 (every chat arrives as updateNewChat)
 *   READY     live: updates are stored as they come
 *
 * Updates become store operations, queued in order and written in batches
 * by parley_tdu_apply (src/db/sql/telegram/user.sql), one batch at a time,
 * so that an edit never lands before its message nor a deletion before
 * what it deletes. A batch that fails is written again; one that fails
 * TGU_STORE_TRIES times is logged and dropped (TDLib keeps the messages:
 * a backfill job fetches them again). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "upstream/telegram/user/tg_user_internal.h"
#include "util/log.h"

#define TGU_TAG         "telegram"
#define TGU_FLUSH_MS    50
#define TGU_RETRY_MS    1000
#define TGU_RESTART_MS  30000 /* a failed client starts again after this */
#define TGU_STORE_TRIES 5

static void acc_start_client(tgu_account_t *acc);
static void acc_flush(tgu_account_t *acc);
static void acc_maybe_closed(tgu_account_t *acc);

const char *tgu__account_state_word(const tgu_account_t *acc)
{
    static const char *const words[] = {"standby",   "starting", "loadingChats", "ready",
                                        "signedOut", "failed",   "closing",      "closed"};
    return words[acc->state];
}

/* ---- the store queue -------------------------------------------------------------- */

static void acc_schedule(tgu_account_t *acc, uint64_t ms);

static void acc_stored(void *data, int status, const char *value, const char *sqlstate,
                       const char *error)
{
    (void)value;
    (void)sqlstate;
    tgu_account_t *acc = data;
    size_t n = acc->writing ? acc->inflight : 0;
    acc->writing = false;
    if (status != 0 && status != UV_ECANCELED && ++acc->tries < TGU_STORE_TRIES) {
        log_warn(TGU_TAG, "account %s: storing %zu updates: %s (trying again)", acc->session.name,
                 n, error ? error : uv_strerror(status));
        acc_schedule(acc, TGU_RETRY_MS);
        return;
    }
    if (status != 0)
        log_error(TGU_TAG, "account %s: %zu updates not stored: %s", acc->session.name, n,
                  error ? error : uv_strerror(status));
    else
        acc->stored += n;
    acc->tries = 0;
    json_t *rest = json_array();
    for (size_t i = n; i < json_array_size(acc->ops); i++)
        json_array_append(rest, json_array_get(acc->ops, i));
    json_decref(acc->ops);
    acc->ops = rest;
    if (json_array_size(acc->ops) > 0)
        acc_schedule(acc, 0);
    acc_maybe_closed(acc);
}

static void acc_flush(tgu_account_t *acc)
{
    size_t total = json_array_size(acc->ops);
    if (acc->writing || acc->account_id == 0 || total == 0)
        return;
    size_t n = total < TGU_STORE_BATCH ? total : TGU_STORE_BATCH;
    json_t *batch = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append(batch, json_array_get(acc->ops, i));
    char *text = json_dumps(batch, JSON_COMPACT);
    json_decref(batch);
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)acc->account_id);
    const char *p[] = {id, text};
    acc->writing = true;
    acc->inflight = n;
    int rc = text ? pg_pool_call(acc->u->rw, NULL, "SELECT parley_tdu_apply($1::bigint, $2::jsonb)",
                                 2, p, acc_stored, acc, NULL)
                  : UV_ENOMEM;
    free(text);
    if (rc != 0) {
        acc->writing = false;
        acc_schedule(acc, TGU_RETRY_MS);
    }
}

void tgu__account_store(tgu_account_t *acc, json_t *op)
{
    if (op == NULL)
        return;
    if (json_array_size(acc->ops) >= TGU_STORE_QUEUE_MAX) {
        if (acc->dropped++ % 1000 == 0)
            log_warn(TGU_TAG,
                     "account %s: the store is behind by %d updates; dropping (a "
                     "backfill job fetches them again)",
                     acc->session.name, TGU_STORE_QUEUE_MAX);
        json_decref(op);
        return;
    }
    json_array_append_new(acc->ops, op);
    /* A flush TGU_FLUSH_MS after the first update waiting (a stream of
     * updates must not push it back). */
    if (!acc->writing && !uv_is_active((uv_handle_t *)&acc->timer))
        acc_schedule(acc, TGU_FLUSH_MS);
}

/* One array of one object under key. */
static json_t *op1(const char *op, const char *key, json_t *v)
{
    return json_pack("{s:s, s:[O]}", "op", op, key, v);
}

/* ---- the timer: flushes, restarts ---------------------------------------------------- */

static void acc_on_timer(uv_timer_t *t)
{
    tgu_account_t *acc = t->data;
    if (acc->state == TGU_ACC_FAILED && acc->client == NULL && pg_lock_held(acc->lock)) {
        acc_start_client(acc);
        return;
    }
    acc_flush(acc);
}

static void acc_schedule(tgu_account_t *acc, uint64_t ms)
{
    if (!acc->timer_closed && !uv_is_closing((uv_handle_t *)&acc->timer))
        uv_timer_start(&acc->timer, acc_on_timer, ms, 0);
}

/* ---- answers that become store operations ------------------------------------------------ */

static void got_object(void *data, int status, json_t *reply, const char *op, const char *key)
{
    tgu_account_t *acc = data;
    if (status == 0 && acc->state != TGU_ACC_CLOSED)
        tgu__account_store(acc, op1(op, key, reply));
}

static void got_chat(void *data, int status, json_t *reply)
{
    got_object(data, status, reply, "chats", "chats");
}

static void got_message(void *data, int status, json_t *reply)
{
    got_object(data, status, reply, "messages", "messages");
}

static void fetch(tgu_account_t *acc, const char *type, const char *k1, json_int_t v1,
                  const char *k2, json_int_t v2, tdjson_reply_cb cb)
{
    json_t *rq = k2 ? json_pack("{s:s, s:I, s:I}", "@type", type, k1, v1, k2, v2)
                    : json_pack("{s:s, s:I}", "@type", type, k1, v1);
    if (tdjson_send(acc->client, rq, cb, acc) != 0)
        log_warn(TGU_TAG, "account %s: %s not sent (TDLib busy)", acc->session.name, type);
}

/* ---- sends waiting for their final id -------------------------------------------------- */

static void sends_answer(tgu_account_t *acc, json_int_t old_id, int status, json_t *msg,
                         const char *error)
{
    for (queue_node_t *n = queue_head(&acc->sends); n != &acc->sends; n = n->next) {
        tgu_send_t *s = queue_entry(n, tgu_send_t, node);
        if (s->temp_id != old_id)
            continue;
        queue_remove(&s->node);
        if (status == 0) {
            json_t *out = json_pack(
                "{s:I, s:{s:I}, s:I}", "message_id",
                (json_int_t)(json_integer_value(json_object_get(msg, "id")) >> 20), "chat", "id",
                (json_int_t)s->chat, "date", json_integer_value(json_object_get(msg, "date")));
            char *text = out ? json_dumps(out, JSON_COMPACT) : NULL;
            json_decref(out);
            s->cb(s->data, text ? 0 : UV_ENOMEM, text, text ? NULL : "out of memory");
            free(text);
        } else {
            s->cb(s->data, status, NULL, error);
        }
        free(s);
        return;
    }
}

/* ---- updates ------------------------------------------------------------------------------ */

static const char *type_of(const json_t *o)
{
    const char *t = json_string_value(json_object_get(o, "@type"));
    return t ? t : "";
}

static json_int_t int_of(const json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

static void client_closed(void *data);

static void acc_on_update(tdjson_client_t *c, json_t *u, void *data)
{
    (void)c;
    tgu_account_t *acc = data;
    if (tgu__auth_update(&acc->auth, u)) {
        const char *st = type_of(json_object_get(u, "authorization_state"));
        if (acc->state >= TGU_ACC_LOADING && acc->state <= TGU_ACC_READY &&
            (strcmp(st, "authorizationStateClosed") == 0 ||
             strcmp(st, "authorizationStateLoggingOut") == 0 ||
             strcmp(st, "authorizationStateWaitPhoneNumber") == 0)) {
            acc->state = TGU_ACC_SIGNED_OUT;
            snprintf(acc->error, sizeof acc->error,
                     "the session of account %s ended (signed out elsewhere?); sign in again "
                     "with parleyd login telegram",
                     acc->session.name);
            log_error(TGU_TAG, "%s", acc->error);
            /* The client ends: closed through client_closed (tdjson frees a
             * client that reported Closed right after this callback). */
            tdjson_client_close(acc->client, client_closed, acc);
        }
        return;
    }
    const char *t = type_of(u);
    if (strcmp(t, "updateNewChat") == 0) {
        tgu__account_store(acc, op1("chats", "chats", json_object_get(u, "chat")));
    } else if (strcmp(t, "updateChatTitle") == 0 || strcmp(t, "updateChatReadInbox") == 0 ||
               strcmp(t, "updateChatReadOutbox") == 0) {
        fetch(acc, "getChat", "chat_id", int_of(u, "chat_id"), NULL, 0, got_chat);
    } else if (strcmp(t, "updateUser") == 0) {
        tgu__account_store(acc, op1("users", "users", json_object_get(u, "user")));
    } else if (strcmp(t, "updateNewMessage") == 0) {
        json_t *m = json_object_get(u, "message");
        if (acc->u->realtime && json_object_get(m, "sending_state") == NULL)
            tgu__account_store(acc, op1("messages", "messages", m));
    } else if (strcmp(t, "updateMessageContent") == 0 || strcmp(t, "updateMessageEdited") == 0) {
        if (acc->u->realtime)
            fetch(acc, "getMessage", "chat_id", int_of(u, "chat_id"), "message_id",
                  int_of(u, "message_id"), got_message);
    } else if (strcmp(t, "updateDeleteMessages") == 0) {
        if (json_is_true(json_object_get(u, "is_permanent")) &&
            !json_is_true(json_object_get(u, "from_cache")))
            tgu__account_store(acc, json_pack("{s:s, s:O, s:O, s:b, s:b}", "op", "delete",
                                              "chat_id", json_object_get(u, "chat_id"),
                                              "message_ids", json_object_get(u, "message_ids"),
                                              "is_permanent", 1, "from_cache", 0));
    } else if (strcmp(t, "updateMessageSendSucceeded") == 0) {
        json_t *m = json_object_get(u, "message");
        tgu__account_store(acc, op1("messages", "messages", m));
        sends_answer(acc, int_of(u, "old_message_id"), 0, m, NULL);
    } else if (strcmp(t, "updateFile") == 0) {
        tgu__files_update(acc, json_object_get(u, "file"));
    } else if (strcmp(t, "updateMessageSendFailed") == 0) {
        json_t *e = json_object_get(u, "error");
        sends_answer(acc, int_of(u, "old_message_id"), UV_EPROTO, NULL,
                     tdjson_error_message(e, "Telegram did not take the message"));
    }
}

/* ---- signing in from the database, then the chats ------------------------------------------- */

static void chats_loaded(void *data, int status, json_t *reply)
{
    tgu_account_t *acc = data;
    if (acc->state != TGU_ACC_LOADING)
        return;
    if (status == 0) { /* more to load */
        json_t *rq = json_pack("{s:s, s:{s:s}, s:i}", "@type", "loadChats", "chat_list", "@type",
                               "chatListMain", "limit", TGU_LOAD_CHATS);
        if (tdjson_send(acc->client, rq, chats_loaded, acc) == 0)
            return;
        status = UV_EBUSY;
    }
    if (status != UV_ENOENT)
        log_warn(TGU_TAG, "account %s: loading chats: %s", acc->session.name,
                 tdjson_error_message(reply, uv_strerror(status)));
    acc->state = TGU_ACC_READY;
    log_info(TGU_TAG, "account %s ready: its chats are loaded, updates are stored as they come",
             acc->session.name);
}

/* A step after sign-in failed (acc->error says which): the client closes
 * and starts again after TGU_RESTART_MS (client_closed). */
static void acc_fail(tgu_account_t *acc)
{
    if (acc->state >= TGU_ACC_CLOSING)
        return;
    log_error(TGU_TAG, "account %s: %s; starting it again in %d s", acc->session.name, acc->error,
              TGU_RESTART_MS / 1000);
    acc->state = TGU_ACC_FAILED;
    if (acc->client)
        tdjson_client_close(acc->client, client_closed, acc);
}

static void account_stored(void *data, int status, const char *value, const char *sqlstate,
                           const char *error)
{
    (void)sqlstate;
    tgu_account_t *acc = data;
    if (status != 0) {
        snprintf(acc->error, sizeof acc->error, "storing the account: %s",
                 error ? error : uv_strerror(status));
        acc_fail(acc);
        return;
    }
    /* "id:is_default" */
    char *end = NULL;
    acc->account_id = value ? strtoll(value, &end, 10) : 0;
    acc->is_default = end && strcmp(end, ":true") == 0;
    if (acc->state != TGU_ACC_STARTING)
        return;
    acc->state = TGU_ACC_LOADING;
    acc_flush(acc);
    chats_loaded(acc, 0, NULL);
}

static void got_me(void *data, int status, json_t *me)
{
    tgu_account_t *acc = data;
    if (acc->state != TGU_ACC_STARTING)
        return;
    if (status != 0) {
        snprintf(acc->error, sizeof acc->error, "getMe: %s",
                 tdjson_error_message(me, uv_strerror(status)));
        acc_fail(acc);
        return;
    }
    acc->user_id = int_of(me, "id");
    char *mej = json_dumps(me, JSON_COMPACT);
    json_t *extra = json_pack("{s:s, s:s}", "session_path", acc->session.dir, "phone",
                              json_string_value(json_object_get(me, "phone_number")) ?: "");
    char *extraj = json_dumps(extra, JSON_COMPACT);
    json_decref(extra);
    const char *p[] = {acc->session.name, mej, extraj};
    int rc = mej && extraj ? pg_pool_call(acc->u->rw, NULL,
                                          "WITH a AS (SELECT parley_tdu_account($1, $2::jsonb, "
                                          "$3::jsonb, NULL) AS id) SELECT a.id || ':' || "
                                          "ac.is_default FROM a JOIN accounts ac USING (id)",
                                          3, p, account_stored, acc, NULL)
                           : UV_ENOMEM;
    free(mej);
    free(extraj);
    if (rc != 0)
        account_stored(acc, rc, NULL, NULL, "database busy");
}

static void auth_ready(tgu_auth_t *a)
{
    tgu_account_t *acc = a->data;
    if (tdjson_send(acc->client, json_pack("{s:s}", "@type", "getMe"), got_me, acc) != 0)
        got_me(acc, UV_EBUSY, NULL);
}

static void client_closed(void *data)
{
    tgu_account_t *acc = data;
    acc->client = NULL;
    acc->client_closed = true;
    while (!queue_empty(&acc->sends)) {
        tgu_send_t *s = queue_entry(queue_head(&acc->sends), tgu_send_t, node);
        queue_remove(&s->node);
        s->cb(s->data, UV_ECANCELED, NULL, "the Telegram account's client closed");
        free(s);
    }
    if (acc->state == TGU_ACC_CLOSING) {
        acc_flush(acc);
        acc_maybe_closed(acc);
    } else if (acc->state == TGU_ACC_FAILED) {
        acc_schedule(acc, TGU_RESTART_MS);
    } else if (acc->state == TGU_ACC_STANDBY && acc->lock && pg_lock_held(acc->lock)) {
        acc_start_client(acc); /* the lock came back while the client closed */
    }
}

static void auth_failed(tgu_auth_t *a, int status, const char *why)
{
    tgu_account_t *acc = a->data;
    if (acc->state == TGU_ACC_CLOSING)
        return;
    acc->state = status == UV_EACCES ? TGU_ACC_SIGNED_OUT : TGU_ACC_FAILED;
    snprintf(acc->error, sizeof acc->error, "%s%s", why,
             status == UV_EACCES ? "; sign in again with parleyd login telegram" : "");
    log_error(TGU_TAG, "account %s: %s", acc->session.name, acc->error);
    if (acc->client)
        tdjson_client_close(acc->client, client_closed, acc);
}

static void acc_start_client(tgu_account_t *acc)
{
    tgu_t *u = acc->u;
    acc->state = TGU_ACC_STARTING;
    acc->error[0] = '\0';
    acc->client_closed = false;
    if (tdjson_client_new(u->td, u->td_timeout_ms, acc_on_update, acc, &acc->client) != 0) {
        acc->state = TGU_ACC_FAILED;
        snprintf(acc->error, sizeof acc->error, "out of memory");
        acc->client_closed = true;
        return;
    }
    acc->auth = (tgu_auth_t){.client = acc->client,
                             .session = &acc->session,
                             .api_id = u->api_id,
                             .api_hash = u->api_hash,
                             .ready = auth_ready,
                             .failed = auth_failed,
                             .data = acc};
    /* TDLib makes the client at its first request; the states follow. */
    json_t *rq = json_pack("{s:s, s:s}", "@type", "getOption", "name", "version");
    if (tdjson_send(acc->client, rq, NULL, NULL) != 0)
        auth_failed(&acc->auth, UV_EIO, "TDLib did not take a request");
}

static void acc_lock_cb(pg_lock_t *l, bool held)
{
    tgu_account_t *acc = pg_lock_data(l);
    if (acc->state == TGU_ACC_CLOSING || acc->state == TGU_ACC_CLOSED)
        return;
    if (held && acc->client == NULL) {
        log_info(TGU_TAG, "account %s: this daemon runs it", acc->session.name);
        acc_start_client(acc);
    } else if (!held && acc->client != NULL) {
        log_warn(TGU_TAG, "account %s: lost its lock; standing by", acc->session.name);
        acc->state = TGU_ACC_STANDBY;
        tdjson_client_close(acc->client, client_closed, acc);
    } else if (!held) {
        acc->state = TGU_ACC_STANDBY;
    }
}

static tgu_account_t *acc_new(tgu_t *u)
{
    tgu_account_t *acc = calloc(1, sizeof *acc);
    if (acc == NULL)
        return NULL;
    acc->u = u;
    acc->ops = json_array();
    acc->client_closed = true;
    queue_init(&acc->sends);
    return acc;
}

static int acc_begin(tgu_account_t *acc, char *err, size_t errcap);

int tgu__account_start(tgu_t *u, const char *name, tgu_account_t **out, char *err, size_t errcap)
{
    tgu_account_t *acc = acc_new(u);
    if (acc == NULL)
        return UV_ENOMEM;
    *out = acc;
    int rc = tgu__session_open(u->data_dir, &u->cred, name, false, &acc->session, err, errcap);
    return rc != 0 ? rc : acc_begin(acc, err, errcap);
}

int tgu__account_run(tgu_t *u, const tgu_session_t *session, tgu_account_t **out, char *err,
                     size_t errcap)
{
    tgu_account_t *acc = acc_new(u);
    if (acc == NULL)
        return UV_ENOMEM;
    *out = acc;
    acc->session = *session;
    return acc_begin(acc, err, errcap);
}

/* Asks for the account's advisory lock; its callback starts the client. */
static int acc_begin(tgu_account_t *acc, char *err, size_t errcap)
{
    tgu_t *u = acc->u;
    char key[TGU_NAME_MAX + 16];
    snprintf(key, sizeof key, "telegram_user:%s", acc->session.name);
    int rc = pg_lock_start(u->loop, u->conninfo, key, u->connect_timeout_ms, acc_lock_cb, acc,
                           &acc->lock, err, errcap);
    if (rc != 0)
        return rc;
    uv_timer_init(u->loop, &acc->timer);
    acc->timer.data = acc;
    acc->timer_started = true;
    return 0;
}

bool tgu__account_restart(tgu_account_t *acc)
{
    if (acc->state != TGU_ACC_SIGNED_OUT || acc->client != NULL || !acc->client_closed ||
        !pg_lock_held(acc->lock))
        return false;
    log_info(TGU_TAG, "account %s: signed in again; starting it", acc->session.name);
    acc_start_client(acc);
    return true;
}

/* ---- closing: the client, a last flush, then the lock and the timer ------------------------- */

static void lock_closed(void *data)
{
    tgu_account_t *acc = data;
    acc->lock_done = true;
    acc_maybe_closed(acc);
}

static void timer_closed(uv_handle_t *h)
{
    tgu_account_t *acc = h->data;
    acc->timer_closed = true;
    acc_maybe_closed(acc);
}

static void acc_maybe_closed(tgu_account_t *acc)
{
    if (acc->state != TGU_ACC_CLOSING || !acc->client_closed || acc->writing)
        return;
    if (json_array_size(acc->ops) > 0 && acc->account_id != 0 && acc->tries == 0) {
        acc_flush(acc);
        if (acc->writing)
            return;
    }
    if (acc->lock) {
        pg_lock_t *l = acc->lock;
        acc->lock = NULL;
        acc->lock_closing = true;
        pg_lock_close(l, lock_closed, acc);
        return;
    }
    if (acc->lock_closing && !acc->lock_done)
        return;
    if (acc->timer_started && !acc->timer_closed) {
        if (!uv_is_closing((uv_handle_t *)&acc->timer))
            uv_close((uv_handle_t *)&acc->timer, timer_closed);
        return;
    }
    acc->state = TGU_ACC_CLOSED;
    if (acc->closed_cb)
        acc->closed_cb(acc->closed_data);
}

void tgu__account_close(tgu_account_t *acc, void (*cb)(void *data), void *data)
{
    acc->closed_cb = cb;
    acc->closed_data = data;
    acc->state = TGU_ACC_CLOSING;
    if (acc->client)
        tdjson_client_close(acc->client, client_closed, acc);
    acc_maybe_closed(acc);
}

int tgu__account_send(tgu_account_t *acc, json_t *request, tdjson_reply_cb cb, void *data)
{
    if (acc == NULL || acc->client == NULL || acc->state < TGU_ACC_LOADING ||
        acc->state > TGU_ACC_READY) {
        json_decref(request);
        return UV_ENOTCONN;
    }
    return tdjson_send(acc->client, request, cb, data);
}
