/* media_store: the content-addressed store of media files under
 * DATA_DIR/media: a file is kept once, as xx/SHA256 (xx = the first two hex
 * digits), whatever chats refer to it. Blocking file I/O in bounded
 * chunks: call it on the thread pool, never on the loop. */
#ifndef PARLEY_ARCHIVE_MEDIA_STORE_H
#define PARLEY_ARCHIVE_MEDIA_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEDIA_STORE_CHUNK (256u * 1024)
/* "xx/" + 64 hex digits + NUL */
#define MEDIA_STORE_REL_MAX 68

/* Creates the store's directory (and its parents). Returns 0 or a negative
 * errno code with err. Blocking: at start-up or on the thread pool. */
int media_store_prepare(const char *root, char *err, size_t errcap);

/* Copies src into the store at root (created if missing), hashing it on
 * the way; a file already stored is not written again. src is opened
 * without following a symbolic link and must be a regular file (else
 * -ELOOP or -EINVAL). Returns 0 with sha256 (hex), rel (the path inside
 * root) and *size, or a negative errno code with err. */
int media_store_put(const char *root, const char *src, char sha256[65],
                    char rel[MEDIA_STORE_REL_MAX], uint64_t *size, char *err, size_t errcap);

/* Like media_store_put for a descriptor open for reading (in, read from
 * its current offset to its end; the caller keeps and closes it; srcname:
 * its name in messages): what an importer opened beneath its folder. */
int media_store_put_fd(const char *root, int in, const char *srcname, char sha256[65],
                       char rel[MEDIA_STORE_REL_MAX], uint64_t *size, char *err, size_t errcap);

/* Like media_store_put for a file already inside root (a download written
 * there): hashes src in place and moves it to its place (rename, no copy),
 * or removes it when that content is stored already. On an error src is
 * left for the caller to remove. */
int media_store_adopt(const char *root, const char *src, char sha256[65],
                      char rel[MEDIA_STORE_REL_MAX], uint64_t *size, char *err, size_t errcap);

/* Removes what downloads and puts of processes that no longer run left at
 * root's top (".download-PID-*", ".incoming-PID-*": a daemon killed in the
 * middle of one); files of live processes are kept. Returns 0 with
 * *removed, or a negative errno code with err. Blocking: at start-up or
 * on the thread pool. */
int media_store_sweep(const char *root, int *removed, char *err, size_t errcap);

/* True when sha256 is 64 lowercase hex digits and rel is its place in the
 * store ("xx/SHA256"): a record that says otherwise does not name a stored
 * file. */
__attribute__((warn_unused_result)) bool media_store_rel_ok(const char *sha256, const char *rel);

/* Copies the stored file of sha256 to dst (created 0644, never through a
 * symbolic link), hashing it on the way: a file whose content does not
 * match its name is not served (dst is removed). Returns 0 with *size, or
 * a negative errno code with err (-EBADMSG: the content does not match).
 * Blocking: on the thread pool. */
int media_store_get(const char *root, const char *sha256, const char *dst, uint64_t *size,
                    char *err, size_t errcap);

/* Like media_store_get into out, a descriptor open for writing (outname:
 * its name in messages). The caller removes what was written on an
 * error. Blocking: on the thread pool. */
int media_store_get_fd(const char *root, const char *sha256, int out, const char *outname,
                       uint64_t *size, char *err, size_t errcap);

#endif
