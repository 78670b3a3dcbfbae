/* Tests for mcp/registry and mcp/schema: toolset selection, dotted names
 * listed with underscores and found both ways, read-only filtering, URI
 * templates, and argument validation messages that name the field. */
#include <stdio.h>
#include <string.h>

#include "mcp/registry.h"
#include "mcp/schema.h"
#include "testutil.h"

static void fn(mcp_call_t *c)
{
    (void)c;
}

static const mcp_tool_def_t tools_a[] = {
    {"conversations.list", "List", "Lists.", "{\"type\":\"object\"}", NULL, MCP_TOOL_READ_ONLY, fn,
     NULL},
    {"conversations.send", "Send", "Sends.", "{\"type\":\"object\"}", NULL, MCP_TOOL_DESTRUCTIVE,
     fn, NULL},
};
static const mcp_toolset_t set_a = {"alpha", "A", tools_a, 2, NULL, 0, NULL, 0, false, false};
static const mcp_tool_def_t tools_b[] = {
    {"bad name!", "Bad", "Bad.", "{\"type\":\"object\"}", NULL, 0, fn, NULL},
};
static const mcp_toolset_t set_b = {"broken", "B", tools_b, 1, NULL, 0, NULL, 0, true, false};

static const mcp_toolset_t *const available[] = {&set_a, &set_b, NULL};

static void test_names_and_read_only(void **state)
{
    (void)state;
    mcp_registry_t r;
    char err[256];
    assert_int_equal(mcp_registry_build(&r, available, "all", false, err, sizeof err), 0);
    assert_int_equal(r.ntools, 2); /* "broken" is on request only */
    assert_string_equal(r.tools[0].name, "conversations_list");
    assert_ptr_equal(mcp_registry_find(&r, "conversations.list"), &r.tools[0]);
    assert_ptr_equal(mcp_registry_find(&r, "conversations_list"), &r.tools[0]);
    assert_null(mcp_registry_find(&r, "conversations"));
    /* Each selected toolset carries the context the entry point gives it. */
    int ctx_a = 0;
    mcp_registry_set_context(&r, &set_a, &ctx_a);
    mcp_registry_set_context(&r, &set_b, &ctx_a); /* not selected: ignored */
    assert_true(mcp_registry_has_toolset(&r, &set_a));
    assert_false(mcp_registry_has_toolset(&r, &set_b));
    assert_ptr_equal(mcp_registry_context(&r, &set_a), &ctx_a);
    assert_null(mcp_registry_context(&r, &set_b));
    mcp_registry_free(&r);
    assert_int_equal(mcp_registry_build(&r, available, " alpha ", true, err, sizeof err), 0);
    assert_int_equal(r.ntools, 1);
    assert_null(mcp_registry_find(&r, "conversations_send"));
    mcp_registry_free(&r);
    assert_int_equal(mcp_registry_build(&r, available, "alpha,nope", false, err, sizeof err),
                     UV_EINVAL);
    assert_non_null(strstr(err, "unknown toolset 'nope'"));
    assert_int_equal(mcp_registry_build(&r, available, "broken", false, err, sizeof err),
                     UV_EINVAL);
    assert_non_null(strstr(err, "^[A-Za-z0-9_-]{1,64}$"));
    assert_false(mcp_tool_name_valid(""));
    assert_false(mcp_tool_name_valid("a.b"));
    assert_true(mcp_tool_name_valid("a-b_C9"));
}

/* A tools/call finds its tool by hash: among the most tools a registry
 * holds, each is found under both its names, and every lookup (the last
 * tool's, an unknown name's) examines a few slots, where a walk of the
 * table examined one per tool before it. */
static void test_find_by_hash(void **state)
{
    (void)state;
    enum { N = MCP_REGISTRY_MAX_TOOLS };
    static char names[N][24];
    static mcp_tool_def_t defs[N];
    for (int i = 0; i < N; i++) {
        if (i % 2)
            snprintf(names[i], sizeof names[i], "ns%d.tool_%d", i / 7, i);
        else
            snprintf(names[i], sizeof names[i], "tool_%d", i);
        defs[i] = (mcp_tool_def_t){names[i],           "T", "D.", "{\"type\":\"object\"}", NULL,
                                   MCP_TOOL_READ_ONLY, fn,  NULL};
    }
    const mcp_toolset_t many = {"many", "M", defs, N, NULL, 0, NULL, 0, false, false};
    const mcp_toolset_t *const sets[] = {&many, NULL};
    mcp_registry_t r;
    char err[256];
    int rc = mcp_registry_build(&r, sets, "many", false, err, sizeof err);
    if (rc != 0)
        fail_msg("%s", err);
    assert_int_equal(r.ntools, N);
    int most = 0, total = 0;
    for (int i = 0; i < N; i++) {
        assert_ptr_equal(mcp_registry_find(&r, names[i]), &r.tools[i]);
        assert_ptr_equal(mcp_registry_find(&r, r.tools[i].name), &r.tools[i]);
        int p = mcp_registry__find_probes(&r, r.tools[i].name);
        total += p;
        most = p > most ? p : most;
    }
    assert_true(most <= 8);
    assert_true(total <= 2 * N); /* one or two slots a lookup on average */
    assert_null(mcp_registry_find(&r, "tool_none"));
    assert_true(mcp_registry__find_probes(&r, "tool_none") <= 8);
    assert_true(mcp_registry__find_probes(&r, r.tools[N - 1].name) <= 8);
    mcp_registry_free(&r);
}

static void test_uri_templates(void **state)
{
    (void)state;
    json_t *vars = NULL;
    assert_true(mcp_uri_template_match("test://t/{id}/data", "test://t/123/data", &vars));
    assert_string_equal(json_string_value(json_object_get(vars, "id")), "123");
    json_decref(vars);
    assert_false(mcp_uri_template_match("test://t/{id}/data", "test://t//data", NULL));
    assert_false(mcp_uri_template_match("test://t/{id}/data", "test://t/1/2/data", NULL));
    assert_false(mcp_uri_template_match("test://t/{id}", "test://x/1", NULL));
    assert_true(mcp_uri_template_match("chat://{chat}/{msg}", "chat://5/6", &vars));
    assert_string_equal(json_string_value(json_object_get(vars, "msg")), "6");
    json_decref(vars);
}

static void expect_error(const char *schema_text, const char *value_text, const char *needle)
{
    json_error_t je;
    json_t *schema = json_loads(schema_text, 0, &je);
    json_t *value = json_loads(value_text, JSON_DECODE_ANY, &je);
    assert_non_null(schema);
    assert_non_null(value);
    char err[512];
    assert_false(schema_validate(schema, value, err, sizeof err));
    if (strstr(err, needle) == NULL)
        fail_msg("error \"%s\" lacks \"%s\"", err, needle);
    json_decref(schema);
    json_decref(value);
}

static void test_schema_messages(void **state)
{
    (void)state;
    const char *s = "{\"type\":\"object\",\"properties\":{"
                    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":500},"
                    "\"kind\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},"
                    "\"user\":{\"type\":\"string\",\"pattern\":\"^@[a-z]+$\"},"
                    "\"ids\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}},"
                    "\"required\":[\"kind\"],\"additionalProperties\":false}";
    expect_error(s, "{}", "kind");
    expect_error(s, "{\"kind\":\"c\"}", "kind: expected one of");
    expect_error(s, "{\"kind\":\"a\",\"limit\":\"ten\"}", "limit: expected an integer");
    expect_error(s, "{\"kind\":\"a\",\"limit\":0}", "limit");
    expect_error(s, "{\"kind\":\"a\",\"user\":\"bob\"}", "user");
    expect_error(s, "{\"kind\":\"a\",\"ids\":[1,\"x\"]}", "ids[1]");
    expect_error(s, "{\"kind\":\"a\",\"other\":1}", "other");
    expect_error(s, "{\"kind\":\"a\",\"limit\":501}", "limit: expected a value between 1 and 500");
    /* Every keyword the validator reads, each alone in its schema. */
    expect_error("{\"type\":\"integer\",\"maximum\":9}", "10", "a value of at most 9");
    expect_error("{\"type\":\"number\",\"exclusiveMinimum\":0}", "0", "greater than 0");
    expect_error("{\"type\":\"number\",\"exclusiveMaximum\":1}", "1", "less than 1");
    expect_error("{\"type\":\"string\",\"minLength\":2}", "\"é\"", "at least 2 characters");
    expect_error("{\"type\":\"string\",\"maxLength\":1}", "\"éé\"", "at most 1 characters");
    expect_error("{\"const\":\"x\"}", "\"y\"", "exactly \"x\"");
    expect_error("{\"type\":\"array\",\"minItems\":1}", "[]", "at least 1 items");
    expect_error("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}",
                 "{\"n\":\"x\"}", "n: expected an integer");
    /* Other members (a description, a title, a default) are read past:
     * a value the keywords admit passes. */
    {
        json_t *sch = json_loads("{\"description\":\"d\",\"title\":\"t\",\"default\":\"x\","
                                 "\"examples\":[1],\"type\":\"integer\",\"minimum\":1}",
                                 0, NULL);
        json_t *one = json_integer(1);
        char e[256];
        assert_true(schema_validate(sch, one, e, sizeof e));
        json_decref(one);
        json_decref(sch);
    }
    expect_error("{\"description\":\"d\",\"title\":\"t\",\"type\":\"boolean\",\"default\":true}",
                 "1", "expected a boolean");
    json_error_t je;
    json_t *schema = json_loads(s, 0, &je);
    json_t *ok = json_loads("{\"kind\":\"a\",\"limit\":5,\"user\":\"@bob\",\"ids\":[1,2]}", 0, &je);
    char err[512];
    assert_true(schema_validate(schema, ok, err, sizeof err));
    json_decref(schema);
    json_decref(ok);
}

/* Patterns are compiled once and kept, up to a fixed number: more
 * distinct patterns than are kept, each checked twice (kept, or compiled
 * for the one validation), and a bad pattern refused every time. */
static void test_schema_patterns(void **state)
{
    (void)state;
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 40; i++) {
            char schema[96], ok[32], bad[32], needle[48];
            snprintf(schema, sizeof schema, "{\"type\":\"string\",\"pattern\":\"^x%d$\"}", i);
            snprintf(ok, sizeof ok, "\"x%d\"", i);
            snprintf(bad, sizeof bad, "\"x%dy\"", i);
            snprintf(needle, sizeof needle, "a string matching ^x%d$", i);
            json_t *sch = json_loads(schema, 0, NULL), *v = json_loads(ok, JSON_DECODE_ANY, NULL);
            char err[256];
            assert_true(schema_validate(sch, v, err, sizeof err));
            json_decref(v);
            json_decref(sch);
            expect_error(schema, bad, needle);
        }
    for (int i = 0; i < 2; i++)
        expect_error("{\"type\":\"string\",\"pattern\":\"([\"}", "\"a\"", "bad pattern");
}

/* The offending value is quoted cut short; the cut never splits a UTF-8
 * sequence, whatever byte it falls on (found by the session fuzzer: half
 * an "ø" made the tool's error text unencodable and closed the session). */
/* anyOf, the portable form of a list of types: a value of any listed type
 * passes; one of no listed type is told the types; one of a listed type
 * is told what that alternative wants. */
static void test_schema_any_of(void **state)
{
    (void)state;
    const char *s = "{\"type\":\"object\",\"properties\":{"
                    "\"id\":{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]},"
                    "\"q\":{\"anyOf\":[{\"type\":\"string\",\"maxLength\":3},"
                    "{\"type\":\"array\",\"maxItems\":1}]}}}";
    expect_error(s, "{\"id\":true}", "id: expected one of the types integer, string");
    expect_error(s, "{\"q\":[1,2]}", "q: expected at most 1");
    expect_error(s, "{\"q\":\"long\"}", "q: expected a string of at most 3");
    json_error_t je;
    json_t *schema = json_loads(s, 0, &je);
    char err[512];
    for (int i = 0; i < 3; i++) {
        const char *okv[] = {"{\"id\":12}", "{\"id\":\"@bob\"}", "{\"q\":[\"x\"]}"};
        json_t *ok = json_loads(okv[i], 0, &je);
        assert_true(schema_validate(schema, ok, err, sizeof err));
        json_decref(ok);
    }
    json_decref(schema);
}

static void test_schema_message_utf8(void **state)
{
    (void)state;
    json_error_t je;
    json_t *schema = json_loads("{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\","
                                "\"maxLength\":8}}}",
                                0, &je);
    assert_non_null(schema);
    for (int at = 40; at < 70; at++) {
        char text[128];
        memset(text, 'G', sizeof text);
        memcpy(text + at, "\xc3\xb8", 2); /* ø */
        text[100] = '\0';
        json_t *value = json_pack("{s:s}", "s", text);
        assert_non_null(value);
        char err[512];
        assert_false(schema_validate(schema, value, err, sizeof err));
        json_t *msg = json_string(err); /* NULL when err is not UTF-8 */
        if (msg == NULL)
            fail_msg("not UTF-8 with the character at %d: %s", at, err);
        json_decref(msg);
        json_decref(value);
    }
    json_decref(schema);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_read_only), cmocka_unit_test(test_find_by_hash),
        cmocka_unit_test(test_uri_templates),       cmocka_unit_test(test_schema_messages),
        cmocka_unit_test(test_schema_patterns),     cmocka_unit_test(test_schema_any_of),
        cmocka_unit_test(test_schema_message_utf8),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
