/* regex_guard: the back-reference check of a caller's regex (see
 * regex_guard.h). A scan of the text, no compilation: bracket
 * expressions are skipped (an escape inside one is a character, never a
 * back-reference), escapes elsewhere looked at. */
#include "archive/regex_guard.h"

#include <string.h>

/* The end of the bracket expression opening at rx[i] ('['): the index
 * after its ']', or the text's end when it has none (PostgreSQL refuses
 * that regex itself). */
static size_t bracket_end(const char *rx, size_t i)
{
    i++;
    if (rx[i] == '^')
        i++;
    if (rx[i] == ']') /* a ']' first is a member */
        i++;
    while (rx[i] != '\0' && rx[i] != ']') {
        if (rx[i] == '[' && (rx[i + 1] == ':' || rx[i + 1] == '.' || rx[i + 1] == '=')) {
            /* [:class:], [.coll.], [=equiv=]: up to the same two closing */
            char kind = rx[i + 1];
            const char *end = rx + i + 2;
            while (*end != '\0' && !(end[0] == kind && end[1] == ']'))
                end++;
            if (*end == '\0')
                return (size_t)(end - rx);
            i = (size_t)(end - rx) + 2;
        } else if (rx[i] == '\\' && rx[i + 1] != '\0') {
            i += 2; /* an escape inside brackets is one character */
        } else {
            i++;
        }
    }
    return rx[i] == ']' ? i + 1 : i;
}

bool archive_regex_has_backref(const char *rx, size_t *at)
{
    if (rx == NULL || strncmp(rx, "***=", 4) == 0)
        return false; /* all of it literal */
    size_t i = strncmp(rx, "***:", 4) == 0 ? 4 : 0;
    if (rx[i] == '(' && rx[i + 1] == '?') {
        /* embedded options at the start: (?q) makes the rest literal */
        size_t j = i + 2;
        while (rx[j] >= 'a' && rx[j] <= 'z') {
            if (rx[j] == 'q')
                return false;
            j++;
        }
    }
    while (rx[i] != '\0') {
        if (rx[i] == '[') {
            i = bracket_end(rx, i);
        } else if (rx[i] == '\\') {
            char n = rx[i + 1];
            if ((n >= '1' && n <= '9') || n == 'k') {
                if (at)
                    *at = i;
                return true;
            }
            i += n != '\0' ? 2 : 1;
        } else {
            i++;
        }
    }
    return false;
}
