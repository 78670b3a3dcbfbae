/* Fuzz target: json_simd_load, json_simd_load_rpc and jsonrpc_read
 * (json_simd_load_members) against jansson on the same text. Whatever either returns must be what
 * json_loadb returns with jsonrpc_parse's flags, member order and number types included (compared
 * as jansson's own serialisation, every real to 17 digits): for json_simd_load_rpc, whose
 * params._meta may be one kept from an earlier input, this checks the sharing too. A NULL leaves
 * the text to jansson and is always allowed. The input is also read whole by jsonrpc_parse, whose
 * answer must be jansson's when simdjson reads it, and by jsonrpc_read, whose members must be those
 * of jsonrpc_parse's tree. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mcp/jsonrpc.h"
#include "util/json_simd.h"

static char *dump(const json_t *v)
{
    return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
}

/* fast (NULL, or a reading of text) is jansson's reading slow (NULL when
 * jansson refuses the text). */
static void check(json_t *fast, const json_t *slow)
{
    if (fast == NULL)
        return;
    if (slow == NULL)
        abort(); /* simdjson took a text jansson refuses */
    char *a = dump(fast), *b = dump(slow);
    if (a == NULL || b == NULL || strcmp(a, b) != 0 || !json_equal(fast, slow))
        abort(); /* read otherwise than jansson reads it */
    free(a);
    free(b);
    json_decref(fast);
}

/* jsonrpc_read's members are those of jsonrpc_parse's tree whole (via,
 * NULL when it refuses the text, with vje), and it refuses what that
 * refuses, with the same error. */
static void check_read(const char *text, size_t size, const json_t *via, const json_error_t *vje)
{
    jsonrpc_msg_t msg;
    json_error_t je;
    if ((jsonrpc_read(text, size, &msg, &je) == 0) != (via != NULL))
        abort();
    if (via == NULL) {
        if (strcmp(je.text, vje->text) != 0 || je.position != vje->position)
            abort(); /* the same syntax error */
        return;
    }
    if (!json_is_object(via)) {
        if (msg.other == NULL || !json_equal(msg.other, via))
            abort();
    } else {
        jsonrpc_members_t want;
        jsonrpc_members(via, &want);
        const json_t *a[] = {msg.mm.jsonrpc, msg.mm.id,     msg.mm.method,
                             msg.mm.params,  msg.mm.result, msg.mm.error};
        const json_t *b[] = {want.jsonrpc, want.id,     want.method,
                             want.params,  want.result, want.error};
        for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
            if ((a[i] == NULL) != (b[i] == NULL) || (a[i] != NULL && !json_equal(a[i], b[i])))
                abort();
            if (a[i] != NULL) {
                char *x = dump(a[i]), *y = dump(b[i]);
                if (x == NULL || y == NULL || strcmp(x, y) != 0)
                    abort(); /* member order and number types too */
                free(x);
                free(y);
            }
        }
        if (msg.other != NULL)
            abort();
    }
    jsonrpc_msg_release(&msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    json_error_t je0;
    json_t *whole = jsonrpc_parse(text, size, &je0);
    check_read(text, size, whole, &je0);
    json_decref(whole);
    json_t *fast = json_simd_load(text, size);
    json_t *rpc = json_simd_load_rpc(text, size);
    if ((fast == NULL) != (rpc == NULL))
        abort(); /* the two readings take on the same texts */
    if (fast == NULL)
        return 0;
    json_error_t je;
    json_t *slow =
        json_loadb(text, size, JSON_ALLOW_NUL | JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    check(fast, slow);
    check(rpc, slow);
    json_t *via = jsonrpc_parse(text, size, &je);
    if (via == NULL || !json_equal(via, slow))
        abort();
    json_decref(via);
    json_decref(slow);
    return 0;
}
