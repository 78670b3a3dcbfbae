/* pb_jansson: jansson alone (src/mcp/jsonrpc.c's jsonrpc_parse_jansson,
 * linked from parley_core, then the session's json_object_get lookups),
 * and parleyd's path since simdjson's adoption ("parleyd": jsonrpc_parse,
 * json_simd_load's tree or that, and the same lookups):
 * the whole message as a jansson tree, read where it lies:
 * JSON_ALLOW_NUL | JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, and a message
 * with an integer too big for 64 bits read again with every number a
 * real, the integral ones within +-2^53 integers again. jansson refuses
 * by itself: a key given twice, invalid UTF-8 (overlong forms,
 * surrogates, past U+10FFFF), a lone surrogate escape, nesting past 2048,
 * a NUL in a key, a raw control character in a string, a real that
 * overflows. */
#include "mcp/jsonrpc.h"
#include "parse_bench.h"

static pb_kind_t kind(const json_t *v, pb_span_t *span)
{
    if (v == NULL)
        return PB_ABSENT;
    if (json_is_string(v)) {
        if (span)
            *span = (pb_span_t){json_string_value(v), json_string_length(v)};
        return span ? PB_STRING : PB_OTHER;
    }
    return json_is_object(v) ? PB_OBJECT : PB_OTHER;
}

void pb_jansson_view(json_t *m, pb_request_t *r)
{
    r->tree = m;
    if (!json_is_object(m)) {
        r->top = PB_OTHER;
        return;
    }
    r->top = PB_OBJECT;
    r->jsonrpc_kind = kind(json_object_get(m, "jsonrpc"), &r->jsonrpc);
    r->id = json_incref(json_object_get(m, "id"));
    r->method_kind = kind(json_object_get(m, "method"), &r->method);
    r->has_result = json_object_get(m, "result") != NULL || json_object_get(m, "error") != NULL;
    json_t *params = json_object_get(m, "params");
    r->params_kind = kind(params, NULL);
    if (!json_is_object(params))
        return;
    r->rest = json_incref(params);
    r->rest_is_params = true;
    r->name_kind = kind(json_object_get(params, "name"), &r->name);
    const json_t *meta = json_object_get(params, "_meta");
    r->meta_kind = kind(meta, NULL);
    if (!json_is_object(meta))
        return;
    r->version_kind =
        kind(json_object_get(meta, "io.modelcontextprotocol/protocolVersion"), &r->version);
    r->caps = json_incref(json_object_get(meta, "io.modelcontextprotocol/clientCapabilities"));
    const json_t *info = json_object_get(meta, "io.modelcontextprotocol/clientInfo");
    r->info_kind = kind(info, NULL);
    r->client_name_kind = kind(json_object_get(info, "name"), &r->client_name);
    r->level_kind = kind(json_object_get(meta, "io.modelcontextprotocol/logLevel"), &r->level);
    r->progress = json_incref(json_object_get(meta, "progressToken"));
}

int pb_jansson_parse(const char *text, size_t len, pb_request_t *r)
{
    json_error_t je;
    json_t *m = jsonrpc_parse_jansson(text, len, &je);
    if (m == NULL)
        return -1;
    pb_jansson_view(m, r);
    return 0;
}

int pb_parleyd_parse(const char *text, size_t len, pb_request_t *r)
{
    json_error_t je;
    json_t *m = jsonrpc_parse(text, len, &je);
    if (m == NULL)
        return -1;
    pb_jansson_view(m, r);
    return 0;
}
