/* schema: JSON Schema subset validator for tool arguments (see schema.h).
 * Patterns are POSIX extended regular expressions (regcomp), which cover
 * the ECMA-262 subset tool schemas use (classes, anchors, repetition). */
#include "mcp/schema.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strutil.h"

#define PATH_MAX_LEN 256

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

static bool is_type(const json_t *v, const char *t)
{
    if (strcmp(t, "object") == 0)
        return json_is_object(v);
    if (strcmp(t, "array") == 0)
        return json_is_array(v);
    if (strcmp(t, "string") == 0)
        return json_is_string(v);
    if (strcmp(t, "integer") == 0)
        return json_is_integer(v) ||
               (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
    if (strcmp(t, "number") == 0)
        return json_is_number(v);
    if (strcmp(t, "boolean") == 0)
        return json_is_boolean(v);
    if (strcmp(t, "null") == 0)
        return json_is_null(v);
    return false;
}

/* A short rendering of the offending value for messages. A long one is
 * cut at a character's start: half a UTF-8 sequence would make the tool's
 * error text unencodable, and the session would be closed. */
static void show(const json_t *v, char *out, size_t cap)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (s == NULL) {
        snprintf(out, cap, "?");
        return;
    }
    if (strlen(s) > 60) {
        char head[58];
        memcpy(head, s, sizeof head - 1); /* s is longer */
        head[sizeof head - 1] = '\0';
        str_utf8_trim_end(head);
        snprintf(out, cap, "%s...", head);
    } else {
        snprintf(out, cap, "%s", s);
    }
    free(s);
}

static size_t utf8_len(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    return n;
}

static bool fail(char *err, size_t cap, const char *path, const char *what, const json_t *v)
{
    char got[80];
    show(v, got, sizeof got);
    snprintf(err, cap, "%s: expected %s, got %s (%s)", path[0] ? path : "arguments", what, got,
             type_name(v));
    return false;
}

/* The keywords of one schema object the validator reads, found in one
 * pass over its members: a look-up by name hashes the name and costs
 * about as much as that pass, and a property's schema was looked up for
 * some ten keywords it mostly does not have (about 1,900 instructions a
 * property validated). */
typedef struct {
    const json_t *type, *enum_, *const_, *any_of;
    const json_t *minimum, *maximum, *exclusive_minimum, *exclusive_maximum;
    const json_t *min_length, *max_length, *pattern;
    const json_t *properties, *required, *additional_properties;
    const json_t *items, *min_items, *max_items;
} schema_kw_t;

static void keywords(const json_t *schema, schema_kw_t *kw)
{
    memset(kw, 0, sizeof *kw);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)schema, k, v)
    {
        const json_t **slot = NULL;
        switch (k[0]) {
        case 'a':
            slot = strcmp(k, "anyOf") == 0                  ? &kw->any_of
                   : strcmp(k, "additionalProperties") == 0 ? &kw->additional_properties
                                                            : NULL;
            break;
        case 'c':
            slot = strcmp(k, "const") == 0 ? &kw->const_ : NULL;
            break;
        case 'e':
            slot = strcmp(k, "enum") == 0               ? &kw->enum_
                   : strcmp(k, "exclusiveMinimum") == 0 ? &kw->exclusive_minimum
                   : strcmp(k, "exclusiveMaximum") == 0 ? &kw->exclusive_maximum
                                                        : NULL;
            break;
        case 'i':
            slot = strcmp(k, "items") == 0 ? &kw->items : NULL;
            break;
        case 'm':
            slot = strcmp(k, "minimum") == 0     ? &kw->minimum
                   : strcmp(k, "maximum") == 0   ? &kw->maximum
                   : strcmp(k, "minLength") == 0 ? &kw->min_length
                   : strcmp(k, "maxLength") == 0 ? &kw->max_length
                   : strcmp(k, "minItems") == 0  ? &kw->min_items
                   : strcmp(k, "maxItems") == 0  ? &kw->max_items
                                                 : NULL;
            break;
        case 'p':
            slot = strcmp(k, "pattern") == 0      ? &kw->pattern
                   : strcmp(k, "properties") == 0 ? &kw->properties
                                                  : NULL;
            break;
        case 'r':
            slot = strcmp(k, "required") == 0 ? &kw->required : NULL;
            break;
        case 't':
            slot = strcmp(k, "type") == 0 ? &kw->type : NULL;
            break;
        default:
            break;
        }
        if (slot != NULL)
            *slot = v;
    }
}

/* Compiled patterns by their text: a tool's pattern is compiled once, not
 * at every call (regcomp of "^[A-Za-z0-9_-]+$" costs some 52,000
 * instructions, regexec of a short name 2,400). A fixed set, kept for the
 * process's life: tools have few patterns; past it, a pattern is compiled
 * for the one validation as before. Validation runs on the loop's thread
 * only: the set is not locked. */
#define SCHEMA_PATTERNS_CACHED 16

static struct {
    char *text;
    regex_t re;
} patterns[SCHEMA_PATTERNS_CACHED];
static size_t npatterns;

/* text compiled: the cached one, else compiled into *own (the caller
 * frees it when the result is own); NULL when text is NULL or does not
 * compile. */
static const regex_t *pattern_compiled(const char *text, regex_t *own)
{
    if (text == NULL)
        return NULL;
    for (size_t i = 0; i < npatterns; i++)
        if (strcmp(patterns[i].text, text) == 0)
            return &patterns[i].re;
    char *copy = npatterns < SCHEMA_PATTERNS_CACHED ? strdup(text) : NULL;
    if (copy != NULL) {
        /* compiled in its place: a regex_t is not promised to move */
        if (regcomp(&patterns[npatterns].re, text, REG_EXTENDED | REG_NOSUB) != 0) {
            free(copy);
            return NULL;
        }
        patterns[npatterns].text = copy;
        return &patterns[npatterns++].re;
    }
    /* the set is full (or no memory): this validation's own */
    return regcomp(own, text, REG_EXTENDED | REG_NOSUB) == 0 ? own : NULL;
}

static bool validate(const json_t *schema, const json_t *v, const char *path, char *err,
                     size_t cap);

static bool validate_type(const schema_kw_t *kw, const json_t *v, const char *path, char *err,
                          size_t cap)
{
    const json_t *t = kw->type;
    if (t == NULL)
        return true;
    if (json_is_string(t)) {
        if (is_type(v, json_string_value(t)))
            return true;
        char what[64];
        const char *tn = json_string_value(t);
        snprintf(what, sizeof what, "%s %s",
                 strchr("aeiou", tn[0]) && strcmp(tn, "null") ? "an" : "a", tn);
        if (strcmp(tn, "null") == 0)
            snprintf(what, sizeof what, "null");
        return fail(err, cap, path, what, v);
    }
    size_t i;
    const json_t *e;
    char what[128] = "one of the types";
    json_array_foreach(t, i, e)
    {
        if (json_is_string(e) && is_type(v, json_string_value(e)))
            return true;
        size_t n = strlen(what);
        snprintf(what + n, sizeof what - n, "%s %s", i ? "," : "", json_string_value(e));
    }
    return fail(err, cap, path, what, v);
}

static bool validate_number(const schema_kw_t *kw, const json_t *v, const char *path, char *err,
                            size_t cap)
{
    double x = json_number_value(v);
    const json_t *mn = kw->minimum, *mx = kw->maximum;
    const json_t *emn = kw->exclusive_minimum, *emx = kw->exclusive_maximum;
    char what[128];
    /* An integer the schema does not bound must still be one JSON and the
     * store hold exactly (1e12 for a count, 1e20 for an id). */
    if (json_is_integer(v) || x == floor(x)) {
        if ((!mx && x > MCP_SCHEMA_INT_MAX) || (!mn && x < -MCP_SCHEMA_INT_MAX)) {
            snprintf(what, sizeof what, "an integer between %.0f and %.0f", -MCP_SCHEMA_INT_MAX,
                     MCP_SCHEMA_INT_MAX);
            return fail(err, cap, path, what, v);
        }
    }
    if ((mn && x < json_number_value(mn)) || (mx && x > json_number_value(mx))) {
        if (mn && mx)
            snprintf(what, sizeof what, "a value between %.15g and %.15g", json_number_value(mn),
                     json_number_value(mx));
        else if (mn)
            snprintf(what, sizeof what, "a value of at least %.15g", json_number_value(mn));
        else
            snprintf(what, sizeof what, "a value of at most %.15g", json_number_value(mx));
        return fail(err, cap, path, what, v);
    }
    if (emn && x <= json_number_value(emn)) {
        snprintf(what, sizeof what, "a value greater than %.15g", json_number_value(emn));
        return fail(err, cap, path, what, v);
    }
    if (emx && x >= json_number_value(emx)) {
        snprintf(what, sizeof what, "a value less than %.15g", json_number_value(emx));
        return fail(err, cap, path, what, v);
    }
    return true;
}

static bool validate_string(const schema_kw_t *kw, const json_t *v, const char *path, char *err,
                            size_t cap)
{
    const char *s = json_string_value(v);
    if (strlen(s) != json_string_length(v)) {
        /* No store, name or path holds a NUL (PostgreSQL refuses it in
         * text and jsonb; a C string would end there). */
        snprintf(err, cap, "%s: a string without NUL characters (\\u0000); remove them",
                 path[0] ? path : "arguments");
        return false;
    }
    size_t n = utf8_len(s);
    const json_t *mn = kw->min_length, *mx = kw->max_length;
    char what[160];
    if (mn && (json_int_t)n < json_integer_value(mn)) {
        snprintf(what, sizeof what, "a string of at least %lld characters",
                 (long long)json_integer_value(mn));
        return fail(err, cap, path, what, v);
    }
    if (mx && (json_int_t)n > json_integer_value(mx)) {
        snprintf(what, sizeof what, "a string of at most %lld characters",
                 (long long)json_integer_value(mx));
        return fail(err, cap, path, what, v);
    }
    const json_t *pat = kw->pattern;
    if (pat) {
        regex_t own;
        const regex_t *re = pattern_compiled(json_string_value(pat), &own);
        if (re == NULL) {
            snprintf(err, cap, "%s: the tool's schema has a bad pattern", path);
            return false;
        }
        int m = regexec(re, s, 0, NULL, 0);
        if (re == &own)
            regfree(&own);
        if (m != 0) {
            snprintf(what, sizeof what, "a string matching %s", json_string_value(pat));
            return fail(err, cap, path, what, v);
        }
    }
    return true;
}

/* out = path "." k (k alone at the top), cut at cap - 1 bytes as snprintf
 * would: built for every property validated, snprintf's cost was a
 * quarter of validating a call's arguments. */
static void path_join(char *out, size_t cap, const char *path, const char *k)
{
    if (!str_copy(out, cap, path))
        return; /* the path alone fills out */
    size_t n = strlen(out);
    if (n > 0 && n + 1 < cap)
        out[n++] = '.';
    if (!str_copy(out + n, cap - n, k))
        return; /* cut at cap - 1 bytes */
}

static bool validate_object(const schema_kw_t *kw, const json_t *v, const char *path, char *err,
                            size_t cap)
{
    const json_t *props = kw->properties, *req = kw->required;
    size_t i;
    const json_t *r;
    char sub[PATH_MAX_LEN];
    json_array_foreach(req, i, r)
    {
        const char *k = json_string_value(r);
        if (k && json_object_get(v, k) == NULL) {
            path_join(sub, sizeof sub, path, k);
            const json_t *ps = props ? json_object_get(props, k) : NULL;
            const json_t *desc = ps ? json_object_get(ps, "description") : NULL;
            snprintf(err, cap, "%s: required%s%s", sub, desc ? " — " : "",
                     desc ? json_string_value(desc) : "");
            return false;
        }
    }
    const json_t *addl = kw->additional_properties;
    const char *k;
    const json_t *pv;
    json_object_foreach((json_t *)v, k, pv)
    {
        path_join(sub, sizeof sub, path, k);
        const json_t *ps = props ? json_object_get(props, k) : NULL;
        if (ps) {
            if (!validate(ps, pv, sub, err, cap))
                return false;
        } else if (json_is_false(addl)) {
            char known[160] = "";
            size_t n = 0;
            const char *pk;
            const json_t *pvv;
            json_object_foreach((json_t *)props, pk, pvv)
            {
                if (n < sizeof known - 1)
                    n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", n ? ", " : "", pk);
            }
            snprintf(err, cap, "%s: unknown parameter (known: %s)", sub, known[0] ? known : "none");
            return false;
        } else if (json_is_object(addl) && !validate(addl, pv, sub, err, cap)) {
            return false;
        }
    }
    return true;
}

static bool validate_array(const schema_kw_t *kw, const json_t *v, const char *path, char *err,
                           size_t cap)
{
    const json_t *mn = kw->min_items, *mx = kw->max_items;
    char what[96];
    if (mn && (json_int_t)json_array_size(v) < json_integer_value(mn)) {
        snprintf(what, sizeof what, "at least %lld items", (long long)json_integer_value(mn));
        return fail(err, cap, path, what, v);
    }
    if (mx && (json_int_t)json_array_size(v) > json_integer_value(mx)) {
        snprintf(what, sizeof what, "at most %lld items", (long long)json_integer_value(mx));
        return fail(err, cap, path, what, v);
    }
    const json_t *items = kw->items;
    if (json_is_object(items)) {
        size_t i;
        const json_t *e;
        char sub[PATH_MAX_LEN];
        json_array_foreach(v, i, e)
        {
            snprintf(sub, sizeof sub, "%s[%zu]", path[0] ? path : "arguments", i);
            if (!validate(items, e, sub, err, cap))
                return false;
        }
    }
    return true;
}

static bool validate(const json_t *schema, const json_t *v, const char *path, char *err, size_t cap)
{
    if (!json_is_object(schema))
        return true;
    schema_kw_t kw;
    keywords(schema, &kw);
    if (!validate_type(&kw, v, path, err, cap))
        return false;
    const json_t *en = kw.enum_;
    if (en) {
        size_t i;
        const json_t *e;
        bool found = false;
        char what[200] = "one of";
        json_array_foreach(en, i, e)
        {
            if (json_equal((json_t *)e, (json_t *)v))
                found = true;
            char one[64];
            show(e, one, sizeof one);
            size_t n = strlen(what);
            snprintf(what + n, sizeof what - n, "%s %s", i ? "," : "", one);
        }
        if (!found)
            return fail(err, cap, path, what, v);
    }
    const json_t *cn = kw.const_;
    if (cn && !json_equal((json_t *)cn, (json_t *)v)) {
        char what[96], one[64];
        show(cn, one, sizeof one);
        snprintf(what, sizeof what, "exactly %s", one);
        return fail(err, cap, path, what, v);
    }
    const json_t *any = kw.any_of;
    if (json_is_array(any)) {
        size_t i;
        const json_t *alt;
        /* The error told is that of the first alternative whose type
         * admits the value ("q: expected a string of at most 3 characters");
         * when none does, the types the alternatives admit. */
        char first[512] = "", typed[512] = "", types[128] = "one of the types";
        bool all_typed = true;
        json_array_foreach(any, i, alt)
        {
            char e2[512];
            if (validate(alt, v, path, e2, sizeof e2))
                goto any_ok;
            if (i == 0)
                snprintf(first, sizeof first, "%s", e2);
            const json_t *t = json_object_get(alt, "type");
            if (!json_is_string(t)) {
                all_typed = false;
                continue;
            }
            if (typed[0] == '\0' && is_type(v, json_string_value(t)))
                snprintf(typed, sizeof typed, "%s", e2);
            size_t n = strlen(types);
            snprintf(types + n, sizeof types - n, "%s %s", i ? "," : "", json_string_value(t));
        }
        if (typed[0])
            snprintf(err, cap, "%s", typed);
        else if (all_typed)
            return fail(err, cap, path, types, v);
        else
            snprintf(err, cap, "%s", first);
        return false;
    }
any_ok:
    if (json_is_number(v))
        return validate_number(&kw, v, path, err, cap);
    if (json_is_string(v))
        return validate_string(&kw, v, path, err, cap);
    if (json_is_object(v))
        return validate_object(&kw, v, path, err, cap);
    if (json_is_array(v))
        return validate_array(&kw, v, path, err, cap);
    return true;
}

bool schema_validate(const json_t *schema, const json_t *value, char *err, size_t errcap)
{
    return validate(schema, value, "", err, errcap);
}

/* True when schema (or one of its anyOf alternatives) admits integers. */
static bool wants_integer(const json_t *schema)
{
    const json_t *t = json_object_get(schema, "type");
    if (json_is_string(t) && strcmp(json_string_value(t), "integer") == 0)
        return true;
    size_t i;
    const json_t *e;
    json_array_foreach(t, i, e)
    {
        if (json_is_string(e) && strcmp(json_string_value(e), "integer") == 0)
            return true;
    }
    json_array_foreach(json_object_get(schema, "anyOf"), i, e)
    {
        if (wants_integer(e))
            return true;
    }
    return false;
}

/* v, or the integer it stands for when schema wants an integer and v is a
 * whole real ("2.0", "-0.0", "1e3"): a new reference either way. */
static json_t *integers(const json_t *schema, json_t *v)
{
    if (!json_is_object(schema))
        return json_incref(v);
    if (json_is_real(v) && wants_integer(schema)) {
        double x = json_real_value(v);
        if (x == floor(x) && fabs(x) <= MCP_SCHEMA_INT_MAX)
            return json_integer((json_int_t)x);
    }
    if (json_is_object(v)) {
        const json_t *props = json_object_get(schema, "properties");
        const json_t *addl = json_object_get(schema, "additionalProperties");
        const char *k;
        json_t *x;
        void *tmp;
        json_object_foreach_safe(v, tmp, k, x)
        {
            const json_t *ps = props ? json_object_get(props, k) : NULL;
            json_t *y = integers(ps ? ps : addl, x);
            if (y != x)
                json_object_set_new(v, k, y); /* an integer for a whole real */
            else
                json_decref(y);
        }
    } else if (json_is_array(v)) {
        const json_t *items = json_object_get(schema, "items");
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *x = json_array_get(v, i), *y = integers(items, x);
            if (y != x)
                json_array_set_new(v, i, y);
            else
                json_decref(y);
        }
    }
    return json_incref(v);
}

bool schema_holds_real(const json_t *v)
{
    if (json_is_real(v))
        return true;
    const char *k;
    const json_t *x;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x)
        {
            if (schema_holds_real(x))
                return true;
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x)
        {
            if (schema_holds_real(x))
                return true;
        }
    }
    return false;
}

void schema_normalize(const json_t *schema, json_t *value)
{
    /* Only a real can change: a value without one is left unwalked (the
     * walk looks each member's schema up). */
    if (schema_holds_real(value))
        json_decref(integers(schema, value));
}

static bool check(const json_t *schema, const char *path, char *err, size_t cap)
{
    if (!json_is_object(schema)) {
        snprintf(err, cap, "%s: a schema must be an object", path);
        return false;
    }
    const json_t *pat = json_object_get(schema, "pattern");
    if (pat) {
        regex_t re;
        if (!json_is_string(pat) || regcomp(&re, json_string_value(pat), REG_EXTENDED) != 0) {
            snprintf(err, cap, "%s: pattern does not compile", path);
            return false;
        }
        regfree(&re);
    }
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)json_object_get(schema, "properties"), k, v)
    {
        char sub[PATH_MAX_LEN];
        snprintf(sub, sizeof sub, "%s.%s", path, k);
        if (!check(v, sub, err, cap))
            return false;
    }
    const json_t *items = json_object_get(schema, "items");
    if (items && !check(items, path, err, cap))
        return false;
    return true;
}

bool schema_check(const json_t *schema, char *err, size_t errcap)
{
    return check(schema, "inputSchema", err, errcap);
}
