/* Fuzz target: the Bluesky connector's reading of XRPC answers
 * (upstream/bluesky/bsky_xrpc.h) over arbitrary bytes. The input is a status
 * selector byte, then the ratelimit-reset header up to the first newline,
 * then the body, read as an error (any status), as a createSession /
 * refreshSession answer (with its tokens' expiry and its PDS's trust) and
 * as a feed. The messages made from it always are valid UTF-8, since they
 * end up in a tool's JSON result; a PDS outside the operator's origin is
 * trusted only as an https host under the suffix. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "fuzz_util.h"
#include "upstream/bluesky/bsky_xrpc.h"

static void check_text(const char *s)
{
    if (s[0] == '\0' || !fuzz_utf8_valid(s, strlen(s)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const long statuses[] = {400, 401, 429, 500, 502, 200, 404, 503};
    if (size == 0)
        return 0;
    long http = statuses[data[0] % 8];
    const char *in = (const char *)data + 1;
    size_t n = size - 1;
    const char *nl = memchr(in, '\n', n);
    size_t hlen = nl ? (size_t)(nl - in) : 0;
    char reset[64]; /* as the HTTP client captures a header */
    snprintf(reset, sizeof reset, "%.*s", (int)(hlen < 63 ? hlen : 63), in);
    const char *body = nl ? nl + 1 : in;
    size_t blen = n - (size_t)(body - in);

    char why[300];
    bsky_xrpc_error_t kind = bsky_xrpc_error(body, blen, http, why, sizeof why);
    if (kind != BSKY_XRPC_OTHER && kind != BSKY_XRPC_TOKEN && kind != BSKY_XRPC_RATE)
        abort();
    check_text(why);
    if (memchr(reset, '\0', sizeof reset) != NULL && fuzz_utf8_valid(reset, strlen(reset))) {
        char msg[300];
        bsky_rate_limit_message(msg, sizeof msg, "these calls", reset, 1700000000);
        check_text(msg);
    }

    bsky_session_answer_t ans;
    if (bsky_session_answer(body, blen, &ans) == 0) {
        if (ans.access == NULL || ans.refresh == NULL)
            abort();
        (void)bsky_jwt_exp(ans.access);
        (void)bsky_jwt_exp(ans.refresh);
        if (ans.pds != NULL) {
            static const char service[] = "https://bsky.social";
            bool same = strncmp(ans.pds, service, sizeof service - 1) == 0 &&
                        strchr("/?#", ans.pds[sizeof service - 1]) != NULL;
            /* A host trusted by the suffix: https, and no user or port in
             * its authority (the path may hold anything: "//x$t://y"). */
            bool https = strncmp(ans.pds, "https://", 8) == 0;
            size_t alen = https ? strcspn(ans.pds + 8, "/?#") : 0;
            bool user_or_port =
                https && (memchr(ans.pds + 8, '@', alen) || memchr(ans.pds + 8, ':', alen));
            if (bsky_pds_trusted(service, ans.pds, ".bsky.network") && !same &&
                (!https || user_or_port))
                abort();
        }
    }
    bsky_session_answer_free(&ans);

    char *copy = malloc(blen + 1);
    if (copy != NULL) {
        memcpy(copy, body, blen);
        copy[blen] = '\0';
        (void)bsky_jwt_exp(copy);
        free(copy);
    }

    json_t *doc = json_loadb(body, blen, 0, NULL);
    json_t *posts = bsky_feed_posts(doc);
    size_t i;
    json_t *p;
    if (json_array_size(posts) > json_array_size(json_object_get(doc, "feed")))
        abort();
    json_array_foreach(posts, i, p)
    {
        if (!json_is_object(p))
            abort();
    }
    json_decref(posts);
    json_decref(doc);
    return 0;
}
