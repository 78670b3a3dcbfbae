/* Fuzz target: the ChatWise importer's reading of app.db's message columns
 * (import/chatwise_import.h): arbitrary bytes as a text column
 * (chatwise_text_json), then as the meta column (chatwise_meta_json). A
 * text column is always a string, and what is stored is always JSON that
 * PostgreSQL's jsonb takes (no NUL) and that reads back as itself. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "import/chatwise_import.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *text = chatwise_text_json(data, size);
    if (!json_is_string(text))
        abort(); /* a text column's content is never lost */
    if (memchr(data, 0, size) == NULL && json_string_length(text) == size &&
        memcmp(json_string_value(text), data, size) != 0)
        abort(); /* valid text is kept as it is */
    json_t *meta = chatwise_meta_json(text);
    json_t *row = json_pack("{s:O, s:O}", "content", text, "meta", meta);
    char *dumped = row ? json_dumps(row, JSON_COMPACT) : NULL;
    if (dumped == NULL || fuzz_json_has_nul(row))
        abort(); /* jsonb refuses NUL */
    json_t *back = json_loads(dumped, 0, NULL);
    if (back == NULL || !json_equal(back, row))
        abort();
    json_decref(back);
    free(dumped);
    json_decref(row);
    json_decref(meta);
    json_decref(text);
    return 0;
}
