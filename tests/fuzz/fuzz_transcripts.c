/* Fuzz target: the agent transcript importer's reading of a piece of a
 * JSON Lines file, in both formats (agent_events_parse: Claude Code's;
 * codex_events_parse: Codex CLI's rollouts), over arbitrary bytes. Every
 * line is counted; each event is an object, numbered within the piece and
 * in order, and the events read back as JSON that PostgreSQL's jsonb
 * takes (no NUL); a Codex event is of the session given. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "import/agent_events.h"
#include "import/codex_events.h"
#include "fuzz_util.h"
#include "util/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_set_level(LOG_OFF); /* one warning per malformed line */
    return 0;
}

static void check(const uint8_t *data, size_t size, bool codex)
{
    const uint64_t first = 41;
    uint64_t lines, malformed, newlines = 0;
    for (size_t i = 0; i < size; i++)
        newlines += data[i] == '\n';
    char *text = codex ? codex_events_parse((const char *)data, size, "fuzz.jsonl", "sid", first,
                                            &lines, &malformed)
                       : agent_events_parse((const char *)data, size, "fuzz.jsonl", first, &lines,
                                            &malformed);
    if (text == NULL)
        abort();
    if (lines != newlines + (size > 0 && data[size - 1] != '\n') || malformed > lines)
        abort(); /* every line counted */
    json_t *events = json_loads(text, 0, NULL);
    if (!json_is_array(events) || json_array_size(events) + malformed > lines ||
        fuzz_json_has_nul(events))
        abort();
    size_t i;
    json_t *e;
    json_int_t last = (json_int_t)first;
    json_array_foreach(events, i, e)
    {
        json_int_t line = json_integer_value(json_object_get(e, "line"));
        json_t *ev = json_object_get(e, "event");
        if (!json_is_object(ev) || line <= last || line > (json_int_t)(first + lines))
            abort();
        const char *sid = json_string_value(json_object_get(ev, "sessionId"));
        if (codex && (sid == NULL || strcmp(sid, "sid") != 0))
            abort();
        last = line;
    }
    json_decref(events);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check(data, size, false);
    check(data, size, true);
    return 0;
}
