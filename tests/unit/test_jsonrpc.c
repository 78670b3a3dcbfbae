/* Tests for mcp/jsonrpc's result envelopes: a result with the 2026-07-28
 * envelope spliced in as text is the result mcp_envelope_complete builds
 * as an object, for an object with members and for an empty one; what
 * cannot be spliced is refused. */
#include "testutil.h"
#include "mcp/envelope.h"
#include "mcp/jsonrpc.h"

#include <stdlib.h>
#include <string.h>

/* The message's result as jansson reads it (the whole text must parse). */
static json_t *result_of(const char *msg, size_t len)
{
    json_error_t err;
    json_t *m = json_loadb(msg, len, 0, &err);
    assert_non_null(m);
    assert_string_equal(json_string_value(json_object_get(m, "jsonrpc")), "2.0");
    json_t *r = json_incref(json_object_get(m, "result"));
    json_decref(m);
    assert_non_null(r);
    return r;
}

/* result spliced with the server's complete text equals result completed
 * as an object, and the id is kept. */
static void assert_splices_like_complete(const char *result_text)
{
    char tail[256];
    assert_true(mcp_envelope_complete_text("parley", "1.2.3", tail, sizeof tail) > 0);
    json_t *result = json_loads(result_text, 0, NULL);
    assert_non_null(result);
    assert_true(mcp_envelope_spliceable(result));
    json_t *id = json_integer(42);
    size_t len = 0;
    char *msg = jsonrpc_result_spliced(id, result, tail, &len);
    assert_non_null(msg);
    assert_int_equal(len, strlen(msg));
    assert_non_null(strstr(msg, "\"id\":42,"));
    json_t *got = result_of(msg, len);
    json_t *want = json_deep_copy(result);
    assert_int_equal(mcp_envelope_complete(want, "parley", "1.2.3"), 0);
    assert_true(json_equal(got, want));
    free(msg);
    json_decref(got);
    json_decref(want);
    json_decref(result);
    json_decref(id);
}

static void test_spliced(void **state)
{
    (void)state;
    assert_splices_like_complete("{\"content\":[{\"type\":\"text\",\"text\":\"a}\"}]}");
    assert_splices_like_complete("{}");
    assert_splices_like_complete("{\"isError\":true,\"content\":[]}");
}

static void test_not_spliced(void **state)
{
    (void)state;
    /* A result with an envelope field of its own is completed as an
     * object (mcp_envelope_complete keeps its _meta). */
    json_t *own = json_pack("{s:{s:i}}", "_meta", "k", 1);
    assert_false(mcp_envelope_spliceable(own));
    json_t *typed = json_pack("{s:s}", "resultType", "input_required");
    assert_false(mcp_envelope_spliceable(typed));
    json_t *arr = json_array();
    assert_false(mcp_envelope_spliceable(arr));
    assert_false(mcp_envelope_spliceable(NULL));
    size_t len = 0;
    char *msg;
    assert_null(jsonrpc_result_spliced(NULL, arr, ",\"a\":1", &len));
    /* A tail that is not members after a comma. */
    json_t *obj = json_object();
    assert_null(jsonrpc_result_spliced(NULL, obj, "\"a\":1", &len));
    /* Ids of every kind a request may have: a string (with escapes, or
     * empty) and an integer past 2^53 kept whole. */
    const char *ids[] = {"\"a\\\"b}\"", "\"\"", "9007199254740993"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        json_t *id = json_loads(ids[i], JSON_DECODE_ANY, NULL);
        assert_non_null(id);
        msg = jsonrpc_result_spliced(id, obj, ",\"a\":1", &len);
        assert_non_null(msg);
        json_t *m = json_loadb(msg, len, 0, NULL);
        assert_non_null(m);
        assert_true(json_equal(json_object_get(m, "id"), id));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(m, "result"), "a")), 1);
        json_decref(m);
        json_decref(id);
        free(msg);
    }
    /* An id of null. */
    msg = jsonrpc_result_spliced(NULL, obj, ",\"a\":1", &len);
    assert_non_null(msg);
    assert_string_equal(msg, "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{\"a\":1}}");
    free(msg);
    json_decref(obj);
    json_decref(own);
    json_decref(typed);
    json_decref(arr);
}

/* jsonrpc_members finds what json_object_get finds, key by key: the six
 * members by their exact names (not a prefix, not a longer key of the same
 * start), NULL for the absent ones, all NULL for a value not an object. */
static void test_members(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{}}",
        "{\"params\":[],\"ids\":1,\"i\":2,\"methods\":3,\"method\":null,\"result\":{},"
        "\"error\":5,\"errors\":6,\"jsonrpc_\":7,\"resul\":8}",
        "{\"id\":\"x\",\"error\":{\"code\":1}}",
        "{}",
        "[1,2]",
        "\"id\"",
    };
    static const char *const names[] = {"jsonrpc", "id", "method", "params", "result", "error"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        json_t *m = json_loads(texts[i], JSON_DECODE_ANY, NULL);
        assert_non_null(m);
        jsonrpc_members_t mm;
        jsonrpc_members(m, &mm);
        json_t *got[] = {mm.jsonrpc, mm.id, mm.method, mm.params, mm.result, mm.error};
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            assert_ptr_equal(got[k], json_object_get(m, names[k]));
        json_decref(m);
    }
}

/* jsonrpc_read gives jsonrpc_parse's members, whichever reader took the
 * text: the members alone (no other member), another member or a key
 * given twice (the whole tree, or jansson's refusal), a value not an
 * object, an integer past 64 bits (jansson's reals again). */
static void test_read(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"t\","
        "\"arguments\":{\"b\":1,\"a\":[2.5,null]},\"_meta\":{\"k\":{\"x\":true}}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":{},\"extra\":1}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"n\":99999999999999999999}}",
        "{}",
        "[1,2]",
        "\"id\"",
        "{\"jsonrpc\":",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        json_error_t je1, je2;
        json_t *whole = jsonrpc_parse(texts[i], strlen(texts[i]), &je1);
        jsonrpc_msg_t msg;
        int rc = jsonrpc_read(texts[i], strlen(texts[i]), &msg, &je2);
        if (whole == NULL) {
            assert_int_equal(rc, -1);
            assert_string_equal(je1.text, je2.text);
            assert_int_equal(je1.position, je2.position);
            continue;
        }
        assert_int_equal(rc, 0);
        if (!json_is_object(whole)) {
            assert_true(json_equal(msg.other, whole));
        } else {
            assert_null(msg.other);
            jsonrpc_members_t want;
            jsonrpc_members(whole, &want);
            json_t *a[] = {msg.mm.jsonrpc, msg.mm.id,     msg.mm.method,
                           msg.mm.params,  msg.mm.result, msg.mm.error};
            json_t *b[] = {want.jsonrpc, want.id,     want.method,
                           want.params,  want.result, want.error};
            for (size_t k = 0; k < sizeof a / sizeof a[0]; k++) {
                assert_true((a[k] == NULL) == (b[k] == NULL));
                if (a[k] == NULL)
                    continue;
                /* The same text: member order and number types too. */
                char *x = json_dumps(a[k], JSON_ENCODE_ANY | JSON_COMPACT);
                char *y = json_dumps(b[k], JSON_ENCODE_ANY | JSON_COMPACT);
                assert_string_equal(x, y);
                free(x);
                free(y);
            }
        }
        jsonrpc_msg_release(&msg);
        json_decref(whole);
    }
}

/* Two requests with equal _meta objects share one (what the envelope's
 * memo relies on); another _meta is another object. */
static void test_read_shares_meta(void **state)
{
    (void)state;
    const char *a = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"_meta\":"
                    "{\"v\":\"2026-07-28\",\"c\":{}}}}";
    const char *b = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"m\",\"params\":{\"x\":1,"
                    "\"_meta\":{\"v\":\"2026-07-28\",\"c\":{}}}}";
    const char *c = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"m\",\"params\":{\"_meta\":"
                    "{\"v\":\"2026-07-28\",\"c\":{\"x\":1}}}}";
    jsonrpc_msg_t ma, mb, mc;
    json_error_t je;
    assert_int_equal(jsonrpc_read(a, strlen(a), &ma, &je), 0);
    assert_int_equal(jsonrpc_read(b, strlen(b), &mb, &je), 0);
    assert_int_equal(jsonrpc_read(c, strlen(c), &mc, &je), 0);
    json_t *meta_a = json_object_get(ma.mm.params, "_meta");
    assert_non_null(meta_a);
    assert_ptr_equal(meta_a, json_object_get(mb.mm.params, "_meta"));
    assert_ptr_not_equal(meta_a, json_object_get(mc.mm.params, "_meta"));
    jsonrpc_msg_release(&ma);
    jsonrpc_msg_release(&mb);
    jsonrpc_msg_release(&mc);
    assert_null(ma.mm.params);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spliced),          cmocka_unit_test(test_not_spliced),
        cmocka_unit_test(test_members),          cmocka_unit_test(test_read),
        cmocka_unit_test(test_read_shares_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
