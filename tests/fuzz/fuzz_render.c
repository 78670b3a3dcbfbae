/* Fuzz target: the bluesky toolset's renderer over whatever JSON an
 * upstream could send: a postView, a threadViewPost, a profile, or an
 * array of them. Every line of user content must stay inside the quote:
 * no rendered line may start with "#" (a post's own heading). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "toolsets/bluesky/render.h"

static void no_heading_from_content(const char *md, bool thread)
{
    /* The answer's own header is the first line; after it, no line starts
     * with "#" (content lines start with ">"). */
    const char *p = strchr(md, '\n');
    while (p) {
        p++;
        if (*p == '#' && !(thread && strncmp(p, "## Recent posts", 15) == 0))
            abort();
        p = strchr(p, '\n');
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (v == NULL)
        return 0;
    json_t *slim = json_array();
    size_t i;
    json_t *x;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x) json_array_append_new(slim, bsky_post_slim(x));
    } else {
        json_t *one = bsky_post_slim(v);
        if (one)
            json_array_append_new(slim, one);
    }
    char *a = bsky_render_search("q", slim, "c");
    if (a)
        no_heading_from_content(a, false);
    free(a);
    json_t *t = bsky_thread_slim(v);
    char *b = bsky_render_thread(t);
    if (b)
        no_heading_from_content(b, false);
    free(b);
    char *c = bsky_render_profile(v, slim);
    if (c)
        no_heading_from_content(c, true);
    free(c);
    json_decref(bsky_profile_slim(v));
    json_decref(t);
    json_decref(slim);
    json_decref(v);
    return 0;
}
