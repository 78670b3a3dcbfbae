/* Tests for import/codex_events: Codex CLI rollout records as transcript
 * events (codex_events_parse): what each record becomes, what is left out
 * (event_msg's repeated words, turn_context, encrypted reasoning), tool
 * outputs as text, older rollouts, malformed lines; the session of a
 * rollout's file name. The import itself is tested end to end
 * (tests/e2e/codex_import). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "import/codex_events.h"
#include "testutil.h"
#include "util/log.h"

#define SID "5f3a9c1e-7b2d-4e8f-9a01-0c4d2e6b8a11"

/* The events of piece, as JSON (the caller frees), with the counts. */
static json_t *parse(const char *piece, uint64_t *lines, uint64_t *malformed)
{
    char *text = codex_events_parse(piece, strlen(piece), "r.jsonl", SID, 0, lines, malformed);
    assert_non_null(text);
    json_t *got = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(got);
    return got;
}

static void expect(json_t *got, size_t i, const char *want_json)
{
    json_t *want = json_loads(want_json, 0, NULL);
    assert_non_null(want);
    json_t *ev = json_array_get(got, i);
    if (!json_equal(ev, want)) {
        char *g = json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS);
        fail_msg("event %zu: %s", i, g ? g : "none");
    }
    json_decref(want);
}

static void test_records(void **state)
{
    (void)state;
    uint64_t lines, malformed;
    json_t *got = parse(
        "{\"timestamp\":\"2026-02-03T09:00:00Z\",\"type\":\"session_meta\",\"payload\":{\"id\":"
        "\"" SID
        "\",\"timestamp\":\"x\",\"cwd\":\"/home/dev/atlas\",\"originator\":\"codex_cli_rs\","
        "\"cli_version\":\"0.46.0\",\"instructions\":\"long base instructions\"}}\n"
        "{\"timestamp\":\"2026-02-03T09:01:00Z\",\"type\":\"turn_context\",\"payload\":{\"cwd\":\"/"
        "x\",\"model\":\"gpt-5-codex\"}}\n"
        "{\"timestamp\":\"2026-02-03T09:01:00Z\",\"type\":\"response_item\",\"payload\":{\"type\":"
        "\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"Hi\"},{"
        "\"type\":\"input_image\",\"image_url\":\"data:image/png;base64,AAAA\"}]}}\n"
        "{\"timestamp\":\"2026-02-03T09:01:00Z\",\"type\":\"event_msg\",\"payload\":{\"type\":"
        "\"user_message\",\"message\":\"Hi\"}}\n"
        "{\"timestamp\":\"2026-02-03T09:02:00Z\",\"type\":\"response_item\",\"payload\":{\"type\":"
        "\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"Plan\"}],\"content\":"
        "null,\"encrypted_content\":\"gAAAsecret\"}}\n"
        "{\"type\":\"response_item\",\"payload\":{\"type\":\"reasoning\",\"summary\":[],"
        "\"encrypted_content\":\"gAAAonly\"}}\n"
        "{\"timestamp\":\"2026-02-03T09:03:00Z\",\"type\":\"response_item\",\"payload\":{\"type\":"
        "\"function_call\",\"name\":\"shell\",\"arguments\":\"{\\\"command\\\":[\\\"ls\\\"]}\","
        "\"call_id\":\"c1\"}}\n"
        "{\"type\":\"response_item\",\"payload\":{\"type\":\"function_call_output\",\"call_id\":"
        "\"c1\",\"output\":[{\"type\":\"input_text\",\"text\":\"a\"},{\"type\":\"input_image\","
        "\"image_url\":\"data:x\"}]}}\n"
        "{\"type\":\"response_item\",\"payload\":{\"type\":\"function_call_output\",\"call_id\":"
        "\"c2\",\"output\":{\"content\":\"failed\",\"success\":false}}}\n"
        "{\"type\":\"response_item\",\"payload\":{\"type\":\"custom_tool_call\",\"call_id\":\"c3\","
        "\"name\":\"apply_patch\",\"input\":\"*** Begin Patch\"}}\n"
        "{\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"developer\","
        "\"content\":[{\"type\":\"input_text\",\"text\":\"rules\"}]}}\n"
        "{\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\","
        "\"content\":[{\"type\":\"input_text\",\"text\":\"<environment_context>x\"}]}}\n"
        "{\"type\":\"response_item\",\"payload\":{\"type\":\"compaction\",\"encrypted_content\":"
        "\"gAAA\"}}\n"
        "{\"timestamp\":\"2026-02-03T09:04:00Z\",\"type\":\"compacted\",\"payload\":{\"message\":"
        "\"Summary\",\"replacement_history\":[]}}\n"
        "{\"type\":\"compacted\",\"payload\":{\"message\":\"\"}}\n"
        "{\"type\":\"event_msg\",\"payload\":{\"type\":\"agent_message\",\"message\":\"Hi\"}}\n",
        &lines, &malformed);
    assert_int_equal(lines, 16);
    assert_int_equal(malformed, 0);
    assert_int_equal(json_array_size(got), 11);
    expect(
        got, 0,
        "{\"line\":1,\"event\":{\"type\":\"session_meta\",\"sessionId\":\"" SID
        "\",\"timestamp\":\"2026-02-03T09:00:00Z\",\"id\":\"" SID
        "\",\"cwd\":\"/home/dev/atlas\",\"originator\":\"codex_cli_rs\",\"version\":\"0.46.0\"}}");
    expect(got, 1,
           "{\"line\":3,\"event\":{\"type\":\"user\",\"sessionId\":\"" SID
           "\",\"timestamp\":\"2026-02-03T09:01:00Z\",\"message\":{\"role\":\"user\",\"content\":[{"
           "\"type\":\"text\",\"text\":\"Hi\"}]}}}");
    expect(got, 2,
           "{\"line\":5,\"event\":{\"type\":\"assistant\",\"sessionId\":\"" SID
           "\",\"timestamp\":\"2026-02-03T09:02:00Z\",\"message\":{\"role\":\"assistant\","
           "\"content\":[{\"type\":\"thinking\",\"thinking\":\"Plan\"}]}}}");
    expect(got, 3,
           "{\"line\":7,\"event\":{\"type\":\"assistant\",\"sessionId\":\"" SID
           "\",\"timestamp\":\"2026-02-03T09:03:00Z\",\"message\":{\"role\":\"assistant\","
           "\"content\":[{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"shell\",\"input\":{"
           "\"command\":[\"ls\"]}}]}}}");
    expect(got, 4,
           "{\"line\":8,\"event\":{\"type\":\"user\",\"sessionId\":\"" SID
           "\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
           "\"tool_use_id\":\"c1\",\"content\":\"a\\n[image]\"}]}}}");
    expect(got, 5,
           "{\"line\":9,\"event\":{\"type\":\"user\",\"sessionId\":\"" SID
           "\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
           "\"tool_use_id\":\"c2\",\"content\":\"failed\"}]}}}");
    expect(got, 6,
           "{\"line\":10,\"event\":{\"type\":\"assistant\",\"sessionId\":\"" SID
           "\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":"
           "\"c3\",\"name\":\"apply_patch\",\"input\":\"*** Begin Patch\"}]}}}");
    expect(got, 7,
           "{\"line\":11,\"event\":{\"type\":\"system\",\"sessionId\":\"" SID
           "\",\"message\":{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":"
           "\"rules\"}]}}}");
    expect(got, 8,
           "{\"line\":12,\"event\":{\"type\":\"system\",\"sessionId\":\"" SID
           "\",\"message\":{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":"
           "\"<environment_context>x\"}]}}}");
    expect(got, 9,
           "{\"line\":14,\"event\":{\"type\":\"system\",\"sessionId\":\"" SID
           "\",\"timestamp\":\"2026-02-03T09:04:00Z\",\"subtype\":\"compact_boundary\","
           "\"content\":\"Conversation compacted\",\"isCompactSummary\":true,\"message\":{"
           "\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Summary\"}]}}}");
    expect(got, 10,
           "{\"line\":15,\"event\":{\"type\":\"system\",\"sessionId\":\"" SID
           "\",\"subtype\":\"compact_boundary\",\"content\":\"Conversation compacted\"}}");
    /* No encrypted reasoning anywhere. */
    char *all = json_dumps(got, JSON_COMPACT);
    assert_null(strstr(all, "gAAA"));
    free(all);
    json_decref(got);
}

static void test_malformed_and_older(void **state)
{
    (void)state;
    uint64_t lines, malformed;
    json_t *got = parse("not json\n"
                        "{\"timestamp\":\"soon\",\"type\":\"event_msg\",\"payload\":{}}\n"
                        "{\"payload\":{}}\n"
                        "{\"type\":\"response_item\",\"payload\":\"x\"}\n"
                        "\n"
                        /* an older rollout: its meta line, a bare item, a state line */
                        "{\"id\":\"old\",\"timestamp\":\"2025-05-01T10:00:00Z\",\"instructions\":"
                        "null}\n"
                        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":"
                        "\"output_text\",\"text\":\"Old words\"}]}\n"
                        "{\"record_type\":\"state\"}",
                        &lines, &malformed);
    assert_int_equal(lines, 8);
    assert_int_equal(malformed, 4);
    assert_int_equal(json_array_size(got), 2);
    expect(got, 0,
           "{\"line\":6,\"event\":{\"type\":\"session_meta\",\"sessionId\":\"" SID
           "\",\"timestamp\":\"2025-05-01T10:00:00Z\",\"id\":\"old\"}}");
    expect(got, 1,
           "{\"line\":7,\"event\":{\"type\":\"assistant\",\"sessionId\":\"" SID
           "\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Old "
           "words\"}]}}}");
    json_decref(got);
}

static void test_names(void **state)
{
    (void)state;
    char sid[128];
    assert_true(codex_events_is_rollout("rollout-2026-02-03T09-00-00-" SID ".jsonl"));
    assert_false(codex_events_is_rollout("notes.jsonl"));
    assert_false(codex_events_is_rollout("rollout-.json"));
    codex_events_session("rollout-2026-02-03T09-00-00-" SID ".jsonl", sid, sizeof sid);
    assert_string_equal(sid, SID);
    codex_events_session("rollout-2026-02-03T09-00-00-short.jsonl", sid, sizeof sid);
    assert_string_equal(sid, "rollout-2026-02-03T09-00-00-short");
    codex_events_session("rollout-x" SID ".jsonl", sid, sizeof sid); /* no '-' before it */
    assert_string_equal(sid, "rollout-x" SID);
}

int main(void)
{
    log_set_level(LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records),
        cmocka_unit_test(test_malformed_and_older),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
