/* prom_text: the Prometheus text exposition format (version 0.0.4) written
 * into a buf_t, the one way the daemon's parts write their /metrics
 * figures: a metric family's header ("# HELP name text", "# TYPE name
 * kind") and its sample lines ("name{label="value",...} value").
 *
 * Every call appends whole lines or nothing: when they do not fit within
 * the buffer's limit it returns UV_ENOBUFS (UV_ENOMEM when memory ran out)
 * and leaves the buffer as it was, so a full buffer ends after the last
 * line that fit. Metric and label names are written as given (the caller's
 * constants, [a-zA-Z_:][a-zA-Z0-9_:]*); label values are escaped as the
 * format says (\\ \" \n), HELP text too (\\ \n). */
#ifndef PARLEY_UTIL_PROM_TEXT_H
#define PARLEY_UTIL_PROM_TEXT_H

#include "util/buf.h"

typedef enum {
    PROM_TEXT_COUNTER,
    PROM_TEXT_GAUGE,
    PROM_TEXT_HISTOGRAM,
} prom_text_kind_t;

/* A sample's labels: name, value, name, value, ..., NULL (as written by
 * PROM_LABELS). A NULL list, or an empty one, writes no braces. */
#define PROM_LABELS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* "# HELP name help\n# TYPE name kind\n"; without the HELP line when help
 * is NULL. */
int prom_text_family(buf_t *out, const char *name, prom_text_kind_t kind, const char *help);

/* "name{labels} value\n": an integer, or a double with six decimals
 * ("NaN", "+Inf", "-Inf" when not finite). */
int prom_text_int(buf_t *out, const char *name, const char *const *labels, long long v);
int prom_text_uint(buf_t *out, const char *name, const char *const *labels, unsigned long long v);
int prom_text_double(buf_t *out, const char *name, const char *const *labels, double v);

/* A family of one sample without labels: its header, then "name v\n". */
int prom_text_counter(buf_t *out, const char *name, const char *help, unsigned long long v);
int prom_text_gauge(buf_t *out, const char *name, const char *help, long long v);

#endif
