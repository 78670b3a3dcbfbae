/* tg_scan: the bytes of a Telegram export ahead of tg_reader's parser (see
 * tg_scan.h). */
#include "import/tg_scan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

/* Scanner states (at the byte after the last one scanned). */
enum { LEX_OUT = 0, LEX_STR, LEX_ESC, LEX_BARE };

int tg_scan_init(tg_scan_t *s, size_t chunk)
{
    *s = (tg_scan_t){.chunk = chunk, .cap = chunk};
    s->buf = malloc(chunk);
    return s->buf ? 0 : UV_ENOMEM;
}

void tg_scan_free(tg_scan_t *s)
{
    free(s->buf);
    s->buf = NULL;
}

static bool ends_bare(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':' || c == '{' ||
           c == '}' || c == '[' || c == ']' || c == '"';
}

/* Scans buf[i]. */
static void lex_byte(tg_scan_t *s, size_t i)
{
    unsigned char c = s->buf[i];
    switch (s->lex) {
    case LEX_STR:
        if (c == '\\')
            s->lex = LEX_ESC;
        else if (c == '"')
            s->lex = LEX_OUT;
        return;
    case LEX_ESC:
        s->lex = LEX_STR;
        return;
    case LEX_BARE:
        if (!ends_bare(c))
            return;
        s->lex = LEX_OUT; /* c ends the token and is read again below */
        break;
    default:
        break;
    }
    if (c == '"')
        s->lex = LEX_STR;
    else if (c == '{' || c == '[')
        s->lex_depth++;
    else if (c == '}' || c == ']')
        s->lex_depth--;
    else if (!ends_bare(c))
        s->lex = LEX_BARE;
}

/* Scans on to the end of the token at scan (or to stop), quickly through
 * the inside of strings. */
static void lex_token(tg_scan_t *s, size_t stop)
{
    const unsigned char *c = s->buf;
    size_t i = s->scan;
    while (i < stop && s->lex != LEX_OUT) {
        if (s->lex == LEX_STR) {
            while (i < stop && c[i] != '"' && c[i] != '\\')
                i++;
            if (i == stop)
                break;
        }
        lex_byte(s, i++);
    }
    s->scan = i;
}

uint64_t tg_scan_at(const tg_scan_t *s, size_t i)
{
    return s->offset + (i - s->pos);
}

int tg_scan_piece(tg_scan_t *s, size_t piece, uint64_t room, size_t *end)
{
    size_t a = s->pos;
    size_t limit = a + (room < piece ? (size_t)room : piece);
    /* The last boundary past a (scan is one when the scanner is between
     * tokens; the bytes scanned before it past a are all one token). */
    size_t lb = s->lex == LEX_OUT && s->scan > a ? s->scan : 0;
    while (s->scan < s->len && s->scan < limit) {
        lex_byte(s, s->scan++);
        if (s->lex == LEX_OUT)
            lb = s->scan;
    }
    if (lb > a) {
        *end = lb;
        return TG_SCAN_OK;
    }
    if (s->scan >= limit) {
        /* A token begins at a and goes past the limit: given whole, once,
         * bounded by the room. */
        size_t cap_end = a + (size_t)room;
        lex_token(s, cap_end < s->len ? cap_end : s->len);
        if (s->lex == LEX_OUT) {
            *end = s->scan;
            return TG_SCAN_OK;
        }
        if (s->scan >= cap_end)
            return TG_SCAN_LONG;
    }
    if (s->eof) {
        *end = s->len; /* a token cut by the end of the file: yajl says so */
        return TG_SCAN_OK;
    }
    return TG_SCAN_MORE;
}

void tg_scan_parsed(tg_scan_t *s, size_t end)
{
    s->offset += (uint64_t)(end - s->pos);
    s->pos = end;
    if (s->scan < end)
        s->scan = end;
}

bool tg_scan_skip(tg_scan_t *s, int depth)
{
    const unsigned char *c = s->buf;
    size_t i = s->scan;
    bool done = false;
    while (i < s->len) {
        if (s->lex == LEX_STR) {
            while (i < s->len && c[i] != '"' && c[i] != '\\')
                i++;
            if (i == s->len)
                break;
        }
        lex_byte(s, i++);
        if (s->lex == LEX_OUT && s->lex_depth <= depth) {
            done = true;
            break;
        }
    }
    s->offset += i - s->pos;
    s->pos = s->scan = i;
    return done;
}

int tg_scan_read(tg_scan_t *s, int fd)
{
    /* Room for a read after the bytes not yet parsed (moved to the front). */
    if (s->pos > 0) {
        memmove(s->buf, s->buf + s->pos, s->len - s->pos);
        s->len -= s->pos;
        s->scan -= s->pos;
        s->pos = 0;
    }
    if (s->cap - s->len < s->chunk) {
        size_t cap = s->cap * 2 > s->len + s->chunk ? s->cap * 2 : s->len + s->chunk;
        unsigned char *p = realloc(s->buf, cap);
        if (p == NULL)
            return UV_ENOMEM;
        s->buf = p;
        s->cap = cap;
    }
    ssize_t n;
    do
        n = read(fd, s->buf + s->len, s->chunk);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    s->len += (size_t)n;
    s->eof = n == 0;
    return 0;
}
