/* live_read: the telegram tools that read through the user account (see
 * tg_toolset.h): channelsSearch, and messagesList, messagesGet,
 * messagesContext and messagesSearch with source "live" or "both".
 *
 * The connector answers TDLib's own objects; they are stored and answered
 * in one statement (parley_tg_live_channels, parley_tg_live_messages in
 * src/db/sql/telegram/live.sql): stored by the same SQL the account's
 * updates go through (parley_tdu_apply), then answered from the archive's
 * rows for exactly those ids, so a live answer has the archive's shape and
 * what was read is in the archive from then on; "both" merges the
 * archive's own answer, deduplicated by (chat, id).
 *
 * Source "archive" (the default), and any source when no connector can
 * read, go to the tool's SQL function as before: its answer, or the
 * connector's refusal (the Bot API's why_not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolsets/sqltool.h"
#include "toolsets/telegram/tg_toolset.h"

#define TG_LIVE_PLAN     "parley_tg_live_plan"
#define TG_LIVE_CHANNELS "parley_tg_live_channels"
#define TG_LIVE_MESSAGES "parley_tg_live_messages"
/* Defaults and caps of the tools' limits (as their SQL functions). */
#define TG_DIALOGS_DEFAULT 100
#define TG_LIST_DEFAULT    50
#define TG_SEARCH_DEFAULT  100
#define TG_LIMIT_CAP       500
#define TG_CONTEXT_DEFAULT 20

static const char *arg_str(const mcp_call_t *c, const char *key)
{
    return json_string_value(json_object_get(c->args, key));
}

static int arg_limit(const mcp_call_t *c, int dflt, int cap)
{
    json_t *v = json_object_get(c->args, "limit");
    json_int_t n = json_is_integer(v) ? json_integer_value(v) : dflt;
    return n < 1 ? 1 : n > cap ? cap : (int)n;
}

static bool is_tool(const mcp_call_t *c, const char *name)
{
    return strcmp(c->tool->def->name, name) == 0;
}

/* ---- the answer: stored, then read back as the archive answers ---------------- */

static void answered(void *data, int status, const char *json, archive_err_t err,
                     const char *message)
{
    mcp_call_t *c = data;
    c->data = NULL;
    c->on_cancel = NULL;
    if (status != 0)
        tg_ts_fail(c, status, err, message);
    else
        mcp_call_finish_json(c, json, strlen(json));
}

/* Runs fn with the call's arguments and "tool", "live" (live: the
 * connector's answer, stolen) in the read-write pool: it stores. */
static void answer(mcp_call_t *c, const char *fn, json_t *live)
{
    tg_toolset_t *ts = tg_ts(c);
    json_t *a = json_deep_copy(c->args);
    if (a == NULL)
        a = json_object();
    json_object_set_new(a, "tool", json_string(c->tool->def->name));
    json_object_set_new(a, "live", live ? live : json_object());
    json_t *ctx = json_pack("{s:s, s:s}", "timezone", ts->timezone, "upstream", "live");
    char *args = json_dumps(a, JSON_COMPACT), *ctxs = ctx ? json_dumps(ctx, JSON_COMPACT) : NULL;
    json_decref(a);
    json_decref(ctx);
    if (args == NULL || ctxs == NULL)
        mcp_call_finish_error(c, "%s failed: out of memory", c->tool->def->name);
    else
        (void)sqltool_run(c, ts->archive, ARCHIVE_WRITE, fn, args, ctxs, answered, c);
    free(args);
    free(ctxs);
}

/* A failure of the connector's read, in words for the model. */
static void read_failed(mcp_call_t *c, int status, const char *error)
{
    long wait = 0;
    if (status == UV_EAGAIN && error && sscanf(error, "retry after %ld", &wait) == 1) {
        mcp_call_finish_error(c,
                              "Telegram limits this account's requests (FloodWait): wait %ld "
                              "seconds, then call %s again; source \"archive\" answers from "
                              "what is stored meanwhile.",
                              wait, c->tool->def->name);
        return;
    }
    if (status == UV_ENOTCONN) {
        mcp_call_finish_error(c, "The Telegram user account is not signed in or not ready yet "
                                 "(authStatus says which); use source \"archive\" meanwhile.");
        return;
    }
    tg_ts_connector_failed(c, status, error);
}

static void got(void *data, int status, const char *json, const char *error)
{
    mcp_call_t *c = data;
    bool dialogs = is_tool(c, "channelsSearch");
    if (status == UV_ENOENT && is_tool(c, "messagesGet")) {
        answer(c, TG_LIVE_MESSAGES, NULL); /* the SQL says there is none (or the archive's) */
        return;
    }
    if (status != 0) {
        read_failed(c, status, error);
        return;
    }
    if (c->cancelled) {
        mcp_call_finish_error(c, "cancelled");
        return;
    }
    json_error_t je;
    json_t *live = json_loads(json, 0, &je);
    answer(c, dialogs ? TG_LIVE_CHANNELS : TG_LIVE_MESSAGES, live);
}

/* ---- channelsSearch ------------------------------------------------------------------ */

void tg_ts_channels_search(mcp_call_t *c)
{
    connector_t *conn = tg_ts_conn(tg_ts(c), CONNECTOR_CAN_SEARCH_DIALOGS);
    if (!connector_can(conn, CONNECTOR_CAN_SEARCH_DIALOGS)) {
        tg_ts_generic(c); /* the SQL function, then the connector's why_not */
        return;
    }
    const char *q = arg_str(c, "query");
    if (q == NULL || q[strspn(q, " \t\r\n")] == '\0') {
        mcp_call_finish_error(c, "query: give words of the chat's title or its @username");
        return;
    }
    int rc = connector_search_dialogs(conn, q, arg_limit(c, TG_DIALOGS_DEFAULT, 100), got, c);
    if (rc != 0)
        read_failed(c, rc, NULL);
}

/* ---- the message tools ------------------------------------------------------------------- */

/* The plan (parley_tg_live_plan): the chat the call names, resolved from
 * the archive (0: none), and the date bounds in unix seconds (0: open). */
static void read_messages(mcp_call_t *c, json_t *plan, void *arg)
{
    (void)arg;
    int64_t chat = json_integer_value(json_object_get(plan, "channelId"));
    int64_t min_date = json_integer_value(json_object_get(plan, "minDate"));
    int64_t max_date = json_integer_value(json_object_get(plan, "maxDate"));
    connector_t *conn = tg_ts_conn(tg_ts(c), CONNECTOR_CAN_READ_HISTORY);
    json_int_t msg = json_integer_value(json_object_get(c->args, "messageId"));
    int rc;
    if (is_tool(c, "messagesList")) {
        rc = connector_history(conn, chat, 0, 0, arg_limit(c, TG_LIST_DEFAULT, TG_LIMIT_CAP), got,
                               c);
    } else if (is_tool(c, "messagesGet")) {
        rc = connector_get_message(conn, chat, msg, got, c);
    } else if (is_tool(c, "messagesContext")) {
        json_t *b = json_object_get(c->args, "before"), *a = json_object_get(c->args, "after");
        int before = json_is_integer(b) ? (int)json_integer_value(b) : TG_CONTEXT_DEFAULT;
        int after = json_is_integer(a) ? (int)json_integer_value(a) : TG_CONTEXT_DEFAULT;
        rc = connector_history(conn, chat, msg, after, before + after + 1, got, c);
    } else {
        rc = connector_search_messages(conn, chat, arg_str(c, "query"), min_date, max_date,
                                       arg_limit(c, TG_SEARCH_DEFAULT, TG_LIMIT_CAP), got, c);
    }
    if (rc != 0)
        read_failed(c, rc, NULL);
}

void tg_ts_live_read(mcp_call_t *c)
{
    const char *source = arg_str(c, "source");
    connector_t *conn = tg_ts_conn(tg_ts(c), CONNECTOR_CAN_READ_HISTORY);
    if (source == NULL || strcmp(source, "archive") == 0 ||
        !connector_can(conn, CONNECTOR_CAN_READ_HISTORY)) {
        tg_ts_generic(c); /* the archive, or the refusal of source live */
        return;
    }
    json_t *chan = json_object_get(c->args, "channelId");
    if (is_tool(c, "messagesList") && chan == NULL) {
        mcp_call_finish_error(c,
                              "channelId: messagesList with source \"%s\" reads one chat's "
                              "history through Telegram; name the chat, or use source "
                              "\"archive\" to list across chats",
                              source);
        return;
    }
    if (is_tool(c, "messagesSearch")) {
        const char *q = arg_str(c, "query");
        if (q == NULL || q[strspn(q, " \t\r\n")] == '\0') {
            mcp_call_finish_error(c,
                                  "query: messagesSearch with source \"%s\" needs words to "
                                  "search for (Telegram searches words; regex and kind then "
                                  "filter what it found)",
                                  source);
            return;
        }
    }
    tg_ts_then(c, TG_LIVE_PLAN, NULL, read_messages, NULL);
}
