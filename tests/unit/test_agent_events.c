/* Tests for import/agent_events: the events of a piece of a transcript
 * (agent_events_parse): line numbering from the resume point, blank and
 * malformed lines, a last line without a newline. The import itself is
 * tested end to end (tests/e2e/memory). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "import/agent_events.h"
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
    char *text = agent_events_parse(piece, sizeof piece - 1, "t.jsonl", 10, &lines, &malformed);
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

    text = agent_events_parse("", 0, "t.jsonl", 0, &lines, &malformed);
    assert_string_equal(text, "[]");
    assert_int_equal(lines, 0);
    free(text);
}

static void test_time_ok(void **state)
{
    (void)state;
    static const char *const good[] = {"2026-01-10T09:00:00.000Z",
                                       "2026-01-10T09:00:00Z",
                                       "2026-01-10 09:00:00",
                                       "2026-01-10T09:00",
                                       "2026-01-10",
                                       "2024-02-29T00:00:00+03:00",
                                       "2026-01-10T09:00:00-0500",
                                       "0001-01-01T00:00:00.123456789z",
                                       "9999-12-31T23:59:59+14"};
    static const char *const bad[] = {"not a time",
                                      "",
                                      "-1e+300",
                                      "2026-13-01T00:00:00Z",
                                      "2026-02-29T00:00:00Z",
                                      "2026-04-31",
                                      "0000-01-01",
                                      "2026-01-10T24:00:00Z",
                                      "2026-01-10T09:60:00Z",
                                      "2026-01-10T09:00:60Z",
                                      "2026-01-10T09:00:00.Z",
                                      "2026-01-10T09:00:00.1234567890Z",
                                      "2026-01-10T09:00:00+15:00",
                                      "2026-01-10T09:00:00ZZ",
                                      "infinity",
                                      "now",
                                      "12026-01-10",
                                      "2026-1-10",
                                      "2026-01-10T09:00:00 UTC"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        if (!agent_events_time_ok(good[i], strlen(good[i])))
            fail_msg("refused %s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (agent_events_time_ok(bad[i], strlen(bad[i])))
            fail_msg("accepted %s", bad[i]);
    /* Only the n bytes given. */
    assert_false(agent_events_time_ok("2026-01-10", 4));
}

static void test_bad_timestamps(void **state)
{
    (void)state;
    static const char piece[] = "{\"timestamp\":\"2026-01-10T09:00:00Z\"}\n"
                                "{\"timestamp\":\"not a time\"}\n"
                                "{\"timestamp\":-1e300}\n"
                                "{\"timestamp\":null}\n"
                                "{\"timestamp\":\"2026-13-01T00:00:00Z\"}\n"
                                "{\"x\":1}\n";
    uint64_t lines, malformed;
    char *text = agent_events_parse(piece, sizeof piece - 1, "t.jsonl", 0, &lines, &malformed);
    assert_non_null(text);
    assert_int_equal(lines, 6);
    assert_int_equal(malformed, 3);
    json_t *got = json_loads(text, 0, NULL);
    assert_int_equal(json_array_size(got), 3);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(got, 0), "line")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(got, 1), "line")), 4);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(got, 2), "line")), 6);
    json_decref(got);
    free(text);
}

int main(void)
{
    log_set_level(LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_time_ok),
        cmocka_unit_test(test_bad_timestamps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
