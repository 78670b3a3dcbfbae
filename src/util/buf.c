/* buf: bounded growable byte buffer (see buf.h). */
#include "util/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

void buf_init(buf_t *b, size_t limit)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->limit = limit;
}

void buf_free(buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

static int buf_reserve(buf_t *b, size_t extra)
{
    if (extra > b->limit - b->len || b->len + extra < b->len)
        return UV_ENOBUFS;
    size_t need = b->len + extra + 1; /* room for a NUL */
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (d == NULL)
        return UV_ENOMEM;
    b->data = d;
    b->cap = cap;
    return 0;
}

int buf_append(buf_t *b, const void *p, size_t n)
{
    int rc = buf_reserve(b, n);
    if (rc != 0)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int buf_append_str(buf_t *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_printf(buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return UV_EINVAL;
    int rc = buf_reserve(b, (size_t)n);
    if (rc != 0)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

int buf_append_json_escaped(buf_t *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        int rc = buf_append(b, s + start, i - start);
        if (rc != 0)
            return rc;
        char esc[7] = {'\\', 0};
        size_t elen = 2;
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            elen = 6;
        }
        if ((rc = buf_append(b, esc, elen)) != 0)
            return rc;
        start = i + 1;
    }
    return buf_append(b, s + start, n - start);
}

void buf_consume(buf_t *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
    } else {
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
    }
    if (b->data)
        b->data[b->len] = '\0';
}

void buf_reset(buf_t *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

char *buf_steal(buf_t *b, size_t *len)
{
    if (b->data == NULL && buf_reserve(b, 0) != 0)
        return NULL;
    char *d = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}
