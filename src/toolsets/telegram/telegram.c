/* telegram: the toolset's context, its generic handler, and the step from
 * the archive to the connector (see telegram.h and tg_toolset.h). */
#include "toolsets/telegram/telegram.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolsets/sqltool.h"
#include "toolsets/telegram/tg_toolset.h"

/* Tools that need a capability of the connector, and what the model can
 * use when the account lacks it. Without a connector the SQL function
 * says what the archive offers instead. */
static const struct {
    const char *tool;
    connector_cap_t cap;
    const char *instead;
} tg_needs[] = {
    {"channelsSearch", CONNECTOR_CAN_SEARCH_DIALOGS, "channelsList lists the chats seen so far."},
    {"messagesList", CONNECTOR_CAN_READ_HISTORY, "Use source \"archive\"."},
    {"messagesGet", CONNECTOR_CAN_READ_HISTORY, "Use source \"archive\"."},
    {"messagesContext", CONNECTOR_CAN_READ_HISTORY, "Use source \"archive\"."},
    {"messagesSearch", CONNECTOR_CAN_READ_HISTORY, "Use source \"archive\"."},
    {"groupsMembersAdd", CONNECTOR_CAN_ADD_MEMBERS,
     "Share an invite link instead (groupsInviteLinkGet)."},
    {"groupsJoin", CONNECTOR_CAN_JOIN_CHATS, NULL},
};

/* When the tool needs a capability the connector lacks: the refusal. */
static bool refuse_lacking(mcp_call_t *c)
{
    for (size_t i = 0; tg_ts(c)->conn && i < sizeof tg_needs / sizeof tg_needs[0]; i++) {
        if (strcmp(tg_needs[i].tool, c->tool->def->name) != 0)
            continue;
        connector_t *conn = tg_ts_conn(tg_ts(c), tg_needs[i].cap);
        const char *why = connector_why_not(conn, tg_needs[i].cap);
        if (why == NULL)
            return false;
        mcp_call_finish_error(c, "%s%s%s", why, tg_needs[i].instead ? " " : "",
                              tg_needs[i].instead ? tg_needs[i].instead : "");
        return true;
    }
    return false;
}

void tg_ts_fail(mcp_call_t *c, int status, archive_err_t err, const char *message)
{
    (void)status;
    switch (err) {
    case ARCHIVE_ERR_CONNECTOR:
        if (refuse_lacking(c))
            return;
        if (tg_ts(c)->conn != NULL) {
            mcp_call_finish_error(c,
                                  "%s is not available through the Telegram connector yet; the "
                                  "archive tools (channelsList, messagesSearch, groupsInfo, ...) "
                                  "answer from what is stored.",
                                  c->tool->def->name);
            return;
        }
        mcp_call_finish_error(c, "%s", message);
        return;
    default:
        sqltool_fail(c, err, message);
    }
}

void tg_ts_connector_failed(mcp_call_t *c, int status, const char *error)
{
    if (status == UV_EBUSY)
        mcp_call_finish_error(c, "Too many requests are waiting for Telegram; retry in a moment.");
    else if (status == UV_ENOTCONN && error == NULL)
        /* No account serves now: the daemon may still be signing it in from
         * its session (state "starting"), another daemon may run it
         * ("standby"), or it is signed out or failed. */
        mcp_call_finish_error(c,
                              "%s failed: no Telegram account is signed in and serving here now. "
                              "authStatus gives its state: \"starting\" turns \"ready\" within "
                              "seconds (then call it again); another state says what to do.",
                              c->tool->def->name);
    else
        mcp_call_finish_error(c, "%s failed: %s", c->tool->def->name,
                              error ? error : uv_strerror(status));
}

tg_chat_verb_t *tg_ts_chat_verb_new(mcp_call_t *c, json_int_t chat)
{
    tg_chat_verb_t *v = malloc(sizeof *v);
    if (v != NULL)
        *v = (tg_chat_verb_t){.call = c, .chat = chat};
    return v;
}

bool tg_ts_chat_verb_end(void *data, int status, const char *error, mcp_call_t **c,
                         json_int_t *chat)
{
    tg_chat_verb_t *v = data;
    *c = v->call;
    *chat = v->chat;
    free(v);
    if (status == 0)
        return true;
    tg_ts_connector_failed(*c, status, error);
    return false;
}

void tg_ts_finish_obj(mcp_call_t *c, json_t *o)
{
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (text == NULL) {
        mcp_call_finish_error(c, "%s failed: out of memory", c->tool->def->name);
        return;
    }
    mcp_call_finish_json(c, text, strlen(text));
    free(text);
}

/* The functions that read the daemon's state from their context
 * (src/db/sql/telegram/sync.sql): every other one reads the timezone
 * alone, and building the state (the pools' figures, each connector's
 * account, parsed and written again) was a fifth of a database call's
 * instructions (bench/README.md). */
static bool reads_daemon_state(const char *fn)
{
    return strcmp(fn, "parley_tg_server_status") == 0 || strcmp(fn, "parley_tg_auth_status") == 0;
}

bool tg_ts_run(mcp_call_t *c, const char *fn, const char *args_json, archive_call_cb cb, void *data)
{
    tg_toolset_t *ts = tg_ts(c);
    archive_mode_t mode = strcmp(fn, TG_RESOLVE_FN) == 0 ? ARCHIVE_READ : sqltool_mode(c);
    if (!reads_daemon_state(fn))
        return sqltool_run(c, ts->archive, mode, fn, args_json, ts->ctx_plain, cb, data);
    char *daemon = ts->status_json ? ts->status_json(ts->status_data) : NULL;
    connector_t *conn = ts->conn;
    json_error_t je;
    bool realtime = false;
    json_t *user = NULL;
    for (int i = 0; i < ts->nconns; i++) {
        realtime = realtime || connector_realtime(ts->conns[i]);
        const char *aj = connector_account_json(ts->conns[i]);
        if (aj && user == NULL)
            user = json_loads(aj, 0, &je);
    }
    json_t *ctx =
        json_pack("{s:o, s:b, s:s, s:s}", "daemon",
                  daemon ? json_loads(daemon, 0, &je) : json_null(), "realtimeActive", realtime,
                  "upstream", conn ? connector_state(conn) : "none", "timezone", ts->timezone);
    if (ctx && user)
        json_object_set_new(ctx, "telegramUser", user);
    else
        json_decref(user);
    free(daemon);
    char *ctx_text = ctx ? json_dumps(ctx, JSON_COMPACT) : NULL;
    json_decref(ctx);
    bool started =
        ctx_text != NULL && sqltool_run(c, ts->archive, mode, fn, args_json, ctx_text, cb, data);
    if (ctx_text == NULL)
        mcp_call_finish_error(c, "%s failed: out of memory", c->tool->def->name);
    free(ctx_text);
    return started;
}

static void generic_done(void *data, int status, const char *json, archive_err_t err,
                         const char *message)
{
    mcp_call_t *c = data;
    c->data = NULL;
    if (status != 0)
        tg_ts_fail(c, status, err, message);
    else
        mcp_call_finish_json(c, json, strlen(json));
}

/* The tool's SQL function answers. (A tool that needs the connector hears
 * PT501 from it; tg_ts_fail then asks the capabilities.) */
void tg_ts_generic(mcp_call_t *c)
{
    tg_ts_run(c, c->tool->def->sql_function, NULL, generic_done, c);
}

/* ---- the archive answered, now the connector ------------------------------- */

typedef struct then_s {
    mcp_call_t *call;
    tg_then_fn next;
    void *arg;
} then_t;

static void then_done(void *data, int status, const char *json, archive_err_t err,
                      const char *message)
{
    then_t *t = data;
    mcp_call_t *c = t->call;
    tg_then_fn next = t->next;
    void *arg = t->arg;
    free(t);
    c->data = NULL;
    c->on_cancel = NULL;
    if (status != 0) {
        tg_ts_fail(c, status, err, message);
        return;
    }
    if (c->cancelled) {
        mcp_call_finish_error(c, "cancelled");
        return;
    }
    json_error_t je;
    json_t *answer = json_loads(json, 0, &je);
    if (!json_is_object(answer)) {
        json_decref(answer);
        tg_ts_fail(c, UV_EPROTO, ARCHIVE_ERR_INTERNAL, "the archive's answer is not an object");
        return;
    }
    next(c, answer, arg);
    json_decref(answer);
}

void tg_ts_then(mcp_call_t *c, const char *fn, const char *args_json, tg_then_fn next, void *arg)
{
    then_t *t = malloc(sizeof *t);
    if (t == NULL) {
        mcp_call_finish_error(c, "%s failed: out of memory", c->tool->def->name);
        return;
    }
    *t = (then_t){.call = c, .next = next, .arg = arg};
    if (!tg_ts_run(c, fn, args_json, then_done, t))
        free(t);
}

/* ---- context ------------------------------------------------------------------ */

/* Builds the toolset's context from env: the store, the "telegram"
 * connector when there is one, the upload and export roots. */
static int telegram_open(const toolset_env_t *env, void **out, char *err, size_t errcap)
{
    int rc = sqltool_check_table(&toolset_telegram_mcp, err, errcap);
    if (rc != 0)
        return rc;
    tg_toolset_t *t = calloc(1, sizeof *t);
    if (t == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    t->archive = env->archive;
    t->conn = toolset_env_connector(env, CONNECTOR_CAPS_CHAT);
    for (int i = 0; i < env->nconnectors && t->nconns < TOOLSET_MAX_CONNECTORS; i++)
        if (env->connectors[i]->ops->chat != NULL)
            t->conns[t->nconns++] = env->connectors[i];
    /* A message service that can do nothing yet (user accounts, none signed
     * in) is still the one whose why_not tells the model what to do. */
    if (t->conn == NULL && t->nconns > 0)
        t->conn = t->conns[0];
    t->pages = env->pages;
    login_rounds_init(&t->logins, &tg_ts_login_ops);
    t->status_json = env->status_json;
    t->status_data = env->status_data;
    snprintf(t->timezone, sizeof t->timezone, "%s", env->timezone ? env->timezone : "UTC");
    if ((t->ctx_plain = toolset_env_sql_ctx(env)) == NULL) {
        free(t);
        snprintf(err, errcap, "out of memory (or a timezone that is not UTF-8)");
        return UV_ENOMEM;
    }
    snprintf(t->media_root, sizeof t->media_root, "%s/media", env->data_dir);
    if (env->export_root[0])
        snprintf(t->export_root, sizeof t->export_root, "%s", env->export_root);
    else
        snprintf(t->export_root, sizeof t->export_root, "%s/exports", env->data_dir);
    if (env->upload_root[0])
        snprintf(t->upload_root, sizeof t->upload_root, "%s", env->upload_root);
    else
        snprintf(t->upload_root, sizeof t->upload_root, "%s/uploads", env->data_dir);
    *out = t;
    return 0;
}

static void telegram_close(void *ctx)
{
    if (ctx != NULL) {
        login_rounds_close(&((tg_toolset_t *)ctx)->logins);
        free(((tg_toolset_t *)ctx)->ctx_plain);
    }
    free(ctx);
}

const toolset_t toolset_telegram = {
    .mcp = &toolset_telegram_mcp,
    .caps = CONNECTOR_CAPS_CHAT | CONNECTOR_CAN_LOGIN, /* authLogin: a user account */
    .open = telegram_open,
    .close = telegram_close,
    .auto_sources = "telegram",
    .auto_settings = "telegram_bot_token",
};
