/* inline: the inline toolset's context, and the handlers of its reading
 * tools and resources (see inline.h). The table is tools.c's. */
#include "toolsets/inline/inline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mcp/jsonrpc.h"
#include "toolsets/inline/inline_internal.h"
#include "toolsets/sqltool.h"

/* The system's time zone database, for checking the timezone setting. */
#define INLINE_ZONEINFO "/usr/share/zoneinfo"

/* Every reading tool: its SQL function answers. */
void inline_tool(mcp_call_t *c)
{
    inline_ctx_t *ic = inline_ctx(c);
    sqltool_run(c, ic->archive, sqltool_mode(c), c->tool->def->sql_function, NULL, ic->sql_ctx,
                sqltool_done, c);
}

/* The SQL function answers the ReadResourceResult, or JSON null when there
 * is no such chat or message. */
static void resource_done(void *data, int status, const char *json, archive_err_t err,
                          const char *message)
{
    mcp_call_t *c = data;
    /* a failure: a JSON-RPC error for a resource read */
    if (!sqltool_answered(c, status, err, message))
        return;
    json_error_t je;
    json_t *r = json_loads(json, JSON_DECODE_ANY, &je);
    if (!json_is_object(r)) {
        json_decref(r);
        /* "Resource not found" is -32002 in the MCP specification. */
        mcp_call_finish_rpc_error(c, MCP_ERROR_RESOURCE_NOT_FOUND,
                                  "Resource not found (find chats with conversations_list)",
                                  json_pack("{s:O}", "uri", json_object_get(c->args, "uri")));
        return;
    }
    mcp_call_finish_result(c, r);
}

/* inline://chat/{chatId} and inline://chat/{chatId}/message/{messageId}. */
void inline_resource_read(mcp_call_t *c)
{
    inline_ctx_t *ic = inline_ctx(c);
    sqltool_run(c, ic->archive, ARCHIVE_READ, "parley_inline_resource", NULL, ic->sql_ctx,
                resource_done, c);
}

/* Whether the caller may watch one of those (resources/subscribe,
 * subscriptions/listen): the chat exists and is a message service's (what
 * the read answers), a message to come in it included; an upload exists.
 * Not found otherwise, as the read says. */
void inline_resource_watch(mcp_call_t *c)
{
    inline_ctx_t *ic = inline_ctx(c);
    sqltool_run(c, ic->archive, ARCHIVE_READ, "parley_inline_resource_watch", NULL, ic->sql_ctx,
                resource_done, c);
}

/* ---- context ---------------------------------------------------------------- */

/* An IANA zone name the system knows (no "..", no leading '/'). */
static bool zone_known(const char *tz)
{
    if (strcmp(tz, "UTC") == 0)
        return true;
    if (tz[0] == '\0' || tz[0] == '/' || strstr(tz, "..") != NULL)
        return false;
    for (const char *p = tz; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '/' || *p == '_' || *p == '-' || *p == '+'))
            return false;
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", INLINE_ZONEINFO, tz);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

json_t *inline__sent_message(const char *json)
{
    json_t *m = json_loads(json, 0, NULL);
    json_int_t chat = json_integer_value(json_object_get(json_object_get(m, "chat"), "id"));
    json_int_t id = json_integer_value(json_object_get(m, "message_id"));
    char uri[96];
    snprintf(uri, sizeof uri, "inline://chat/%lld/message/%lld", (long long)chat, (long long)id);
    json_t *out = json_pack("{s:I, s:I, s:I, s:s}", "chatId", chat, "messageId", id, "date",
                            json_integer_value(json_object_get(m, "date")), "uri", uri);
    json_decref(m);
    return out;
}

/* Builds the context: the store and the timezone (checked here: an IANA
 * name known to the system, or UTC). */
static int inline_open(const toolset_env_t *env, void **out, char *err, size_t errcap)
{
    int rc = sqltool_check_table(&toolset_inline_mcp, err, errcap);
    if (rc != 0)
        return rc;
    /* Read once at start-up, before anything is served: a stat. */
    if (!zone_known(env->timezone)) {
        snprintf(err, errcap,
                 "timezone: '%s' is not a time zone of this system (an IANA name such as "
                 "Europe/Berlin, or UTC)",
                 env->timezone);
        return UV_EINVAL;
    }
    inline_ctx_t *ic = calloc(1, sizeof *ic);
    if (ic == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    ic->archive = env->archive;
    ic->conn = toolset_env_connector(env, CONNECTOR_CAPS_CHAT);
    ic->uploads = env->uploads;
    snprintf(ic->media_root, sizeof ic->media_root, "%s/media", env->data_dir);
    if ((ic->sql_ctx = toolset_env_sql_ctx(env)) == NULL) {
        free(ic);
        snprintf(err, errcap, "out of memory (or a timezone that is not UTF-8)");
        return UV_ENOMEM;
    }
    *out = ic;
    return 0;
}

static void inline_close(void *ctx)
{
    if (ctx != NULL)
        free(((inline_ctx_t *)ctx)->sql_ctx);
    free(ctx);
}

/* inline://chat/{chatId} for each chat of a store event, and
 * inline://chat/{chatId}/message/{messageId} for each message (see
 * toolset_t.store_changed). */
static void inline_store_changed(const json_t *event, toolset_uri_cb updated, void *data)
{
    char uri[96];
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(event, "chats"), i, v)
    {
        if (json_is_integer(v)) {
            snprintf(uri, sizeof uri, "inline://chat/%lld", (long long)json_integer_value(v));
            updated(uri, data);
        }
    }
    json_array_foreach(json_object_get(event, "messages"), i, v)
    {
        json_t *c = json_array_get(v, 0), *m = json_array_get(v, 1);
        if (json_is_integer(c) && json_is_integer(m)) {
            snprintf(uri, sizeof uri, "inline://chat/%lld/message/%lld",
                     (long long)json_integer_value(c), (long long)json_integer_value(m));
            updated(uri, data);
        }
    }
}

const toolset_t toolset_inline = {
    .mcp = &toolset_inline_mcp,
    .caps = CONNECTOR_CAN_SEND | CONNECTOR_CAN_REALTIME,
    .open = inline_open,
    .close = inline_close,
    .store_changed = inline_store_changed,
    .auto_sources = "telegram",
    .auto_settings = "telegram_bot_token",
};
