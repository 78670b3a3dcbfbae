/* Fuzz target: the agent transcript importer's reading of a piece of a
 * JSON Lines file (agent_events_parse) over arbitrary bytes. Every line
 * is counted; each event is an object, numbered within the piece and in
 * order, and the events read back as JSON that PostgreSQL's jsonb takes
 * (no NUL). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "import/agent_events.h"
#include "fuzz_util.h"
#include "util/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_set_level(LOG_OFF); /* one warning per malformed line */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint64_t first = 41;
    uint64_t lines, malformed, newlines = 0;
    for (size_t i = 0; i < size; i++)
        newlines += data[i] == '\n';
    char *text =
        agent_events_parse((const char *)data, size, "fuzz.jsonl", first, &lines, &malformed);
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
        if (!json_is_object(json_object_get(e, "event")) || line <= last ||
            line > (json_int_t)(first + lines))
            abort();
        last = line;
    }
    json_decref(events);
    free(text);
    return 0;
}
