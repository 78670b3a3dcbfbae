/* Tests for import/tg_entities: which entities an export message keeps
 * (none when every run is plain text) and the link test on them (through
 * the whole mapping: test_tg_map.c; against the SQL reference:
 * tests/integration/import_telegram_map.sh). */
#include "testutil.h"

#include <string.h>

#include "import/tg_entities.h"

/* The entities of the message json as text ("" for none), *link set. */
static char *entities(const char *json, bool *link)
{
    json_error_t e;
    json_t *m = json_loads(json, 0, &e);
    assert_non_null(m);
    json_t *out = (json_t *)1;
    assert_int_equal(tg_entities_of(m, &out, link), 0);
    char *s = out ? json_dumps(out, JSON_COMPACT) : strdup("");
    json_decref(out);
    json_decref(m);
    assert_non_null(s);
    return s;
}

static void expect(const char *json, const char *want, bool want_link)
{
    bool link = !want_link;
    char *got = entities(json, &link);
    assert_string_equal(got, want);
    assert_int_equal(link, want_link);
    free(got);
}

static void test_plain_runs_keep_none(void **state)
{
    (void)state;
    expect("{\"text\": \"a b\", \"text_entities\": [{\"type\": \"plain\", \"text\": \"a b\"}]}", "",
           false);
    expect("{\"text\": [\"a \", \"b\"]}", "", false);
    expect("{\"text\": \"\", \"text_entities\": []}", "", false);
    expect("{\"text\": \"a\"}", "", false);
}

static void test_other_runs_keep_all(void **state)
{
    (void)state;
    expect("{\"text_entities\": [{\"type\": \"plain\", \"text\": \"a \"}, {\"type\": \"bold\", "
           "\"text\": \"b\"}]}",
           "[{\"type\":\"plain\",\"text\":\"a \"},{\"type\":\"bold\",\"text\":\"b\"}]", false);
    /* a plain run with more than its text is not only text */
    expect("{\"text_entities\": [{\"type\": \"plain\", \"text\": \"a\", \"x\": 1}]}",
           "[{\"type\":\"plain\",\"text\":\"a\",\"x\":1}]", false);
    /* an array text: its string parts become plain runs */
    expect("{\"text\": [\"see \", {\"type\": \"text_link\", \"text\": \"here\", \"href\": \"h\"}]}",
           "[{\"type\":\"plain\",\"text\":\"see \"},{\"type\":\"text_link\",\"text\":\"here\","
           "\"href\":\"h\"}]",
           true);
}

static void test_link(void **state)
{
    (void)state;
    expect("{\"text_entities\": [{\"type\": \"link\", \"text\": \"https://x\"}]}",
           "[{\"type\":\"link\",\"text\":\"https://x\"}]", true);
    /* lax: an array element is unwrapped once */
    expect("{\"text_entities\": [[{\"type\": \"text_link\", \"text\": \"x\"}]]}",
           "[[{\"type\":\"text_link\",\"text\":\"x\"}]]", true);
    expect("{\"text_entities\": [[[{\"type\": \"link\", \"text\": \"x\"}]]]}",
           "[[[{\"type\":\"link\",\"text\":\"x\"}]]]", false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_runs_keep_none),
        cmocka_unit_test(test_other_runs_keep_all),
        cmocka_unit_test(test_link),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
