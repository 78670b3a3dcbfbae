/* request_state: sealed requestState text (see request_state.h). */
#include "mcp/request_state.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

int mcp_request_state_seal(const sealed_key_t *key, const char *context, const json_t *state,
                           uint64_t now_ms, char **out)
{
    *out = NULL;
    json_t *env = json_pack("{s:I, s:O}", "e", (json_int_t)(now_ms + MCP_REQUEST_STATE_TTL_MS), "s",
                            state ? (json_t *)state : json_null());
    char *plain = env ? json_dumps(env, JSON_COMPACT) : NULL;
    json_decref(env);
    if (plain == NULL)
        return UV_ENOMEM;
    uint8_t *sealed = NULL;
    size_t n = 0;
    int rc = sealed_seal(key, context, plain, strlen(plain), &sealed, &n);
    free(plain);
    if (rc != 0)
        return rc;
    size_t cap = 4 * ((n + 2) / 3) + 1;
    if (cap > MCP_REQUEST_STATE_MAX + 1) {
        free(sealed);
        return UV_EINVAL;
    }
    char *text = malloc(cap);
    if (text != NULL)
        EVP_EncodeBlock((unsigned char *)text, sealed, (int)n);
    free(sealed);
    *out = text;
    return text ? 0 : UV_ENOMEM;
}

int mcp_request_state_open(const sealed_key_t *key, const char *context, const char *text,
                           uint64_t now_ms, json_t **state)
{
    *state = NULL;
    size_t len = strlen(text);
    if (len == 0 || len % 4 != 0 || len > MCP_REQUEST_STATE_MAX)
        return UV_EINVAL;
    uint8_t *raw = malloc(len / 4 * 3);
    if (raw == NULL)
        return UV_ENOMEM;
    int n = EVP_DecodeBlock(raw, (const unsigned char *)text, (int)len);
    /* EVP_DecodeBlock counts the padding's zero bytes. */
    for (size_t i = len; n > 0 && i > 0 && text[i - 1] == '='; i--)
        n--;
    char *plain = NULL;
    size_t plen = 0;
    int rc = n <= 0 ? UV_EINVAL : sealed_open(key, context, raw, (size_t)n, &plain, &plen);
    free(raw);
    if (rc != 0)
        return UV_EINVAL;
    json_error_t je;
    /* What seal wrote: a string may hold a NUL (\u0000). */
    json_t *env = json_loadb(plain, plen, JSON_ALLOW_NUL, &je);
    sealed_free(plain, plen);
    json_t *e = json_object_get(env, "e");
    json_t *s = json_object_get(env, "s");
    if (!json_is_integer(e) || s == NULL) {
        json_decref(env);
        return UV_EINVAL;
    }
    if ((uint64_t)json_integer_value(e) < now_ms) {
        json_decref(env);
        return UV_ETIMEDOUT;
    }
    *state = json_incref(s);
    json_decref(env);
    return 0;
}
