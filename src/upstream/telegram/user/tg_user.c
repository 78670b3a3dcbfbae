/* tg_user: the Telegram user-account connector (see tg_user.h): its
 * definition for the entry (wanted, open, close, free, login), its shared
 * part (capabilities, why not, state) and its verbs (sending, realtime).
 * One TDLib library per process (tdjson_t) serves every account. */
#include "upstream/telegram/user/tg_user.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "upstream/telegram/user/tg_user_internal.h"
#include "util/dirs.h"
#include "util/log.h"
#include "util/prom_text.h"

#define TGU_CAPS                                                                                   \
    (CONNECTOR_CAN_SEND | CONNECTOR_CAN_READ_HISTORY | CONNECTOR_CAN_REALTIME |                    \
     CONNECTOR_CAN_CHAT_INFO | CONNECTOR_CAN_ADMINISTER | CONNECTOR_CAN_JOIN_CHATS |               \
     CONNECTOR_CAN_ADD_MEMBERS | CONNECTOR_CAN_SEARCH_DIALOGS | CONNECTOR_CAN_DOWNLOAD)
#define TGU_KEY_FILE "credentials.key"
/* parleyd login telegram, while it waits on Telegram (never on its user):
 * a line every TGU_LOGIN_PROGRESS_MS saying what for and how TDLib's
 * connection stands; after TGU_LOGIN_REACH_MS without an answer and
 * without a connection, the login fails saying Telegram cannot be
 * reached (connected, it waits on up to telegram_td_timeout_s). */
#define TGU_LOGIN_PROGRESS_MS 5000
#define TGU_LOGIN_REACH_MS    10000

/* ---- accounts ----------------------------------------------------------------------- */

static bool serving(const tgu_account_t *acc)
{
    return acc && (acc->state == TGU_ACC_LOADING || acc->state == TGU_ACC_READY);
}

tgu_account_t *tgu__default(tgu_t *u)
{
    for (int i = 0; i < u->naccounts; i++)
        if (serving(u->accounts[i]) && u->accounts[i]->is_default)
            return u->accounts[i];
    for (int i = 0; i < u->naccounts; i++)
        if (serving(u->accounts[i]))
            return u->accounts[i];
    return NULL;
}

tgu_account_t *tgu__by_id(tgu_t *u, int64_t id)
{
    for (int i = 0; i < u->naccounts; i++)
        if (serving(u->accounts[i]) && u->accounts[i]->account_id == id)
            return u->accounts[i];
    return id == 0 ? tgu__default(u) : NULL;
}

/* ---- the shared part ------------------------------------------------------------------ */

static unsigned tu_caps(void *impl)
{
    tgu_t *u = impl;
    if (u->td == NULL || u->td_closed)
        return 0;
    /* Signing in while serving: tg_user_login.c. */
    return CONNECTOR_CAN_LOGIN | (u->naccounts > 0 ? TGU_CAPS : 0);
}

static const char *tu_why_not(void *impl, connector_cap_t cap)
{
    tgu_t *u = impl;
    (void)cap;
    if (u->td == NULL || u->td_closed)
        return "TDLib (libtdjson) is not loaded, so no Telegram user account can serve: see "
               "parleyd's log, and the telegram_tdjson setting.";
    if (u->naccounts == 0)
        return "No Telegram user account is signed in; sign one in with parleyd login telegram "
               "--phone +NNN.";
    return "A Telegram user account cannot do that through parley yet.";
}

static const char *tu_state(void *impl)
{
    tgu_t *u = impl;
    tgu_account_t *acc = u->naccounts ? u->accounts[0] : NULL;
    if (acc == NULL)
        return "no account";
    snprintf(u->state_buf, sizeof u->state_buf, "user %s: %s", acc->session.name,
             tgu__account_state_word(acc));
    return u->state_buf;
}

static const char *tu_account_json(void *impl)
{
    tgu_t *u = impl;
    tgu_account_t *acc = tgu__default(u);
    if (acc == NULL && u->naccounts > 0)
        acc = u->accounts[0];
    json_t *o = acc ? json_pack("{s:s, s:s, s:s}", "account", acc->session.name, "state",
                                tgu__account_state_word(acc), "error", acc->error)
                    : json_pack("{s:s}", "state", "no account");
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    snprintf(u->account_buf, sizeof u->account_buf, "%s", text ? text : "{}");
    free(text);
    return u->account_buf;
}

/* Accounts by state, updates waiting for the store, updates stored and
 * dropped. */
static void tu_metrics(void *impl, struct buf_s *out)
{
    tgu_t *u = impl;
    size_t queued = 0;
    unsigned long long stored = 0, dropped = 0;
    int ready = 0;
    for (int i = 0; i < u->naccounts; i++) {
        const tgu_account_t *acc = u->accounts[i];
        queued += json_array_size(acc->ops);
        stored += acc->stored;
        dropped += acc->dropped;
        ready += serving(acc);
    }
    prom_text_family(out, "parley_telegram_user_accounts", PROM_TEXT_GAUGE,
                     "Telegram user accounts signed in here, and those this daemon runs now.");
    prom_text_int(out, "parley_telegram_user_accounts", PROM_LABELS("state", "signed_in"),
                  u->naccounts);
    prom_text_int(out, "parley_telegram_user_accounts", PROM_LABELS("state", "running"), ready);
    prom_text_gauge(out, "parley_telegram_user_store_queue", "TDLib updates waiting to be stored.",
                    (long long)queued);
    prom_text_counter(out, "parley_telegram_user_updates_stored_total", "TDLib updates stored.",
                      stored);
    prom_text_counter(out, "parley_telegram_user_updates_dropped_total",
                      "TDLib updates dropped because the store was too far behind.", dropped);
}

static bool tu_serves_account(void *impl, int64_t account_id)
{
    return tgu__by_id(impl, account_id) != NULL;
}

static int tu_job_classes(void *impl, const sync_class_t **classes)
{
    tgu_t *u = impl;
    *classes = u->classes;
    return 1;
}

/* ---- verbs ------------------------------------------------------------------------------ */

static bool tu_realtime(void *impl)
{
    tgu_t *u = impl;
    return u->realtime && tgu__default(u) != NULL;
}

static void tu_set_realtime(void *impl, bool on)
{
    ((tgu_t *)impl)->realtime = on;
}

void tgu__sent_pending(void *data, int status, json_t *reply)
{
    tgu_send_t *s = data;
    tgu_account_t *acc = s->acc;
    if (status != 0) {
        s->cb(s->data, status, NULL, tdjson_error_message(reply, uv_strerror(status)));
        free(s);
        return;
    }
    /* The message as TDLib keeps it until the server gave its id
     * (updateMessageSendSucceeded, tg_user_account.c). */
    s->temp_id = json_integer_value(json_object_get(reply, "id"));
    if (json_object_get(reply, "sending_state") == NULL) { /* already final */
        tgu__account_store(acc, json_pack("{s:s, s:[O]}", "op", "messages", "messages", reply));
        json_t *out = json_pack("{s:I, s:{s:I}, s:I}", "message_id", s->temp_id >> 20, "chat", "id",
                                (json_int_t)s->chat, "date",
                                json_integer_value(json_object_get(reply, "date")));
        char *text = json_dumps(out, JSON_COMPACT);
        json_decref(out);
        s->cb(s->data, 0, text, NULL);
        free(text);
        free(s);
        return;
    }
    queue_push_tail(&acc->sends, &s->node);
}

static int tu_send_text(void *impl, int64_t chat, const char *text, int64_t topic, int64_t reply_to,
                        connector_cb cb, void *data)
{
    tgu_t *u = impl;
    tgu_account_t *acc = tgu__default(u);
    if (acc == NULL)
        return UV_ENOTCONN;
    tgu_send_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return UV_ENOMEM;
    *s = (tgu_send_t){.acc = acc, .chat = chat, .cb = cb, .data = data};
    queue_init(&s->node);
    json_t *rq = json_pack(
        "{s:s, s:I, s:I, s:{s:s, s:{s:s, s:s}}}", "@type", "sendMessage", "chat_id",
        (json_int_t)chat, "message_thread_id", (json_int_t)(topic << 20), "input_message_content",
        "@type", "inputMessageText", "text", "@type", "formattedText", "text", text ? text : "");
    if (rq && reply_to)
        json_object_set_new(rq, "reply_to",
                            json_pack("{s:s, s:I}", "@type", "inputMessageReplyToMessage",
                                      "message_id", (json_int_t)(reply_to << 20)));
    int rc = tgu__account_send(acc, rq, tgu__sent_pending, s);
    if (rc != 0)
        free(s);
    return rc;
}

static const connector_chat_ops_t tu_chat_ops = {
    .realtime = tu_realtime,
    .set_realtime = tu_set_realtime,
    .send_text = tu_send_text,
    .chat_info = tgu__chat_info, /* these: tg_user_admin.c */
    .rename = tgu__rename,
    .invite_link = tgu__invite_link,
    .remove_member = tgu__remove_member,
    .leave = tgu__leave,
    .join = tgu__join,
    .add_members = tgu__add_members,
    .search_dialogs = tgu__live_search_dialogs,
    .search_messages = tgu__live_search_messages,
    .history = tgu__live_history,
    .get_message = tgu__live_get_message,
    .send_file = tgu__send_file,
    .fetch_media = tgu__fetch_media,
    .fetch_cancel = tgu__fetch_cancel,
};

static const connector_ops_t tu_ops = {
    .caps = tu_caps,
    .why_not = tu_why_not,
    .state = tu_state,
    .job_classes = tu_job_classes,
    .account_json = tu_account_json,
    .serves_account = tu_serves_account,
    .metrics = tu_metrics,
    .chat = &tu_chat_ops,
    .accounts = &tgu__accounts_ops,
};

/* ---- the definition ---------------------------------------------------------------------- */

/* Runs with a signed-in account, or to sign one in while serving when a
 * selected toolset logs accounts in and the application is set. */
static bool def_wanted(const connector_env_t *env)
{
    char names[1][TGU_NAME_MAX], hash[64];
    if (tgu__session_list(env->data_dir, names, 1) > 0)
        return true;
    return (env->caps_wanted & CONNECTOR_CAN_LOGIN) != 0 &&
           connector_env_int(env, "telegram_api_id") > 0 &&
           connector_env_text(env, "telegram_api_hash", hash, sizeof hash)[0] != '\0';
}

/* The parts open and login share: settings, the credentials key, TDLib. */
static int tu_new(const connector_env_t *env, tgu_t **out, char *err, size_t errcap)
{
    tgu_t *u = calloc(1, sizeof *u);
    if (u == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    *out = u;
    u->conn = (connector_t){.name = "telegram_user", .ops = &tu_ops, .impl = u};
    u->loop = env->loop;
    u->rw = env->rw;
    u->conninfo = env->conninfo;
    u->realtime = true;
    queue_init(&u->fetches);
    snprintf(u->owner, sizeof u->owner, "%s", env->owner ? env->owner : "");
    snprintf(u->data_dir, sizeof u->data_dir, "%s", env->data_dir);
    u->connect_timeout_ms = (uint32_t)connector_env_int(env, "db_connect_timeout_ms");
    u->api_id = connector_env_int(env, "telegram_api_id");
    connector_env_text(env, "telegram_api_hash", u->api_hash, sizeof u->api_hash);
    u->td_timeout_ms = (uint32_t)connector_env_int(env, "telegram_td_timeout_s") * 1000;
    long jobs = connector_env_int(env, "telegram_history_jobs");
    u->classes[0] = (sync_class_t){.name = "telegram.history",
                                   .concurrency = jobs > 0 ? (int)jobs : TGU_HISTORY_JOBS,
                                   .exec = tgu__history_exec,
                                   .ctx = u};
    if (u->api_id <= 0 || u->api_hash[0] == '\0') {
        snprintf(err, errcap,
                 "a Telegram user account needs telegram_api_id and telegram_api_hash (your "
                 "application's, from my.telegram.org)");
        return UV_EINVAL;
    }
    char key_path[TGU_PATH_MAX + 32], lib[TGU_PATH_MAX];
    snprintf(key_path, sizeof key_path, "%s/%s", env->data_dir, TGU_KEY_FILE);
    int rc = dirs_make(env->data_dir, err, errcap);
    if (rc == 0)
        rc = sealed_key_load(key_path, &u->cred, err, errcap);
    if (rc != 0)
        return rc;
    connector_env_text(env, "telegram_tdjson", lib, sizeof lib);
    rc = tdjson_open(env->loop, lib, &u->td, err, errcap);
    if (rc != 0 && u->td == NULL)
        u->td_closed = true; /* nothing on the loop */
    return rc;
}

static int def_open(const connector_env_t *env, void **obj, connector_t **conn, char *err,
                    size_t errcap)
{
    tgu_t *u = NULL;
    char names[TGU_ACCOUNTS_MAX][TGU_NAME_MAX];
    int n = tgu__session_list(env->data_dir, names, TGU_ACCOUNTS_MAX);
    int rc = tu_new(env, &u, err, errcap);
    *obj = u;
    if (rc != 0 && n == 0 && u != NULL && u->td == NULL) {
        /* Only there to sign in: parleyd serves without it. */
        log_warn("telegram", "no Telegram user account can sign in: %s", err);
        u->td_closed = true;
        *conn = &u->conn;
        return 0;
    }
    if (rc != 0)
        return rc;
    char ver[64];
    log_info("telegram", "TDLib %s loaded; %d user account%s signed in",
             tdjson_version(u->td, ver, sizeof ver), n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        char why[512];
        tgu_account_t *acc = NULL;
        rc = tgu__account_start(u, names[i], &acc, why, sizeof why);
        if (rc != 0) {
            log_error("telegram", "account %s: %s", names[i], why);
            if (acc && !acc->timer_started && acc->lock == NULL) {
                json_decref(acc->ops);
                free(acc);
                continue;
            }
        }
        u->accounts[u->naccounts++] = acc;
    }
    *conn = &u->conn;
    return 0;
}

static void td_closed(void *data)
{
    tgu_t *u = data;
    u->td_closed = true;
    if (u->closed_cb)
        u->closed_cb(u->closed_data);
}

static void account_closed(void *data)
{
    tgu_t *u = data;
    if (--u->nclosing > 0)
        return;
    if (u->login)
        return; /* the login's client is closed by login_close */
    if (u->td && !u->td_closed)
        tdjson_close(u->td, td_closed, u);
    else
        td_closed(u);
}

static void login_client_closed(void *data);

static void def_close(void *obj, void (*cb)(void *data), void *data)
{
    tgu_t *u = obj;
    u->closed_cb = cb;
    u->closed_data = data;
    if (u->login_timer_init) {
        /* u outlives the loop (def_free): no callback needed. */
        u->login_timer_init = false;
        uv_close((uv_handle_t *)&u->login_timer, NULL);
    }
    if (u->login && u->login_client) {
        if (u->login_log_out)
            tdjson_client_log_out(u->login_client, login_client_closed, u);
        else
            tdjson_client_close(u->login_client, login_client_closed, u);
        return;
    }
    /* the accounts, a sign-in in progress, the files' work, and this call */
    u->nclosing = u->naccounts + 3;
    if (!tgu__signin_close(u, account_closed, u))
        u->nclosing--;
    for (int i = 0; i < u->naccounts; i++)
        tgu__account_close(u->accounts[i], account_closed, u);
    u->login = false;
    tgu__files_close(u, account_closed);
    account_closed(u);
}

static void def_free(void *obj)
{
    tgu_t *u = obj;
    if (u == NULL)
        return;
    for (int i = 0; i < u->naccounts; i++) {
        tgu__session_wipe(&u->accounts[i]->session);
        json_decref(u->accounts[i]->ops);
        free(u->accounts[i]);
    }
    /* parleyd login telegram that did not succeed leaves no directory
     * (TDLib's client and thread are gone by now; not serving). */
    (void)tgu__session_discard(&u->login_session);
    tgu__session_wipe(&u->login_session);
    sealed_key_wipe(&u->cred);
    tdjson_free(u->td);
    memset(u->api_hash, 0, sizeof u->api_hash);
    free(u);
}

/* ---- parleyd login telegram ------------------------------------------------------------- */

static void login_client_closed(void *data)
{
    tgu_t *u = data;
    u->login_client = NULL;
    u->login = false;
    if (u->td && !u->td_closed)
        tdjson_close(u->td, td_closed, u);
    else
        td_closed(u);
}

/* TDLib's connection state in words, and whether it is connected. */
static const char *connection_words(const char *state, bool *connected)
{
    static const struct {
        const char *state, *words;
        bool connected;
    } w[] = {
        {"connectionStateWaitingForNetwork", "TDLib waits for a network", false},
        {"connectionStateConnectingToProxy", "connecting to the proxy", false},
        {"connectionStateConnecting", "connecting to Telegram's servers", false},
        {"connectionStateUpdating", "connected, updating", true},
        {"connectionStateReady", "connected", true},
    };
    for (size_t i = 0; state && i < sizeof w / sizeof w[0]; i++)
        if (strcmp(state, w[i].state) == 0) {
            *connected = w[i].connected;
            return w[i].words;
        }
    return NULL;
}

bool tgu__reach_update(tgu_t *u, const json_t *update)
{
    if (strcmp(json_string_value(json_object_get(update, "@type")) ?: "",
               "updateConnectionState") != 0)
        return false;
    const char *st = json_string_value(json_object_get(json_object_get(update, "state"), "@type"));
    const char *words = connection_words(st, &u->login_connected);
    if (words)
        u->login_connection = words;
    return true;
}

void tgu__reach_reset(tgu_t *u)
{
    tgu__reach_over(u);
    u->login_connection = NULL;
    u->login_connected = false;
}

static void login_end(tgu_t *u, int status, const char *message);

static void login_wait_tick(uv_timer_t *t)
{
    tgu_t *u = t->data;
    uint64_t waited = uv_now(u->loop) - u->login_wait_since;
    const char *conn =
        u->login_connection ? u->login_connection : "TDLib has reported no connection yet";
    if (waited >= TGU_LOGIN_REACH_MS && !u->login_connected) {
        char why[512];
        snprintf(why, sizeof why,
                 "cannot reach Telegram: no answer to the sign-in request (%s) in %llu s, and "
                 "TDLib is not connected (%s); check this machine's network (a firewall, a "
                 "proxy) and sign in again",
                 u->login_waiting, (unsigned long long)(waited / 1000), conn);
        uv_timer_stop(&u->login_timer);
        u->login_unreachable(u, why);
        return;
    }
    log_info("telegram",
             "waiting for Telegram (TDLib) to answer the sign-in request (%s): %llu s; %s",
             u->login_waiting, (unsigned long long)(waited / 1000), conn);
}

/* The command-line login cannot reach Telegram. */
static void login_unreachable(tgu_t *u, const char *why)
{
    login_end(u, UV_ETIMEDOUT, why);
}

void tgu__reach_wait(tgu_t *u, const char *what, void (*unreachable)(tgu_t *u, const char *why))
{
    u->login_unreachable = unreachable;
    if (!u->login_timer_init) {
        if (uv_timer_init(u->loop, &u->login_timer) != 0)
            return; /* no progress lines; the request's own timeout still holds */
        u->login_timer.data = u;
        u->login_timer_init = true;
    }
    u->login_waiting = what;
    u->login_wait_since = uv_now(u->loop);
    uv_timer_start(&u->login_timer, login_wait_tick, TGU_LOGIN_PROGRESS_MS, TGU_LOGIN_PROGRESS_MS);
}

/* The login waits on Telegram for what (a request is out). */
static void login_wait(tgu_t *u, const char *what)
{
    tgu__reach_wait(u, what, login_unreachable);
}

void tgu__reach_over(tgu_t *u)
{
    if (u->login_timer_init)
        uv_timer_stop(&u->login_timer);
}

static void login_wait_over(tgu_t *u)
{
    tgu__reach_over(u);
}

static void login_end(tgu_t *u, int status, const char *message)
{
    login_wait_over(u);
    if (u->login_done == NULL)
        return;
    connector_login_cb done = u->login_done;
    u->login_done = NULL;
    done(u->login_data, status, message);
}

static void login_answer(void *adata, const char *line)
{
    tgu_t *u = adata;
    if (line == NULL) {
        login_end(u, UV_ECANCELED, "no answer (end of input)");
        return;
    }
    int rc = tgu__auth_answer(&u->login_auth, u->login_asked, line);
    if (rc != 0) {
        login_end(u, rc, "TDLib did not take the answer");
        return;
    }
    static const char *const what[] = {"the phone number", "the login code", "the password"};
    login_wait(u, what[u->login_asked]);
}

static void login_ask(tgu_auth_t *a, tgu_ask_t what, const char *hint)
{
    tgu_t *u = a->data;
    login_wait_over(u);
    u->login_asked = what;
    char q[256];
    switch (what) {
    case TGU_ASK_PHONE:
        login_answer(u, u->login_phone);
        return;
    case TGU_ASK_CODE:
        hint = hint && hint[0] ? hint : u->login_phone;
        snprintf(q, sizeof q, "The code Telegram sent to %s%s (in the app or by SMS): ",
                 hint[0] == '+' ? "" : "+", hint);
        break;
    default:
        snprintf(q, sizeof q, "The account's password (two-step verification%s%s%s): ",
                 hint && hint[0] ? ", hint: " : "", hint && hint[0] ? hint : "", "");
        break;
    }
    u->login_prompt.ask(u->login_prompt.pdata, q, what == TGU_ASK_PASSWORD, login_answer, u);
}

static void login_failed(tgu_auth_t *a, int status, const char *why)
{
    tgu_t *u = a->data;
    login_end(u, status, why);
}

static void login_stored(void *data, int status, const char *value, const char *sqlstate,
                         const char *error)
{
    (void)value;
    tgu_t *u = data;
    char why[512];
    /* Another account has this Telegram user (parley_tdu_account): the
     * session just made is not kept, so it is logged out at close. */
    if (status != 0 && sqlstate != NULL && strcmp(sqlstate, "23505") == 0)
        u->login_log_out = true;
    if (status != 0) {
        login_end(u, status, error ? error : "storing the account failed");
        return;
    }
    int rc = tgu__session_commit(&u->login_session, why, sizeof why);
    if (rc != 0) {
        login_end(u, rc, why);
        return;
    }
    login_end(u, 0, u->login_line);
}

static void login_me(void *data, int status, json_t *me)
{
    tgu_t *u = data;
    login_wait_over(u);
    if (status != 0) {
        login_end(u, status, tdjson_error_message(me, "getMe failed"));
        return;
    }
    json_t *names = json_object_get(json_object_get(me, "usernames"), "active_usernames");
    const char *first = json_string_value(json_object_get(me, "first_name"));
    const char *last = json_string_value(json_object_get(me, "last_name"));
    const char *un = json_string_value(json_array_get(names, 0));
    snprintf(u->login_line, sizeof u->login_line,
             "signed in as %s%s%s%s%s (user id %lld) as account '%s'; serve runs it from now on",
             first ? first : "", last && last[0] ? " " : "", last ? last : "", un ? ", @" : "",
             un ? un : "", (long long)json_integer_value(json_object_get(me, "id")),
             u->login_session.name);
    char *mej = json_dumps(me, JSON_COMPACT);
    json_t *extra = json_pack("{s:s, s:s}", "session_path", u->login_session.dir, "phone",
                              json_string_value(json_object_get(me, "phone_number")) ?: "");
    char *extraj = json_dumps(extra, JSON_COMPACT);
    json_decref(extra);
    const char *p[] = {u->login_session.name, mej, extraj};
    int rc = mej && extraj ? pg_pool_call(u->rw, NULL,
                                          "SELECT parley_tdu_account($1, $2::jsonb, $3::jsonb, "
                                          "NULL)",
                                          3, p, login_stored, u, NULL)
                           : UV_ENOMEM;
    free(mej);
    free(extraj);
    if (rc != 0)
        login_end(u, rc, "the database is busy");
}

static void login_ready(tgu_auth_t *a)
{
    tgu_t *u = a->data;
    if (tdjson_send(u->login_client, json_pack("{s:s}", "@type", "getMe"), login_me, u) != 0)
        login_end(u, UV_EIO, "TDLib did not take getMe");
    else
        login_wait(u, "the account's profile");
}

static void login_update(tdjson_client_t *c, json_t *update, void *data)
{
    (void)c;
    tgu_t *u = data;
    if (tgu__reach_update(u, update))
        return;
    (void)tgu__auth_update(&u->login_auth, update);
    const char *st =
        json_string_value(json_object_get(json_object_get(update, "authorization_state"), "@type"));
    /* tdjson frees a client that reported Closed right after this call. */
    if (st && strcmp(st, "authorizationStateClosed") == 0)
        u->login_client = NULL;
}

/* The login's settings, before any work (no database, no TDLib): the
 * account's name (or the phone's digits), the phone, the application's
 * id and hash. The name goes to name. */
static int login_settings(const connector_env_t *env, char *name, size_t cap, char *err,
                          size_t errcap)
{
    char phone[32], account[TGU_NAME_MAX], hash[64];
    connector_env_text(env, "phone", phone, sizeof phone);
    connector_env_text(env, "account", account, sizeof account);
    int rc = tgu__session_name(account, phone, name, cap, err, errcap);
    if (rc != 0)
        return rc;
    if (phone[0] == '\0') {
        snprintf(err, errcap, "phone: give the account's phone number (--phone +15551234567)");
        return UV_EINVAL;
    }
    if (connector_env_int(env, "telegram_api_id") <= 0 ||
        connector_env_text(env, "telegram_api_hash", hash, sizeof hash)[0] == '\0') {
        snprintf(err, errcap,
                 "a Telegram user account needs --telegram-api-id and --telegram-api-hash (your "
                 "application's, from my.telegram.org; or TELEGRAM_API_ID and TELEGRAM_API_HASH, "
                 "or the config file)");
        return UV_EINVAL;
    }
    return 0;
}

static int def_login_check(const connector_env_t *env, char *err, size_t errcap)
{
    char name[TGU_NAME_MAX];
    return login_settings(env, name, sizeof name, err, errcap);
}

static int def_login(const connector_env_t *env, const connector_prompt_t *prompt,
                     connector_login_cb done, void *data, void **obj, char *err, size_t errcap)
{
    char phone[32], name[TGU_NAME_MAX];
    connector_env_text(env, "phone", phone, sizeof phone);
    int rc = login_settings(env, name, sizeof name, err, errcap);
    if (rc != 0)
        return rc;
    tgu_t *u = NULL;
    rc = tu_new(env, &u, err, errcap);
    *obj = u;
    if (rc != 0)
        return rc;
    u->login = true;
    rc = tgu__session_open(env->data_dir, &u->cred, name, true, &u->login_session, err, errcap);
    if (rc == 0)
        rc = tdjson_client_new(u->td, u->td_timeout_ms, login_update, u, &u->login_client);
    if (rc != 0) {
        u->login = false;
        return rc; /* the entry closes and frees u: TDLib's thread stops */
    }
    size_t k = 0;
    for (const char *p = phone; *p && k + 1 < sizeof u->login_phone; p++)
        if (*p >= '0' && *p <= '9')
            u->login_phone[k++] = *p;
    u->login_prompt = *prompt;
    u->login_done = done;
    u->login_data = data;
    u->login_auth = (tgu_auth_t){.client = u->login_client,
                                 .session = &u->login_session,
                                 .api_id = u->api_id,
                                 .api_hash = u->api_hash,
                                 .ask = login_ask,
                                 .ready = login_ready,
                                 .failed = login_failed,
                                 .data = u};
    json_t *rq = json_pack("{s:s, s:s}", "@type", "getOption", "name", "version");
    rc = tdjson_send(u->login_client, rq, NULL, NULL);
    if (rc == 0)
        login_wait(u, "TDLib's start");
    return rc;
}

const connector_def_t tg_user_connector_def = {
    .name = "telegram_user",
    .closes_after_jobs = true,
    .wanted = def_wanted,
    .open = def_open,
    .close = def_close,
    .free = def_free,
    .login_name = "telegram",
    .login_requires = "phone",
    .login_check = def_login_check,
    .login = def_login,
};
