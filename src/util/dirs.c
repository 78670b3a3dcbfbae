/* dirs: mkdir -p for the daemon's own directories (see dirs.h). */
#include "util/dirs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int dirs_make(const char *dir, char *err, size_t errcap)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
        snprintf(err, errcap, "%.200s...: path too long", dir);
        return -ENAMETOOLONG;
    }
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
            int e = errno;
            snprintf(err, errcap, "%.200s: %s", p, strerror(e));
            return -e;
        }
        if ((*s = c) == '\0')
            return 0;
    }
}
