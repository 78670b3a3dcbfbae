/* prom_text: Prometheus text exposition lines (see prom_text.h). */
#include "util/prom_text.h"

#include <math.h>
#include <string.h>

/* Ends a call: on a failure the buffer goes back to its length at mark. */
static int done(buf_t *out, size_t mark, int rc)
{
    if (rc != 0) {
        out->len = mark;
        if (out->data)
            out->data[mark] = '\0';
    }
    return rc;
}

/* Appends s with \ and newline escaped, and " too when quote is set. */
static int put_escaped(buf_t *out, const char *s, bool quote)
{
    const char *special = quote ? "\\\"\n" : "\\\n";
    for (;;) {
        size_t n = strcspn(s, special);
        int rc = buf_append(out, s, n);
        if (rc != 0 || s[n] == '\0')
            return rc;
        const char *esc = s[n] == '\n' ? "\\n" : s[n] == '"' ? "\\\"" : "\\\\";
        if ((rc = buf_append(out, esc, 2)) != 0)
            return rc;
        s += n + 1;
    }
}

/* "name" or "name{a="x",b="y"}", then a space. */
static int sample_head(buf_t *out, const char *name, const char *const *labels)
{
    int rc = buf_append_str(out, name);
    for (int i = 0; rc == 0 && labels && labels[i]; i += 2) {
        rc = buf_append(out, i == 0 ? "{" : ",", 1);
        if (rc == 0)
            rc = buf_append_str(out, labels[i]);
        if (rc == 0)
            rc = buf_append(out, "=\"", 2);
        if (rc == 0)
            rc = put_escaped(out, labels[i + 1], true);
        if (rc == 0)
            rc = buf_append(out, "\"", 1);
    }
    if (rc == 0 && labels && labels[0])
        rc = buf_append(out, "}", 1);
    if (rc == 0)
        rc = buf_append(out, " ", 1);
    return rc;
}

int prom_text_family(buf_t *out, const char *name, prom_text_kind_t kind, const char *help)
{
    static const char *const kinds[] = {"counter", "gauge", "histogram"};
    size_t mark = out->len;
    int rc = 0;
    if (help) {
        rc = buf_printf(out, "# HELP %s ", name);
        if (rc == 0)
            rc = put_escaped(out, help, false);
        if (rc == 0)
            rc = buf_append(out, "\n", 1);
    }
    if (rc == 0)
        rc = buf_printf(out, "# TYPE %s %s\n", name, kinds[kind]);
    return done(out, mark, rc);
}

int prom_text_int(buf_t *out, const char *name, const char *const *labels, long long v)
{
    size_t mark = out->len;
    int rc = sample_head(out, name, labels);
    if (rc == 0)
        rc = buf_printf(out, "%lld\n", v);
    return done(out, mark, rc);
}

int prom_text_uint(buf_t *out, const char *name, const char *const *labels, unsigned long long v)
{
    size_t mark = out->len;
    int rc = sample_head(out, name, labels);
    if (rc == 0)
        rc = buf_printf(out, "%llu\n", v);
    return done(out, mark, rc);
}

int prom_text_double(buf_t *out, const char *name, const char *const *labels, double v)
{
    size_t mark = out->len;
    int rc = sample_head(out, name, labels);
    if (rc == 0 && isfinite(v))
        rc = buf_printf(out, "%.6f\n", v);
    else if (rc == 0)
        rc = buf_append_str(out, isnan(v) ? "NaN\n" : v > 0 ? "+Inf\n" : "-Inf\n");
    return done(out, mark, rc);
}

int prom_text_counter(buf_t *out, const char *name, const char *help, unsigned long long v)
{
    size_t mark = out->len;
    int rc = prom_text_family(out, name, PROM_TEXT_COUNTER, help);
    if (rc == 0)
        rc = prom_text_uint(out, name, NULL, v);
    return done(out, mark, rc);
}

int prom_text_gauge(buf_t *out, const char *name, const char *help, long long v)
{
    size_t mark = out->len;
    int rc = prom_text_family(out, name, PROM_TEXT_GAUGE, help);
    if (rc == 0)
        rc = prom_text_int(out, name, NULL, v);
    return done(out, mark, rc);
}
