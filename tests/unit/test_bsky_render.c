/* Tests for toolsets/bluesky/render: slim JSON out of Bluesky API views and
 * the Markdown rendered from it, compared as snapshots (exact strings);
 * hostile and malformed inputs. Fixtures are written with single quotes
 * (load() turns them into double quotes; an apostrophe is \u0027). */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "toolsets/bluesky/render.h"

static json_t *load(const char *fixture)
{
    char *s = strdup(fixture);
    assert_non_null(s);
    for (char *p = s; *p != '\0'; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t err;
    json_t *v = json_loads(s, JSON_DECODE_ANY, &err);
    if (v == NULL)
        fail_msg("fixture: %s (line %d col %d)", err.text, err.line, err.column);
    free(s);
    return v;
}

/* One postView as bsky_render_post renders it (no thread). */
static char *render_view(const char *fixture)
{
    json_t *pv = load(fixture);
    json_t *slim = bsky_post_slim(pv);
    assert_non_null(slim);
    buf_t b;
    buf_init(&b, 1 << 20);
    assert_int_equal(bsky_render_post(&b, slim, NULL), 0);
    json_decref(slim);
    json_decref(pv);
    char *s = buf_steal(&b, NULL);
    assert_non_null(s);
    return s;
}

static void assert_view(const char *fixture, const char *expected)
{
    char *s = render_view(fixture);
    assert_string_equal(s, expected);
    free(s);
}

/* A slim post (given directly) rendered alone. */
static void assert_slim(const char *fixture, const char *expected)
{
    json_t *slim = load(fixture);
    buf_t b;
    buf_init(&b, 1 << 20);
    assert_int_equal(bsky_render_post(&b, slim, NULL), 0);
    assert_string_equal(b.data != NULL ? b.data : "", expected);
    buf_free(&b);
    json_decref(slim);
}

/* The spec's example thread: root, two replies, nested replies three levels
 * down, and entries that are not posts. */
static const char thread_fixture[] =
    "{'$type': 'app.bsky.feed.defs#threadViewPost',"
    " 'post': {'uri': 'at://did:plc:alice/app.bsky.feed.post/3kq8a3f1xyz22', 'cid': 'c1',"
    "  'author': {'did': 'did:plc:alice', 'handle': 'alice.test', 'displayName': 'Alice'},"
    "  'record': {'text': 'Hot take: Markdown > JSON for LLM tools',"
    "             'createdAt': '2024-10-06T10:15:33.120Z'},"
    "  'likeCount': 234, 'repostCount': 89, 'replyCount': 45, 'quoteCount': 3},"
    " 'replies': ["
    "  {'post': {'uri': 'at://did:plc:bob/app.bsky.feed.post/3kq8b2e4aaa11',"
    "   'author': {'did': 'did:plc:bob', 'handle': 'bob.test'},"
    "   'record': {'text': 'Agree! But what about content escaping?',"
    "              'createdAt': '2024-10-06T10:18:56Z',"
    "              'reply': {'parent': {'uri': "
    "'at://did:plc:alice/app.bsky.feed.post/3kq8a3f1xyz22'}}},"
    "   'likeCount': 12},"
    "   'replies': ["
    "    {'post': {'uri': 'at://did:plc:bob/app.bsky.feed.post/3kq8b10fbbb33',"
    "     'author': {'did': 'did:plc:bob', 'handle': 'bob.test'},"
    "     'record': {'text': 'Indent user content. Simple.',"
    "                'createdAt': '2024-10-06T10:25:33Z',"
    "                'reply': {'parent': {'uri': "
    "'at://did:plc:bob/app.bsky.feed.post/3kq8b2e4aaa11'}}},"
    "     'likeCount': 8}}]},"
    "  {'$type': 'app.bsky.feed.defs#notFoundPost',"
    "   'uri': 'at://did:plc:gone/app.bsky.feed.post/3kq8zzzzzzz99', 'notFound': true},"
    "  {'$type': 'app.bsky.feed.defs#blockedPost',"
    "   'uri': 'at://did:plc:mean/app.bsky.feed.post/3kq8yyyyyyy88', 'blocked': true,"
    "   'author': {'did': 'did:plc:mean'}},"
    "  {'post': {'uri': 'at://did:plc:carol/app.bsky.feed.post/3kq8d9f3ccc44',"
    "   'author': {'did': 'did:plc:carol', 'handle': 'carol.test'},"
    "   'record': {'text': 'Disagree. JSON has structure...',"
    "              'createdAt': '2024-10-06T12:03:41.999Z',"
    "              'reply': {'parent': {'uri': "
    "'at://did:plc:alice/app.bsky.feed.post/3kq8a3f1xyz22'}}},"
    "   'likeCount': 45, 'replyCount': 7},"
    "   'replies': ["
    "    {'post': {'uri': 'at://did:plc:alice/app.bsky.feed.post/3kq8e5a2ddd55',"
    "     'author': {'did': 'did:plc:alice', 'handle': 'alice.test'},"
    "     'record': {'text': 'Because LLMs parse language, not schemas',"
    "                'createdAt': '2024-10-06T12:30:15Z',"
    "                'reply': {'parent': {'uri': "
    "'at://did:plc:carol/app.bsky.feed.post/3kq8d9f3ccc44'}}},"
    "     'likeCount': 23},"
    "     'replies': ["
    "      {'post': {'uri': 'at://did:plc:dave/app.bsky.feed.post/3kq8f7b1eee66',"
    "       'author': {'did': 'did:plc:dave', 'handle': 'dave.test'},"
    "       'record': {'text': 'What about nested threads?',"
    "                  'createdAt': '2024-10-06T13:10:52Z',"
    "                  'reply': {'parent': {'uri': "
    "'at://did:plc:alice/app.bsky.feed.post/3kq8e5a2ddd55'}}},"
    "       'likeCount': 5}}]}]}]}";

static const char thread_expected[] = "# Thread · 6 posts\n"
                                      "\n"
                                      "@alice.test/3kq8a3f1xyz22\n"
                                      "> Hot take: Markdown > JSON for LLM tools\n"
                                      "👍 234  ♻️ 89  💬 45  2024-10-06T10:15:33Z\n"
                                      "\n"
                                      "└─@a/…yz22 → @bob.test/3kq8b2e4aaa11\n"
                                      "> Agree! But what about content escaping?\n"
                                      "👍 12  2024-10-06T10:18:56Z\n"
                                      "\n"
                                      "  └─@b/…aa11 → @bob.test/3kq8b10fbbb33\n"
                                      "> Indent user content. Simple.\n"
                                      "👍 8  2024-10-06T10:25:33Z\n"
                                      "\n"
                                      "└─@a/…yz22 → @carol.test/3kq8d9f3ccc44\n"
                                      "> Disagree. JSON has structure...\n"
                                      "👍 45  💬 7  2024-10-06T12:03:41Z\n"
                                      "\n"
                                      "  └─@c/…cc44 → @alice.test/3kq8e5a2ddd55\n"
                                      "> Because LLMs parse language, not schemas\n"
                                      "👍 23  2024-10-06T12:30:15Z\n"
                                      "\n"
                                      "    └─@a/…dd55 → @dave.test/3kq8f7b1eee66\n"
                                      "> What about nested threads?\n"
                                      "👍 5  2024-10-06T13:10:52Z\n";

static void test_thread(void **state)
{
    (void)state;
    json_t *thread = load(thread_fixture);
    json_t *posts = bsky_thread_slim(thread);
    assert_non_null(posts);
    assert_int_equal(json_array_size(posts), 6);

    json_t *root = json_array_get(posts, 0);
    assert_string_equal(json_string_value(json_object_get(root, "rkey")), "3kq8a3f1xyz22");
    assert_string_equal(json_string_value(json_object_get(root, "displayName")), "Alice");
    assert_int_equal(json_integer_value(json_object_get(root, "quotes")), 3);
    assert_int_equal(json_integer_value(json_object_get(root, "depth")), 0);
    assert_null(json_object_get(root, "replyTo"));
    assert_int_equal(json_array_size(json_object_get(root, "images")), 0);
    json_t *last = json_array_get(posts, 5);
    assert_int_equal(json_integer_value(json_object_get(last, "depth")), 3);
    json_t *to = json_object_get(last, "replyTo");
    assert_string_equal(json_string_value(json_object_get(to, "handle")), "alice.test");
    assert_string_equal(json_string_value(json_object_get(to, "rkey")), "3kq8e5a2ddd55");

    char *md = bsky_render_thread(posts);
    assert_non_null(md);
    assert_string_equal(md, thread_expected);
    free(md);
    json_decref(posts);
    json_decref(thread);
}

/* A focus post with its ancestors (the top one missing) and a reply; a reply
 * whose record names no parent takes the thread's. */
static void test_thread_ancestors(void **state)
{
    (void)state;
    json_t *thread = load(
        "{'post': {'uri': 'at://did:plc:carol/app.bsky.feed.post/3kq8d9f3ccc44',"
        "  'author': {'did': 'did:plc:carol', 'handle': 'carol.test'},"
        "  'record': {'text': 'Focus', 'createdAt': '2024-10-06T12:03:41Z',"
        "   'reply': {'parent': {'uri': 'at://did:plc:alice/app.bsky.feed.post/3kq8a3f1xyz22'}}}},"
        " 'parent': {'post': {'uri': 'at://did:plc:alice/app.bsky.feed.post/3kq8a3f1xyz22',"
        "   'author': {'did': 'did:plc:alice', 'handle': 'alice.test'},"
        "   'record': {'text': 'Middle', 'createdAt': '2024-10-06T10:15:33Z',"
        "    'reply': {'parent': {'uri': 'at://did:plc:gone/app.bsky.feed.post/3kq8zzzzzzz99'}}}},"
        "  'parent': {'$type': 'app.bsky.feed.defs#notFoundPost',"
        "   'uri': 'at://did:plc:gone/app.bsky.feed.post/3kq8zzzzzzz99', 'notFound': true}},"
        " 'replies': [{'post': {'uri': 'at://did:plc:dave/app.bsky.feed.post/3kq8f7b1eee66',"
        "   'author': {'did': 'did:plc:dave', 'handle': 'dave.test'},"
        "   'record': {'text': 'Below', 'createdAt': '2024-10-06T13:10:52Z'}}}]}");
    json_t *posts = bsky_thread_slim(thread);
    assert_non_null(posts);
    assert_int_equal(json_array_size(posts), 3);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(json_integer_value(json_object_get(json_array_get(posts, i), "depth")), i);
    char *md = bsky_render_thread(posts);
    assert_non_null(md);
    assert_string_equal(md, "# Thread · 3 posts\n"
                            "\n"
                            "└─at://did:plc:gone/app.bsky.feed.post/3kq8zzzzzzz99"
                            " → @alice.test/3kq8a3f1xyz22\n"
                            "> Middle\n"
                            "2024-10-06T10:15:33Z\n"
                            "\n"
                            "└─@a/…yz22 → @carol.test/3kq8d9f3ccc44\n"
                            "> Focus\n"
                            "2024-10-06T12:03:41Z\n"
                            "\n"
                            "  └─@c/…cc44 → @dave.test/3kq8f7b1eee66\n"
                            "> Below\n"
                            "2024-10-06T13:10:52Z\n");
    free(md);
    json_decref(posts);
    json_decref(thread);
}

/* The post's own Markdown stays inside the quote. */
static void test_markdown_content(void **state)
{
    (void)state;
    assert_view("{'uri': 'at://did:plc:alice/app.bsky.feed.post/3kq6b3f1aaa11',"
                " 'author': {'did': 'did:plc:alice', 'handle': 'alice.test'},"
                " 'record': {'text': 'Check out my project!\\n## Features\\n- Fast\\n- Simple',"
                "            'createdAt': '2024-10-06T10:05:33Z'},"
                " 'likeCount': 12, 'replyCount': 4}",
                "@alice.test/3kq6b3f1aaa11\n"
                "> Check out my project!\n"
                "> ## Features\n"
                "> - Fast\n"
                "> - Simple\n"
                "👍 12  💬 4  2024-10-06T10:05:33Z\n");
    /* A quote of its own, CRLF and CR line breaks, an empty line, trailing
     * breaks dropped; other characters untouched. */
    assert_view(
        "{'uri': 'at://did:plc:bob/app.bsky.feed.post/3kq6c', 'author': {'handle': 'bob.test'},"
        " 'record': {'text': '> quoted\\r\\nline two\\r\\rlast\\tx ✓ 日本語 🦋\\n\\n'},"
        " 'repostCount': 2}",
        "@bob.test/3kq6c\n"
        "> > quoted\n"
        "> line two\n"
        ">\n"
        "> last\tx ✓ 日本語 🦋\n"
        "♻️ 2\n");
    /* Only line breaks: no content lines. */
    assert_view(
        "{'uri': 'at://did:plc:bob/app.bsky.feed.post/3kq6d', 'author': {'handle': 'bob.test'},"
        " 'record': {'text': '\\n\\n\\r\\n', 'createdAt': '2024-10-06T10:05:33Z'}}",
        "@bob.test/3kq6d\n"
        "2024-10-06T10:05:33Z\n");
    /* Blank lines inside are kept, one ">" each. */
    assert_view(
        "{'uri': 'at://did:plc:bob/app.bsky.feed.post/3kq6e', 'author': {'handle': 'bob.test'},"
        " 'record': {'text': '\\nA\\n\\n\\nB'}}",
        "@bob.test/3kq6e\n"
        ">\n"
        "> A\n"
        ">\n"
        ">\n"
        "> B\n");
}

/* Images below the text inside the quote, with alt and URL escaped; link
 * and quote embeds; recordWithMedia. */
static void test_embeds(void **state)
{
    (void)state;
    assert_view(
        "{'uri': 'at://did:plc:alice/app.bsky.feed.post/3kq7a', 'author': {'handle': 'alice.test'},"
        " 'record': {'text': 'Two pictures', 'createdAt': '2024-10-06T10:05:33Z'},"
        " 'embed': {'$type': 'app.bsky.embed.images#view', 'images': ["
        "  {'thumb': 'https://cdn.test/thumb/1', 'fullsize': 'https://cdn.test/full/1', 'alt': ''},"
        "  {'fullsize': 'https://cdn.test/full/(2) x>', 'alt': 'a [b] c\\\\ ](evil)\\nline'},"
        "  {'thumb': 'https://cdn.test/thumb/3'},"
        "  {'alt': 'no url'}, 7]},"
        " 'likeCount': 1}",
        "@alice.test/3kq7a\n"
        "> Two pictures\n"
        "> ![](https://cdn.test/full/1)\n"
        "> ![a \\[b\\] c\\\\ \\](evil) line](https://cdn.test/full/%282%29%20x%3E)\n"
        "> ![](https://cdn.test/thumb/3)\n"
        "👍 1  2024-10-06T10:05:33Z\n");
    assert_view(
        "{'uri': 'at://did:plc:alice/app.bsky.feed.post/3kq7b', 'author': {'handle': 'alice.test'},"
        " 'record': {'text': 'Read this'},"
        " 'embed': {'$type': 'app.bsky.embed.external#view', 'external': {"
        "  'uri': 'https://example.test/a_(b)', 'title': 'The [best] post', 'description': 'd'}}}",
        "@alice.test/3kq7b\n"
        "> Read this\n"
        "> 🔗 [The \\[best\\] post](https://example.test/a_%28b%29)\n");
    assert_view(
        "{'uri': 'at://did:plc:alice/app.bsky.feed.post/3kq7c', 'author': {'handle': 'alice.test'},"
        " 'record': {'text': 'This!'},"
        " 'embed': {'$type': 'app.bsky.embed.record#view', 'record': {"
        "  '$type': 'app.bsky.embed.record#viewRecord',"
        "  'uri': 'at://did:plc:carol/app.bsky.feed.post/3kq8d9f3ccc44',"
        "  'author': {'did': 'did:plc:carol', 'handle': 'carol.test'}, 'value': {'text': 'q'}}}}",
        "@alice.test/3kq7c\n"
        "> This!\n"
        "> ↪ @carol.test/3kq8d9f3ccc44\n");
    const char *with_media =
        "{'uri': 'at://did:plc:alice/app.bsky.feed.post/3kq7d', 'author': {'handle': 'alice.test'},"
        " 'record': {'text': 'Look'},"
        " 'embed': {'$type': 'app.bsky.embed.recordWithMedia#view',"
        "  'record': {'$type': 'app.bsky.embed.record#view', 'record': {"
        "   '$type': 'app.bsky.embed.record#viewNotFound',"
        "   'uri': 'at://did:plc:gone/app.bsky.feed.post/3kq8zzzzzzz99', 'notFound': true}},"
        "  'media': {'$type': 'app.bsky.embed.images#view', 'images': ["
        "   {'fullsize': 'https://cdn.test/full/9', 'alt': 'cat'}]}}}";
    assert_view(with_media, "@alice.test/3kq7d\n"
                            "> Look\n"
                            "> ![cat](https://cdn.test/full/9)\n"
                            "> ↪ at://did:plc:gone/app.bsky.feed.post/3kq8zzzzzzz99\n");
    json_t *pv = load(with_media);
    json_t *slim = bsky_post_slim(pv);
    assert_non_null(slim);
    json_t *quote = json_object_get(slim, "quote");
    assert_string_equal(json_string_value(json_object_get(quote, "rkey")), "3kq8zzzzzzz99");
    assert_null(json_object_get(quote, "handle"));
    json_t *img = json_array_get(json_object_get(slim, "images"), 0);
    assert_string_equal(json_string_value(json_object_get(img, "alt")), "cat");
    assert_string_equal(json_string_value(json_object_get(img, "url")), "https://cdn.test/full/9");
    json_decref(slim);
    json_decref(pv);
}

/* Zero counts left out; createdAt normalised; handles that are not usable. */
static void test_stats_and_time(void **state)
{
    (void)state;
    assert_slim("{'handle': 'a.test', 'rkey': 'r1', 'text': 'x', 'likes': 12, 'reposts': 0,"
                " 'replies': 0, 'createdAt': '2024-10-06T10:18:56.123Z'}",
                "@a.test/r1\n> x\n👍 12  2024-10-06T10:18:56Z\n");
    assert_slim("{'handle': 'a.test', 'rkey': 'r1', 'text': 'x', 'replies': 3,"
                " 'createdAt': '2024-10-06T12:18:56.5+02:00'}",
                "@a.test/r1\n> x\n💬 3  2024-10-06T12:18:56+02:00\n");
    assert_slim("{'handle': 'a.test', 'rkey': 'r1', 'text': 'x',"
                " 'createdAt': '2024-10-06t10:18:56,000001z'}",
                "@a.test/r1\n> x\n2024-10-06T10:18:56Z\n");
    assert_slim(
        "{'handle': 'a.test', 'rkey': 'r1', 'text': 'x', 'createdAt': '2024-10-06T10:18:56'}",
        "@a.test/r1\n> x\n2024-10-06T10:18:56\n");
    assert_slim("{'handle': 'a.test', 'rkey': 'r1', 'text': 'x', 'likes': -4,"
                " 'createdAt': 'yesterday\\nnoon'}",
                "@a.test/r1\n> x\n");
    assert_slim("{'handle': 'a.test', 'rkey': 'r1', 'text': 'x',"
                " 'createdAt': '2024-10-06T10:18:56.Z'}",
                "@a.test/r1\n> x\n");
    assert_slim(
        "{'handle': 'a.test', 'rkey': 'r1', 'text': 'x', 'createdAt': '2024-10-06T10:18:5'}",
        "@a.test/r1\n> x\n");
    assert_slim(
        "{'handle': 'a.test', 'rkey': 'r1', 'text': 'x', 'createdAt': '2024-10-06T10:18:56+1'}",
        "@a.test/r1\n> x\n");
    /* Upstream text in a time must not start a line (found by fuzz_render). */
    assert_slim("{'handle': 'a.test', 'rkey': 'r1', 'text': 'x', 'createdAt': '# Heading'}",
                "@a.test/r1\n> x\n");
    /* No counts, no time: no stats line. */
    assert_slim("{'handle': 'a.test', 'rkey': 'r1', 'text': 'x'}", "@a.test/r1\n> x\n");

    /* An invalid handle gives way to the DID; createdAt falls back to indexedAt. */
    assert_view("{'uri': 'at://did:plc:x/app.bsky.feed.post/3kq9', 'author': {'did': 'did:plc:x',"
                " 'handle': 'handle.invalid'}, 'record': {'text': 'hi'},"
                " 'indexedAt': '2024-10-06T10:18:56.001Z'}",
                "@did:plc:x/3kq9\n> hi\n2024-10-06T10:18:56Z\n");
    /* A compact reference takes whole characters; a short rkey has no "…". */
    json_t *thread = load("[{'uri': 'at://p/app.bsky.feed.post/ab', 'handle': 'émile.test', 'rkey':"
                          " 'ab'}, {'uri': 'at://q/app.bsky.feed.post/q1', 'handle': 'q.test',"
                          " 'rkey': 'q1', 'depth': 1, 'replyTo': {'uri': "
                          "'at://p/app.bsky.feed.post/ab'}}]");
    buf_t b;
    buf_init(&b, 1 << 20);
    assert_int_equal(bsky_render_post(&b, json_array_get(thread, 1), thread), 0);
    assert_string_equal(b.data, "└─@é/ab → @q.test/q1\n");
    buf_free(&b);
    json_decref(thread);
}

static const char search_posts[] =
    "[{'uri': 'at://did:plc:alice/app.bsky.feed.post/3kq8a3f1xyz22',"
    "  'author': {'did': 'did:plc:alice', 'handle': 'alice.test'},"
    "  'record': {'text': 'Markdown is fine', 'createdAt': '2024-10-06T10:15:33Z'},"
    "  'likeCount': 3},"
    " {'uri': 'at://did:plc:carol/app.bsky.feed.post/3kq8d9f3ccc44',"
    "  'author': {'did': 'did:plc:carol', 'handle': 'carol.test'},"
    "  'record': {'text': 'Markdown everywhere', 'createdAt': '2024-10-06T12:03:41Z',"
    "   'reply': {'root': {'uri': 'at://did:plc:alice/app.bsky.feed.post/3kq8a3f1xyz22'},"
    "             'parent': {'uri': 'at://did:plc:bob/app.bsky.feed.post/3kq8b2e4aaa11'}}}},"
    " {'uri': 'at://did:plc:dave/app.bsky.feed.post/3kq8f7b1eee66',"
    "  'author': {'did': 'did:plc:dave', 'handle': 'dave.test'},"
    "  'record': {'text': 'Markdown, replying to a hit', 'createdAt': '2024-10-06T13:10:52Z',"
    "   'reply': {'parent': {'uri': 'at://did:plc:alice/app.bsky.feed.post/3kq8a3f1xyz22'}}}}]";

static json_t *slim_all(const char *fixture)
{
    json_t *views = load(fixture);
    json_t *posts = json_array();
    size_t i;
    json_t *pv;
    json_array_foreach(views, i, pv)
    {
        json_t *slim = bsky_post_slim(pv);
        assert_non_null(slim);
        json_array_append_new(posts, slim);
    }
    json_decref(views);
    return posts;
}

/* Search: header and footer; replies name their parents in full. */
static void test_search(void **state)
{
    (void)state;
    json_t *posts = slim_all(search_posts);
    /* A parent whose handle is known is named by it. */
    json_t *to = json_object_get(json_array_get(posts, 2), "replyTo");
    json_object_set_new(to, "handle", json_string("alice.test"));

    char *md = bsky_render_search("markdown \"tools\"", posts, NULL);
    assert_non_null(md);
    assert_string_equal(md, "# Search · \"markdown \\\"tools\\\"\" · 3 posts\n"
                            "\n"
                            "@alice.test/3kq8a3f1xyz22\n"
                            "> Markdown is fine\n"
                            "👍 3  2024-10-06T10:15:33Z\n"
                            "\n"
                            "└─at://did:plc:bob/app.bsky.feed.post/3kq8b2e4aaa11"
                            " → @carol.test/3kq8d9f3ccc44\n"
                            "> Markdown everywhere\n"
                            "2024-10-06T12:03:41Z\n"
                            "\n"
                            "└─@alice.test/3kq8a3f1xyz22 → @dave.test/3kq8f7b1eee66\n"
                            "> Markdown, replying to a hit\n"
                            "2024-10-06T13:10:52Z\n"
                            "\n"
                            "Results: 3 posts\n");
    free(md);

    json_t *one = json_array();
    json_array_append(one, json_array_get(posts, 0));
    md = bsky_render_search("markdown", one, "1728209733::bafy\"x");
    assert_non_null(md);
    assert_string_equal(md, "# Search · \"markdown\" · 1 posts\n"
                            "\n"
                            "@alice.test/3kq8a3f1xyz22\n"
                            "> Markdown is fine\n"
                            "👍 3  2024-10-06T10:15:33Z\n"
                            "\n"
                            "Results: 1 posts\n"
                            "More: pass cursor \"1728209733::bafy\\\"x\"\n");
    free(md);
    json_decref(one);

    json_t *none = json_array();
    md = bsky_render_search("nothing\nhere", none, NULL);
    assert_non_null(md);
    assert_string_equal(md, "# Search · \"nothing\\nhere\" · 0 posts\n"
                            "\n"
                            "Results: 0 posts\n");
    free(md);
    json_decref(none);
    json_decref(posts);
}

static void test_profile(void **state)
{
    (void)state;
    json_t *profile =
        load("{'did': 'did:plc:alice', 'handle': 'alice.test', 'displayName': 'Alice Example',"
             " 'description': 'Builds MCP servers.\\n## Not a heading\\n\\nhttps://alice.test\\n',"
             " 'avatar': 'https://cdn.test/avatar/alice', 'followersCount': 1200,"
             " 'followsCount': 80, 'postsCount': 45, 'createdAt': '2023-04-01T00:00:00.000Z'}");
    json_t *posts = slim_all(search_posts);
    json_array_remove(posts, 2);
    json_array_remove(posts, 1);
    char *md = bsky_render_profile(profile, posts);
    assert_non_null(md);
    assert_string_equal(md, "# @alice.test · Alice Example\n"
                            "https://bsky.app/profile/alice.test\n"
                            "DID: did:plc:alice\n"
                            "> Builds MCP servers.\n"
                            "> ## Not a heading\n"
                            ">\n"
                            "> https://alice.test\n"
                            "![avatar](https://cdn.test/avatar/alice)\n"
                            "👥 1200 followers · 80 following · 45 posts\n"
                            "\n"
                            "## Recent posts\n"
                            "\n"
                            "@alice.test/3kq8a3f1xyz22\n"
                            "> Markdown is fine\n"
                            "👍 3  2024-10-06T10:15:33Z\n");
    free(md);

    json_t *slim = bsky_profile_slim(profile);
    assert_non_null(slim);
    json_t *want = load("{'handle': 'alice.test', 'did': 'did:plc:alice',"
                        " 'displayName': 'Alice Example',"
                        " 'description': 'Builds MCP servers.\\n## Not a heading\\n\\n"
                        "https://alice.test\\n',"
                        " 'avatar': 'https://cdn.test/avatar/alice', 'followers': 1200,"
                        " 'follows': 80, 'posts': 45, 'createdAt': '2023-04-01T00:00:00.000Z',"
                        " 'url': 'https://bsky.app/profile/alice.test'}");
    assert_true(json_equal(slim, want));
    json_decref(want);
    json_decref(slim);
    json_decref(posts);
    json_decref(profile);

    /* The bare minimum, no posts. */
    profile = load("{'did': 'did:plc:bare', 'handle': 'handle.invalid', 'displayName': '',"
                   " 'followersCount': 'many'}");
    md = bsky_render_profile(profile, NULL);
    assert_non_null(md);
    assert_string_equal(md, "# @did:plc:bare\n"
                            "https://bsky.app/profile/did:plc:bare\n"
                            "DID: did:plc:bare\n"
                            "👥 0 followers · 0 following · 0 posts\n");
    free(md);
    json_decref(profile);
}

/* Malformed input: NULL, wrong types, missing fields. Nothing crashes or
 * leaks, and what can be rendered is. */
static void test_malformed(void **state)
{
    (void)state;
    static const char *const not_posts[] = {
        "[]",
        "'post'",
        "{}",
        "{'uri': 'at://x/app.bsky.feed.post/1'}",
        "{'uri': 'at://x/app.bsky.feed.post/1', 'author': 'alice'}",
        "{'uri': 'at://x/app.bsky.feed.post/1', 'author': {'displayName': 'A'}}",
        "{'uri': 'at://x/app.bsky.feed.post/1', 'author': {'handle': ''}}",
        "{'uri': 7, 'author': {'handle': 'a.test'}}",
    };
    assert_null(bsky_post_slim(NULL));
    for (size_t i = 0; i < sizeof not_posts / sizeof not_posts[0]; i++) {
        json_t *v = load(not_posts[i]);
        assert_null(bsky_post_slim(v));
        assert_null(bsky_profile_slim(v));
        char *md = bsky_render_profile(v, NULL);
        assert_null(md);
        json_t *t = bsky_thread_slim(v);
        assert_non_null(t);
        assert_int_equal(json_array_size(t), 0);
        json_decref(t);
        json_decref(v);
    }
    json_t *t = bsky_thread_slim(NULL);
    assert_int_equal(json_array_size(t), 0);
    json_decref(t);

    /* Wrong types everywhere in a post view. */
    assert_view("{'uri': 'nouri', 'author': {'did': 'did:plc:x'}, 'record': {'text': 5,"
                " 'createdAt': 9, 'reply': 'x'}, 'likeCount': 'many', 'repostCount': 1.5,"
                " 'embed': {'images': {'a': 1}, 'external': 'x', 'record': [1],"
                " 'media': {'media': {'images': [{'fullsize': 'https://deep'}]}}}}",
                "@did:plc:x/nouri\n");
    /* And in a slim post. */
    assert_slim("{'handle': 5, 'text': ['x'], 'images': 'x', 'link': {'title': 't'},"
                " 'quote': {'handle': 'q'}, 'replyTo': 'y', 'depth': 'z'}",
                "@/\n");
    /* A deep reply is indented BSKY_RENDER_MAX_INDENT levels at most. */
    char deep[256] = "";
    for (int i = 1; i < BSKY_RENDER_MAX_INDENT; i++)
        strcat(deep, "  ");
    strcat(deep, "└─? → @a.test/r\n> x\n");
    assert_slim("{'handle': 'a.test', 'rkey': 'r', 'text': 'x', 'depth': 1000000,"
                " 'replyTo': {}}",
                deep);
    assert_slim("{'handle': 'a\\nb', 'rkey': 'r\\r', 'text': 'x',"
                " 'replyTo': {'uri': 'at://x\\n# y', 'handle': 'p.test'}}",
                "└─at://x # y → @a b/r \n> x\n");

    buf_t b;
    buf_init(&b, 1 << 20);
    assert_int_equal(bsky_render_post(&b, NULL, NULL), 0);
    assert_int_equal(bsky_render_posts(&b, NULL, NULL), 0);
    json_t *junk = load("[1, 'x', null, {'handle': 'a.test', 'rkey': 'r'}, []]");
    assert_int_equal(bsky_render_posts(&b, junk, junk), 0);
    assert_string_equal(b.data, "@a.test/r\n");
    buf_free(&b);

    char *md = bsky_render_thread(junk);
    assert_string_equal(md, "# Thread · 1 posts\n\n@a.test/r\n");
    free(md);
    json_decref(junk);
    md = bsky_render_thread(NULL);
    assert_string_equal(md, "# Thread · 0 posts\n");
    free(md);
    md = bsky_render_search(NULL, NULL, NULL);
    assert_string_equal(md, "# Search · \"\" · 0 posts\n\nResults: 0 posts\n");
    free(md);
}

/* Long text renders whole; past the buffer's bound the buffer is left as it
 * was. */
static void test_long_text(void **state)
{
    (void)state;
    size_t n = 1000000; /* 10000 lines of 99 bytes, each ended by a line break */
    char *text = malloc(n + 1);
    assert_non_null(text);
    for (size_t i = 0; i < n; i++)
        text[i] = (i % 100 == 99) ? '\n' : 'a' + (char)(i % 26);
    text[n] = '\0';
    json_t *slim = json_pack("{s:s, s:s, s:s}", "handle", "a.test", "rkey", "r", "text", text);
    assert_non_null(slim);
    json_t *posts = json_pack("[O]", slim);
    char *md = bsky_render_thread(posts);
    assert_non_null(md);
    /* Header, blank line, post header, then each 99-byte line as "> " + line. */
    assert_int_equal(strlen(md), strlen("# Thread · 1 posts\n\n@a.test/r\n") + (n / 100) * 102);
    free(md);

    buf_t b;
    buf_init(&b, 4096);
    assert_int_equal(buf_append_str(&b, "kept"), 0);
    assert_int_equal(bsky_render_post(&b, slim, NULL), UV_ENOBUFS);
    assert_int_equal(b.len, 4);
    assert_string_equal(b.data, "kept");
    assert_int_equal(bsky_render_posts(&b, posts, NULL), UV_ENOBUFS);
    assert_string_equal(b.data, "kept");
    buf_free(&b);
    json_decref(posts);
    json_decref(slim);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread),           cmocka_unit_test(test_thread_ancestors),
        cmocka_unit_test(test_markdown_content), cmocka_unit_test(test_embeds),
        cmocka_unit_test(test_stats_and_time),   cmocka_unit_test(test_search),
        cmocka_unit_test(test_profile),          cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_long_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
