/* Tests for archive/agent_import's reading of a piece of a transcript
 * (agent_import_events): line numbering from the resume point, blank and
 * malformed lines, a last line without a newline. The import itself is
 * tested end to end (tests/e2e/memory). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "archive/agent_import.h"
#include "testutil.h"
#include "util/log.h"

static void test_events(void **state)
{
    (void)state;
    static const char piece[] = "{\"a\":1}\n"
                                " \t\r\n"
                                "not json\n"
                                "[1]\n"
                                "{\"b\":\"x\"}\r\n"
                                "{\"c\":\"a\0b\"}\n"
                                "{\"d\":2}";
    uint64_t lines, malformed;
    char *text = agent_import_events(piece, sizeof piece - 1, "t.jsonl", 10, &lines, &malformed);
    assert_non_null(text);
    assert_int_equal(lines, 7);
    assert_int_equal(malformed, 3); /* not JSON, not an object, a NUL */
    json_t *got = json_loads(text, 0, NULL);
    json_t *want = json_loads("[{\"line\":11,\"event\":{\"a\":1}},{\"line\":15,\"event\":{\"b\":"
                              "\"x\"}},{\"line\":17,\"event\":{\"d\":2}}]",
                              0, NULL);
    assert_true(json_equal(got, want));
    json_decref(got);
    json_decref(want);
    free(text);

    text = agent_import_events("", 0, "t.jsonl", 0, &lines, &malformed);
    assert_string_equal(text, "[]");
    assert_int_equal(lines, 0);
    free(text);
}

int main(void)
{
    log_set_level(LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
