/* Tests for mcp/request_state: a sealed requestState opens only under
 * its key and context and before it expires; a changed byte, another
 * context (tool or principal) or another key is refused. */
#include <string.h>

#include "mcp/request_state.h"
#include "testutil.h"

static void test_round_trip_and_refusals(void **state)
{
    (void)state;
    sealed_key_t key, other;
    memset(key.key, 7, sizeof key.key);
    memset(other.key, 8, sizeof other.key);
    json_t *st = json_pack("{s:s, s:i}", "kind", "multi-round", "round", 2);
    char *text = NULL;
    assert_int_equal(mcp_request_state_seal(&key, "ctx|tool|p", st, 1000, &text), 0);
    assert_non_null(text);
    json_t *back = NULL;
    assert_int_equal(mcp_request_state_open(&key, "ctx|tool|p", text, 2000, &back), 0);
    assert_true(json_equal(back, st));
    json_decref(back);
    /* Two seals of one state differ (a fresh nonce each). */
    char *again = NULL;
    assert_int_equal(mcp_request_state_seal(&key, "ctx|tool|p", st, 1000, &again), 0);
    assert_string_not_equal(text, again);
    free(again);
    /* Another context, another key, expired. */
    assert_int_equal(mcp_request_state_open(&key, "ctx|tool|q", text, 2000, &back), UV_EINVAL);
    assert_int_equal(mcp_request_state_open(&other, "ctx|tool|p", text, 2000, &back), UV_EINVAL);
    assert_int_equal(mcp_request_state_open(&key, "ctx|tool|p", text,
                                            1000 + MCP_REQUEST_STATE_TTL_MS + 1, &back),
                     UV_ETIMEDOUT);
    assert_null(back);
    /* One changed character, appended bytes, not base64, empty. */
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i += 7) {
        char *t = strdup(text);
        t[i] = t[i] == 'A' ? 'B' : 'A';
        assert_int_equal(mcp_request_state_open(&key, "ctx|tool|p", t, 2000, &back), UV_EINVAL);
        free(t);
    }
    char longer[4096];
    snprintf(longer, sizeof longer, "%s-TAMPERED", text);
    assert_int_equal(mcp_request_state_open(&key, "ctx|tool|p", longer, 2000, &back), UV_EINVAL);
    assert_int_equal(mcp_request_state_open(&key, "ctx|tool|p", "!!!!", 2000, &back), UV_EINVAL);
    assert_int_equal(mcp_request_state_open(&key, "ctx|tool|p", "", 2000, &back), UV_EINVAL);
    free(text);
    json_decref(st);
}

/* Whatever seals opens: a string holding a NUL (sealed as \u0000) comes
 * back as itself (found by fuzz_request_state: it was refused as
 * changed). */
static void test_nul_in_a_string(void **state)
{
    (void)state;
    sealed_key_t key;
    memset(key.key, 7, sizeof key.key);
    json_t *st = json_pack("{s:s, s:s#}", "kind", "x", "name", "a\0b", (size_t)3);
    char *text = NULL;
    assert_int_equal(mcp_request_state_seal(&key, "ctx", st, 1000, &text), 0);
    json_t *back = NULL;
    assert_int_equal(mcp_request_state_open(&key, "ctx", text, 2000, &back), 0);
    assert_true(json_equal(back, st));
    assert_int_equal(json_string_length(json_object_get(back, "name")), 3);
    json_decref(back);
    free(text);
    json_decref(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_and_refusals),
        cmocka_unit_test(test_nul_in_a_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
