/* bluesky render: slim JSON out of Bluesky API views, and the Markdown the
 * bluesky tools answer (see render.h). */
#include "toolsets/bluesky/render.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* ---- reading API views --------------------------------------------------- */

/* Absent and wrong-typed fields read as NULL (strings) or 0 (counts). */
static const char *get_str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* A string field that is present and not empty, else NULL. */
static const char *get_nonempty(const json_t *o, const char *key)
{
    const char *s = get_str(o, key);
    return s != NULL && *s != '\0' ? s : NULL;
}

static json_int_t get_count(const json_t *o, const char *key)
{
    json_int_t n = json_integer_value(json_object_get(o, key));
    return n > 0 ? n : 0;
}

/* The last path segment of an at-URI (the whole string when it has no '/'). */
static const char *uri_rkey(const char *uri)
{
    const char *slash = strrchr(uri, '/');
    return slash != NULL ? slash + 1 : uri;
}

/* An actor's handle, or its DID when the handle is absent or marked invalid;
 * NULL when neither is there. */
static const char *actor_name(const json_t *actor)
{
    const char *handle = get_nonempty(actor, "handle");
    if (handle != NULL && strcmp(handle, "handle.invalid") != 0)
        return handle;
    const char *did = get_nonempty(actor, "did");
    return did != NULL ? did : handle;
}

/* ---- building slim JSON -------------------------------------------------- */

/* Each setter records a failure (ENOMEM) in *ok. */
static void set_new(json_t *o, const char *key, json_t *v, bool *ok)
{
    if (json_object_set_new(o, key, v) != 0)
        *ok = false;
}

static void set_str(json_t *o, const char *key, const char *s, bool *ok)
{
    if (s != NULL)
        set_new(o, key, json_string(s), ok);
}

static void set_int(json_t *o, const char *key, json_int_t n, bool *ok)
{
    set_new(o, key, json_integer(n), ok);
}

/* {"uri", "handle"?, "rkey"} for a reference to another record. */
static json_t *slim_ref(const char *uri, const char *handle)
{
    json_t *r = json_object();
    if (r == NULL)
        return NULL;
    bool ok = true;
    set_str(r, "uri", uri, &ok);
    set_str(r, "handle", handle, &ok);
    set_str(r, "rkey", uri_rkey(uri), &ok);
    if (!ok) {
        json_decref(r);
        return NULL;
    }
    return r;
}

static void slim_images(json_t *images, const json_t *list, bool *ok)
{
    size_t i;
    const json_t *img;
    json_array_foreach(list, i, img)
    {
        const char *url = get_nonempty(img, "fullsize");
        if (url == NULL)
            url = get_nonempty(img, "thumb");
        if (url == NULL)
            continue;
        const char *alt = get_str(img, "alt");
        json_t *o = json_object();
        if (o == NULL) {
            *ok = false;
            return;
        }
        set_str(o, "alt", alt != NULL ? alt : "", ok);
        set_str(o, "url", url, ok);
        if (json_array_append_new(images, o) != 0)
            *ok = false;
    }
}

/* Reads a post's embed view: images#view, external#view, record#view and
 * recordWithMedia#view (whose media is read as an embed of its own; nested
 * is false there so that a hostile media cannot recurse). */
static void slim_embed(json_t *slim, json_t *images, const json_t *embed, bool nested, bool *ok)
{
    if (!json_is_object(embed))
        return;
    slim_images(images, json_object_get(embed, "images"), ok);
    const json_t *ext = json_object_get(embed, "external");
    const char *ext_uri = get_nonempty(ext, "uri");
    if (ext_uri != NULL && json_object_get(slim, "link") == NULL) {
        const char *title = get_str(ext, "title");
        json_t *link = json_object();
        if (link == NULL) {
            *ok = false;
            return;
        }
        set_str(link, "uri", ext_uri, ok);
        set_str(link, "title", title != NULL ? title : "", ok);
        set_new(slim, "link", link, ok);
    }
    const json_t *rec = json_object_get(embed, "record");
    if (json_is_object(rec) && get_str(rec, "uri") == NULL)
        rec = json_object_get(rec, "record"); /* recordWithMedia: record#view inside */
    const char *rec_uri = get_nonempty(rec, "uri");
    if (rec_uri != NULL && json_object_get(slim, "quote") == NULL)
        set_new(slim, "quote", slim_ref(rec_uri, actor_name(json_object_get(rec, "author"))), ok);
    if (!nested)
        slim_embed(slim, images, json_object_get(embed, "media"), true, ok);
}

json_t *bsky_post_slim(const json_t *pv)
{
    const char *uri = get_str(pv, "uri");
    const json_t *author = json_object_get(pv, "author");
    const char *handle = actor_name(author);
    if (uri == NULL || handle == NULL)
        return NULL;
    const json_t *record = json_object_get(pv, "record");
    const char *text = get_str(record, "text");
    const char *created = get_nonempty(record, "createdAt");
    if (created == NULL)
        created = get_nonempty(pv, "indexedAt");
    const char *parent =
        get_nonempty(json_object_get(json_object_get(record, "reply"), "parent"), "uri");

    json_t *slim = json_object();
    json_t *images = json_array();
    bool ok = slim != NULL && images != NULL;
    if (ok) {
        set_str(slim, "uri", uri, &ok);
        set_str(slim, "cid", get_nonempty(pv, "cid"), &ok);
        set_str(slim, "rkey", uri_rkey(uri), &ok);
        set_str(slim, "handle", handle, &ok);
        set_str(slim, "did", get_nonempty(author, "did"), &ok);
        set_str(slim, "displayName", get_nonempty(author, "displayName"), &ok);
        set_str(slim, "text", text != NULL ? text : "", &ok);
        set_str(slim, "createdAt", created, &ok);
        set_int(slim, "likes", get_count(pv, "likeCount"), &ok);
        set_int(slim, "reposts", get_count(pv, "repostCount"), &ok);
        set_int(slim, "replies", get_count(pv, "replyCount"), &ok);
        set_int(slim, "quotes", get_count(pv, "quoteCount"), &ok);
        slim_embed(slim, images, json_object_get(pv, "embed"), false, &ok);
        if (parent != NULL)
            set_new(slim, "replyTo", slim_ref(parent, NULL), &ok);
        set_new(slim, "images", images, &ok);
        images = NULL;
    }
    json_decref(images);
    if (!ok) {
        json_decref(slim);
        return NULL;
    }
    return slim;
}

/* ---- threads ------------------------------------------------------------- */

/* The at-URI of a thread entry: a threadViewPost's post, or a
 * notFoundPost / blockedPost's own uri. */
static const char *entry_uri(const json_t *entry)
{
    const char *uri = get_str(json_object_get(entry, "post"), "uri");
    return uri != NULL ? uri : get_str(entry, "uri");
}

/* A thread entry as a slim post, replyTo set from the thread (tree_parent,
 * may be NULL) when the record names no parent. NULL when the entry is not
 * a readable threadViewPost (*ok untouched) or on ENOMEM (*ok false). */
static json_t *thread_entry(const json_t *entry, const char *tree_parent, bool *ok)
{
    const json_t *pv = json_object_get(entry, "post");
    if (get_str(pv, "uri") == NULL || actor_name(json_object_get(pv, "author")) == NULL)
        return NULL;
    json_t *slim = bsky_post_slim(pv);
    if (slim == NULL) {
        *ok = false;
        return NULL;
    }
    if (tree_parent != NULL && json_object_get(slim, "replyTo") == NULL)
        set_new(slim, "replyTo", slim_ref(tree_parent, NULL), ok);
    return slim;
}

static void thread_replies(json_t *out, const json_t *node, int depth, bool *ok)
{
    if (depth > BSKY_THREAD_MAX_DEPTH)
        return;
    const char *node_uri = entry_uri(node);
    size_t i;
    const json_t *reply;
    json_array_foreach(json_object_get(node, "replies"), i, reply)
    {
        json_t *slim = thread_entry(reply, node_uri, ok);
        if (slim == NULL) {
            if (!*ok)
                return;
            continue;
        }
        set_int(slim, "depth", depth, ok);
        if (json_array_append_new(out, slim) != 0)
            *ok = false;
        if (!*ok)
            return;
        thread_replies(out, reply, depth + 1, ok);
    }
}

/* Fills replyTo.handle of every post whose parent is in posts. */
static void thread_fill_handles(json_t *posts, bool *ok)
{
    json_t *handles = json_object(); /* uri -> handle */
    if (handles == NULL) {
        *ok = false;
        return;
    }
    size_t i;
    json_t *p;
    json_array_foreach(posts, i, p)
    {
        if (json_object_set(handles, get_str(p, "uri"), json_object_get(p, "handle")) != 0)
            *ok = false;
    }
    json_array_foreach(posts, i, p)
    {
        json_t *to = json_object_get(p, "replyTo");
        const char *uri = get_str(to, "uri");
        json_t *handle = uri != NULL ? json_object_get(handles, uri) : NULL;
        if (handle != NULL && json_object_get(to, "handle") == NULL &&
            json_object_set(to, "handle", handle) != 0)
            *ok = false;
    }
    json_decref(handles);
}

json_t *bsky_thread_slim(const json_t *thread)
{
    json_t *out = json_array();
    if (out == NULL)
        return NULL;
    bool ok = true;
    json_t *focus = thread_entry(thread, entry_uri(json_object_get(thread, "parent")), &ok);
    if (focus != NULL) {
        /* Ancestors, nearest first, each inserted at the top. */
        const json_t *node = json_object_get(thread, "parent");
        for (int n = 0; ok && n < BSKY_THREAD_MAX_DEPTH; n++) {
            json_t *slim = thread_entry(node, entry_uri(json_object_get(node, "parent")), &ok);
            if (slim == NULL)
                break;
            if (json_array_insert_new(out, 0, slim) != 0)
                ok = false;
            node = json_object_get(node, "parent");
        }
        size_t top = json_array_size(out);
        for (size_t i = 0; ok && i < top; i++)
            set_int(json_array_get(out, i), "depth", (json_int_t)i, &ok);
        set_int(focus, "depth", (json_int_t)top, &ok);
        if (json_array_append_new(out, focus) != 0)
            ok = false;
        if (ok)
            thread_replies(out, thread, (int)top + 1, &ok);
        if (ok)
            thread_fill_handles(out, &ok);
    }
    if (!ok) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* ---- writing Markdown ---------------------------------------------------- */

/* A writer that keeps the first buf error; later writes are skipped. */
typedef struct md_s {
    buf_t *b;
    int rc;
} md_t;

static void md_put(md_t *m, const char *s, size_t n)
{
    if (m->rc == 0)
        m->rc = buf_append(m->b, s, n);
}

static void md_str(md_t *m, const char *s)
{
    md_put(m, s, strlen(s));
}

static void md_int(md_t *m, json_int_t n)
{
    char num[32];
    int len = snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, n);
    md_put(m, num, (size_t)len);
}

static bool is_ctl(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

/* A single-line field: control characters become spaces; with escape, "\",
 * "[" and "]" are backslash-escaped (link text). */
static void md_field_n(md_t *m, const char *s, size_t n, bool escape)
{
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool esc = escape && (c == '\\' || c == '[' || c == ']');
        if (!esc && !is_ctl(c))
            continue;
        md_put(m, s + start, i - start);
        if (esc)
            md_put(m, "\\", 1);
        else
            md_put(m, " ", 1);
        start = esc ? i : i + 1;
    }
    md_put(m, s + start, n - start);
}

static void md_field(md_t *m, const char *s)
{
    md_field_n(m, s, strlen(s), false);
}

static void md_link_text(md_t *m, const char *s)
{
    md_field_n(m, s, strlen(s), true);
}

/* A link destination: the characters that would end or confuse it are
 * percent-encoded, which keeps the URL working when copied as is. */
static void md_url(md_t *m, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t start = 0, n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!is_ctl(c) && c != ' ' && c != '(' && c != ')' && c != '<' && c != '>' && c != '\\')
            continue;
        md_put(m, s + start, i - start);
        char pct[3] = {'%', hex[c >> 4], hex[c & 15]};
        md_put(m, pct, 3);
        start = i + 1;
    }
    md_put(m, s + start, n - start);
}

/* User content, every line blockquoted; trailing line breaks dropped. */
static void md_quote(md_t *m, const char *text)
{
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
        n--;
    if (n == 0)
        return;
    size_t i = 0;
    for (;;) {
        size_t end = i;
        while (end < n && text[end] != '\n' && text[end] != '\r')
            end++;
        if (end > i) {
            md_put(m, "> ", 2);
            md_put(m, text + i, end - i);
            md_put(m, "\n", 1);
        } else {
            md_put(m, ">\n", 2);
        }
        if (end >= n)
            break;
        i = end + (text[end] == '\r' && end + 1 < n && text[end + 1] == '\n' ? 2 : 1);
    }
}

/* Length in bytes of the first UTF-8 character of s (not empty). */
static size_t utf8_first(const char *s)
{
    size_t n = 1;
    while (s[n] != '\0' && ((unsigned char)s[n] & 0xC0) == 0x80)
        n++;
    return n;
}

/* Start of the last k UTF-8 characters of s (s itself when it has k or
 * fewer). */
static const char *utf8_last(const char *s, size_t k)
{
    const char *p = s + strlen(s);
    while (k > 0 && p > s) {
        p--;
        if (((unsigned char)*p & 0xC0) != 0x80)
            k--;
    }
    return p;
}

static const json_t *find_post(const json_t *thread, const char *uri)
{
    size_t i;
    const json_t *p;
    json_array_foreach(thread, i, p)
    {
        const char *u = get_str(p, "uri");
        if (u != NULL && strcmp(u, uri) == 0)
            return p;
    }
    return NULL;
}

static void md_handle_rkey(md_t *m, const char *handle, const char *rkey)
{
    md_str(m, "@");
    md_field(m, handle);
    md_str(m, "/");
    md_field(m, rkey);
}

/* The reference to the post replied to (see bsky_render_post). */
static void md_parent_ref(md_t *m, const json_t *to, const json_t *thread)
{
    const char *uri = get_str(to, "uri");
    const json_t *parent = uri != NULL ? find_post(thread, uri) : NULL;
    const char *handle = get_nonempty(parent, "handle");
    const char *rkey = get_str(parent, "rkey");
    if (handle != NULL && rkey != NULL) {
        md_str(m, "@");
        md_field_n(m, handle, utf8_first(handle), false);
        md_str(m, "/");
        const char *last = utf8_last(rkey, 4);
        if (last != rkey)
            md_str(m, "…");
        md_field(m, last);
        return;
    }
    handle = get_nonempty(to, "handle");
    rkey = get_str(to, "rkey");
    if (handle != NULL && rkey != NULL)
        md_handle_rkey(m, handle, rkey);
    else
        md_field(m, uri != NULL ? uri : "?");
}

static bool digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* The zone of a createdAt after its seconds: "Z" (also for "z"), an offset
 * as given (+HH, +HHMM, +HH:MM), "" when there is none; NULL otherwise. */
static const char *time_zone(const char *z)
{
    size_t n = strlen(z);
    if (n == 0)
        return "";
    if (n == 1 && (*z == 'Z' || *z == 'z'))
        return "Z";
    if ((*z == '+' || *z == '-') &&
        ((n == 3 && digits(z + 1, 2)) || (n == 5 && digits(z + 1, 4)) ||
         (n == 6 && digits(z + 1, 2) && z[3] == ':' && digits(z + 4, 2))))
        return z;
    return NULL;
}

/* The zone of a createdAt of the shape YYYY-MM-DDTHH:MM:SS[.frac][zone],
 * or NULL when it is not of that shape. */
static const char *time_shape(const char *s)
{
    const char *zone = NULL;
    if (strlen(s) >= 19 && digits(s, 4) && s[4] == '-' && digits(s + 5, 2) && s[7] == '-' &&
        digits(s + 8, 2) && (s[10] == 'T' || s[10] == 't' || s[10] == ' ') && digits(s + 11, 2) &&
        s[13] == ':' && digits(s + 14, 2) && s[16] == ':' && digits(s + 17, 2)) {
        const char *rest = s + 19;
        if (*rest == '.' || *rest == ',') {
            rest++;
            if (!digits(rest, 1))
                rest = NULL;
            while (rest != NULL && *rest >= '0' && *rest <= '9')
                rest++;
        }
        zone = rest != NULL ? time_zone(rest) : NULL;
    }
    return zone;
}

/* createdAt as YYYY-MM-DDTHH:MM:SS plus its zone, fraction dropped (s has
 * passed time_shape). */
static void md_time(md_t *m, const char *s, const char *zone)
{
    md_put(m, s, 10);
    md_put(m, "T", 1);
    md_put(m, s + 11, 8);
    md_str(m, zone);
}

static void md_stats(md_t *m, const json_t *slim)
{
    static const struct {
        const char *key, *icon;
    } counts[] = {{"likes", "👍 "}, {"reposts", "♻️ "}, {"replies", "💬 "}};
    bool any = false;
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        json_int_t n = get_count(slim, counts[i].key);
        if (n == 0)
            continue;
        md_str(m, any ? "  " : "");
        md_str(m, counts[i].icon);
        md_int(m, n);
        any = true;
    }
    /* A time of another shape is left out (it stays in the structured
     * content): printed as given, upstream text could start a line. */
    const char *created = get_nonempty(slim, "createdAt");
    const char *zone = created ? time_shape(created) : NULL;
    if (zone != NULL) {
        md_str(m, any ? "  " : "");
        md_time(m, created, zone);
        any = true;
    }
    if (any)
        md_str(m, "\n");
}

/* One quoted link line: lead ("> ![" or "> 🔗 ["), the text (NULL: none),
 * "](", the URL, ")". */
static void md_quoted_link(md_t *m, const char *lead, const char *text, const char *url)
{
    md_str(m, lead);
    md_link_text(m, text != NULL ? text : "");
    md_str(m, "](");
    md_url(m, url);
    md_str(m, ")\n");
}
static void md_post(md_t *m, const json_t *slim, const json_t *thread)
{
    const char *handle = get_str(slim, "handle");
    const char *rkey = get_str(slim, "rkey");
    const json_t *to = json_object_get(slim, "replyTo");
    if (json_is_object(to)) {
        json_int_t depth = json_integer_value(json_object_get(slim, "depth"));
        if (depth > BSKY_RENDER_MAX_INDENT)
            depth = BSKY_RENDER_MAX_INDENT;
        for (json_int_t d = 1; d < depth; d++)
            md_str(m, "  ");
        md_str(m, "└─");
        md_parent_ref(m, to, thread);
        md_str(m, " → ");
    }
    md_handle_rkey(m, handle != NULL ? handle : "", rkey != NULL ? rkey : "");
    md_str(m, "\n");

    const char *text = get_str(slim, "text");
    md_quote(m, text != NULL ? text : "");
    size_t i;
    const json_t *img;
    json_array_foreach(json_object_get(slim, "images"), i, img)
    {
        const char *url = get_str(img, "url");
        const char *alt = get_str(img, "alt");
        if (url != NULL)
            md_quoted_link(m, "> ![", alt, url);
    }
    const json_t *link = json_object_get(slim, "link");
    const char *link_uri = get_str(link, "uri");
    if (link_uri != NULL)
        md_quoted_link(m, "> 🔗 [", get_str(link, "title"), link_uri);
    const json_t *quote = json_object_get(slim, "quote");
    const char *quote_uri = get_str(quote, "uri");
    if (quote_uri != NULL) {
        const char *qh = get_nonempty(quote, "handle");
        const char *qr = get_str(quote, "rkey");
        md_str(m, "> ↪ ");
        if (qh != NULL && qr != NULL)
            md_handle_rkey(m, qh, qr);
        else
            md_field(m, quote_uri);
        md_str(m, "\n");
    }
    md_stats(m, slim);
}

static void md_posts(md_t *m, const json_t *posts, const json_t *thread)
{
    bool first = true;
    size_t i;
    const json_t *p;
    json_array_foreach(posts, i, p)
    {
        if (!json_is_object(p))
            continue;
        if (!first)
            md_str(m, "\n");
        md_post(m, p, thread);
        first = false;
    }
}

/* Ends a write into a caller's buffer: on error, out loses what was added. */
static int md_end(md_t *m, size_t start)
{
    if (m->rc != 0) {
        m->b->len = start;
        if (m->b->data != NULL)
            m->b->data[start] = '\0';
    }
    return m->rc;
}

int bsky_render_post(buf_t *out, const json_t *slim, const json_t *thread)
{
    md_t m = {out, 0};
    size_t start = out->len;
    if (json_is_object(slim))
        md_post(&m, slim, thread);
    return md_end(&m, start);
}

int bsky_render_posts(buf_t *out, const json_t *slim_posts, const json_t *thread)
{
    md_t m = {out, 0};
    size_t start = out->len;
    md_posts(&m, slim_posts, thread);
    return md_end(&m, start);
}

/* ---- whole answers ------------------------------------------------------- */

static size_t count_posts(const json_t *posts)
{
    size_t n = 0, i;
    const json_t *p;
    json_array_foreach(posts, i, p)
    {
        if (json_is_object(p))
            n++;
    }
    return n;
}

static void md_count(md_t *m, json_int_t n, const char *what)
{
    md_int(m, n);
    md_str(m, " ");
    md_str(m, what);
}

/* Hands the answer over, or frees it on error. */
static char *md_steal(md_t *m)
{
    char *s = m->rc == 0 ? buf_steal(m->b, NULL) : NULL;
    buf_free(m->b);
    return s;
}

char *bsky_render_thread(const json_t *slim_posts)
{
    buf_t b;
    buf_init(&b, BSKY_RENDER_LIMIT);
    md_t m = {&b, 0};
    size_t n = count_posts(slim_posts);
    md_str(&m, "# Thread · ");
    md_count(&m, (json_int_t)n, "posts\n");
    if (n > 0) {
        md_str(&m, "\n");
        md_posts(&m, slim_posts, slim_posts);
    }
    return md_steal(&m);
}

static void md_json_string(md_t *m, const char *s)
{
    md_str(m, "\"");
    if (m->rc == 0)
        m->rc = buf_append_json_escaped(m->b, s, strlen(s));
    md_str(m, "\"");
}

char *bsky_render_search(const char *query, const json_t *slim_posts, const char *cursor)
{
    buf_t b;
    buf_init(&b, BSKY_RENDER_LIMIT);
    md_t m = {&b, 0};
    size_t n = count_posts(slim_posts);
    md_str(&m, "# Search · ");
    md_json_string(&m, query != NULL ? query : "");
    md_str(&m, " · ");
    md_count(&m, (json_int_t)n, "posts\n\n");
    if (n > 0) {
        md_posts(&m, slim_posts, NULL);
        md_str(&m, "\n");
    }
    md_str(&m, "Results: ");
    md_count(&m, (json_int_t)n, "posts\n");
    if (cursor != NULL) {
        md_str(&m, "More: pass cursor ");
        md_json_string(&m, cursor);
        md_str(&m, "\n");
    }
    return md_steal(&m);
}

json_t *bsky_profile_slim(const json_t *profile)
{
    const char *handle = actor_name(profile);
    if (handle == NULL)
        return NULL;
    json_t *slim = json_object();
    if (slim == NULL)
        return NULL;
    bool ok = true;
    set_str(slim, "handle", handle, &ok);
    set_str(slim, "did", get_nonempty(profile, "did"), &ok);
    set_str(slim, "displayName", get_nonempty(profile, "displayName"), &ok);
    set_str(slim, "description", get_nonempty(profile, "description"), &ok);
    set_str(slim, "avatar", get_nonempty(profile, "avatar"), &ok);
    set_int(slim, "followers", get_count(profile, "followersCount"), &ok);
    set_int(slim, "follows", get_count(profile, "followsCount"), &ok);
    set_int(slim, "posts", get_count(profile, "postsCount"), &ok);
    set_str(slim, "createdAt", get_nonempty(profile, "createdAt"), &ok);
    set_new(slim, "url", json_sprintf("https://bsky.app/profile/%s", handle), &ok);
    if (!ok) {
        json_decref(slim);
        return NULL;
    }
    return slim;
}

char *bsky_render_profile(const json_t *profile, const json_t *slim_posts)
{
    json_t *p = bsky_profile_slim(profile);
    if (p == NULL)
        return NULL;
    buf_t b;
    buf_init(&b, BSKY_RENDER_LIMIT);
    md_t m = {&b, 0};
    const char *name = get_str(p, "displayName");
    const char *did = get_str(p, "did");
    const char *description = get_str(p, "description");
    const char *avatar = get_str(p, "avatar");
    md_str(&m, "# @");
    md_field(&m, get_str(p, "handle"));
    if (name != NULL) {
        md_str(&m, " · ");
        md_field(&m, name);
    }
    md_str(&m, "\n");
    md_url(&m, get_str(p, "url"));
    md_str(&m, "\n");
    if (did != NULL) {
        md_str(&m, "DID: ");
        md_field(&m, did);
        md_str(&m, "\n");
    }
    if (description != NULL)
        md_quote(&m, description);
    if (avatar != NULL) {
        md_str(&m, "![avatar](");
        md_url(&m, avatar);
        md_str(&m, ")\n");
    }
    md_str(&m, "👥 ");
    md_count(&m, get_count(p, "followers"), "followers · ");
    md_count(&m, get_count(p, "follows"), "following · ");
    md_count(&m, get_count(p, "posts"), "posts\n");
    if (count_posts(slim_posts) > 0) {
        md_str(&m, "\n## Recent posts\n\n");
        md_posts(&m, slim_posts, NULL);
    }
    json_decref(p);
    return md_steal(&m);
}
