/* pgtext: PostgreSQL's text formats written in C, byte for byte as the
 * server writes or reads them (see pgtext.h). */
#include "db/pgtext.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

/* ---- COPY text ----------------------------------------------------------- */

int pgtext_copy_escape(buf_t *b, const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        const char *rep = NULL;
        switch (s[i]) {
        case '\\':
            rep = "\\\\";
            break;
        case '\t':
            rep = "\\t";
            break;
        case '\n':
            rep = "\\n";
            break;
        case '\r':
            rep = "\\r";
            break;
        default:
            continue;
        }
        int rc = buf_append(b, s + start, i - start);
        if (rc == 0)
            rc = buf_append_str(b, rep);
        if (rc != 0)
            return rc;
        start = i + 1;
    }
    return buf_append(b, s + start, n - start);
}

/* ---- jsonb text ------------------------------------------------------------ */

/* A real as jansson writes it ("%.17g", ".0" when integral-looking), then as
 * numeric prints that literal: plain digits, as many decimals as the
 * literal had after its exponent is applied. */
static int real_text(buf_t *b, double d)
{
    char s[64];
    snprintf(s, sizeof s, "%.17g", d);
    const char *p = s;
    bool neg = *p == '-';
    if (neg)
        p++;
    char dig[64];
    int nd = 0, point = -1;
    for (; (*p >= '0' && *p <= '9') || *p == '.'; p++) {
        if (*p == '.')
            point = nd;
        else if (nd < (int)sizeof dig - 2)
            dig[nd++] = *p;
    }
    int exp = 0;
    bool has_e = *p == 'e' || *p == 'E';
    if (has_e)
        exp = atoi(p + 1);
    if (point < 0) {
        point = nd;
        if (!has_e) /* jansson appends ".0" */
            dig[nd++] = '0';
    }
    int ip = point + exp; /* digits before the decimal point */
    int scale = nd - ip > 0 ? nd - ip : 0;
    bool zero = true;
    for (int i = 0; i < nd; i++)
        if (dig[i] != '0')
            zero = false;
    int rc = 0;
    if (neg && !zero)
        rc = buf_append(b, "-", 1);
    /* Integer part without leading zeros. */
    bool started = false;
    for (int i = 0; i < ip && rc == 0; i++) {
        char c = i < nd ? dig[i] : '0';
        if (c == '0' && !started)
            continue;
        started = true;
        rc = buf_append(b, &c, 1);
    }
    if (!started && rc == 0)
        rc = buf_append(b, "0", 1);
    if (scale > 0 && rc == 0) {
        rc = buf_append(b, ".", 1);
        for (int i = ip; i < ip + scale && rc == 0; i++) {
            char c = i < 0 ? '0' : dig[i];
            rc = buf_append(b, &c, 1);
        }
    }
    return rc;
}

/* A JSON string as PostgreSQL's escape_json writes it: these escapes, other
 * control characters as \u00XX, everything else as is. */
static const char *const json_escapes[] = {
    ['\b'] = "\\b", ['\f'] = "\\f", ['\n'] = "\\n",  ['\r'] = "\\r",
    ['\t'] = "\\t", ['"'] = "\\\"", ['\\'] = "\\\\",
};

static int json_escaped(buf_t *b, const char *s, size_t n)
{
    int rc = buf_append(b, "\"", 1);
    size_t start = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        char rep[8];
        if (c < sizeof json_escapes / sizeof json_escapes[0] && json_escapes[c])
            snprintf(rep, sizeof rep, "%s", json_escapes[c]);
        else
            snprintf(rep, sizeof rep, "\\u%04x", c);
        rc = buf_append(b, s + start, i - start);
        if (rc == 0)
            rc = buf_append_str(b, rep);
        start = i + 1;
    }
    if (rc == 0)
        rc = buf_append(b, s + start, n - start);
    return rc == 0 ? buf_append(b, "\"", 1) : rc;
}

typedef struct {
    const char *key;
    size_t len;
    json_t *value;
} jkey_t;

static int jkey_cmp(const void *a, const void *b)
{
    const jkey_t *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return memcmp(x->key, y->key, x->len);
}

/* jsonb's text of v; strip: leave out object fields whose value is null, at
 * every level (jsonb_strip_nulls). */
static int jsonb_write(buf_t *b, const json_t *v, bool strip)
{
    switch (json_typeof(v)) {
    case JSON_NULL:
        return buf_append_str(b, "null");
    case JSON_TRUE:
        return buf_append_str(b, "true");
    case JSON_FALSE:
        return buf_append_str(b, "false");
    case JSON_INTEGER:
        return buf_printf(b, "%lld", (long long)json_integer_value(v));
    case JSON_REAL:
        return real_text(b, json_real_value(v));
    case JSON_STRING:
        return json_escaped(b, json_string_value(v), json_string_length(v));
    case JSON_ARRAY: {
        int rc = buf_append(b, "[", 1);
        for (size_t i = 0; i < json_array_size(v) && rc == 0; i++) {
            if (i > 0)
                rc = buf_append(b, ", ", 2);
            if (rc == 0)
                rc = jsonb_write(b, json_array_get(v, i), strip);
        }
        return rc == 0 ? buf_append(b, "]", 1) : rc;
    }
    case JSON_OBJECT: {
        size_t n = json_object_size(v);
        jkey_t stack[16];
        jkey_t *keys = n <= 16 ? stack : malloc(n * sizeof *keys);
        if (keys == NULL)
            return UV_ENOMEM;
        size_t k = 0;
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)v, key, val)
        {
            if (strip && json_is_null(val))
                continue;
            keys[k].key = key;
            keys[k].len = strlen(key);
            keys[k].value = val;
            k++;
        }
        qsort(keys, k, sizeof *keys, jkey_cmp);
        int rc = buf_append(b, "{", 1);
        for (size_t i = 0; i < k && rc == 0; i++) {
            if (i > 0)
                rc = buf_append(b, ", ", 2);
            if (rc == 0)
                rc = json_escaped(b, keys[i].key, keys[i].len);
            if (rc == 0)
                rc = buf_append(b, ": ", 2);
            if (rc == 0)
                rc = jsonb_write(b, keys[i].value, strip);
        }
        if (keys != stack)
            free(keys);
        return rc == 0 ? buf_append(b, "}", 1) : rc;
    }
    }
    return UV_EINVAL;
}

int pgtext_jsonb(buf_t *b, const json_t *v, bool strip_nulls)
{
    return jsonb_write(b, v, strip_nulls);
}

/* ---- times ----------------------------------------------------------------- */

/* Days from 1970-01-01 of a proleptic Gregorian date (y may be <= 0). */
int64_t pgtext_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* Writes a timestamptz (microseconds since 2000-01-01, as PostgreSQL keeps
 * it) as COPY text. */
int pgtext_timestamptz(buf_t *b, int64_t us)
{
    int64_t secs = us / PGTEXT_USECS, frac = us % PGTEXT_USECS;
    if (frac < 0) {
        frac += PGTEXT_USECS;
        secs--;
    }
    int64_t days = secs / 86400, rem = secs % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    days += PGTEXT_EPOCH_UNIX / 86400;
    int64_t y;
    int mo, d;
    civil_from_days(days, &y, &mo, &d);
    bool bc = y <= 0;
    int rc = buf_printf(b, "%04lld-%02d-%02d %02d:%02d:%02d", (long long)(bc ? 1 - y : y), mo, d,
                        (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60));
    if (rc == 0 && frac) {
        /* As the server prints it: no trailing zeros (".5", not ".500000"). */
        int digits = 6;
        while (frac % 10 == 0) {
            frac /= 10;
            digits--;
        }
        rc = buf_printf(b, ".%0*lld", digits, (long long)frac);
    }
    if (rc == 0)
        rc = buf_append_str(b, bc ? "+00 BC" : "+00");
    return rc;
}
