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

/* The MCP conformance suite's tools (only when selected by name). */
static const toolset_t toolset_conformance_row = {.mcp = &toolset_conformance};

const toolset_t *const toolsets_table[] = {
    &toolset_telegram, &toolset_inline, &toolset_memory,          &toolset_chatwise,
    &toolset_bluesky,  &toolset_recall, &toolset_conformance_row, NULL,
};

void toolsets_store_changed(const char *payload, toolset_uri_cb updated, void *data)
{
    json_error_t je;
    json_t *event = json_loads(payload, 0, &je);
    if (json_is_object(event))
        for (const toolset_t *const *t = toolsets_table; *t != NULL; t++)
            if ((*t)->store_changed != NULL)
                (*t)->store_changed(event, updated, data);
    json_decref(event);
}

void toolsets_mcp_list(const mcp_toolset_t **out, int cap)
{
    int n = 0;
    for (int i = 0; toolsets_table[i] && n < cap - 1; i++)
        out[n++] = toolsets_table[i]->mcp;
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
