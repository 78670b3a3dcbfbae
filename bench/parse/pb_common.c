/* pb_common: the request view every path fills, parleyd's verdict on it,
 * and the checks the candidate paths share (UTF-8 and surrogate escapes,
 * numbers as jansson makes them). See parse_bench.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parse_bench.h"
#include "util/strutil.h"

struct pb_block_s {
    pb_block_t *next;
    size_t cap, used;
    char data[];
};

const char *pb_arena_copy(pb_arena_t *a, const char *s, size_t n)
{
    char *out;
    if (a->used + n <= sizeof a->first) {
        out = a->first + a->used;
        a->used += n;
    } else {
        pb_block_t *b = a->blocks;
        if (b == NULL || b->used + n > b->cap) {
            size_t cap = n > 4096 ? n : 4096;
            b = malloc(sizeof *b + cap);
            if (b == NULL)
                return NULL;
            b->cap = cap;
            b->used = 0;
            b->next = a->blocks;
            a->blocks = b;
        }
        out = b->data + b->used;
        b->used += n;
    }
    if (n > 0)
        memcpy(out, s, n);
    return out;
}

void pb_request_init(pb_request_t *r)
{
    memset(r, 0, offsetof(pb_request_t, arena));
    r->arena.blocks = NULL;
    r->arena.used = 0;
}

void pb_request_release(pb_request_t *r)
{
    json_decref(r->id);
    json_decref(r->rest);
    json_decref(r->caps);
    json_decref(r->progress);
    json_decref(r->tree);
    for (pb_block_t *b = r->arena.blocks, *next; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    pb_request_init(r);
}

/* ---- the verdict ------------------------------------------------------------------ */

static bool plain(pb_kind_t k, pb_span_t s)
{
    return k == PB_STRING && memchr(s.s, '\0', s.len) == NULL;
}

static bool is(pb_span_t s, const char *lit)
{
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.s, lit, n) == 0;
}

static const char *const level_names[] = {"debug", "info",     "notice", "warning",
                                          "error", "critical", "alert",  "emergency"};

int pb_verdict(const pb_request_t *r)
{
    if (r->top != PB_OBJECT)
        return -32600;
    /* session.c compares json_string_value with strcmp: text after a NUL
     * is not looked at. */
    if (r->jsonrpc_kind != PB_STRING || r->jsonrpc.len < 3 || memcmp(r->jsonrpc.s, "2.0", 3) != 0 ||
        (r->jsonrpc.len > 3 && r->jsonrpc.s[3] != '\0'))
        return -32600;
    if (r->method_kind == PB_ABSENT)
        return r->has_result ? 1 : -32600;
    if (!plain(r->method_kind, r->method))
        return -32600;
    if (r->params_kind != PB_ABSENT && r->params_kind != PB_OBJECT)
        return r->id ? -32602 : 0;
    if (r->id == NULL)
        return 0; /* a notification */
    if (!json_is_string(r->id) && !json_is_integer(r->id))
        return -32600;
    bool claimed = r->meta_kind == PB_OBJECT && r->version_kind != PB_ABSENT;
    if (claimed || is(r->method, "server/discover")) { /* envelope.c */
        if (r->meta_kind != PB_OBJECT || r->version_kind == PB_ABSENT || r->caps == NULL ||
            !plain(r->version_kind, r->version))
            return -32602;
        if (!is(r->version, "2026-07-28"))
            return -32022;
        if (!json_is_object(r->caps) || (r->info_kind != PB_ABSENT && r->info_kind != PB_OBJECT))
            return -32602;
        if (r->level_kind != PB_ABSENT) {
            bool known = false;
            for (size_t i = 0; i < sizeof level_names / sizeof *level_names; i++)
                known = known || (plain(r->level_kind, r->level) && is(r->level, level_names[i]));
            if (!known)
                return -32602;
        }
    }
    if (is(r->method, "tools/call")) { /* session_methods.c */
        if (!plain(r->name_kind, r->name))
            return -32602;
        const json_t *args = json_object_get(r->rest, "arguments");
        if (args != NULL && !json_is_null(args) && !json_is_object(args))
            return -32602;
    }
    return 0;
}

/* ---- UTF-8 and surrogate escapes ---------------------------------------------------- */

static int hex4(const unsigned char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int c = p[i], d = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* True when the 8 bytes of v are ASCII and none is a backslash. */
static bool plain8(uint64_t v)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t x = v ^ (ones * '\\');
    return ((v | ((x - ones) & ~x)) & highs) == 0;
}

/* The escape at p (a backslash, before end): false for a surrogate escape
 * that is not a high one followed by a low one. *next: past it. */
static bool escape_ok(const unsigned char *p, const unsigned char *end, const unsigned char **next)
{
    *next = end - p >= 2 ? p + 2 : end; /* a malformed escape is the parser's to refuse */
    if (end - p < 6 || p[1] != 'u')
        return true;
    int cp = hex4(p + 2);
    *next = p + 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return false;
    if (cp < 0xD800 || cp > 0xDBFF)
        return true;
    int lo = end - p >= 12 && p[6] == '\\' && p[7] == 'u' ? hex4(p + 8) : -1;
    *next = p + 12;
    return lo >= 0xDC00 && lo <= 0xDFFF;
}

bool pb_prescan(const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + len;
    while (p < end) {
        if (end - p >= 8) {
            uint64_t v;
            memcpy(&v, p, 8);
            if (plain8(v)) {
                p += 8;
                continue;
            }
        }
        unsigned c = *p;
        if (c == '\\') {
            if (!escape_ok(p, end, &p))
                return false;
            continue;
        }
        if (c < 0x80) {
            p++;
            continue;
        }
        /* RFC 3629 (no overlong form, no surrogate, <= U+10FFFF): the
         * daemon's own reading of a sequence (util/strutil.h). */
        size_t n = str_utf8_seq(p, (size_t)(end - p));
        if (n == 0)
            return false;
        p += n;
    }
    return true;
}

/* ---- numbers ---------------------------------------------------------------------- */

static bool digit(char c)
{
    return c >= '0' && c <= '9';
}

size_t pb_number_len(const char *t, size_t n)
{
    size_t i = 0;
    if (i < n && t[i] == '-')
        i++;
    if (i < n && t[i] == '0')
        i++;
    else if (i < n && t[i] >= '1' && t[i] <= '9')
        while (i < n && digit(t[i]))
            i++;
    else
        return 0;
    if (i < n && t[i] == '.') {
        size_t d = ++i;
        while (i < n && digit(t[i]))
            i++;
        if (i == d)
            return 0;
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && digit(t[i]))
            i++;
        if (i == d)
            return 0;
    }
    return i;
}

/* Parses text as jansson does (strtoll, else strtod): 0 and *is_int says
 * which it became; 1 for an integer past 64 bits; -1 for a real that
 * overflows or ENOMEM. */
static int convert(const char *text, size_t len, bool *is_int, long long *iv, double *dv)
{
    char small[64], *s = len < sizeof small ? small : malloc(len + 1);
    if (s == NULL)
        return -1;
    memcpy(s, text, len);
    s[len] = '\0';
    int rc = 0;
    *is_int = strpbrk(s, ".eE") == NULL;
    if (*is_int) {
        errno = 0;
        *iv = strtoll(s, NULL, 10);
        rc = errno == ERANGE ? 1 : 0;
    } else {
        *dv = strtod(s, NULL);
        rc = isinf(*dv) ? -1 : 0;
    }
    if (rc == 1 && isinf(strtod(s, NULL)))
        rc = -1; /* read again as a real, it overflows */
    if (s != small)
        free(s);
    return rc;
}

json_t *pb_number(const char *text, size_t len)
{
    bool is_int;
    long long iv;
    double dv;
    if (convert(text, len, &is_int, &iv, &dv) != 0)
        return NULL;
    return is_int ? json_integer(iv) : json_real(dv);
}

int pb_number_check(const char *text, size_t len)
{
    /* Up to 18 digits (and a sign) is always an int64. */
    if (len <= 18 && memchr(text, '.', len) == NULL && memchr(text, 'e', len) == NULL &&
        memchr(text, 'E', len) == NULL)
        return 0;
    bool is_int;
    long long iv;
    double dv;
    return convert(text, len, &is_int, &iv, &dv);
}
