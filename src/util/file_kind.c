/* file_kind: the words for a path that is not a regular file (see
 * file_kind.h). */
#include "util/file_kind.h"

const char *file_kind_not_regular(mode_t m)
{
    return S_ISDIR(m)    ? "a directory, not a regular file"
           : S_ISFIFO(m) ? "a FIFO, not a regular file"
           : S_ISSOCK(m) ? "a socket, not a regular file"
           : S_ISCHR(m)  ? "a character device, not a regular file"
           : S_ISBLK(m)  ? "a block device, not a regular file"
           : S_ISLNK(m)  ? "a symbolic link, not a regular file"
                         : "not a regular file";
}
