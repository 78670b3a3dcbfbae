/* beneath: files a client named, opened under a root without following a
 * symbolic link (see beneath.h). */
#include "util/beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Flags of every directory opened on the way. */
#define BENEATH_DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)

/* The part of path below root when path is absolute and starts with prefix
 * (a directory, no trailing '/'), or NULL. */
static const char *below(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    while (n > 1 && prefix[n - 1] == '/')
        n--;
    if (n == 1 && prefix[0] == '/')
        return path + 1;
    if (strncmp(path, prefix, n) != 0 || (path[n] != '/' && path[n] != '\0'))
        return NULL;
    return path + n;
}

int beneath_parent(const char *root, const char *path, char *last, size_t lastcap)
{
    if (strlen(root) >= BENEATH_PATH_MAX || strlen(path) >= BENEATH_PATH_MAX)
        return -ENAMETOOLONG;
    const char *rel = path;
    if (path[0] == '/') {
        rel = below(path, root);
        if (rel == NULL) {
            char real[PATH_MAX];
            if (realpath(root, real) == NULL)
                return -ENXIO;
            rel = below(path, real);
        }
        if (rel == NULL)
            return -EXDEV;
    }
    char copy[BENEATH_PATH_MAX];
    snprintf(copy, sizeof copy, "%s", rel);
    const char *comp[BENEATH_DEPTH_MAX];
    int n = 0;
    for (char *save = NULL, *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (strcmp(t, ".") == 0)
            continue;
        if (strcmp(t, "..") == 0)
            return -EPERM;
        if (n == BENEATH_DEPTH_MAX)
            return -ENAMETOOLONG;
        comp[n++] = t;
    }
    if (n == 0)
        return -EISDIR;
    if (strlen(comp[n - 1]) >= lastcap)
        return -ENAMETOOLONG;
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -ENXIO;
    for (int i = 0; i + 1 < n; i++) {
        int next = openat(fd, comp[i], BENEATH_DIR_FLAGS);
        int err = errno;
        close(fd);
        if (next < 0)
            return -err;
        fd = next;
    }
    snprintf(last, lastcap, "%s", comp[n - 1]);
    return fd;
}

int beneath_open_read(const char *root, const char *path, uint64_t max_bytes, uint64_t *size)
{
    char last[NAME_MAX + 1];
    int dir = beneath_parent(root, path, last, sizeof last);
    if (dir < 0)
        return dir;
    /* O_NONBLOCK: a FIFO opens at once (and is refused below) instead of
     * waiting for a writer; O_NOFOLLOW: a symbolic link fails (ELOOP). */
    int fd = openat(dir, last, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    int err = errno;
    close(dir);
    if (fd < 0)
        return -err;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        err = errno;
        close(fd);
        return -err;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    if (max_bytes > 0 && (uint64_t)st.st_size > max_bytes) {
        close(fd);
        return -EFBIG;
    }
    /* A regular file: reads never wait anyway; later readers get a plain
     * descriptor. */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    *size = (uint64_t)st.st_size;
    return fd;
}

/* ---- on the thread pool ----------------------------------------------------------- */

typedef struct open_op_s {
    uv_work_t work;
    char *root, *path;
    uint64_t max_bytes;
    int status;
    uint64_t size;
    beneath_open_cb cb;
    void *data;
} open_op_t;

static void open_work(uv_work_t *w)
{
    open_op_t *op = w->data;
    op->status = beneath_open_read(op->root, op->path, op->max_bytes, &op->size);
}

static void open_after(uv_work_t *w, int status)
{
    open_op_t *op = w->data;
    int rc = op->status;
    if (status != 0) {
        /* Cancelled before it ran: nothing was opened. */
        rc = status;
    }
    op->cb(op->data, rc, rc >= 0 ? op->size : 0);
    free(op->root);
    free(op->path);
    free(op);
}

int beneath_open_read_async(uv_loop_t *loop, const char *root, const char *path, uint64_t max_bytes,
                            beneath_open_cb cb, void *data)
{
    if (strlen(root) >= BENEATH_PATH_MAX || strlen(path) >= BENEATH_PATH_MAX)
        return UV_ENAMETOOLONG;
    open_op_t *op = calloc(1, sizeof *op);
    if (op == NULL || (op->root = strdup(root)) == NULL || (op->path = strdup(path)) == NULL) {
        if (op)
            free(op->root);
        free(op);
        return UV_ENOMEM;
    }
    op->max_bytes = max_bytes;
    op->cb = cb;
    op->data = data;
    op->work.data = op;
    int rc = uv_queue_work(loop, &op->work, open_work, open_after);
    if (rc != 0) {
        free(op->root);
        free(op->path);
        free(op);
    }
    return rc;
}
