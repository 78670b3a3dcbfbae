/* tg_map: the mapping of export messages to the columns of messages and
 * media (see tg_map.h). It owns the rules the SQL mapping used to apply in
 * the database, written down once here:
 *
 * - text of a JSON value as ->> gives it: a string as is, anything else as
 *   jsonb prints it (keys ordered by length then bytes, ", " and ": ",
 *   numbers as numeric prints the text jansson wrote for them);
 * - integers as int8in/int4in read that text (blanks around, a sign);
 * - times: date_unixtime when it is all digits (to_timestamp's arithmetic),
 *   else the local date read as a timestamp at the export's UTC offset,
 *   with PostgreSQL's range checks; a value PostgreSQL would have refused
 *   is an error here too;
 * - extra and media extra are jsonb_strip_nulls of the fields they keep. */
#include "import/tg_map.h"

#include "db/pgtext.h"
#include "import/tg_entities.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

/* ---- values --------------------------------------------------------------- */

/* A text value (->>): NULL for a missing key or a JSON null. */
typedef struct {
    const char *s;
    size_t n;
} text_t;

typedef struct owned_s {
    struct owned_s *next;
    char *data;
} owned_t;

typedef struct {
    const tg_map_opts_t *o;
    const json_t *m;
    buf_t scratch;  /* JSON being written */
    owned_t *owned; /* texts of non-string values */
    bool oom;
    char *err;
    size_t errcap;
    bool repaired; /* err names a value left out of the row */
} ctx_t;

/* The text of v. A non-string's text is kept in a block of its own, freed
 * with the context, so that every text stays valid while the message is
 * mapped. */
static bool text_of(ctx_t *c, const json_t *v, text_t *out)
{
    out->s = NULL;
    out->n = 0;
    if (v == NULL || json_is_null(v))
        return false;
    if (json_is_string(v)) {
        out->s = json_string_value(v);
        out->n = json_string_length(v);
        return true;
    }
    buf_t b;
    buf_init(&b, (size_t)1 << 30);
    if (pgtext_jsonb(&b, v, false) != 0 || buf_append(&b, "", 1) != 0) {
        buf_free(&b);
        c->oom = true;
        return false;
    }
    owned_t *o = malloc(sizeof *o);
    if (o == NULL) {
        buf_free(&b);
        c->oom = true;
        return false;
    }
    o->data = b.data;
    o->next = c->owned;
    c->owned = o;
    out->s = b.data;
    out->n = b.len - 1;
    return true;
}

static void ctx_free(ctx_t *c)
{
    while (c->owned) {
        owned_t *o = c->owned;
        c->owned = o->next;
        free(o->data);
        free(o);
    }
    buf_free(&c->scratch);
}

static bool text_eq(const text_t *t, const char *s)
{
    return t->s && t->n == strlen(s) && memcmp(t->s, s, t->n) == 0;
}

/* Names a field of the message in err: "message ID: \"FIELD\" WHAT". */
static void say(ctx_t *c, const char *field, const char *what)
{
    const json_t *id = json_object_get(c->m, "id");
    char idbuf[32] = "?";
    if (json_is_integer(id))
        snprintf(idbuf, sizeof idbuf, "%lld", (long long)json_integer_value(id));
    else if (json_is_string(id))
        snprintf(idbuf, sizeof idbuf, "%.20s", json_string_value(id));
    snprintf(c->err, c->errcap, "message %s: \"%s\" %s", idbuf, field, what);
}

static int fail(ctx_t *c, const char *field, const char *what)
{
    say(c, field, what);
    return UV_EINVAL;
}

/* A value stored other than given (NULL for one that cannot be true), named
 * in err as fail's are (the first one of the message). */
static void repair(ctx_t *c, const char *field, const char *what)
{
    if (c->repaired)
        return;
    c->repaired = true;
    say(c, field, what);
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* int8in / int4in on t: 1 ok, 0 not an integer, -1 out of range. */
static int parse_int(const text_t *t, int64_t min, int64_t max, int64_t *out)
{
    const char *p = t->s, *end = t->s + t->n;
    while (p < end && is_space(*p))
        p++;
    bool neg = false;
    if (p < end && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    if (p == end || *p < '0' || *p > '9')
        return 0;
    uint64_t v = 0;
    bool over = false;
    for (; p < end && *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            over = true;
        else
            v = v * 10 + d;
    }
    while (p < end && is_space(*p))
        p++;
    if (p != end)
        return 0;
    if (over)
        return -1;
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1 || -(int64_t)(v - 1) - 1 < min)
            return -1;
        *out = -(int64_t)(v - 1) - 1;
    } else {
        if (v > (uint64_t)INT64_MAX || (int64_t)v > max)
            return -1;
        *out = (int64_t)v;
    }
    return 1;
}

/* True when t is all ASCII digits (at least one), after skip bytes. */
static bool all_digits(const text_t *t, size_t skip)
{
    if (t->n <= skip)
        return false;
    for (size_t i = skip; i < t->n; i++)
        if (t->s[i] < '0' || t->s[i] > '9')
            return false;
    return true;
}

static bool has_prefix(const text_t *t, const char *p)
{
    size_t n = strlen(p);
    return t->n >= n && memcmp(t->s, p, n) == 0;
}

/* An integer field read with ::bigint or ::integer: 0 (NULL: *null), or an
 * error. */
static int int_field(ctx_t *c, const char *field, const json_t *v, int64_t min, int64_t max,
                     int64_t *out, bool *null)
{
    text_t t;
    *null = !text_of(c, v, &t);
    if (*null)
        return 0;
    int r = parse_int(&t, min, max, out);
    if (r == 1)
        return 0;
    return fail(c, field, r == 0 ? "is not an integer" : "is out of range");
}

/* parley_tg_peer_id: "user1", "channel1", "chat1", a number. */
static int peer_id(ctx_t *c, const char *field, const json_t *p, int64_t *out, bool *null)
{
    *null = true;
    if (p == NULL || json_is_null(p))
        return 0;
    if (json_is_integer(p)) {
        *out = json_integer_value(p);
        *null = false;
        return 0;
    }
    if (json_is_real(p)) {
        double r = round(json_real_value(p)); /* numeric -> bigint: half away from zero */
        if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0))
            return fail(c, field, "is out of range");
        *out = (int64_t)r;
        *null = false;
        return 0;
    }
    text_t t;
    if (!json_is_string(p) || !text_of(c, p, &t))
        return 0;
    static const struct {
        const char *prefix;
        int how; /* 1: n, 2: -(10^12 + n), 3: -n */
    } forms[] = {{"user", 1}, {"channel", 2}, {"chat", 3}};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        size_t k = strlen(forms[i].prefix);
        if (!has_prefix(&t, forms[i].prefix) || !all_digits(&t, k))
            continue;
        text_t d = {t.s + k, t.n - k};
        int64_t n;
        if (parse_int(&d, INT64_MIN, INT64_MAX, &n) != 1)
            return fail(c, field, "is out of range");
        if (forms[i].how == 2) {
            if (n > INT64_MAX - 1000000000000)
                return fail(c, field, "is out of range");
            n = -(1000000000000 + n);
        } else if (forms[i].how == 3) {
            n = -n;
        }
        *out = n;
        *null = false;
        return 0;
    }
    if (all_digits(&t, t.n > 0 && t.s[0] == '-' ? 1 : 0)) {
        if (parse_int(&t, INT64_MIN, INT64_MAX, out) != 1)
            return fail(c, field, "is out of range");
        *null = false;
    }
    return 0;
}

/* ---- times ----------------------------------------------------------------- */

static bool two(const char *s, int *v)
{
    if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
        return false;
    *v = (s[0] - '0') * 10 + (s[1] - '0');
    return true;
}

/* parley_tg_time: 1 with *us, 0 for NULL, or an error. */
static int time_of(ctx_t *c, const char *field, const json_t *unixtime, const json_t *local,
                   int64_t *us)
{
    text_t t;
    if (text_of(c, unixtime, &t) && all_digits(&t, 0)) {
        int64_t n;
        if (parse_int(&t, 0, INT64_MAX, &n) != 1)
            return fail(c, field, "is out of range");
        double s = (double)n;
        if (s >= PGTEXT_TS_END_UNIX_SECS)
            return fail(c, field, "is out of the timestamp range");
        s -= (double)PGTEXT_EPOCH_UNIX;
        s = rint(s * (double)PGTEXT_USECS);
        if (s >= (double)PGTEXT_TS_END_USECS)
            return fail(c, field, "is out of the timestamp range");
        *us = (int64_t)s;
        return 1;
    }
    /* ^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$ */
    if (!text_of(c, local, &t) || t.n != 19)
        return 0;
    const char *s = t.s;
    int y1, y2, mo, d, h, mi, sec;
    if (!two(s, &y1) || !two(s + 2, &y2) || s[4] != '-' || !two(s + 5, &mo) || s[7] != '-' ||
        !two(s + 8, &d) || s[10] != 'T' || !two(s + 11, &h) || s[13] != ':' || !two(s + 14, &mi) ||
        s[16] != ':' || !two(s + 17, &sec))
        return 0;
    int y = y1 * 100 + y2;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    /* timestamp input: no year 0; 24:00:00 and a leap second are taken. */
    if (y == 0 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap) || h > 24 ||
        mi > 59 || sec > 60 || (h == 24 && (mi > 0 || sec > 0)))
        return fail(c, field, "is not a valid date");
    int64_t secs = pgtext_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
    *us = (secs - c->o->tz_seconds - PGTEXT_EPOCH_UNIX) * PGTEXT_USECS;
    return 1;
}

/* ---- message fields --------------------------------------------------------- */

/* parley_tg_text: the plain text of "text" (NULL when neither string nor
 * array), written as a COPY field into rows. */
static int write_text(ctx_t *c, buf_t *rows, const json_t *t, bool *has_link)
{
    *has_link = false;
    size_t start = rows->len;
    int rc = 0;
    if (json_is_string(t)) {
        rc = pgtext_copy_escape(rows, json_string_value(t), json_string_length(t));
    } else if (json_is_array(t)) {
        for (size_t i = 0; i < json_array_size(t) && rc == 0; i++) {
            const json_t *e = json_array_get(t, i);
            text_t x;
            if (json_is_string(e))
                rc = pgtext_copy_escape(rows, json_string_value(e), json_string_length(e));
            else if (json_is_object(e) && text_of(c, json_object_get(e, "text"), &x))
                rc = pgtext_copy_escape(rows, x.s, x.n);
        }
    }
    if (rc != 0)
        return rc;
    if (rows->len == start)
        return buf_append_str(rows, "\\N"); /* nullif(text, '') */
    /* strpos(text, '://') > 0 AND text ~* 'https?://' (on the escaped text:
     * escaping touches neither letters nor "://"). */
    const char *s = rows->data + start;
    size_t n = rows->len - start;
    for (size_t i = 0; i + 3 <= n; i++) {
        if (s[i] != ':' || s[i + 1] != '/' || s[i + 2] != '/')
            continue;
        for (size_t k = 4; k <= 5 && k <= i; k++) {
            const char *w = s + i - k;
            if ((w[0] | 0x20) == 'h' && (w[1] | 0x20) == 't' && (w[2] | 0x20) == 't' &&
                (w[3] | 0x20) == 'p' && (k == 4 || (w[4] | 0x20) == 's'))
                *has_link = true;
        }
    }
    return 0;
}

/* Writes a JSON field (jsonb text, COPY-escaped) or \N when v is NULL. */
static int write_json(ctx_t *c, buf_t *rows, const json_t *v, bool strip)
{
    if (v == NULL)
        return buf_append_str(rows, "\\N");
    size_t start = c->scratch.len;
    int rc = pgtext_jsonb(&c->scratch, v, strip);
    if (rc == 0)
        rc = pgtext_copy_escape(rows, c->scratch.data + start, c->scratch.len - start);
    c->scratch.len = start;
    return rc;
}

/* parley_tg_entities (tg_entities.h); *link: the link test on them. */
static int write_entities(ctx_t *c, buf_t *rows, bool *link)
{
    json_t *ents = NULL;
    int rc = tg_entities_of(c->m, &ents, link);
    if (rc == 0)
        rc = write_json(c, rows, ents, false);
    json_decref(ents);
    return rc;
}

static bool has(const json_t *m, const char *k)
{
    return json_object_get(m, k) != NULL;
}

static bool str_is(const ctx_t *c, const char *k, const char *v)
{
    text_t t;
    return text_of((ctx_t *)c, json_object_get(c->m, k), &t) && text_eq(&t, v);
}

/* parley_tg_media_kind, or NULL. */
static const char *media_kind(const ctx_t *c)
{
    const json_t *m = c->m;
    static const struct {
        const char *media_type, *kind;
    } types[] = {{"sticker", "sticker"},          {"video_file", "video"},
                 {"animation", "animation"},      {"voice_message", "voice"},
                 {"video_message", "video_note"}, {"audio_file", "audio"}};
    if (has(m, "photo") && str_is(c, "type", "message"))
        return "photo";
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (str_is(c, "media_type", types[i].media_type))
            return types[i].kind;
    static const struct {
        const char *key, *kind;
    } keys[] = {{"file", "document"},
                {"poll", "poll"},
                {"todo_list", "todo"},
                {NULL, NULL},
                {"location_information", "location"},
                {"contact_information", "contact"},
                {"game_title", "game"},
                {"invoice_information", "invoice"},
                {"dice", "dice"},
                {"story", "story"}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (keys[i].key == NULL) {
            if (has(m, "location_information") && has(m, "place_name"))
                return "venue";
            continue;
        }
        if (has(m, keys[i].key))
            return keys[i].kind;
    }
    return NULL;
}

static const char *const extra_keys[][2] = {
    {"via_bot", "via_bot"},
    {"author", "author"},
    {"saved_from", "saved_from"},
    {"forwarded_from_id", "forwarded_from_id"},
    {"reactions", "reactions"},
    {"inline_bot_buttons", "inline_bot_buttons"},
    {"poll", "poll"},
    {"todo_list", "todo_list"},
    {"location_information", "location"},
    {"place_name", "place_name"},
    {"address", "address"},
    {"live_location_period_seconds", "live_location_period_seconds"},
    {"contact_information", "contact"},
    {"contact_vcard", "contact_vcard"},
    {"game_title", "game"},
    {"invoice_information", "invoice"},
    {"dice", "dice"},
    {"self_destruct_period_seconds", "self_destruct_period_seconds"},
    {"signature", "signature"},
};

/* An object of the non-null fields of m named in keys (renamed), stripped
 * of nulls, written as a JSON field; \N when it is empty. */
static int write_picked(ctx_t *c, buf_t *rows, const char *const (*keys)[2], size_t n)
{
    json_t *o = NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_object_get(c->m, keys[i][0]);
        if (v == NULL || json_is_null(v))
            continue;
        if (o == NULL && (o = json_object()) == NULL)
            return UV_ENOMEM;
        if (json_object_set(o, keys[i][1], v) != 0) {
            json_decref(o);
            return UV_ENOMEM;
        }
    }
    int rc = write_json(c, rows, o, true);
    json_decref(o);
    return rc;
}

static const char *const action_drop[] = {"id",    "type",     "date", "date_unixtime",
                                          "actor", "actor_id", "text", "text_entities"};

static int write_action(ctx_t *c, buf_t *rows)
{
    if (!str_is(c, "type", "service"))
        return buf_append_str(rows, "\\N");
    json_t *a = json_object();
    if (a == NULL)
        return UV_ENOMEM;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)c->m, k, v)
    {
        bool drop = false;
        for (size_t i = 0; i < sizeof action_drop / sizeof action_drop[0]; i++)
            drop = drop || strcmp(k, action_drop[i]) == 0;
        if (!drop && json_object_set(a, k, v) != 0) {
            json_decref(a);
            return UV_ENOMEM;
        }
    }
    int rc = write_json(c, rows, a, false);
    json_decref(a);
    return rc;
}

/* A row being written: fields are separated by tabs; after an error the
 * rest is skipped and the error kept. */
typedef struct {
    buf_t *b;
    int rc;
    int n; /* fields begun */
} row_t;

static bool field_begin(row_t *r)
{
    if (r->rc == 0 && r->n++ > 0)
        r->rc = buf_append(r->b, "\t", 1);
    return r->rc == 0;
}

/* Appends a field written by expr (an int code, on r->b). */
#define FIELD(r, expr)                                                                             \
    do {                                                                                           \
        if (field_begin(r))                                                                        \
            (r)->rc = (expr);                                                                      \
    } while (0)

static int row_end(row_t *r)
{
    return r->rc == 0 ? buf_append(r->b, "\n", 1) : r->rc;
}

static int write_i64(buf_t *b, int64_t v, bool null)
{
    return null ? buf_append_str(b, "\\N") : buf_printf(b, "%lld", (long long)v);
}

static int write_str(buf_t *b, const char *s, size_t n)
{
    return s ? pgtext_copy_escape(b, s, n) : buf_append_str(b, "\\N");
}

static int write_text_of(ctx_t *c, buf_t *b, const json_t *v)
{
    text_t t;
    text_of(c, v, &t);
    return write_str(b, t.s, t.n);
}

static const char *const media_extra_keys[][2] = {
    {"thumbnail", "thumbnail"},
    {"sticker_emoji", "sticker_emoji"},
    {"media_type", "media_type"},
};

/* The media row of a message with "photo" or "file". */
static int write_media(ctx_t *c, buf_t *media, int64_t id, const char *mkind)
{
    const json_t *m = c->m;
    int64_t size = 0, w = 0, h = 0, dur = 0;
    bool size_null, w_null, h_null, dur_null;
    text_t path, fs;
    if (!text_of(c, json_object_get(m, "photo"), &path))
        text_of(c, json_object_get(m, "file"), &path);
    if (!text_of(c, json_object_get(m, "file_size"), &fs))
        text_of(c, json_object_get(m, "photo_file_size"), &fs);
    int rc = 0;
    size_null = fs.s == NULL;
    if (!size_null) {
        int r = parse_int(&fs, INT64_MIN, INT64_MAX, &size);
        if (r != 1)
            return fail(c, "file_size", r == 0 ? "is not an integer" : "is out of range");
    }
    if ((rc = int_field(c, "width", json_object_get(m, "width"), INT32_MIN, INT32_MAX, &w,
                        &w_null)) != 0 ||
        (rc = int_field(c, "height", json_object_get(m, "height"), INT32_MIN, INT32_MAX, &h,
                        &h_null)) != 0 ||
        (rc = int_field(c, "duration_seconds", json_object_get(m, "duration_seconds"), INT32_MIN,
                        INT32_MAX, &dur, &dur_null)) != 0)
        return rc;
    /* A size below zero is no size: left out (NULL), named. */
    static const char *const sizes[] = {"file_size", "width", "height", "duration_seconds"};
    int64_t *vals[] = {&size, &w, &h, &dur};
    bool *nulls[] = {&size_null, &w_null, &h_null, &dur_null};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        if (*nulls[i] || *vals[i] >= 0)
            continue;
        char what[80];
        snprintf(what, sizeof what, "%lld is not a size; stored without it", (long long)*vals[i]);
        repair(c, i == 0 && json_object_get(m, "file_size") == NULL ? "photo_file_size" : sizes[i],
               what);
        *nulls[i] = true;
    }
    const char *kind = has(m, "photo")                                   ? "photo"
                       : mkind == NULL || strcmp(mkind, "document") == 0 ? "document"
                                                                         : mkind;
    bool missing = path.s && path.n >= 6 && memcmp(path.s, "(File ", 6) == 0;
    row_t r = {.b = media};
    FIELD(&r, write_i64(media, id, false));
    FIELD(&r, buf_append_str(media, kind));
    FIELD(&r, write_str(media, path.s, path.n));
    FIELD(&r, write_text_of(c, media, json_object_get(m, "mime_type")));
    FIELD(&r, write_i64(media, size, size_null));
    FIELD(&r, write_i64(media, w, w_null));
    FIELD(&r, write_i64(media, h, h_null));
    FIELD(&r, write_i64(media, dur, dur_null));
    FIELD(&r, write_text_of(c, media, json_object_get(m, "file_name")));
    FIELD(&r, buf_append_str(media, missing ? "unavailable" : "remote"));
    FIELD(&r, write_picked(c, media, media_extra_keys,
                           sizeof media_extra_keys / sizeof media_extra_keys[0]));
    return row_end(&r);
}

/* The sender: parley_tg_peer_id(coalesce(from_id, actor_id)) (the first
 * key present, even when null), and coalesce(from, actor) (the first
 * non-null). */
static int sender_of(ctx_t *c, int64_t *id, bool *null, text_t *name)
{
    const json_t *from_id = json_object_get(c->m, "from_id");
    if (!text_of(c, json_object_get(c->m, "from"), name))
        text_of(c, json_object_get(c->m, "actor"), name);
    return peer_id(c, "from_id", from_id ? from_id : json_object_get(c->m, "actor_id"), id, null);
}

/* Appends the message row; on an error the caller drops what was written. */
static int write_row(ctx_t *c, buf_t *rows, int64_t id)
{
    const json_t *m = c->m;
    const tg_map_opts_t *o = c->o;
    int64_t sender = 0, reply = 0, peer = 0, date = 0, edit = 0;
    bool sender_null, reply_null, peer_null;
    text_t name;
    int rc = sender_of(c, &sender, &sender_null, &name);
    if (rc == 0)
        rc = int_field(c, "reply_to_message_id", json_object_get(m, "reply_to_message_id"),
                       INT64_MIN, INT64_MAX, &reply, &reply_null);
    if (rc == 0)
        rc = peer_id(c, "reply_to_peer_id", json_object_get(m, "reply_to_peer_id"), &peer,
                     &peer_null);
    if (rc != 0)
        return rc;
    int dr =
        time_of(c, "date", json_object_get(m, "date_unixtime"), json_object_get(m, "date"), &date);
    if (dr < 0)
        return dr;
    int er = time_of(c, "edited", json_object_get(m, "edited_unixtime"),
                     json_object_get(m, "edited"), &edit);
    if (er < 0)
        return er;
    if (dr == 0) {
        /* A message is placed by its date: one given that cannot be read
         * leaves it out; none at all is the epoch (as the SQL mapping
         * stored it), named. */
        text_t t;
        bool local = text_of(c, json_object_get(m, "date"), &t);
        if (local || text_of(c, json_object_get(m, "date_unixtime"), &t)) {
            char what[96];
            snprintf(what, sizeof what, "is not a date (%.40s)", t.s);
            return fail(c, local ? "date" : "date_unixtime", what);
        }
        repair(c, "date", "is missing; stored as 1970-01-01 (the epoch)");
        date = -PGTEXT_EPOCH_UNIX * PGTEXT_USECS; /* 'epoch' */
    }
    if (o->chat_known && !peer_null && peer == o->chat_id)
        peer_null = true;
    bool text_link = false, ent_link = false;
    const char *mk = media_kind(c);
    const char *k = str_is(c, "type", "service")       ? "service"
                    : str_is(c, "type", "unsupported") ? "unsupported"
                                                       : "message";
    row_t r = {.b = rows};
    FIELD(&r, write_i64(rows, o->chat_id, !o->chat_known));
    FIELD(&r, write_i64(rows, id, false));
    FIELD(&r, write_i64(rows, sender, sender_null));
    FIELD(&r, write_str(rows, name.s, name.n));
    FIELD(&r, pgtext_timestamptz(rows, date));
    FIELD(&r, er == 1 ? pgtext_timestamptz(rows, edit) : buf_append_str(rows, "\\N"));
    FIELD(&r, write_text(c, rows, json_object_get(m, "text"), &text_link));
    FIELD(&r, write_entities(c, rows, &ent_link));
    FIELD(&r, write_i64(rows, reply, reply_null));
    FIELD(&r, write_i64(rows, peer, peer_null));
    FIELD(&r, write_text_of(c, rows, json_object_get(m, "forwarded_from")));
    FIELD(&r, write_str(rows, mk, mk ? strlen(mk) : 0));
    FIELD(&r, buf_append_str(rows, ent_link || text_link ? "t" : "f"));
    FIELD(&r, buf_append_str(rows, k));
    FIELD(&r, write_action(c, rows));
    FIELD(&r, write_picked(c, rows, extra_keys, sizeof extra_keys / sizeof extra_keys[0]));
    return row_end(&r);
}

/* A row without an id: only its sender matters (to users); the other
 * fields are not read, as the SQL mapping never read them. */
static int write_sender_row(ctx_t *c, buf_t *rows)
{
    int64_t sender = 0;
    bool sender_null;
    text_t name;
    int rc = sender_of(c, &sender, &sender_null, &name);
    if (rc != 0)
        return rc;
    row_t r = {.b = rows};
    FIELD(&r, write_i64(rows, c->o->chat_id, !c->o->chat_known));
    FIELD(&r, buf_append_str(rows, "\\N"));
    FIELD(&r, write_i64(rows, sender, sender_null));
    FIELD(&r, write_str(rows, name.s, name.n));
    FIELD(&r, buf_append_str(rows, "1970-01-01 00:00:00+00\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\tf"
                                   "\tmessage\t\\N\t\\N"));
    return row_end(&r);
}

int tg_map_message(const json_t *m, const tg_map_opts_t *o, buf_t *rows, buf_t *media,
                   tg_map_kind_t *kind, int64_t *id, char *err, size_t errcap)
{
    ctx_t c = {.o = o, .m = m, .err = err, .errcap = errcap};
    buf_init(&c.scratch, (size_t)1 << 30);
    *id = 0;
    if (errcap > 0)
        err[0] = '\0';
    size_t rows_len = rows->len, media_len = media->len;
    int rc = 0;
    text_t t;
    if (!text_of(&c, json_object_get(m, "id"), &t)) {
        *kind = TG_MAP_NO_ID;
        rc = c.oom ? UV_ENOMEM : write_sender_row(&c, rows);
    } else if (!all_digits(&t, t.n > 0 && t.s[0] == '-' ? 1 : 0)) {
        *kind = TG_MAP_SKIPPED;
    } else if (parse_int(&t, INT64_MIN, INT64_MAX, id) != 1) {
        rc = fail(&c, "id", "is out of range");
    } else if (*id <= 0) {
        rc = fail(&c, "id", "is not a message id (ids are above 0)");
    } else {
        *kind = TG_MAP_ROW;
        rc = write_row(&c, rows, *id);
        if (rc == 0 && (has(m, "photo") || has(m, "file")))
            rc = write_media(&c, media, *id, media_kind(&c));
    }
    if (rc == 0 && c.oom)
        rc = UV_ENOMEM;
    if (rc != 0) {
        rows->len = rows_len;
        media->len = media_len;
        if (rc != UV_EINVAL)
            snprintf(err, errcap, "%s", uv_strerror(rc));
    }
    ctx_free(&c);
    return rc;
}

/* ---- chats ------------------------------------------------------------------ */

bool tg_map_chat_id(const json_t *header, int64_t *out)
{
    ctx_t c = {.m = header};
    buf_init(&c.scratch, 4096);
    text_t id, type;
    bool ok = text_of(&c, json_object_get(header, "id"), &id) &&
              all_digits(&id, id.n > 0 && id.s[0] == '-' ? 1 : 0);
    int64_t n = 0;
    ok = ok && parse_int(&id, INT64_MIN, INT64_MAX, &n) == 1;
    if (ok) {
        if (!text_of(&c, json_object_get(header, "type"), &type)) {
            type.s = "personal_chat";
            type.n = strlen(type.s);
        }
        if (text_eq(&type, "personal_chat") || text_eq(&type, "bot_chat") ||
            text_eq(&type, "saved_messages") || text_eq(&type, "replies"))
            *out = n;
        else if (text_eq(&type, "private_group") && n != INT64_MIN)
            *out = -n;
        else if (!text_eq(&type, "private_group") && n <= INT64_MAX - 1000000000000)
            *out = -(1000000000000 + n);
        else
            ok = false;
    }
    ok = ok && !c.oom;
    ctx_free(&c);
    return ok;
}

int tg_map_tz_seconds(const char *tz)
{
    int h = 0, m = 0;
    if (sscanf(tz + 1, "%d:%d", &h, &m) < 1)
        return 0;
    int s = h * 3600 + m * 60;
    return tz[0] == '-' ? -s : s;
}

bool tg_map_parse_tz(const char *tz, char *out, size_t cap)
{
    if (strcmp(tz, "UTC") == 0 || strcmp(tz, "Z") == 0 || strcmp(tz, "utc") == 0) {
        snprintf(out, cap, "+00:00");
        return true;
    }
    int sign = tz[0] == '-' ? -1 : 1;
    if (tz[0] != '+' && tz[0] != '-')
        return false;
    int h = 0, m = 0;
    const char *p = tz + 1;
    if (strlen(p) == 4 && strspn(p, "0123456789") == 4) {
        h = (p[0] - '0') * 10 + (p[1] - '0');
        m = (p[2] - '0') * 10 + (p[3] - '0');
    } else {
        char extra;
        int n = sscanf(p, "%2d:%2d%c", &h, &m, &extra);
        if (n == 1 && strspn(p, "0123456789") == strlen(p) && strlen(p) <= 2)
            m = 0;
        else if (n != 2 || strlen(p) != 5)
            return false;
    }
    if (h > 14 || m > 59)
        return false;
    snprintf(out, cap, "%c%02d:%02d", sign < 0 ? '-' : '+', h, m);
    return true;
}
