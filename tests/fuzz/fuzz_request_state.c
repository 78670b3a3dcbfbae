/* Fuzz target: the sealed requestState of MCP 2026-07-28 (mcp/
 * request_state.h), which a client sends back byte for byte and may have
 * changed: mcp_request_state_open over arbitrary text, and a state made
 * from the input sealed then opened. One fixed key; the time is the
 * input's.
 *
 * The input: a flag byte (bit 0: the state is padded by a string of the
 * next-but-three byte % 64 KiB, so both sides of the size limits are
 * reached; bit 1: an over-long text is tried; bits 2-3: the request kind
 * in the context), two bytes naming the position of a changed character
 * and one its value, one byte of padding, four bytes of time, then the
 * tool's name up to the first newline and, after it, the state's source:
 * a JSON value when it parses, else a string when it is UTF-8 (NULs
 * included), else the array of its bytes.
 *
 * Checks beyond no crash or leak:
 *   - arbitrary text never opens: UV_EINVAL or UV_ETIMEDOUT, no state;
 *   - sealing succeeds exactly when the sealed text fits
 *     MCP_REQUEST_STATE_MAX (and the plain text SEALED_MAX_PLAIN); the
 *     text is base64, a multiple of 4 long;
 *   - it opens to an equal state under the same context, until its
 *     expiry (now + MCP_REQUEST_STATE_TTL_MS) inclusive, and is
 *     UV_ETIMEDOUT one millisecond later;
 *   - under another tool, principal, request digest, kind or key it is
 *     UV_EINVAL;
 *   - with one character changed it is UV_EINVAL, or opens to the equal
 *     state only when base64 decoding gives the same bytes;
 *   - a text longer than MCP_REQUEST_STATE_MAX is UV_EINVAL. */
#include <jansson.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "fuzz_util.h"
#include "mcp/request_state.h"

#define HEAD 9 /* flag, position (2), value, padding, time (4) */

static sealed_key_t key, other_key;

static void fail(const char *what, const char *text)
{
    fprintf(stderr, "fuzz_request_state: %s\n", what);
    if (text)
        fprintf(stderr, "text: %.400s\n", text);
    abort();
}

/* The context as the session builds it: kind, name, principal, digest. */
static char *context(int kind, const char *name, const char *principal, const char *digest)
{
    size_t cap = strlen(name) + strlen(principal) + strlen(digest) + 64;
    char *c = malloc(cap);
    snprintf(c, cap, "parley-mcp-state|%d|%s|%s|%s", kind, name, principal, digest);
    return c;
}

/* Opening text must fail: UV_EINVAL (or UV_ETIMEDOUT), no state. */
static void must_refuse(const sealed_key_t *k, const char *ctx, const char *text, uint64_t now,
                        bool einval_only, const char *what)
{
    json_t *st = (json_t *)1;
    int rc = mcp_request_state_open(k, ctx, text, now, &st);
    if (st != NULL)
        fail("a refused requestState left a state", text);
    if (rc == UV_EINVAL || (!einval_only && rc == UV_ETIMEDOUT))
        return;
    fail(what, text);
}

/* The bytes base64 text decodes to as mcp_request_state_open reads it
 * (EVP_DecodeBlock less the padding); -1 when it does not decode. */
static int decoded(const char *text, uint8_t *out)
{
    size_t len = strlen(text);
    if (len == 0 || len % 4 != 0)
        return -1;
    int n = EVP_DecodeBlock(out, (const unsigned char *)text, (int)len);
    for (size_t i = len; n > 0 && i > 0 && text[i - 1] == '='; i--)
        n--;
    return n;
}

static json_t *state_from(const uint8_t *src, size_t n)
{
    json_t *v = json_loadb((const char *)src, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (v != NULL)
        return v;
    if (fuzz_utf8_valid((const char *)src, n))
        return json_stringn((const char *)src, n);
    v = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(v, json_integer(src[i]));
    return v;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    memset(key.key, 0x5a, sizeof key.key);
    memset(other_key.key, 0x5b, sizeof other_key.key);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char principal[] =
        "3f1c9a0d6b2e8f4711c0de5a9b7e2d4c6f8a1b3c5d7e9f0a2b4c6d8e0f1a3b5c";
    static const char digest[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    /* Arbitrary text never opens. */
    char *all = malloc(size + 1);
    memcpy(all, data, size);
    all[size] = '\0';
    char *ctx = context(2, "test_input_required_result_request_state", principal, digest);
    must_refuse(&key, ctx, all, 1700000000000u, false, "arbitrary text opened");
    free(ctx);
    free(all);
    if (size < HEAD)
        return 0;

    uint8_t flags = data[0];
    size_t pos = (size_t)data[1] | (size_t)data[2] << 8;
    char value = (char)data[3];
    size_t pad = (size_t)(data[4] % 64) * 1024;
    uint64_t now = 1700000000000u + ((uint64_t)data[5] | (uint64_t)data[6] << 8 |
                                     (uint64_t)data[7] << 16 | (uint64_t)data[8] << 24) *
                                        1000;
    int kind = (flags >> 2) & 3;
    const uint8_t *rest = data + HEAD;
    size_t n = size - HEAD;
    const uint8_t *nl = memchr(rest, '\n', n);
    size_t name_len = nl ? (size_t)(nl - rest) : 0;
    char *name = malloc(name_len + 2);
    memcpy(name, rest, name_len);
    name[name_len] = '\0'; /* a NUL in it ends it, as a C string would */
    const uint8_t *src = nl ? nl + 1 : rest;
    size_t src_len = n - (size_t)(src - rest);

    json_t *state = state_from(src, src_len);
    if (flags & 1) {
        char *p = malloc(pad + 1);
        memset(p, 'x', pad);
        p[pad] = '\0';
        state = json_pack("{s:o, s:s}", "v", state, "pad", p);
        free(p);
    }
    if (state == NULL)
        fail("the state could not be built", NULL);

    /* What the sealed text will be: {"e":expiry,"s":state}, sealed, in
     * base64. */
    json_t *env =
        json_pack("{s:I, s:O}", "e", (json_int_t)(now + MCP_REQUEST_STATE_TTL_MS), "s", state);
    char *plain = json_dumps(env, JSON_COMPACT);
    json_decref(env);
    if (plain == NULL)
        fail("the state could not be written", NULL);
    size_t plen = strlen(plain);
    free(plain);
    bool fits =
        plen <= SEALED_MAX_PLAIN && 4 * ((plen + SEALED_OVERHEAD + 2) / 3) <= MCP_REQUEST_STATE_MAX;

    ctx = context(kind, name, principal, digest);
    char *text = NULL;
    int rc = mcp_request_state_seal(&key, ctx, state, now, &text);
    if (!fits) {
        if (rc != UV_EINVAL || text != NULL)
            fail("a state past the limit was sealed", text);
        goto done;
    }
    if (rc != 0 || text == NULL)
        fail("a state within the limit was not sealed", NULL);
    size_t len = strlen(text);
    if (len == 0 || len % 4 != 0 || len > MCP_REQUEST_STATE_MAX ||
        strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != len)
        fail("the sealed text is not base64 within the limit", text);

    /* Round trip, up to the expiry inclusive; then expired. */
    const uint64_t times[] = {now, now + MCP_REQUEST_STATE_TTL_MS};
    for (int i = 0; i < 2; i++) {
        json_t *back = NULL;
        rc = mcp_request_state_open(&key, ctx, text, times[i], &back);
        if (rc != 0) {
            fprintf(stderr, "open: %s\n", uv_strerror(rc));
            fail("a sealed state did not open", text);
        }
        if (!json_equal(back, state))
            fail("a sealed state opened to another value", text);
        json_decref(back);
    }
    json_t *back = NULL;
    rc = mcp_request_state_open(&key, ctx, text, now + MCP_REQUEST_STATE_TTL_MS + 1, &back);
    if (rc != UV_ETIMEDOUT || back != NULL)
        fail("an expired state was not refused as expired", text);

    /* Another tool, principal, request, kind or key. */
    char *other_name = malloc(name_len + 2);
    snprintf(other_name, name_len + 2, "%sx", name);
    const char *others[][3] = {
        {other_name, principal, digest},
        {name, "", digest},
        {name, digest, digest},
        {name, principal, ""},
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        char *c = context(kind, others[i][0], others[i][1], others[i][2]);
        must_refuse(&key, c, text, now, true, "a state opened under another context");
        free(c);
    }
    free(other_name);
    char *c = context((kind + 1) & 3, name, principal, digest);
    must_refuse(&key, c, text, now, true, "a state opened for another kind of request");
    free(c);
    must_refuse(&other_key, ctx, text, now, true, "a state opened under another key");

    /* One character changed. */
    char *changed = strdup(text);
    size_t at = pos % len;
    changed[at] = value;
    back = NULL;
    rc = mcp_request_state_open(&key, ctx, changed, now, &back);
    if (rc == 0) {
        uint8_t *a = malloc(len), *b = malloc(len);
        int na = decoded(text, a), nb = decoded(changed, b);
        if (na != nb || na < 0 || memcmp(a, b, (size_t)na) != 0)
            fail("a changed state opened", changed);
        if (!json_equal(back, state))
            fail("a changed state opened to another value", changed);
        free(a);
        free(b);
        json_decref(back);
    } else if (rc != UV_EINVAL || back != NULL) {
        fail("a changed state was not refused as invalid", changed);
    }
    free(changed);

    /* Longer than the limit, whatever it holds. */
    if (flags & 2) {
        size_t big_len = MCP_REQUEST_STATE_MAX + 4;
        char *big = malloc(big_len + 1);
        memset(big, 'A', big_len);
        memcpy(big, text, len);
        big[big_len] = '\0';
        must_refuse(&key, ctx, big, now, true, "a text past the limit was not refused");
        free(big);
    }
    free(text);
done:
    free(ctx);
    free(name);
    json_decref(state);
    return 0;
}
