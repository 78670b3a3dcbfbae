/* tg_media: downloads the files of messages the Bot API connector stored:
 * claims them from the media queue (parley_bot_media_claim), reuses a file
 * already stored with the same file_unique_id, else asks getFile for its
 * path and downloads it (streamed to disk by the HTTP client) into the
 * content-addressed media store. At most TG_MEDIA_MAX_ACTIVE transfers run
 * at once; files above the size limit (20 MB on the public Bot API; more
 * with a self-hosted server) are recorded as errors saying so. */
#ifndef PARLEY_UPSTREAM_TG_MEDIA_H
#define PARLEY_UPSTREAM_TG_MEDIA_H

#include <stdint.h>
#include <uv.h>

#include "db/pool.h"
#include "net/http_client.h"

#define TG_MEDIA_MAX_ACTIVE    4
#define TG_MEDIA_DEFAULT_LIMIT (20u << 20)
#define TG_MEDIA_IDLE_MS       5000

typedef struct tg_media_s tg_media_t;

typedef struct tg_media_config_s {
    const char *api_url; /* without a trailing slash */
    const char *token;
    const char *media_root;
    uint64_t max_bytes; /* 0: TG_MEDIA_DEFAULT_LIMIT */
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

/* Stops; cb(data) once no transfer is in flight. */
void tg_media_close(tg_media_t *m, void (*cb)(void *data), void *data);

#endif
