/* regex_guard: what the archive refuses in a regex a caller gives before
 * it reaches PostgreSQL. PostgreSQL's regex engine (ARE) matches a
 * back-reference (\1 .. \9, \mnn) by trying every way to split the text
 * among the groups it repeats: "(.*)(.*)(.*)\3\2\1x" held a core for the
 * whole statement timeout on 200,000 messages. So a regex holding one is
 * refused, and the rest run under the archive's regex time limit
 * (archive.h: ARCHIVE_REGEX_TIMEOUT_MS), which also bounds patterns that
 * are slow without one (nested quantifiers such as (a+)+). */
#ifndef PARLEY_ARCHIVE_REGEX_GUARD_H
#define PARLEY_ARCHIVE_REGEX_GUARD_H

#include <stdbool.h>
#include <stddef.h>

/* True when rx (as ~* reads it, in any of its syntaxes) may hold a
 * back-reference: anywhere, a backslash (not itself escaped) followed by a
 * digit 1-9 (a back-reference or, rarely, an octal escape: refused alike)
 * or by k (\k<name>, a named back-reference of other engines). *at gets
 * its byte offset. A regex made literal by the ***= director or a (?q)
 * option holds none. */
__attribute__((warn_unused_result)) bool archive_regex_has_backref(const char *rx, size_t *at);

#endif
