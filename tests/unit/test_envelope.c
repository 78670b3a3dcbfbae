/* Tests for mcp/envelope's memo: a request whose params._meta is the
 * object the memo keeps gets the envelope read before, without reading
 * it; another _meta is read and replaces it; an invalid envelope is
 * answered with its error and never kept; the memo holds its _meta alive
 * and clearing it lets go. */
#include "testutil.h"
#include "mcp/envelope.h"
#include "mcp/jsonrpc.h"

#include <stdlib.h>
#include <string.h>

static json_t *params_with(const char *meta_text)
{
    json_t *meta = json_loads(meta_text, 0, NULL);
    assert_non_null(meta);
    json_t *params = json_pack("{s:o}", "_meta", meta);
    assert_non_null(params);
    return params;
}

#define GOOD                                                                                       \
    "{\"" MCP_META_PROTOCOL_VERSION "\":\"" MCP_MODERN_VERSION "\",\"" MCP_META_CLIENT_CAPS        \
    "\":{},\"" MCP_META_LOG_LEVEL "\":\"info\"}"

static void test_memo(void **state)
{
    (void)state;
    mcp_envelope_memo_t memo = {0};
    json_t *p1 = params_with(GOOD);
    json_t *meta1 = json_object_get(p1, "_meta");
    char msg[320];
    json_t *data;
    mcp_envelope_t env, again;

    mcp_envelope_claim_t c = mcp_envelope_claim_memo(&memo, p1);
    assert_ptr_equal(c.meta, meta1);
    assert_non_null(c.version);
    assert_int_equal(mcp_envelope_parse_memo(&memo, &c, &env, msg, sizeof msg, &data), 0);
    assert_ptr_equal(memo.meta, meta1);
    assert_string_equal(env.version, MCP_MODERN_VERSION);

    /* The same object: the memo's claim and envelope, not read again
     * (a mark put in the kept one comes back), even when the params
     * around it are gone and only the memo holds the _meta. */
    memo.env.log_level = 77;
    json_incref(meta1);
    json_decref(p1);
    json_t *p2 = json_pack("{s:O,s:i}", "_meta", meta1, "x", 1);
    json_decref(meta1);
    mcp_envelope_claim_t c2 = mcp_envelope_claim_memo(&memo, p2);
    assert_ptr_equal(c2.meta, c.meta);
    assert_ptr_equal(c2.version, c.version);
    assert_int_equal(mcp_envelope_parse_memo(&memo, &c2, &again, msg, sizeof msg, &data), 0);
    assert_null(data);
    assert_int_equal(again.log_level, 77);
    assert_ptr_equal(again.meta, env.meta);
    assert_ptr_equal(again.version, env.version);
    assert_ptr_equal(again.caps, env.caps);
    assert_ptr_equal(again.client_info, env.client_info);
    json_decref(p2);

    /* An equal _meta in another object is read (and then kept). */
    json_t *p3 = params_with(GOOD);
    mcp_envelope_claim_t c3 = mcp_envelope_claim_memo(&memo, p3);
    assert_ptr_equal(c3.meta, json_object_get(p3, "_meta"));
    assert_int_equal(mcp_envelope_parse_memo(&memo, &c3, &again, msg, sizeof msg, &data), 0);
    assert_ptr_equal(again.meta, c3.meta);
    assert_int_not_equal(again.log_level, 77);
    assert_ptr_equal(memo.meta, c3.meta);

    /* An invalid one is refused as mcp_envelope_parse refuses it, and the
     * memo keeps the last valid one. */
    json_t *bad = params_with("{\"" MCP_META_PROTOCOL_VERSION
                              "\":\"1999-01-01\",\"" MCP_META_CLIENT_CAPS "\":{}}");
    mcp_envelope_claim_t cb = mcp_envelope_claim_memo(&memo, bad);
    int code = mcp_envelope_parse_memo(&memo, &cb, &again, msg, sizeof msg, &data);
    assert_int_equal(code, MCP_ERROR_UNSUPPORTED_VERSION);
    assert_non_null(data);
    json_decref(data);
    char msg2[320];
    json_t *data2;
    assert_int_equal(mcp_envelope_parse(bad, &again, msg2, sizeof msg2, &data2), code);
    assert_string_equal(msg, msg2);
    json_decref(data2);
    assert_ptr_equal(memo.meta, c3.meta);
    json_decref(bad);

    /* No _meta: no claim, whatever the memo holds. */
    json_t *none = json_object();
    mcp_envelope_claim_t cn = mcp_envelope_claim_memo(&memo, none);
    assert_null(cn.meta);
    assert_null(cn.version);
    json_decref(none);

    json_decref(p3);
    assert_int_equal(memo.meta->refcount, 1); /* the memo's own reference */
    mcp_envelope_memo_clear(&memo);
    assert_null(memo.meta);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
