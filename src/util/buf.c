/* buf: bounded growable byte buffer (see buf.h). */
#include "util/buf.h"

#include <assert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

/* What each byte adds when escaped: 1 for \" \\ \b \f \n \r \t, 5 for the
 * other control characters (\u00XX), 0 for the rest. */
static const unsigned char json_escape_extra[256] = {
    5, 5, 5, 5, 5, 5, 5, 5, 1, 1, 1, 5, 1, 1, 5, 5, /* 0x00: \b \t \n \f \r */
    5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, /* 0x10 */
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x20: " */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x30 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x40 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, /* 0x50: \ */
};

static inline char *json_put_escaped(char *d, unsigned char c)
{
    static const char hex[] = "0123456789ABCDEF"; /* as jansson writes it */
    *d++ = '\\';
    switch (c) {
    case '"':
    case '\\':
        *d++ = (char)c;
        break;
    case '\b':
        *d++ = 'b';
        break;
    case '\f':
        *d++ = 'f';
        break;
    case '\n':
        *d++ = 'n';
        break;
    case '\r':
        *d++ = 'r';
        break;
    case '\t':
        *d++ = 't';
        break;
    default:
        *d++ = 'u';
        *d++ = '0';
        *d++ = '0';
        *d++ = hex[c >> 4];
        *d++ = hex[c & 15];
    }
    return d;
}

#if defined(__SSE2__)
/* Of the 16 bytes at p: 0xff in each byte that needs escaping (returned),
 * and bit i of *ctl set when byte i is a control character. */
static inline __m128i json_escape_vec16(const unsigned char *p, unsigned *ctl)
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    /* v <= 0x1f, unsigned: min(v, 0x1f) == v */
    __m128i c = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
    __m128i q =
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
    *ctl = (unsigned)_mm_movemask_epi8(c);
    return _mm_or_si128(c, q);
}

/* The same as a bit mask: bit i set when byte i needs escaping. */
static inline unsigned json_escape_mask16(const unsigned char *p, unsigned *ctl)
{
    return (unsigned)_mm_movemask_epi8(json_escape_vec16(p, ctl));
}
#endif

int buf_append_json_escaped(buf_t *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    /* The answers of database tools are PostgreSQL's JSON (5-25 KB a
     * page, a quote every few bytes), escaped into the text content: one
     * pass sizes the text, one reserve, one pass writes it. */
    if (n > b->limit || n > SIZE_MAX / 6)
        return UV_ENOBUFS; /* so 6 n cannot overflow */
    size_t out = n, i = 0;
#if defined(__SSE2__)
    /* 16 bytes at a time while 32 are left (see below): each byte lane of
     * acc counts its escapes (a match is 0xff, -1), for at most 255 rounds,
     * then the lanes are summed (psadbw) into sums. No popcount: x86-64's
     * baseline has none, and the compiler's fallback was a call a round. */
    uint64_t sums[2] = {0, 0};
    while (i + 32 <= n) {
        __m128i acc = _mm_setzero_si128();
        for (int r = 0; r < 255 && i + 32 <= n; r++, i += 16) {
            unsigned ctl;
            acc = _mm_sub_epi8(acc, json_escape_vec16(p + i, &ctl));
            for (; ctl != 0; ctl &= ctl - 1)
                out += json_escape_extra[p[i + (unsigned)__builtin_ctz(ctl)]] - 1u;
        }
        uint64_t lanes[2];
        _mm_storeu_si128((__m128i *)(void *)lanes, _mm_sad_epu8(acc, _mm_setzero_si128()));
        sums[0] += lanes[0];
        sums[1] += lanes[1];
    }
    out += (size_t)(sums[0] + sums[1]);
#endif
    for (; i < n; i++)
        out += json_escape_extra[p[i]];
    int rc = buf_reserve(b, out);
    if (rc != 0)
        return rc;
    char *d = b->data + b->len;
    i = 0;
#if defined(__SSE2__)
    /* Each run of plain bytes is copied as 16 bytes from where it starts,
     * and d moves by the run's length: what is written past it is written
     * again. Reads stay within s (32 bytes are left at i), writes within
     * the text (the 16 bytes or more still to come each write a byte at
     * least). */
    for (; i + 32 <= n; i += 16) {
        unsigned ctl, m = json_escape_mask16(p + i, &ctl), from = 0;
        if (ctl == 0) {
            /* Quotes and backslashes only (JSON text: a quote every few
             * bytes): each is a backslash and itself, no switch. */
            for (; m != 0; m &= m - 1) {
                unsigned k = (unsigned)__builtin_ctz(m);
                _mm_storeu_si128((__m128i *)(void *)d,
                                 _mm_loadu_si128((const __m128i *)(const void *)(p + i + from)));
                d += k - from;
                d[0] = '\\';
                d[1] = (char)p[i + k];
                d += 2;
                from = k + 1;
            }
        }
        for (; m != 0; m &= m - 1) {
            unsigned k = (unsigned)__builtin_ctz(m);
            _mm_storeu_si128((__m128i *)(void *)d,
                             _mm_loadu_si128((const __m128i *)(const void *)(p + i + from)));
            d = json_put_escaped(d + (k - from), p[i + k]);
            from = k + 1;
        }
        _mm_storeu_si128((__m128i *)(void *)d,
                         _mm_loadu_si128((const __m128i *)(const void *)(p + i + from)));
        d += 16 - from;
    }
#endif
    for (; i < n; i++)
        if (json_escape_extra[p[i]] == 0)
            *d++ = (char)p[i];
        else
            d = json_put_escaped(d, p[i]);
    assert(d == b->data + b->len + out);
    b->len += out;
    b->data[b->len] = '\0';
    return 0;
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
