/* beneath: opening a file that a client named, under a root directory the
 * operator configured (the upload root, the export root, the media store),
 * without following a symbolic link anywhere on the way and without ever
 * waiting on a FIFO or a device. The path is walked component by component
 * from a descriptor of the root with openat(O_NOFOLLOW | O_DIRECTORY), so
 * a directory swapped for a symbolic link between a check and a use is
 * never followed; ".." is refused; the root itself may be a symbolic link
 * (the operator's setting). A file opened for reading is opened once,
 * O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, and fstat-checked to be a
 * regular file: the descriptor, never the path, is what gets read later.
 *
 * The synchronous functions make blocking system calls on paths: call them
 * on the thread pool (beneath_open_read_async does), never on the loop. */
#ifndef PARLEY_UTIL_BENEATH_H
#define PARLEY_UTIL_BENEATH_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/* Components of a path walked at most. */
#define BENEATH_DEPTH_MAX 64
/* Bytes of a path (root or client path) taken at most. */
#define BENEATH_PATH_MAX 4096

/* Opens the directory holding path's last component: path is relative to
 * root, or absolute and inside root (as given or with symbolic links
 * resolved). "." and empty components are skipped. Returns a directory
 * descriptor (O_CLOEXEC; the caller closes it) with the last component in
 * last, or a negative errno code: -EXDEV (an absolute path outside root),
 * -EPERM (a ".." component), -EISDIR (path names root itself),
 * -ENAMETOOLONG, -ELOOP or -ENOTDIR (a symbolic link or a file where a
 * directory was expected), -ENOENT, or -ENXIO (root itself cannot be
 * opened as a directory). */
int beneath_parent(const char *root, const char *path, char *last, size_t lastcap);

/* Opens path under root for reading (see the file comment). Returns the
 * descriptor (the caller owns it) with *size, or a negative errno code:
 * those of beneath_parent, -ELOOP (path is a symbolic link), -EINVAL (not
 * a regular file: a directory, a FIFO, a device), -EFBIG (larger than
 * max_bytes; 0: no limit). */
int beneath_open_read(const char *root, const char *path, uint64_t max_bytes, uint64_t *size);

/* status: a descriptor (>= 0, now the callback's to own and close) with
 * size, or a negative code as beneath_open_read's. */
typedef void (*beneath_open_cb)(void *data, int status, uint64_t size);

/* beneath_open_read on the thread pool; cb runs on the loop, exactly once
 * unless this returns an error (UV_ENOMEM, UV_ENAMETOOLONG, or
 * uv_queue_work's). root and path are copied. */
int beneath_open_read_async(uv_loop_t *loop, const char *root, const char *path, uint64_t max_bytes,
                            beneath_open_cb cb, void *data);

#endif
