/* live: the inline tools the connector runs (see inline_internal.h):
 * messages_send and messages_send_batch (paced like every send of the
 * connector), and conversations_create, answered from the connector's
 * capabilities. Without a connector each tool's SQL function says what
 * the archive offers instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolsets/inline/inline_internal.h"
#include "toolsets/sqltool.h"

/* One send of a call: a single messages_send, or an item of a batch. */
typedef struct send_s {
    mcp_call_t *call;
    json_t *items;   /* the batch's items; a one-item array for messages_send */
    size_t next;     /* the item being sent */
    json_t *results; /* one answer per item */
    bool batch;
} send_t;

static void send_step(send_t *s);

static void send_free(send_t *s)
{
    json_decref(s->items);
    json_decref(s->results);
    free(s);
}

static void send_item_failed(send_t *s, const char *error)
{
    json_array_append_new(s->results, json_pack("{s:I, s:b, s:s}", "index", (json_int_t)s->next,
                                                "ok", 0, "error", error));
    s->next++;
    send_step(s);
}

static void sent(void *data, int status, const char *json, const char *error)
{
    send_t *s = data;
    if (status != 0) {
        send_item_failed(s, error ? error : uv_strerror(status));
        return;
    }
    json_t *item = json_pack("{s:I, s:b}", "index", (json_int_t)s->next, "ok", 1);
    json_t *m = inline__sent_message(json);
    if (item != NULL && m != NULL)
        json_object_update(item, m);
    json_decref(m);
    json_array_append_new(s->results, item);
    s->next++;
    send_step(s);
}

/* The chat of the current item is resolved: send it. */
static void resolved(void *data, int status, const char *json, archive_err_t err,
                     const char *message)
{
    send_t *s = data;
    mcp_call_t *c = s->call;
    (void)err;
    c->data = NULL;
    c->on_cancel = NULL;
    if (status != 0) {
        if (!s->batch) {
            sqltool_fail(c, err, message);
            send_free(s);
            return;
        }
        send_item_failed(s, message);
        return;
    }
    json_error_t je;
    json_t *r = json_loads(json, 0, &je);
    json_t *item = json_array_get(s->items, s->next);
    connector_t *conn = inline_ctx(c)->conn;
    int rc =
        connector_send_text(conn, json_integer_value(json_object_get(r, "chatId")),
                            json_string_value(json_object_get(item, "text")), 0,
                            json_integer_value(json_object_get(item, "replyToMessageId")), sent, s);
    json_decref(r);
    if (rc != 0)
        send_item_failed(s, rc == UV_EBUSY ? "too many messages are waiting to be sent; retry"
                                           : uv_strerror(rc));
}

static void send_step(send_t *s)
{
    mcp_call_t *c = s->call;
    if (s->next >= json_array_size(s->items) || (c->cancelled && s->batch)) {
        if (!s->batch) {
            json_t *r = json_array_get(s->results, 0);
            if (json_is_true(json_object_get(r, "ok"))) {
                json_t *out = json_deep_copy(r);
                json_object_del(out, "index");
                json_object_del(out, "ok");
                char *text = json_dumps(out, JSON_COMPACT);
                json_decref(out);
                mcp_call_finish_json(c, text, strlen(text));
                free(text);
            } else {
                mcp_call_finish_error(c, "messages_send failed: %s",
                                      json_string_value(json_object_get(r, "error")));
            }
        } else {
            json_t *out = json_pack("{s:O}", "results", s->results);
            char *text = json_dumps(out, JSON_COMPACT);
            json_decref(out);
            mcp_call_finish_json(c, text, strlen(text));
            free(text);
        }
        send_free(s);
        return;
    }
    if (s->batch && s->next > 0)
        mcp_call_progress(c, (double)s->next, (double)json_array_size(s->items), NULL);
    json_t *item = json_array_get(s->items, s->next);
    json_t *target = json_object();
    if (json_object_get(item, "chatId"))
        json_object_set(target, "chatId", json_object_get(item, "chatId"));
    if (json_object_get(item, "userId"))
        json_object_set(target, "userId", json_object_get(item, "userId"));
    char *args = json_dumps(target, JSON_COMPACT);
    json_decref(target);
    inline_ctx_t *ic = inline_ctx(c);
    bool ok = args && sqltool_run(c, ic->archive, ARCHIVE_READ, "parley_inline_resolve", args,
                                  ic->sql_ctx, resolved, s);
    free(args);
    if (!ok)
        send_free(s); /* sqltool_run finished the call */
}

static void start_sends(mcp_call_t *c, json_t *items, bool batch)
{
    send_t *s = calloc(1, sizeof *s);
    if (s == NULL) {
        json_decref(items);
        mcp_call_finish_error(c, "out of memory");
        return;
    }
    *s = (send_t){.call = c, .items = items, .results = json_array(), .batch = batch};
    send_step(s);
}

/* Without a connector, or one that cannot send, the SQL function or the
 * connector says why. */
static bool can_send(mcp_call_t *c)
{
    connector_t *conn = inline_ctx(c)->conn;
    if (conn == NULL) {
        inline_tool(c);
        return false;
    }
    const char *why = connector_why_not(conn, CONNECTOR_CAN_SEND);
    if (why != NULL) {
        mcp_call_finish_error(c, "%s", why);
        return false;
    }
    return true;
}

void inline_messages_send(mcp_call_t *c)
{
    if (can_send(c))
        start_sends(c, json_pack("[O]", c->args), false);
}

void inline_messages_send_batch(mcp_call_t *c)
{
    json_t *items = json_object_get(c->args, "items");
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        if (!json_object_get(it, "chatId") == !json_object_get(it, "userId")) {
            mcp_call_finish_error(c, "items[%zu]: give chatId or userId (one of them)", i);
            return;
        }
    }
    if (can_send(c))
        start_sends(c, json_incref(items), true);
}

void inline_conversations_create(mcp_call_t *c)
{
    connector_t *conn = inline_ctx(c)->conn;
    if (conn == NULL) {
        inline_tool(c);
        return;
    }
    const char *why = connector_why_not(conn, CONNECTOR_CAN_CREATE_CHATS);
    if (why != NULL) {
        mcp_call_finish_error(c,
                              "%s Create the chat in a Telegram app and add the bot to it; then "
                              "conversations_list finds it and messages_send writes to it.",
                              why);
        return;
    }
    mcp_call_finish_error(c, "conversations_create is not available through the %s connector yet.",
                          conn->name);
}
