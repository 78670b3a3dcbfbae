/* pb_yajl: yajl's event parser (yajl_parse with callbacks) feeding the
 * sink. yajl 2.1 refuses by itself: JSON's grammar (no comments, no
 * trailing garbage, one value), a raw control character in a string, a
 * malformed escape; it checks UTF-8 only loosely (it passes overlong
 * forms, encoded surrogates and code points past U+10FFFF), turns a lone
 * high surrogate escape into '?' and a lone low one into an encoded
 * surrogate, and has no limit of depth and no notion of a key given twice.
 * It also takes a raw form feed or vertical tab for whitespace, and does
 * not refuse a token cut short after the value ('{}"').
 * The path adds pb_prescan over the whole message (UTF-8 by RFC 3629, the
 * surrogate escapes paired) and refuses those two bytes and anything but whitespace after the value
 * (its end as yajl_get_bytes_consumed tells in the callback that ends it), so yajl's own string
 * check is turned off; the sink adds the rest (duplicates, depth, NUL in keys, real overflow).
 * Numbers come as text (yajl_number) and are made as jansson makes them;
 * a message with an integer past 64 bits is left to jansson's path. */
#include <string.h>
#include <yajl/yajl_parse.h>

#include "parse_bench.h"

/* The sink, and where the message's value ended: yajl does not refuse a
 * token cut short after the value ('{}"' passes yajl_complete_parse). */
typedef struct {
    pb_sink_t k;
    yajl_handle h;
    size_t len, end; /* end: 0 until the value ends */
    bool completing; /* in yajl_complete_parse: all of the text is read */
} ctx_t;

/* After event rc: the value's end, when that event ended it. */
static int done(ctx_t *c, int rc)
{
    if (c->k.depth == 0)
        c->end = c->completing ? c->len : yajl_get_bytes_consumed(c->h);
    return rc == 0;
}

static int on_null(void *ctx)
{
    return done(ctx, pb_sink_null(ctx));
}

static int on_boolean(void *ctx, int v)
{
    return done(ctx, pb_sink_bool(ctx, v != 0));
}

static int on_number(void *ctx, const char *s, size_t n)
{
    return done(ctx, pb_sink_number(ctx, s, n));
}

static int on_string(void *ctx, const unsigned char *s, size_t n)
{
    return done(ctx, pb_sink_string(ctx, (const char *)s, n, false));
}

static int on_start_map(void *ctx)
{
    return pb_sink_start_map(ctx) == 0;
}

static int on_map_key(void *ctx, const unsigned char *s, size_t n)
{
    return pb_sink_key(ctx, (const char *)s, n, false) == 0;
}

static int on_end_map(void *ctx)
{
    return done(ctx, pb_sink_end_map(ctx));
}

static int on_start_array(void *ctx)
{
    return pb_sink_start_array(ctx) == 0;
}

static int on_end_array(void *ctx)
{
    return done(ctx, pb_sink_end_array(ctx));
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_null,
    .yajl_boolean = on_boolean,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_map_key,
    .yajl_end_map = on_end_map,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end_array,
};

/* yajl over text with callbacks cb (c, or NULL) and its own string
 * check on or off; 0 when it accepts the whole text as one value. */
static int run(const char *text, size_t len, const yajl_callbacks *cb, ctx_t *c, bool validate)
{
    yajl_handle h = yajl_alloc(cb, NULL, c);
    if (h == NULL)
        return -1;
    if (c)
        c->h = h;
    if (!validate)
        yajl_config(h, yajl_dont_validate_strings, 1);
    yajl_status st = yajl_parse(h, (const unsigned char *)text, len);
    if (c)
        c->completing = true; /* a bare number ends only here */
    if (st == yajl_status_ok)
        st = yajl_complete_parse(h);
    yajl_free(h);
    return st == yajl_status_ok ? 0 : -1;
}

int pb_yajl_parse(const char *text, size_t len, pb_request_t *r)
{
    /* yajl takes \f and \v for whitespace; raw, either is invalid
     * anywhere in JSON (in a string it is a control character). */
    if (!pb_prescan(text, len) || memchr(text, '\f', len) || memchr(text, '\v', len))
        return -1;
    ctx_t c = {.len = len, .end = 0, .completing = false};
    pb_sink_init(&c.k, r);
    int rc = run(text, len, &callbacks, &c, false);
    pb_sink_free(&c.k);
    if (rc != 0 && c.k.too_big) {
        pb_request_release(r);
        return pb_jansson_parse(text, len, r);
    }
    if (rc == 0 && (c.end == 0 || c.end > len))
        rc = -1;
    for (size_t i = c.end; rc == 0 && i < len; i++)
        if (text[i] != ' ' && text[i] != '\n' && text[i] != '\r' && text[i] != '\t')
            rc = -1;
    return rc;
}

int pb_yajl_alone(const char *text, size_t len)
{
    return run(text, len, NULL, NULL, true);
}
