/* buf: a growable byte buffer with a hard capacity. Used for framing input
 * and queueing output; every buffer in parley has a bound, and appending
 * past it fails instead of growing. */
#ifndef PARLEY_UTIL_BUF_H
#define PARLEY_UTIL_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct buf_s {
    char *data;
    size_t len;
    size_t cap;   /* allocated */
    size_t limit; /* hard bound on len */
} buf_t;

void buf_init(buf_t *b, size_t limit);
void buf_free(buf_t *b);

/* Appends n bytes. Returns 0, UV_ENOBUFS (past the limit; b unchanged) or
 * UV_ENOMEM. */
int buf_append(buf_t *b, const void *p, size_t n);
int buf_append_str(buf_t *b, const char *s);
__attribute__((format(printf, 2, 3))) int buf_printf(buf_t *b, const char *fmt, ...);

/* Appends s as the body of a JSON string (escaped, no quotes), as jansson
 * escapes it: \" \\ \b \f \n \r \t, other control characters \u00XX. */
int buf_append_json_escaped(buf_t *b, const char *s, size_t n);

/* Drops the first n bytes. */
void buf_consume(buf_t *b, size_t n);
void buf_reset(buf_t *b);

/* Hands the bytes to the caller (NUL-terminated, malloc'd); b is empty. */
char *buf_steal(buf_t *b, size_t *len);

#endif
