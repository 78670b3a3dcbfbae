/* toolsets: the table of every toolset compiled into parleyd, which the
 * entry point hands to the MCP registry (see toolset.h). A new toolset
 * adds one line here. */
#include <string.h>

#include "toolsets/bluesky/bluesky.h"
#include "toolsets/chatwise/chatwise.h"
#include "toolsets/conformance.h"
#include "toolsets/inline/inline.h"
#include "toolsets/memory/memory.h"
#include "toolsets/recall/recall.h"
#include "toolsets/telegram/telegram.h"
#include "toolsets/toolset.h"

const toolset_t toolsets_table[] = {
    {.mcp = &toolset_telegram_mcp,
     .caps = CONNECTOR_CAPS_CHAT | CONNECTOR_CAN_LOGIN, /* authLogin: a user account */
     .open = telegram_open,
     .close = telegram_close,
     .auto_sources = "telegram",
     .auto_settings = "telegram_bot_token"},
    {.mcp = &toolset_inline_mcp,
     .caps = CONNECTOR_CAN_SEND | CONNECTOR_CAN_REALTIME,
     .open = inline_open,
     .close = inline_close,
     .store_changed = inline_store_changed,
     .auto_sources = "telegram",
     .auto_settings = "telegram_bot_token"},
    {.mcp = &toolset_memory_mcp,
     .open = memory_open,
     .close = memory_close,
     .auto_sources = "agents",
     .auto_settings = "memory_db,claude_code_dir,codex_dir"},
    {.mcp = &toolset_chatwise_mcp,
     .open = chatwise_open,
     .close = chatwise_close,
     .auto_sources = "chatwise",
     .auto_settings = "chatwise_db"},
    {.mcp = &toolset_bluesky_mcp,
     .caps = CONNECTOR_CAPS_ACCOUNTS,
     .open = bluesky_open,
     .close = bluesky_close,
     .auto_sources = "bluesky",
     .auto_settings = "bluesky_service"},
    {.mcp = &toolset_recall_mcp, .open = recall_open, .close = recall_close},
    {.mcp = &toolset_conformance},
    {.mcp = NULL},
};

void toolsets_store_changed(const char *payload, toolset_uri_cb updated, void *data)
{
    json_error_t je;
    json_t *event = json_loads(payload, 0, &je);
    if (json_is_object(event))
        for (const toolset_t *t = toolsets_table; t->mcp != NULL; t++)
            if (t->store_changed != NULL)
                t->store_changed(event, updated, data);
    json_decref(event);
}

void toolsets_mcp_list(const mcp_toolset_t **out, int cap)
{
    int n = 0;
    for (int i = 0; toolsets_table[i].mcp && n < cap - 1; i++)
        out[n++] = toolsets_table[i].mcp;
    out[n] = NULL;
}

connector_t *toolset_env_connector(const toolset_env_t *env, unsigned caps)
{
    for (int i = 0; i < env->nconnectors; i++)
        if ((env->connectors[i]->ops->caps(env->connectors[i]->impl) & caps) != 0)
            return env->connectors[i];
    return NULL;
}

char *toolset_env_sql_ctx(const toolset_env_t *env)
{
    json_t *ctx = json_pack("{s:s}", "timezone", env->timezone ? env->timezone : "UTC");
    char *text = ctx ? json_dumps(ctx, JSON_COMPACT) : NULL;
    json_decref(ctx);
    return text;
}
