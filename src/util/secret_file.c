/* secret_file: opening settings and secret files without blocking, the
 * one mode rule for secrets (see secret_file.h). */
#include "util/secret_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "util/file_kind.h"

bool secret_file_mode_ok(const struct stat *st)
{
    mode_t forbidden = st->st_uid == 0 ? 0037 : 0077;
    return (st->st_mode & forbidden) == 0;
}

void secret_file_mode_error(const char *what, const char *path, const struct stat *st, char *err,
                            size_t errcap)
{
    snprintf(err, errcap,
             "%s%s%s: holds a secret and others can read it (mode %04o); chmod 600 it (or 640, "
             "owned by root)",
             what ? what : "", what ? " " : "", path, (unsigned)(st->st_mode & 07777));
}

int secret_file_open(const char *path, unsigned flags, const char *what, int *fd, struct stat *st,
                     char *err, size_t errcap)
{
    const char *w = what ? what : "", *sp = what ? " " : "";
    *fd = -1;
    int oflags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
    if (flags & SECRET_FILE_NOFOLLOW)
        oflags |= O_NOFOLLOW;
    int f = open(path, oflags);
    if (f < 0) {
        int e = errno;
        if (e == ELOOP && (flags & SECRET_FILE_NOFOLLOW))
            snprintf(err, errcap, "%s%s%s: a symbolic link, not a regular file", w, sp, path);
        else
            snprintf(err, errcap, "%s%s%s: %s", w, sp, path, strerror(e));
        return -e;
    }
    if (fstat(f, st) != 0) {
        int e = errno;
        close(f);
        snprintf(err, errcap, "%s%s%s: %s", w, sp, path, strerror(e));
        return -e;
    }
    if (!S_ISREG(st->st_mode)) {
        close(f);
        snprintf(err, errcap, "%s%s%s: %s", w, sp, path, file_kind_not_regular(st->st_mode));
        return UV_EINVAL;
    }
    if ((flags & SECRET_FILE_PRIVATE) && !secret_file_mode_ok(st)) {
        close(f);
        secret_file_mode_error(what, path, st, err, errcap);
        return UV_EPERM;
    }
    *fd = f;
    return 0;
}

int secret_file_fopen(const char *path, unsigned flags, const char *what, FILE **f, struct stat *st,
                      char *err, size_t errcap)
{
    int fd;
    int rc = secret_file_open(path, flags, what, &fd, st, err, errcap);
    if (rc != 0)
        return rc;
    *f = fdopen(fd, "r");
    if (*f == NULL) {
        int e = errno;
        close(fd);
        snprintf(err, errcap, "%s%s%s: %s", what ? what : "", what ? " " : "", path, strerror(e));
        return -e;
    }
    return 0;
}

int secret_file_read(const char *path, unsigned flags, const char *what, void *buf, size_t cap,
                     size_t *len, char *err, size_t errcap)
{
    int fd;
    struct stat st;
    int rc = secret_file_open(path, flags, what, &fd, &st, err, errcap);
    if (rc != 0)
        return rc;
    size_t n = 0;
    char extra;
    while (rc == 0) {
        ssize_t r = n < cap ? read(fd, (char *)buf + n, cap - n) : read(fd, &extra, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = -errno;
            snprintf(err, errcap, "%s%s%s: %s", what ? what : "", what ? " " : "", path,
                     strerror(errno));
        } else if (r == 0) {
            break;
        } else if (n == cap) {
            rc = UV_E2BIG;
            snprintf(err, errcap, "%s%s%s: larger than %zu bytes", what ? what : "",
                     what ? " " : "", path, cap);
        } else {
            n += (size_t)r;
        }
    }
    close(fd);
    *len = n;
    return rc;
}
