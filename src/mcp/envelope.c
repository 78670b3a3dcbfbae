/* envelope: the per-request _meta of MCP 2026-07-28 and the fields its
 * results carry (see envelope.h). */
#include "mcp/envelope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "mcp/call.h"
#include "mcp/jsonrpc.h"

const char *const mcp_envelope_all_versions[] = {MCP_MODERN_VERSION, "2025-11-25", "2025-06-18",
                                                 "2025-03-26",       "2024-11-05", NULL};

mcp_envelope_claim_t mcp_envelope_claim(const json_t *params)
{
    mcp_envelope_claim_t c = {.meta = json_object_get(params, "_meta"), .version = NULL};
    c.version = json_object_get(c.meta, MCP_META_PROTOCOL_VERSION);
    return c;
}

bool mcp_envelope_claimed(const json_t *params)
{
    return mcp_envelope_claim(params).version != NULL;
}

/* The members of _meta the envelope reads besides the protocol version:
 * json_object_get of each (a hash of a 40-character key), or for a small
 * _meta one pass over it that compares keys, the same members found. */
static void meta_members(const json_t *meta, const json_t **caps, const json_t **info,
                         const json_t **level)
{
    static const char pre[] = "io.modelcontextprotocol/";
    const size_t np = sizeof pre - 1;
    if (json_object_size(meta) > 4) {
        *caps = json_object_get(meta, MCP_META_CLIENT_CAPS);
        *info = json_object_get(meta, MCP_META_CLIENT_INFO);
        *level = json_object_get(meta, MCP_META_LOG_LEVEL);
        return;
    }
    *caps = *info = *level = NULL;
    for (void *it = json_object_iter((json_t *)meta); it != NULL;
         it = json_object_iter_next((json_t *)meta, it)) {
        const char *key = json_object_iter_key(it);
        size_t n = json_object_iter_key_len(it);
        if (n <= np || memcmp(key, pre, np) != 0)
            continue;
        const json_t *v = json_object_iter_value(it);
        if (n == sizeof MCP_META_CLIENT_CAPS - 1 && memcmp(key, MCP_META_CLIENT_CAPS, n) == 0)
            *caps = v;
        else if (n == sizeof MCP_META_CLIENT_INFO - 1 && memcmp(key, MCP_META_CLIENT_INFO, n) == 0)
            *info = v;
        else if (n == sizeof MCP_META_LOG_LEVEL - 1 && memcmp(key, MCP_META_LOG_LEVEL, n) == 0)
            *level = v;
    }
}

/* The string v holds when it is one without NUL, else NULL. */
static const char *plain_string(const json_t *v)
{
    const char *s = json_string_value(v);
    return s && strlen(s) == json_string_length(v) ? s : NULL;
}

int mcp_envelope_parse(const json_t *params, mcp_envelope_t *env, char *msg, size_t cap,
                       json_t **data)
{
    mcp_envelope_claim_t c = mcp_envelope_claim(params);
    return mcp_envelope_parse_claim(&c, env, msg, cap, data);
}

mcp_envelope_claim_t mcp_envelope_claim_memo(const mcp_envelope_memo_t *memo, const json_t *params)
{
    const json_t *meta = json_object_get(params, "_meta");
    if (meta != NULL && meta == memo->meta)
        return memo->claim;
    return (mcp_envelope_claim_t){.meta = meta,
                                  .version = json_object_get(meta, MCP_META_PROTOCOL_VERSION)};
}

int mcp_envelope_parse_memo(mcp_envelope_memo_t *memo, const mcp_envelope_claim_t *c,
                            mcp_envelope_t *env, char *msg, size_t cap, json_t **data)
{
    if (c->meta != NULL && c->meta == memo->meta) {
        *data = NULL;
        *env = memo->env;
        return 0;
    }
    int code = mcp_envelope_parse_claim(c, env, msg, cap, data);
    if (code == 0) {
        mcp_envelope_memo_clear(memo);
        memo->meta = json_incref((json_t *)c->meta);
        memo->claim = *c;
        memo->env = *env;
    }
    return code;
}

void mcp_envelope_memo_clear(mcp_envelope_memo_t *memo)
{
    json_decref(memo->meta);
    *memo = (mcp_envelope_memo_t){0};
}

int mcp_envelope_parse_claim(const mcp_envelope_claim_t *c, mcp_envelope_t *env, char *msg,
                             size_t cap, json_t **data)
{
    *data = NULL;
    memset(env, 0, sizeof *env);
    env->log_level = MCP_ENVELOPE_LOG_OFF;
    const json_t *meta = c->meta;
    if (!json_is_object(meta)) {
        snprintf(msg, cap,
                 "Invalid params: params._meta is required in MCP %s: it carries \"%s\" and "
                 "\"%s\" on every request",
                 MCP_MODERN_VERSION, MCP_META_PROTOCOL_VERSION, MCP_META_CLIENT_CAPS);
        return JSONRPC_INVALID_PARAMS;
    }
    const json_t *pv = c->version;
    const json_t *caps, *info, *lv;
    meta_members(meta, &caps, &info, &lv);
    const char *missing = pv == NULL     ? MCP_META_PROTOCOL_VERSION
                          : caps == NULL ? MCP_META_CLIENT_CAPS
                                         : NULL;
    if (missing != NULL) {
        snprintf(msg, cap, "Invalid params: params._meta[\"%s\"] is required on every request",
                 missing);
        return JSONRPC_INVALID_PARAMS;
    }
    const char *version = plain_string(pv);
    if (version == NULL) {
        snprintf(msg, cap, "Invalid params: params._meta[\"%s\"] must be a string such as \"%s\"",
                 MCP_META_PROTOCOL_VERSION, MCP_MODERN_VERSION);
        return JSONRPC_INVALID_PARAMS;
    }
    if (strcmp(version, MCP_MODERN_VERSION) != 0) {
        json_t *supported = json_array();
        for (int i = 0; mcp_envelope_all_versions[i]; i++)
            json_array_append_new(supported, json_string(mcp_envelope_all_versions[i]));
        *data = json_pack("{s:o, s:s}", "supported", supported, "requested", version);
        snprintf(msg, cap,
                 "Unsupported protocol version: %.40s (a request's _meta names %s; 2025-11-25 "
                 "and older are served after initialize)",
                 version, MCP_MODERN_VERSION);
        return MCP_ERROR_UNSUPPORTED_VERSION;
    }
    if (!json_is_object(caps)) {
        snprintf(msg, cap, "Invalid params: params._meta[\"%s\"] must be an object",
                 MCP_META_CLIENT_CAPS);
        return JSONRPC_INVALID_PARAMS;
    }
    if (info != NULL && !json_is_object(info)) {
        snprintf(msg, cap, "Invalid params: params._meta[\"%s\"] must be an object {name, version}",
                 MCP_META_CLIENT_INFO);
        return JSONRPC_INVALID_PARAMS;
    }
    if (lv != NULL) {
        const char *name = plain_string(lv);
        int level = -1;
        for (int i = 0; name && i <= MCP_LOG_EMERGENCY; i++)
            if (strcmp(name, mcp_log_level_names[i]) == 0)
                level = i;
        if (level < 0) {
            snprintf(msg, cap,
                     "Invalid params: params._meta[\"%s\"] must be one of debug, info, notice, "
                     "warning, error, critical, alert, emergency",
                     MCP_META_LOG_LEVEL);
            return JSONRPC_INVALID_PARAMS;
        }
        env->log_level = level;
    }
    env->meta = meta;
    env->version = version;
    env->caps = caps;
    env->client_info = info;
    return 0;
}

int mcp_envelope_complete(json_t *result, const char *name, const char *version)
{
    json_t *meta = json_object_get(result, "_meta");
    if (meta == NULL) {
        meta = json_object();
        if (meta == NULL || json_object_set_new(result, "_meta", meta) != 0)
            return UV_ENOMEM;
    }
    if (!json_is_object(meta))
        return UV_EINVAL;
    if (json_object_set_new(meta, MCP_META_SERVER_INFO,
                            json_pack("{s:s, s:s}", "name", name, "version", version)) != 0 ||
        json_object_set_new(result, "resultType", json_string("complete")) != 0)
        return UV_ENOMEM;
    return 0;
}

int mcp_envelope_cache(json_t *result, int ttl_ms, bool private_scope)
{
    if (json_object_set_new(result, "ttlMs", json_integer(ttl_ms)) != 0 ||
        json_object_set_new(result, "cacheScope",
                            json_string(private_scope ? "private" : "public")) != 0)
        return UV_ENOMEM;
    return 0;
}

bool mcp_envelope_spliceable(const json_t *result)
{
    return json_is_object(result) && json_object_get(result, "_meta") == NULL &&
           json_object_get(result, "resultType") == NULL;
}

int mcp_envelope_complete_text(const char *name, const char *version, char *out, size_t cap)
{
    json_t *info = json_pack("{s:s, s:s}", "name", name, "version", version);
    char *text = info ? json_dumps(info, JSON_COMPACT) : NULL;
    json_decref(info);
    int n = text ? snprintf(out, cap, ",\"resultType\":\"complete\",\"_meta\":{\"%s\":%s}",
                            MCP_META_SERVER_INFO, text)
                 : -1;
    free(text);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}
