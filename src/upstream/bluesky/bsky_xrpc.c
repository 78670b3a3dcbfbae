/* bsky_xrpc: the Bluesky connector's reading of XRPC answers (see
 * bsky_xrpc.h). */
#include "upstream/bluesky/bsky_xrpc.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "util/strutil.h"

static const char *jstr(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

bsky_xrpc_error_t bsky_xrpc_error(const char *body, size_t len, long http_status, char *why,
                                  size_t cap)
{
    json_t *doc = json_loadb(body ? body : "", body ? len : 0, 0, NULL);
    const char *name = jstr(doc, "error"), *msg = jstr(doc, "message");
    /* An empty name or message says nothing. */
    if (name && name[0] == '\0')
        name = NULL;
    if (msg && msg[0] == '\0')
        msg = NULL;
    if (name && msg)
        snprintf(why, cap, "%s: %.200s", name, msg);
    else if (name)
        snprintf(why, cap, "%s", name);
    else
        snprintf(why, cap, "HTTP %ld", http_status);
    str_utf8_trim_end(why); /* the cuts above count bytes */
    bsky_xrpc_error_t kind = BSKY_XRPC_OTHER;
    if (name && (strcmp(name, "ExpiredToken") == 0 || strcmp(name, "InvalidToken") == 0))
        kind = BSKY_XRPC_TOKEN;
    else if (name && strcmp(name, "RateLimitExceeded") == 0)
        kind = BSKY_XRPC_RATE;
    json_decref(doc);
    return kind;
}

void bsky_rate_limit_message(char *out, size_t cap, const char *what, const char *reset, time_t now)
{
    char *end;
    long long t = strtoll(reset, &end, 10);
    if (reset[0] == '\0' || *end != '\0' || t <= 0) {
        snprintf(out, cap, "Bluesky rate-limits %s; try again later.", what);
        return;
    }
    time_t tt = (time_t)t;
    struct tm tm;
    char iso[32];
    gmtime_r(&tt, &tm);
    strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
    long long in = t - (long long)now;
    snprintf(out, cap, "Bluesky rate-limits %s; it resets at %s (in %lld min).", what, iso,
             in > 0 ? (in + 59) / 60 : 0);
}

int64_t bsky_jwt_exp(const char *jwt)
{
    const char *a = jwt ? strchr(jwt, '.') : NULL;
    const char *z = a ? strchr(a + 1, '.') : NULL;
    if (a == NULL || z == NULL || z - a - 1 > 4096)
        return 0;
    size_t n = (size_t)(z - a - 1);
    char b64[4100 + 4];
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = a[1 + i];
        b64[m++] = ch == '-' ? '+' : ch == '_' ? '/' : ch;
    }
    while (m % 4)
        b64[m++] = '=';
    unsigned char out[3100];
    int len = EVP_DecodeBlock(out, (unsigned char *)b64, (int)m);
    if (len <= 0)
        return 0;
    while (len > 0 && out[len - 1] == '\0')
        len--; /* EVP_DecodeBlock counts the padding */
    json_t *p = json_loadb((const char *)out, (size_t)len, 0, NULL);
    int64_t exp = json_integer_value(json_object_get(p, "exp"));
    json_decref(p);
    return exp;
}

/* The PDS a session's DID document names, or NULL. */
static const char *pds_of(const json_t *doc)
{
    size_t i;
    json_t *s;
    json_array_foreach(json_object_get(json_object_get(doc, "didDoc"), "service"), i, s)
    {
        const char *id = jstr(s, "id"), *ep = jstr(s, "serviceEndpoint");
        size_t idn = id ? strlen(id) : 0;
        if (id && ep && idn >= 12 && strcmp(id + idn - 12, "#atproto_pds") == 0 &&
            (strncmp(ep, "https://", 8) == 0 || strncmp(ep, "http://", 7) == 0))
            return ep;
    }
    return NULL;
}

int bsky_session_answer(const char *body, size_t len, bsky_session_answer_t *out)
{
    memset(out, 0, sizeof *out);
    json_t *doc = json_loadb(body ? body : "", body ? len : 0, 0, NULL);
    const char *access = jstr(doc, "accessJwt"), *refresh = jstr(doc, "refreshJwt");
    if (access == NULL || refresh == NULL) {
        json_decref(doc);
        return UV_EPROTO;
    }
    out->doc = doc;
    out->access = access;
    out->refresh = refresh;
    out->handle = jstr(doc, "handle");
    out->did = jstr(doc, "did");
    out->pds = pds_of(doc);
    return 0;
}

void bsky_session_answer_free(bsky_session_answer_t *a)
{
    json_decref(a->doc);
    memset(a, 0, sizeof *a);
}

json_t *bsky_feed_posts(const json_t *doc)
{
    json_t *posts = json_array();
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(doc, "feed"), i, item)
    {
        json_t *p = json_object_get(item, "post");
        if (json_is_object(p))
            json_array_append(posts, p);
    }
    return posts;
}

void bsky_url_origin(char *out, size_t cap, const char *url)
{
    const char *p = strstr(url, "://");
    size_t n = p ? (size_t)(strcspn(p + 3, "/?#") + (size_t)(p + 3 - url)) : 0;
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), url);
}

bool bsky_pds_trusted(const char *service, const char *pds, const char *suffix)
{
    char a[600], c[600];
    bsky_url_origin(a, sizeof a, pds);
    bsky_url_origin(c, sizeof c, service);
    if (a[0] != '\0' && strcmp(a, c) == 0)
        return true;
    if (strncmp(a, "https://", 8) != 0 || strchr(a + 8, '@') || strchr(a + 8, ':'))
        return false;
    size_t n = strlen(a), k = strlen(suffix);
    return n > 8 + k && strcmp(a + n - k, suffix) == 0;
}
