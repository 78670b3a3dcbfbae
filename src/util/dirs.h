/* dirs: making the daemon's own directories (the data directory and what
 * it holds) at start. Small and bounded: called before serving, never on
 * the loop's hot path. */
#ifndef PARLEY_UTIL_DIRS_H
#define PARLEY_UTIL_DIRS_H

#include <stddef.h>

/* Creates dir and its missing parents with mode 0700 (an existing one is
 * left as it is). Returns 0, or a negative errno with err naming the
 * directory that could not be made. */
int dirs_make(const char *dir, char *err, size_t errcap);

#endif
