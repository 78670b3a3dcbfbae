/* secret_file: opening the files parley reads its settings and secrets
 * from at start (the config file, the token file, the credentials and
 * requestState keys, a Telegram account's database key), one way for all:
 *
 *   - opened O_RDONLY | O_NONBLOCK | O_CLOEXEC (and O_NOFOLLOW for the
 *     files parley makes itself), so a FIFO or a device named as one never
 *     blocks the open, and fstat-checked to be a regular file, else
 *     refused at once naming the file;
 *   - a file that holds a secret follows one rule (secret_file_mode_ok):
 *     nobody but its owner and group may have any access to it, and its
 *     group may read it only when root owns it (PostgreSQL's rule for its
 *     server key: 0600, or 0640 root:parley as the Debian package installs
 *     /etc/parley.conf). Anything else is refused, naming the mode;
 *   - what is read is bounded by the caller's size.
 *
 * Synchronous: called at start or on the thread pool, never on the loop. */
#ifndef PARLEY_UTIL_SECRET_FILE_H
#define PARLEY_UTIL_SECRET_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

/* secret_file_open flags. */
#define SECRET_FILE_PRIVATE  1u /* holds a secret: the mode rule applies */
#define SECRET_FILE_NOFOLLOW 2u /* a symbolic link as the last component is refused */

/* The mode rule for files that hold secrets (see above). */
__attribute__((warn_unused_result)) bool secret_file_mode_ok(const struct stat *st);

/* Writes "WHAT PATH: others can read it (mode 0644); chmod 600 it ..." into
 * err: the one message of a refused mode. */
void secret_file_mode_error(const char *what, const char *path, const struct stat *st, char *err,
                            size_t errcap);

/* Opens path for reading as above; what names the file in messages
 * ("config file", "token file"; NULL: the path alone). On success *fd is a
 * descriptor of a regular file (the caller closes it) and *st its fstat.
 * Returns 0, or a negative errno code with err naming the file: the
 * open's error (UV_ENOENT ...), UV_EINVAL (not a regular file), UV_EPERM
 * (SECRET_FILE_PRIVATE and the mode rule fails). */
int secret_file_open(const char *path, unsigned flags, const char *what, int *fd, struct stat *st,
                     char *err, size_t errcap);

/* secret_file_open as a stdio stream: *f reads the file (the caller
 * fcloses it), *st its fstat. Returns 0, or a negative errno code with err
 * naming the file. */
int secret_file_fopen(const char *path, unsigned flags, const char *what, FILE **f, struct stat *st,
                      char *err, size_t errcap);

/* secret_file_open, then reads the whole file into buf (at most cap
 * bytes) and closes it; *len is what was read. A file larger than cap is
 * UV_E2BIG. */
int secret_file_read(const char *path, unsigned flags, const char *what, void *buf, size_t cap,
                     size_t *len, char *err, size_t errcap);

#endif
