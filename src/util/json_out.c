/* json_out: a jansson tree as compact JSON text (see json_out.h). */
#include "util/json_out.h"

#include <stdbool.h>
#include <uv.h>

static int out_value(buf_t *b, const json_t *v, int depth);

static int out_string(buf_t *b, const char *s, size_t n)
{
    int rc = buf_append(b, "\"", 1);
    if (rc == 0)
        rc = buf_append_json_escaped(b, s, n);
    return rc ? rc : buf_append(b, "\"", 1);
}

static int out_integer(buf_t *b, json_int_t i)
{
    char d[24], *p = d + sizeof d;
    /* In unsigned arithmetic: -INT64_MIN does not fit a json_int_t. */
    unsigned long long u = i < 0 ? 0ULL - (unsigned long long)i : (unsigned long long)i;
    do
        *--p = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (i < 0)
        *--p = '-';
    return buf_append(b, p, (size_t)(d + sizeof d - p));
}

/* Reals are rare in parley's answers: jansson writes them, so the text is
 * its own (precision, exponent, ".0" of an integral value). */
static int out_real(buf_t *b, const json_t *v)
{
    char d[64];
    size_t n = json_dumpb(v, d, sizeof d, JSON_ENCODE_ANY | JSON_COMPACT);
    if (n == 0 || n > sizeof d)
        return UV_EINVAL;
    return buf_append(b, d, n);
}

static int out_object(buf_t *b, const json_t *v, int depth)
{
    int rc = buf_append(b, "{", 1);
    bool first = true;
    for (void *it = json_object_iter((json_t *)v); it != NULL && rc == 0;
         it = json_object_iter_next((json_t *)v, it)) {
        if (!first)
            rc = buf_append(b, ",", 1);
        first = false;
        if (rc == 0)
            rc = out_string(b, json_object_iter_key(it), json_object_iter_key_len(it));
        if (rc == 0)
            rc = buf_append(b, ":", 1);
        if (rc == 0)
            rc = out_value(b, json_object_iter_value(it), depth + 1);
    }
    return rc ? rc : buf_append(b, "}", 1);
}

static int out_array(buf_t *b, const json_t *v, int depth)
{
    int rc = buf_append(b, "[", 1);
    size_t n = json_array_size(v);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (i > 0)
            rc = buf_append(b, ",", 1);
        if (rc == 0)
            rc = out_value(b, json_array_get(v, i), depth + 1);
    }
    return rc ? rc : buf_append(b, "]", 1);
}

static int out_value(buf_t *b, const json_t *v, int depth)
{
    if (v == NULL)
        return UV_EINVAL;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return depth >= JSON_OUT_MAX_DEPTH ? UV_EINVAL : out_object(b, v, depth);
    case JSON_ARRAY:
        return depth >= JSON_OUT_MAX_DEPTH ? UV_EINVAL : out_array(b, v, depth);
    case JSON_STRING:
        return out_string(b, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        return out_integer(b, json_integer_value(v));
    case JSON_REAL:
        return out_real(b, v);
    case JSON_TRUE:
        return buf_append(b, "true", 4);
    case JSON_FALSE:
        return buf_append(b, "false", 5);
    case JSON_NULL:
        return buf_append(b, "null", 4);
    }
    return UV_EINVAL;
}

int json_out_append(buf_t *b, const json_t *v)
{
    return out_value(b, v, 0);
}
