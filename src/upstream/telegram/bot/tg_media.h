/* tg_media: downloads the files of messages the Bot API connector stored:
 * claims them from the media queue (parley_bot_media_claim), reuses a file
 * already stored with the same file_unique_id, else asks getFile for its
 * path and downloads it (streamed to disk by the HTTP client) into the
 * content-addressed media store. At most TG_MEDIA_MAX_ACTIVE transfers run
 * at once; files above the size limit (20 MB on the public Bot API; more
 * with a self-hosted server) are recorded as errors saying so.
 * tg_media_fetch takes one file ahead of the queue for a caller that waits
 * for it (mediaDownload), reporting progress as the bytes arrive. */
#ifndef PARLEY_UPSTREAM_TELEGRAM_BOT_TG_MEDIA_H
#define PARLEY_UPSTREAM_TELEGRAM_BOT_TG_MEDIA_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "db/pool.h"
#include "net/http_client.h"

#define TG_MEDIA_MAX_ACTIVE    4
#define TG_MEDIA_DEFAULT_LIMIT (20u << 20)
#define TG_MEDIA_IDLE_MS       5000
#define TG_MEDIA_MAX_URGENT    4     /* fetches for waiting callers beyond MAX_ACTIVE */
#define TG_MEDIA_MAX_WAITERS   256   /* callers waiting for files at once */
#define TG_MEDIA_PROGRESS_MS   250   /* how often waiters hear of progress */
#define TG_MEDIA_STALL_MS      60000 /* a download with no byte for this long fails */
/* A download that failed for a passing reason (network, server error,
 * truncated body, store not writable) is retried after
 * TG_MEDIA_RETRY_BASE_MS, doubling with each attempt up to the configured
 * maximum (TG_MEDIA_RETRY_MAX_MS by default), and never given up. Other
 * failures (the Bot API refuses the file) are retried a few times by the
 * queue's own rule. */
#define TG_MEDIA_RETRY_BASE_MS 2000
#define TG_MEDIA_RETRY_MAX_MS  300000
/* Failures of one kind are logged at most this often (the rest counted). */
#define TG_MEDIA_LOG_EVERY_MS 60000

typedef struct tg_media_s tg_media_t;

typedef struct tg_media_config_s {
    const char *api_url; /* without a trailing slash */
    const char *token;
    const char *media_root;
    uint64_t max_bytes;    /* 0: TG_MEDIA_DEFAULT_LIMIT */
    uint32_t stall_ms;     /* 0: TG_MEDIA_STALL_MS */
    uint32_t retry_max_ms; /* 0: TG_MEDIA_RETRY_MAX_MS */
    const char *owner;     /* this daemon's claims (connector_env_t.owner) */
} tg_media_config_t;

int tg_media_new(uv_loop_t *loop, net_client_t *net, pg_pool_t *rw, const tg_media_config_t *cfg,
                 tg_media_t **out);

/* The account whose chats' files are fetched; starts the work. */
void tg_media_set_account(tg_media_t *m, int64_t account);

/* New files may be waiting (after an ingest). */
void tg_media_kick(tg_media_t *m);

uint64_t tg_media_stored(const tg_media_t *m);

/* Downloads in flight now. */
int tg_media_active(const tg_media_t *m);

/* Failed download attempts since start: the upstream's (getFile or the
 * transfer failed or was cut short) and the store's (the file could not
 * be written: disk full, file size limit, permissions). Each is retried. */
uint64_t tg_media_failures(const tg_media_t *m, bool store);

typedef struct tg_media_wait_s tg_media_wait_t;

/* bytes received so far of total (0: unknown). */
typedef void (*tg_media_progress_cb)(void *data, uint64_t bytes, uint64_t total);

/* status 0 with json, the media row as stored (state "done": sha256,
 * local_path, size; or state "error" with error, "unavailable", ...), or
 * a negative code with error (UV_ECANCELED when the daemon stops). */
typedef void (*tg_media_fetch_cb)(void *data, int status, const char *json, const char *error);

/* Downloads the first file of (chat, message) now, or joins its download
 * already running here. progress runs every TG_MEDIA_PROGRESS_MS while
 * bytes arrive; done runs once. Returns 0 with *out (valid until done
 * runs, for tg_media_fetch_cancel), or UV_EBUSY (too many waiters),
 * UV_ENOMEM, UV_ECANCELED (closing); then nothing is called. */
int tg_media_fetch(tg_media_t *m, int64_t chat, int64_t message, tg_media_progress_cb progress,
                   tg_media_fetch_cb done, void *data, tg_media_wait_t **out);

/* The caller stops waiting: neither callback runs again. The download
 * itself goes on and is stored. */
void tg_media_fetch_cancel(tg_media_wait_t *w);

/* Stops; cb(data) once no transfer is in flight. */
void tg_media_close(tg_media_t *m, void (*cb)(void *data), void *data);

#endif
