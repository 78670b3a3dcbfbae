/* fuzz_util: checks the fuzz targets share (header only, static
 * functions): whether a JSON value holds a NUL (PostgreSQL's jsonb refuses
 * one, so nothing bound for the store may), and whether text is valid
 * UTF-8 (what jansson takes as a string). */
#ifndef PARLEY_FUZZ_UTIL_H
#define PARLEY_FUZZ_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* True when a string anywhere in v holds a NUL. */
static inline bool fuzz_json_has_nul(json_t *v)
{
    const char *key;
    json_t *m;
    size_t i;
    switch (json_typeof(v)) {
    case JSON_STRING:
        return strlen(json_string_value(v)) != json_string_length(v);
    case JSON_ARRAY:
        json_array_foreach(v, i, m)
        {
            if (fuzz_json_has_nul(m))
                return true;
        }
        return false;
    case JSON_OBJECT:
        json_object_foreach(v, key, m)
        {
            if (fuzz_json_has_nul(m))
                return true;
        }
        return false;
    default:
        return false;
    }
}

/* True when s[0..n) is UTF-8 that jansson takes for a string. */
static inline bool fuzz_utf8_valid(const char *s, size_t n)
{
    json_t *v = json_stringn(s, n);
    bool ok = v != NULL;
    json_decref(v);
    return ok;
}

#endif
