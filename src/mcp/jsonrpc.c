/* jsonrpc: JSON-RPC 2.0 envelopes (see jsonrpc.h). */
#include "mcp/jsonrpc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/json_members.h"
#include "util/json_out.h"
#include "util/json_simd.h"
#include "util/strutil.h"

/* Envelopes are bounded only by what they carry: results are capped by the
 * tools that build them. */
#define JSONRPC_MAX_MESSAGE ((size_t)1 << 30)

static int append_id(buf_t *b, const json_t *id)
{
    return id == NULL ? buf_append_str(b, "null") : json_out_append(b, id);
}

int jsonrpc_open_response(buf_t *b, const json_t *id, const char *member)
{
    return buf_append_str(b, "{\"jsonrpc\":\"2.0\",\"id\":") || append_id(b, id) ||
           buf_append_str(b, ",\"") || buf_append_str(b, member) || buf_append_str(b, "\":");
}

/* The members of jsonrpc_members_t, in its order. */
static const char *const member_names[] = {"jsonrpc", "id", "method", "params", "result", "error"};
#define NMEMBERS (sizeof member_names / sizeof member_names[0])
_Static_assert(NMEMBERS <= JSON_SIMD_MEMBERS_MAX, "json_simd_load_members reads them all");

static jsonrpc_members_t members_of(json_t *const *v)
{
    return (jsonrpc_members_t){
        .jsonrpc = v[0], .id = v[1], .method = v[2], .params = v[3], .result = v[4], .error = v[5]};
}

void jsonrpc_members(const json_t *m, jsonrpc_members_t *out)
{
    json_t *v[NMEMBERS];
    json_members(m, member_names, NMEMBERS, v);
    *out = members_of(v);
}

/* The message b holds (its length in *len when len is not NULL), or NULL
 * (b freed) when rc says a write failed. */
static char *steal(buf_t *b, int rc, size_t *len)
{
    if (rc) {
        buf_free(b);
        return NULL;
    }
    size_t n = 0;
    char *s = buf_steal(b, &n);
    if (s && len)
        *len = n;
    return s;
}

char *jsonrpc_result_text(const json_t *id, const char *result_text, size_t result_len, size_t *len)
{
    buf_t b;
    buf_init(&b, JSONRPC_MAX_MESSAGE);
    int rc = jsonrpc_open_response(&b, id, "result") || buf_append(&b, result_text, result_len) ||
             buf_append_str(&b, "}");
    return steal(&b, rc, len);
}

char *jsonrpc_result(const json_t *id, const json_t *result, size_t *len)
{
    buf_t b;
    buf_init(&b, JSONRPC_MAX_MESSAGE);
    int rc = jsonrpc_open_response(&b, id, "result") || json_out_append(&b, result) ||
             buf_append_str(&b, "}");
    return steal(&b, rc, len);
}

char *jsonrpc_result_spliced(const json_t *id, const json_t *result, const char *tail, size_t *len)
{
    if (!json_is_object(result) || tail[0] != ',')
        return NULL;
    buf_t b;
    buf_init(&b, JSONRPC_MAX_MESSAGE);
    int rc = jsonrpc_open_response(&b, id, "result") || json_out_append(&b, result);
    if (rc == 0)
        b.len--; /* the object's closing brace */
    rc = rc || buf_append_str(&b, json_object_size(result) == 0 ? tail + 1 : tail) ||
         buf_append_str(&b, "}}");
    return steal(&b, rc, len);
}

char *jsonrpc_error(const json_t *id, int code, const char *message, const json_t *data,
                    size_t *len)
{
    /* A message quoting a client's text cut by bytes may hold half a
     * character: repaired, not refused (the session would be closed). */
    json_t *msg = json_string(message);
    if (msg == NULL && message != NULL) {
        char *fixed = strdup(message);
        if (fixed) {
            str_utf8_repair(fixed);
            msg = json_string(fixed);
            free(fixed);
        }
    }
    json_t *err = msg ? json_pack("{s:i, s:o}", "code", code, "message", msg) : NULL;
    if (err == NULL)
        return NULL;
    if (data)
        json_object_set(err, "data", (json_t *)data);
    buf_t b;
    buf_init(&b, JSONRPC_MAX_MESSAGE);
    int rc = jsonrpc_open_response(&b, id, "error") || json_out_append(&b, err) ||
             buf_append_str(&b, "}");
    json_decref(err);
    return steal(&b, rc, len);
}

char *jsonrpc_notification(const char *method, const json_t *params, size_t *len)
{
    buf_t b;
    buf_init(&b, JSONRPC_MAX_MESSAGE);
    json_t *m = json_string(method);
    int rc = m == NULL || buf_append_str(&b, "{\"jsonrpc\":\"2.0\",\"method\":") ||
             json_out_append(&b, m) ||
             (params && (buf_append_str(&b, ",\"params\":") || json_out_append(&b, params))) ||
             buf_append_str(&b, "}");
    json_decref(m);
    return steal(&b, rc, len);
}

/* Integral reals within +-2^53 back to integers (after JSON_DECODE_INT_AS_REAL). */
static json_t *ints_again(json_t *v, int depth)
{
    if (depth > 10000)
        return v;
    if (json_is_real(v)) {
        double x = json_real_value(v);
        if (x == floor(x) && fabs(x) <= 9007199254740991.0) {
            json_decref(v);
            return json_integer((json_int_t)x);
        }
        return v;
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        void *tmp;
        json_object_foreach_safe(v, tmp, k, x)
        {
            json_t *y = ints_again(json_incref(x), depth + 1);
            json_object_set_new(v, k, y);
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            json_array_set_new(v, i, ints_again(json_incref(json_array_get(v, i)), depth + 1));
    }
    return v;
}

json_t *jsonrpc_parse_jansson(const char *msg, size_t len, json_error_t *je)
{
    /* A key given twice is refused: which of the two counts is not
     * defined by JSON, and '"method":"ping","method":"tools/list"' must not
     * pass a check on one and run the other. */
    const size_t flags = JSON_ALLOW_NUL | JSON_DECODE_ANY | JSON_REJECT_DUPLICATES;
    json_t *m = json_loadb(msg, len, flags, je);
    if (m != NULL || strstr(je->text, "too big") == NULL)
        return m;
    m = json_loadb(msg, len, flags | JSON_DECODE_INT_AS_REAL, je);
    return m ? ints_again(m, 0) : NULL;
}

json_t *jsonrpc_parse(const char *msg, size_t len, json_error_t *je)
{
    /* simdjson's reading first: a fifth of jansson's instructions on the
     * requests clients send (bench/README.md, "Parsing a request"); what
     * it leaves, jansson reads, with the same answer or error. */
    json_t *m = json_simd_load_rpc(msg, len);
    return m ? m : jsonrpc_parse_jansson(msg, len, je);
}

int jsonrpc_read(const char *msg, size_t len, jsonrpc_msg_t *out, json_error_t *je)
{
    json_t *v[NMEMBERS];
    *out = (jsonrpc_msg_t){{0}, NULL};
    if (json_simd_load_members(msg, len, member_names, NMEMBERS, v)) {
        out->mm = members_of(v);
        return 0;
    }
    json_t *m = jsonrpc_parse(msg, len, je);
    if (m == NULL)
        return -1;
    if (!json_is_object(m)) {
        out->other = m;
        return 0;
    }
    json_members(m, member_names, NMEMBERS, v);
    for (size_t i = 0; i < NMEMBERS; i++)
        json_incref(v[i]);
    out->mm = members_of(v);
    json_decref(m);
    return 0;
}

void jsonrpc_msg_release(jsonrpc_msg_t *m)
{
    jsonrpc_members_t *mm = &m->mm;
    json_t *all[] = {mm->jsonrpc, mm->id, mm->method, mm->params, mm->result, mm->error, m->other};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        json_decref(all[i]);
    *m = (jsonrpc_msg_t){{0}, NULL};
}

void jsonrpc_parse_error(const json_error_t *je, char *out, size_t cap)
{
    snprintf(out, cap, "Parse error: %s at byte %d", je->text, je->position);
    for (unsigned char *p = (unsigned char *)out; *p; p++)
        if (*p < 0x20 || *p >= 0x7f)
            *p = '?';
}
