/* regex_guard: the back-reference check of a caller's regex (see
 * regex_guard.h). A scan of the text, no compilation, and no parsing of
 * its syntax: every escape is looked at, inside a bracket expression too.
 * What a bracket is depends on options the text can set ((?b): a
 * backslash in one is a character; (?x): '#' starts a comment in which a
 * '[' opens nothing), so a scan that skipped brackets could be led past
 * a live back-reference. In the syntax users write (ARE) an escape such
 * as \1 inside brackets is an error anyway. */
#include "archive/regex_guard.h"

#include <string.h>

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
        if (rx[i] == '\\') {
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
