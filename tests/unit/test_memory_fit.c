/* Tests for archive/memory_fit: bootstrap_memory's answer within a token
 * budget (the continuation first and whole when it fits, cut at a
 * character boundary when it alone is over; the newest work, then the
 * era, while they fit; left_out only for what was left out), and its
 * plain text within a number of characters, the continuation first. */
#include <stdlib.h>
#include <string.h>

#include "archive/memory_fit.h"
#include "testutil.h"

/* n messages of about len characters, newest first, ids m<n-1>..m0. */
static json_t *page(int n, size_t len, bool more)
{
    json_t *msgs = json_array();
    char *text = malloc(len + 1);
    memset(text, 'w', len);
    text[len] = '\0';
    for (int i = n - 1; i >= 0; i--) {
        char id[16];
        snprintf(id, sizeof id, "m%d", i);
        json_array_append_new(msgs, json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "sender_id",
                                              "user", "content", text, "created_at",
                                              "2026-01-10T09:00:00.000Z", "message_type", "text"));
    }
    free(text);
    return json_pack("{s:o, s:o}", "messages", msgs, "next_reference_id",
                     more ? json_string("m0") : json_null());
}

static json_t *era_page(int n, size_t len)
{
    json_t *p = page(n, len, false);
    json_object_set_new(p, "era", json_pack("{s:s, s:s}", "id", "1", "name", "parley"));
    json_object_set_new(p, "total", json_integer(n));
    return p;
}

static json_t *continuation(const char *content)
{
    return json_pack("{s:s, s:s, s:s}", "message_id", "c1", "content", content, "timestamp",
                     "2026-01-10T10:00:00.000Z");
}

/* The steps of bootstrap_memory, then the answer as JSON. */
static json_t *fit(long tokens, json_t *cont, json_t *before, json_t *era, size_t *len)
{
    memory_fit_t f;
    assert_int_equal(memory_fit_init(&f, tokens, "/home/dev/p"), 0);
    memory_fit_continuation(&f, cont);
    memory_fit_before(&f, before);
    memory_fit_era(&f, era);
    char *text = memory_fit_json(&f);
    assert_non_null(text);
    *len = strlen(text);
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    free(text);
    memory_fit_free(&f);
    json_decref(cont);
    json_decref(before);
    json_decref(era);
    return v;
}

static void test_everything_fits(void **state)
{
    (void)state;
    size_t len;
    json_t *v =
        fit(1000, continuation("where we left off"), page(3, 50, false), era_page(2, 50), &len);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(v, "continuation"), "content")),
        "where we left off");
    assert_int_equal(json_array_size(json_object_get(v, "messages_before")), 3);
    assert_int_equal(json_array_size(json_object_get(v, "era_messages")), 2);
    /* A last page (next_reference_id null) leaves nothing out. */
    assert_int_equal(json_object_size(json_object_get(v, "left_out")), 0);
    assert_string_equal(json_string_value(json_object_get(v, "note")),
                        "Everything fit within the token budget.");
    assert_string_equal(json_string_value(json_object_get(v, "project")), "/home/dev/p");
    assert_int_equal(json_integer_value(json_object_get(v, "approx_tokens")), (len + 3) / 4);
    assert_false(memory_fit_empty(v));
    json_decref(v);
}

static void test_newest_work_first_within_budget(void **state)
{
    (void)state;
    for (long tokens = 1000; tokens <= 4000; tokens += 500) {
        size_t len;
        json_t *v = fit(tokens, continuation("where we left off"), page(100, 300, true),
                        era_page(50, 300), &len);
        assert_true((long)len <= tokens * MEMORY_CHARS_PER_TOKEN);
        json_t *before = json_object_get(v, "messages_before");
        assert_true(json_array_size(before) > 0 && json_array_size(before) < 100);
        /* The newest (the first of the page) kept, in order. */
        assert_string_equal(json_string_value(json_object_get(json_array_get(before, 0), "id")),
                            "m99");
        json_t *left = json_object_get(v, "left_out");
        const char *next = json_string_value(
            json_object_get(json_object_get(left, "messages_before"), "next_reference_id"));
        const char *last = json_string_value(
            json_object_get(json_array_get(before, json_array_size(before) - 1), "id"));
        assert_non_null(next);
        assert_string_equal(next, last);
        assert_non_null(json_object_get(left, "era_messages"));
        json_decref(v);
    }
}

static void test_continuation_cut(void **state)
{
    (void)state;
    /* 3,000 two-byte characters: more than a 1,000-token budget holds. */
    char *big = malloc(6001);
    for (int i = 0; i < 3000; i++)
        memcpy(big + 2 * i, "\xc3\xa9", 2);
    big[6000] = '\0';
    size_t len;
    json_t *v = fit(1000, continuation(big), page(5, 100, false), era_page(5, 100), &len);
    assert_true(len <= 4000);
    json_t *c = json_object_get(v, "continuation");
    assert_true(json_is_true(json_object_get(c, "content_cut")));
    const char *content = json_string_value(json_object_get(c, "content"));
    assert_non_null(content); /* jansson refuses invalid UTF-8: the cut is at a boundary */
    assert_true(strlen(content) > 0 && strlen(content) < 6000);
    assert_memory_equal(content, big, strlen(content));
    assert_non_null(json_object_get(json_object_get(v, "left_out"), "continuation"));

    /* As text within 500 characters: the continuation first, cut at a
     * character boundary. */
    for (long limit = 300; limit <= 4000; limit += 700) {
        char *text = memory_fit_text(v, limit);
        assert_non_null(text);
        assert_true((long)strlen(text) <= limit);
        json_t *s = json_string(text); /* valid UTF-8 */
        assert_non_null(s);
        json_decref(s);
        assert_non_null(strstr(text, "## Continuation"));
        free(text);
    }
    json_decref(v);
    free(big);
}

static void test_text(void **state)
{
    (void)state;
    size_t len;
    json_t *v =
        fit(2000, continuation("CONTINUATION-TEXT"), page(40, 200, true), era_page(40, 200), &len);
    char *text = memory_fit_text(v, 2000 * MEMORY_CHARS_PER_TOKEN);
    assert_non_null(text);
    assert_true(strlen(text) <= 8000);
    /* A heading naming the project, then the continuation, before any
     * message. */
    assert_true(strncmp(text, "Memory of earlier sessions in /home/dev/p ", 42) == 0);
    char *cont = strstr(text, "CONTINUATION-TEXT");
    char *work = strstr(text, "## The work before it");
    assert_non_null(cont);
    assert_non_null(work);
    assert_true(cont < work);
    assert_non_null(strstr(text, "- [2026-01-10T09:00:00.000Z] user: www"));
    assert_non_null(strstr(text, "## Left out"));
    free(text);
    /* A smaller limit: whole lines left out from the end, never over. */
    for (long limit = 100; limit < 3000; limit += 97) {
        text = memory_fit_text(v, limit);
        assert_true((long)strlen(text) <= limit);
        free(text);
    }
    json_decref(v);
}

static void test_empty(void **state)
{
    (void)state;
    size_t len;
    json_t *v =
        fit(1000, json_null(), page(0, 0, false),
            json_pack("{s:s}", "error", "no era (give era_id or era_name); eras: none"), &len);
    assert_true(memory_fit_empty(v));
    assert_true(json_is_null(json_object_get(v, "continuation")));
    json_decref(v);
    /* Work but no compaction: not empty. */
    v = fit(1000, json_null(), page(2, 10, false), era_page(0, 0), &len);
    assert_false(memory_fit_empty(v));
    char *text = memory_fit_text(v, 4000);
    assert_non_null(strstr(text, "No continuation yet"));
    free(text);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_everything_fits),
        cmocka_unit_test(test_newest_work_first_within_budget),
        cmocka_unit_test(test_continuation_cut),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
