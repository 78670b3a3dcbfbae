/* pb_jsmn: jsmn's tokens (JSMN_STRICT, JSMN_PARENT_LINKS), then a walk of
 * them feeding the sink. jsmn only finds where values start and end: by
 * itself it refuses an unmatched bracket, a malformed escape, a primitive
 * that does not start like one (or, in strict mode, one not followed by
 * a separator). It does not check the separators between tokens ("{"a"
 * 1}" and "[1 2]" pass), the primitives' text ("nul", "1.2.3" and "-"
 * pass), raw control characters or UTF-8 in strings, and it stops at the
 * first NUL byte (what follows is never looked at); it decodes no escapes
 * and knows nothing of duplicates or depth. So the walk checks the text
 * around every token against JSON's grammar (each token must start where
 * the grammar puts the next value, with only whitespace and the right
 * separator between), every primitive (true, false, null, or a number by
 * the grammar), every string (no raw control character; escapes decoded),
 * and that the value ends the message (a bare primitive, which strict
 * jsmn refuses, is checked alone); pb_prescan checks UTF-8 and the
 * surrogate escapes; the sink adds duplicates, depth, NUL in keys and real
 * overflow. A message with an integer past 64 bits is left to jansson's
 * path. */
#include <stdlib.h>
#include <string.h>

#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS
#include <jsmn.h>

#include "parse_bench.h"

#define TOKENS_INLINE 128

typedef struct {
    const char *js;
    size_t len;
    const jsmntok_t *t;
    int n;
    pb_sink_t *k;
} walk_t;

static size_t skip_ws(const walk_t *w, size_t p)
{
    while (p < w->len &&
           (w->js[p] == ' ' || w->js[p] == '\n' || w->js[p] == '\r' || w->js[p] == '\t'))
        p++;
    return p;
}

static unsigned hex4(const char *p)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The text of the string token t (between its quotes, which jsmn found),
 * checked and decoded: *stable when it is the message's own bytes. -1 for
 * a raw control character. jsmn checked each escape's form, pb_prescan
 * the pairing of surrogates. */
static int string_text(walk_t *w, const jsmntok_t *t, pb_span_t *out, bool *stable)
{
    const char *s = w->js + t->start;
    size_t n = (size_t)(t->end - t->start), esc = n;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20)
            return -1;
        if (c == '\\' && esc == n)
            esc = i;
    }
    *stable = esc == n;
    if (*stable) {
        *out = (pb_span_t){s, n};
        return 0;
    }
    char small[256], *o = n <= sizeof small ? small : malloc(n);
    if (o == NULL)
        return -1;
    memcpy(o, s, esc);
    size_t m = esc;
    for (size_t i = esc; i < n; i++) {
        if (s[i] != '\\') {
            o[m++] = s[i];
            continue;
        }
        char e = s[++i];
        switch (e) {
        case 'b':
            o[m++] = '\b';
            break;
        case 'f':
            o[m++] = '\f';
            break;
        case 'n':
            o[m++] = '\n';
            break;
        case 'r':
            o[m++] = '\r';
            break;
        case 't':
            o[m++] = '\t';
            break;
        case 'u': {
            unsigned cp = hex4(s + i + 1);
            i += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4(s + i + 3) - 0xDC00);
                i += 6;
            }
            m += put_utf8(o + m, cp);
            break;
        }
        default: /* " / \ */
            o[m++] = e;
        }
    }
    out->s = pb_arena_copy(&w->k->r->arena, o, m);
    out->len = m;
    if (o != small)
        free(o);
    return out->s ? 0 : -1;
}

static bool literal(const char *s, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* Checks and emits the value of token i, which must start at *pos (after
 * whitespace); *pos is then past it. Returns the next token's index, or
 * -1 when the message is refused. */
static int value(walk_t *w, int i, size_t *pos)
{
    if (i >= w->n)
        return -1;
    const jsmntok_t *t = &w->t[i];
    size_t p = skip_ws(w, *pos);
    if (t->type == JSMN_STRING) {
        pb_span_t s;
        bool stable;
        if ((size_t)t->start != p + 1 || string_text(w, t, &s, &stable) != 0 ||
            pb_sink_string(w->k, s.s, s.len, true) != 0)
            return -1;
        *pos = (size_t)t->end + 1;
        return i + 1;
    }
    if (t->type == JSMN_PRIMITIVE) {
        const char *s = w->js + t->start;
        size_t n = (size_t)(t->end - t->start);
        int rc = (size_t)t->start != p               ? -1
                 : literal(s, n, "true")             ? pb_sink_bool(w->k, true)
                 : literal(s, n, "false")            ? pb_sink_bool(w->k, false)
                 : literal(s, n, "null")             ? pb_sink_null(w->k)
                 : n > 0 && pb_number_len(s, n) == n ? pb_sink_number(w->k, s, n)
                                                     : -1;
        *pos = (size_t)t->end;
        return rc == 0 ? i + 1 : -1;
    }
    bool is_map = t->type == JSMN_OBJECT;
    if ((size_t)t->start != p ||
        (is_map ? pb_sink_start_map(w->k) : pb_sink_start_array(w->k)) != 0)
        return -1;
    p++;
    int j = i + 1;
    for (int c = 0; c < t->size; c++) {
        p = skip_ws(w, p);
        if (c > 0) {
            if (p >= w->len || w->js[p] != ',')
                return -1;
            p = skip_ws(w, p + 1);
        }
        if (is_map) {
            const jsmntok_t *key = j < w->n ? &w->t[j] : NULL;
            pb_span_t s;
            bool stable;
            if (key == NULL || key->type != JSMN_STRING || (size_t)key->start != p + 1 ||
                string_text(w, key, &s, &stable) != 0 || pb_sink_key(w->k, s.s, s.len, true) != 0)
                return -1;
            p = skip_ws(w, (size_t)key->end + 1);
            if (p >= w->len || w->js[p] != ':')
                return -1;
            p++;
            j++;
        }
        if ((j = value(w, j, &p)) < 0)
            return -1;
    }
    p = skip_ws(w, p);
    if (p + 1 != (size_t)t->end || w->js[p] != (is_map ? '}' : ']') ||
        (is_map ? pb_sink_end_map(w->k) : pb_sink_end_array(w->k)) != 0)
        return -1;
    *pos = (size_t)t->end;
    return j;
}

/* jsmn's tokens of text into *t (tokens, or a malloc'd array when more
 * are needed); their count, or a jsmn error. */
static int tokenize(const char *text, size_t len, jsmntok_t *tokens, jsmntok_t **t)
{
    jsmn_parser p;
    jsmn_init(&p);
    *t = tokens;
    int n = jsmn_parse(&p, text, len, tokens, TOKENS_INLINE);
    if (n != JSMN_ERROR_NOMEM)
        return n;
    jsmn_init(&p);
    n = jsmn_parse(&p, text, len, NULL, 0);
    if (n <= 0 || (*t = malloc((size_t)n * sizeof **t)) == NULL)
        return JSMN_ERROR_NOMEM;
    jsmn_init(&p);
    return jsmn_parse(&p, text, len, *t, (unsigned)n);
}

int pb_jsmn_parse(const char *text, size_t len, pb_request_t *r)
{
    if (!pb_prescan(text, len))
        return -1;
    jsmntok_t tokens[TOKENS_INLINE], *t;
    int n = tokenize(text, len, tokens, &t);
    if (n == JSMN_ERROR_PART) {
        /* In strict mode jsmn refuses a message that is one bare primitive
         * (it wants a separator after it): its token, to be checked. */
        walk_t w = {text, len, NULL, 0, NULL};
        size_t p = skip_ws(&w, 0), e = p;
        while (e < len && text[e] != ' ' && text[e] != '\n' && text[e] != '\r' && text[e] != '\t')
            e++;
        if (p < len && strchr("-0123456789tfn", text[p]) != NULL) {
            tokens[0] = (jsmntok_t){.type = JSMN_PRIMITIVE, .start = (int)p, .end = (int)e};
            n = 1;
        }
    }
    int rc = -1;
    if (n > 0) {
        pb_sink_t k;
        pb_sink_init(&k, r);
        walk_t w = {text, len, t, n, &k};
        size_t pos = 0;
        int next = value(&w, 0, &pos);
        rc = next == n && skip_ws(&w, pos) == len ? 0 : -1;
        pb_sink_free(&k);
        if (next < 0 && k.too_big) {
            pb_request_release(r);
            rc = pb_jansson_parse(text, len, r);
        }
    }
    if (t != tokens)
        free(t);
    return rc;
}

int pb_jsmn_alone(const char *text, size_t len)
{
    jsmntok_t tokens[TOKENS_INLINE], *t;
    int n = tokenize(text, len, tokens, &t);
    if (t != tokens)
        free(t);
    return n > 0 ? 0 : -1;
}
