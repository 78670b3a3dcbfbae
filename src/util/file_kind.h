/* file_kind: the words for a path that is not a regular file, one phrasing
 * for every message that refuses or skips one ("a FIFO, not a regular
 * file"): the settings and secret files, the files an import reads. */
#ifndef PARLEY_UTIL_FILE_KIND_H
#define PARLEY_UTIL_FILE_KIND_H

#include <sys/stat.h>

/* "a directory, not a regular file", "a FIFO, not a regular file", ... for
 * an st_mode (lstat's view: a symbolic link is named); "not a regular
 * file" for any other kind. A static string. */
const char *file_kind_not_regular(mode_t mode);

#endif
