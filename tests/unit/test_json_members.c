/* Tests for util/json_members: each name's member is what json_object_get
 * gives (exact names only: not a prefix, not a longer key of the same
 * start, the same first letter), NULL for an absent one, and every one
 * NULL for a value that is not an object. */
#include "testutil.h"
#include "util/json_members.h"

#include <string.h>

static void expect_as_get(const char *text, const char *const *names, size_t n)
{
    json_t *obj = json_loads(text, JSON_DECODE_ANY, NULL);
    assert_non_null(obj);
    json_t *out[8];
    memset(out, 0xab, sizeof out); /* every slot written, found or not */
    json_members(obj, names, n, out);
    for (size_t i = 0; i < n; i++)
        assert_ptr_equal(out[i], json_object_get(obj, names[i]));
    json_decref(obj);
}

static void test_found_as_get(void **state)
{
    (void)state;
    static const char *const names[] = {"id", "i", "items", "_meta", "", "name"};
    const size_t n = sizeof names / sizeof names[0];
    expect_as_get("{\"ids\":1,\"i\":2,\"item\":3,\"items\":[],\"_meta\":{},\"\":null}", names, n);
    expect_as_get("{\"name\":\"x\",\"id\":7}", names, n);
    expect_as_get("{\"nam\":1,\"names\":2,\"_met\":3,\"meta\":4}", names, n);
    expect_as_get("{}", names, n);
    expect_as_get("[{\"id\":1}]", names, n);
    expect_as_get("\"id\"", names, n);
    expect_as_get("null", names, n);
    expect_as_get("{\"id\":1}", names, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_found_as_get),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
