/* Tests for archive/search against a fresh database with the real schema:
 * full text with web-search syntax (phrases, OR, -exclusion) in English and
 * Russian, substring matching for CJK, fuzzy matching, regex, every filter
 * (chats, topic, sender, dates, content kinds), ordering by time and rank,
 * paging, bad arguments, and cancellation. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "archive/search.h"
#include "testutil.h"

static uv_loop_t loop;
static pg_pool_t *pool;

typedef struct {
    bool done;
    int status;
    json_t *json;
    char error[512];
} answer_t;

static void on_answer(void *data, int status, const char *json, const char *error)
{
    answer_t *a = data;
    a->done = true;
    a->status = status;
    json_error_t je;
    a->json = json ? json_loads(json, 0, &je) : NULL;
    snprintf(a->error, sizeof a->error, "%s", error ? error : "");
}

static void on_sql(pg_query_t *q, int status)
{
    bool *done = q->data;
    if (status != 0)
        fail_msg("setup SQL failed: %s", q->error);
    pg_query_release(q);
    *done = true;
}

static void sql(const char *text)
{
    bool done = false;
    pg_stmt_t st = {.sql = text};
    pg_query_t q = {.stmts = &st, .nstmts = 1, .cb = on_sql, .data = &done};
    assert_int_equal(pg_pool_submit(pool, &q), 0);
    test_run_until(&loop, &done, 20000);
}

static int setup(void **state)
{
    (void)state;
    uv_loop_init(&loop);
    test_pg_migrated_pool(&loop, 2, &pool);
    sql("INSERT INTO chats (id, kind, title) VALUES (-1, 'group', 'Crew'), (-2, 'group', 'Книжный "
        "клуб'), (-3, 'supergroup', '日本')");
    sql("INSERT INTO messages (chat_id, id, date, sender_id, sender_name, text, topic_id, "
        "media_kind, has_link) VALUES "
        "(-1, 1, '2026-01-01T10:00Z', 7, 'Ann', 'The quick brown fox jumps', NULL, NULL, false),"
        "(-1, 2, '2026-01-02T10:00Z', 8, 'Bob', 'quick deploy of the brown fox service', 5, NULL, "
        "false),"
        "(-1, 3, '2026-01-03T10:00Z', 7, 'Ann', 'see https://example.org for the fox', 5, NULL, "
        "true),"
        "(-1, 4, '2026-01-04T10:00Z', 8, 'Bob', 'holiday photo', NULL, 'photo', false),"
        "(-1, 5, '2026-01-05T10:00Z', 8, 'Bob', 'clip', NULL, 'video', false),"
        "(-1, 6, '2026-01-06T10:00Z', 7, 'Ann', 'the report', NULL, 'document', false),"
        "(-2, 1, '2026-02-01T10:00Z', 9, 'Ира', 'Я ем пельмени каждый день', NULL, NULL, false),"
        "(-2, 2, '2026-02-02T10:00Z', 9, 'Ира', 'Книга про пельмени и вареники', NULL, NULL, "
        "false),"
        "(-3, 1, '2026-03-01T10:00Z', 10, 'Ken', '日本語のテキストです。検索できますか', NULL, "
        "NULL, false),"
        "(-3, 2, '2026-03-02T10:00Z', 10, 'Ken', '東京で会議があります', NULL, NULL, false)");
    sql("INSERT INTO media (chat_id, message_id, kind, export_path) VALUES (-1, 6, 'document', "
        "'files/report.pdf')");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_pg_pool_close(&loop, pool);
    test_loop_close(&loop);
    return 0;
}

static void search(const archive_search_req_t *req, answer_t *a)
{
    memset(a, 0, sizeof *a);
    archive_op_t *op;
    assert_int_equal(archive_search(pool, req, on_answer, a, &op), 0);
    test_run_until(&loop, &a->done, 20000);
}

/* "chat:id,chat:id" of the results, in order. */
static void ids(const answer_t *a, char *out, size_t cap)
{
    out[0] = '\0';
    size_t i, n = 0;
    json_t *r;
    json_array_foreach(json_object_get(a->json, "results"), i, r)
    {
        n += (size_t)snprintf(out + n, cap - n, "%s%lld:%lld", i ? "," : "",
                              json_integer_value(json_object_get(r, "chat_id")),
                              json_integer_value(json_object_get(r, "id")));
    }
}

static void expect(const archive_search_req_t *req, const char *want, const char *mode)
{
    answer_t a;
    search(req, &a);
    if (a.status != 0)
        fail_msg("search failed: %s", a.error);
    char got[512];
    ids(&a, got, sizeof got);
    if (strcmp(got, want) != 0)
        fail_msg("query '%s': got [%s], want [%s]", req->query ? req->query : "", got, want);
    if (mode)
        assert_string_equal(json_string_value(json_object_get(a.json, "mode")), mode);
    json_decref(a.json);
}

static void test_fulltext(void **state)
{
    (void)state;
    archive_search_req_t r = {.query = "fox", .limit = 10};
    expect(&r, "-1:3,-1:2,-1:1", "fulltext"); /* newest first */
    r.query = "\"brown fox\"";
    expect(&r, "-1:2,-1:1", NULL);
    r.query = "fox -quick";
    expect(&r, "-1:3", NULL);
    r.query = "photo OR clip";
    expect(&r, "-1:5,-1:4", NULL);
    r.query = "ПЕЛЬМЕНИ"; /* case-insensitive, Cyrillic */
    expect(&r, "-2:2,-2:1", NULL);
    r.query = "пельмени -книга";
    expect(&r, "-2:1", NULL);
    /* Snippets mark the match. */
    r.query = "report";
    answer_t a;
    search(&r, &a);
    const char *snip = json_string_value(
        json_object_get(json_array_get(json_object_get(a.json, "results"), 0), "snippet"));
    assert_string_equal(snip, "the **report**");
    assert_int_equal(json_integer_value(json_object_get(a.json, "count")), 1);
    json_decref(a.json);
}

static void test_cjk_fuzzy_regex(void **state)
{
    (void)state;
    archive_search_req_t r = {.query = "検索", .limit = 10};
    expect(&r, "-3:1", "substring");
    r.query = "会議";
    expect(&r, "-3:2", "substring");
    r.query = "です -検索";
    expect(&r, "", NULL);
    answer_t a;
    r.query = "検索";
    search(&r, &a);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(a.json, "results"), 0), "snippet")),
                        "日本語のテキストです。**検索**できますか");
    json_decref(a.json);
    archive_search_req_t f = {.query = "pelmeni", .fuzzy = true, .limit = 10};
    expect(&f, "", "fuzzy"); /* different script: no trigram overlap */
    f.query = "quik foxx";
    f.order_by_rank = true;
    answer_t b;
    search(&f, &b);
    assert_true(json_integer_value(json_object_get(b.json, "count")) >= 2);
    json_decref(b.json);
    archive_search_req_t x = {.regex = "^THE\\s+(quick|report)", .limit = 10};
    expect(&x, "-1:6,-1:1", "regex");
    x.regex = "([";
    search(&x, &a);
    assert_int_equal(a.status, UV_EINVAL);
    assert_non_null(strstr(a.error, "regular expression"));
}

static void test_filters_and_paging(void **state)
{
    (void)state;
    int64_t chats[] = {-2, -3};
    archive_search_req_t r = {.chat_ids = chats, .nchats = 2, .limit = 10};
    expect(&r, "-3:2,-3:1,-2:2,-2:1", "filter");
    archive_search_req_t t = {.query = "fox", .has_topic = true, .topic_id = 5, .limit = 10};
    expect(&t, "-1:3,-1:2", NULL);
    archive_search_req_t s = {.has_sender = true, .sender_id = 8, .limit = 10};
    expect(&s, "-1:5,-1:4,-1:2", NULL);
    archive_search_req_t d = {
        .from_date = "2026-01-02", .to_date = "2026-01-04T23:59:59Z", .limit = 10};
    expect(&d, "-1:4,-1:3,-1:2", NULL);
    archive_search_req_t k = {.kind = ARCHIVE_KIND_LINKS, .limit = 10};
    expect(&k, "-1:3", NULL);
    k.kind = ARCHIVE_KIND_PHOTOS;
    expect(&k, "-1:4", NULL);
    k.kind = ARCHIVE_KIND_VIDEOS;
    expect(&k, "-1:5", NULL);
    k.kind = ARCHIVE_KIND_DOCUMENTS;
    expect(&k, "-1:6", NULL);
    k.kind = ARCHIVE_KIND_FILES;
    expect(&k, "-1:6", NULL);
    k.kind = ARCHIVE_KIND_MEDIA;
    expect(&k, "-1:6,-1:5,-1:4", NULL);
    archive_search_req_t p = {.query = "fox", .limit = 2, .offset = 1};
    answer_t a;
    search(&p, &a);
    char got[128];
    ids(&a, got, sizeof got);
    assert_string_equal(got, "-1:2,-1:1");
    assert_int_equal(json_integer_value(json_object_get(a.json, "count")), 3);
    json_decref(a.json);
    archive_search_req_t rk = {.query = "fox brown", .order_by_rank = true, .limit = 10};
    search(&rk, &a);
    double r0 = json_number_value(
        json_object_get(json_array_get(json_object_get(a.json, "results"), 0), "rank"));
    double r1 = json_number_value(
        json_object_get(json_array_get(json_object_get(a.json, "results"), 1), "rank"));
    assert_true(r0 >= r1);
    json_decref(a.json);
    /* Bad arguments. */
    archive_search_req_t bad = {.limit = 0};
    assert_int_equal(archive_search(pool, &bad, on_answer, &a, NULL), UV_EINVAL);
    bad.limit = ARCHIVE_SEARCH_MAX_LIMIT + 1;
    assert_int_equal(archive_search(pool, &bad, on_answer, &a, NULL), UV_EINVAL);
    archive_search_req_t bd = {.from_date = "yesterday-ish", .limit = 5};
    search(&bd, &a);
    assert_int_equal(a.status, UV_EINVAL);
    assert_non_null(strstr(a.error, "yesterday-ish"));
}

/* Counting stops at 1,000 and says so; the page is still the newest. */
static void test_count_cap(void **state)
{
    (void)state;
    sql("INSERT INTO chats (id, kind, title) VALUES (-9, 'group', 'Busy')");
    sql("INSERT INTO messages (chat_id, id, date, text) SELECT -9, g, "
        "'2025-01-01'::timestamptz + g * interval '1 minute', 'ubiquitous word ' || g "
        "FROM generate_series(1, 1200) g");
    int64_t busy = -9;
    archive_search_req_t r = {.query = "ubiquitous", .chat_ids = &busy, .nchats = 1, .limit = 2};
    answer_t a;
    search(&r, &a);
    assert_int_equal(a.status, 0);
    assert_int_equal(json_integer_value(json_object_get(a.json, "count")), 1000);
    assert_true(json_is_true(json_object_get(a.json, "countCapped")));
    char got[256];
    ids(&a, got, sizeof got);
    assert_string_equal(got, "-9:1200,-9:1199");
    json_decref(a.json);
    r.query = "ubiquitous 1199";
    search(&r, &a);
    assert_int_equal(json_integer_value(json_object_get(a.json, "count")), 1);
    assert_null(json_object_get(a.json, "countCapped"));
    json_decref(a.json);
}

static void test_cancel(void **state)
{
    (void)state;
    archive_search_req_t r = {.regex = "(a|b)*c", .limit = 5};
    answer_t a = {0};
    archive_op_t *op;
    assert_int_equal(archive_search(pool, &r, on_answer, &a, &op), 0);
    archive_cancel(op);
    test_run_until(&loop, &a.done, 20000);
    assert_true(a.status == UV_ECANCELED || a.status == 0);
    json_decref(a.json);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fulltext),
        cmocka_unit_test(test_cjk_fuzzy_regex),
        cmocka_unit_test(test_filters_and_paging),
        cmocka_unit_test(test_count_cap),
        cmocka_unit_test(test_cancel),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
