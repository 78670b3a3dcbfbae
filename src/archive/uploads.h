/* uploads: files given to parley to send (the inline toolset's
 * files_upload): bytes in base64 (or a data: URL), or a URL fetched under
 * the address policy (net/addr_policy.h: https only unless allowed, no
 * credentials, never a loopback, private, link-local, reserved, CGNAT,
 * multicast, unique-local or mapped address — checked on the address
 * actually connected to, redirects included, at most NET_MAX_REDIRECTS).
 * A file is stored in the content-addressed media store and recorded in
 * the uploads table (parley_upload_store), which answers {fileId,
 * fileUniqueId, kind, size, mimeType, fileName, uri}. Decoding, hashing and
 * copying run on the thread pool; the fetch on the daemon's HTTP client.
 * Bounded by max_bytes, and by UPLOADS_MAX_ACTIVE at once. */
#ifndef PARLEY_ARCHIVE_UPLOADS_H
#define PARLEY_ARCHIVE_UPLOADS_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "archive/archive.h"

typedef struct net_client_s net_client_t;

#define UPLOADS_MAX_ACTIVE 8
#define UPLOADS_NAME_MAX   200 /* bytes of a stored file name */

typedef struct uploads_s uploads_t;
typedef struct uploads_op_s uploads_op_t;

typedef struct uploads_config_s {
    const char *media_root;
    uint64_t max_bytes;
} uploads_config_t;

/* status 0 with json (the record), or a negative code with error, in
 * words for the model (UV_EINVAL: the input; UV_EACCES: the address policy;
 * UV_E2BIG: too large; UV_ETIMEDOUT; UV_ECANCELED). */
typedef void (*uploads_cb)(void *data, int status, const char *json, const char *error);

/* net may be NULL: then URLs are refused. All borrowed for u's life. */
int uploads_new(uv_loop_t *loop, archive_t *ar, net_client_t *net, const uploads_config_t *cfg,
                uploads_t **out);
/* After the loop ended (nothing may be in flight). */
void uploads_free(uploads_t *u);

/* Stores source: base64 text or a data: URL, or (is_url) a URL to fetch.
 * file_name, mime_type: NULL to derive them. Returns 0 with *op (for
 * uploads_cancel until cb; op may be NULL), or a negative code with err in
 * words for the model, without calling back: UV_EBUSY, UV_EINVAL (a bad
 * data: URL), UV_EACCES (the URL is refused), UV_ENOTSUP (no fetching),
 * UV_ENOMEM. */
int uploads_put(uploads_t *u, const char *source, bool is_url, const char *file_name,
                const char *mime_type, uploads_cb cb, void *data, uploads_op_t **op, char *err,
                size_t errcap);

/* Stops op; cb runs with UV_ECANCELED (at once, or when the step on the
 * thread pool returns). */
void uploads_cancel(uploads_op_t *op);

#endif
