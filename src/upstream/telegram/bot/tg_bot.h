/* tg_bot: the Telegram Bot API connector. With a bot token it identifies
 * the bot (getMe, stored as the telegram_bot account), then long-polls
 * getUpdates (message, edited_message, channel_post, edited_channel_post,
 * message_reaction, my_chat_member, chat_member). Each batch is staged
 * with its new offset in one short transaction (parley_bot_stage), which
 * lets the next getUpdates (confirming the batch to the Bot API) go out at
 * once while the staged batches are applied beside it, oldest first,
 * several in one transaction that also deletes them
 * (parley_bot_apply_staged), so no update is lost or applied twice across
 * kill -9, restarts and database restarts; a small batch with nothing
 * staged is staged and applied in one transaction (parley_bot_ingest). One daemon polls a bot at a
 * time: it holds a PostgreSQL advisory lock on a connection of its own (db/lock.h), released by the
 * server the moment that daemon dies, so another one (or a restart) takes
 * over within seconds; the lease row in sync_state records who polls. 429
 * waits retry_after; 409 (another poller) and 401/404 (a bad
 * token) are reported in the state and the log; network errors, 5xx and
 * bodies that are not JSON back off exponentially with jitter. Sending goes
 * through a bounded queue paced per chat and overall; a sent message is
 * stored when the Bot API confirms it. The token is part of every URL and
 * appears in no log, error or result. */
#ifndef PARLEY_UPSTREAM_TELEGRAM_BOT_TG_BOT_H
#define PARLEY_UPSTREAM_TELEGRAM_BOT_TG_BOT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "db/pool.h"
#include "net/http_client.h"
#include "upstream/telegram/bot/tg_media.h"

#define TG_BOT_DEFAULT_API_URL  "https://api.telegram.org"
#define TG_BOT_POLL_TIMEOUT_S   25
#define TG_BOT_BACKOFF_MIN_MS   500
#define TG_BOT_BACKOFF_MAX_MS   30000
#define TG_BOT_SEND_QUEUE_MAX   256
#define TG_BOT_LEASE_S          30   /* the lease row's freshness beyond one poll */
#define TG_BOT_SEND_PER_CHAT_MS 1000 /* about one message a second per chat */
#define TG_BOT_SEND_GLOBAL_MS   34   /* about thirty a second overall */
/* Staged batches applied in one transaction at most (a getUpdates batch
 * holds up to 100 updates). */
#define TG_BOT_APPLY_BATCHES_MAX 16
/* The poller waits before the next getUpdates while this many batches are
 * staged and not applied (the database is behind). */
#define TG_BOT_STAGED_MAX 32
/* A batch of at most this many updates, with nothing staged or being
 * applied, is staged and applied in one transaction (parley_bot_ingest):
 * one commit, not two, before a trickle of updates is stored. Fuller
 * batches (a backlog) are staged, so the next poll need not wait. */
#define TG_BOT_DIRECT_MAX 10

typedef struct tg_bot_s tg_bot_t;

typedef struct tg_bot_config_s {
    const char *token;
    const char *api_url;
    int poll_timeout_s;
    bool realtime;               /* poll from the start */
    const char *media_root;      /* where downloaded files go (NULL: no downloads) */
    uint64_t file_limit;         /* largest file to download (0: the public Bot API's 20 MB) */
    uint32_t media_stall_ms;     /* 0: TG_MEDIA_STALL_MS */
    uint32_t media_retry_max_ms; /* 0: TG_MEDIA_RETRY_MAX_MS */
    const char *owner;           /* this daemon's media claims */
    /* The database, for the poller's lock connection (db/lock.h). */
    const pg_conninfo_t *conninfo;
    uint32_t connect_timeout_ms;
} tg_bot_config_t;

/* status 0 with json (the stored message as the Bot API returned it), or
 * a negative code with error (never containing the token). */
typedef void (*tg_bot_send_cb)(void *data, int status, const char *json, const char *error);

int tg_bot_start(uv_loop_t *loop, net_client_t *net, pg_pool_t *rw, const tg_bot_config_t *cfg,
                 tg_bot_t **out, char *err, size_t errcap);

/* Starts or stops polling. */
void tg_bot_set_realtime(tg_bot_t *b, bool on);
__attribute__((warn_unused_result)) bool tg_bot_realtime(const tg_bot_t *b);

/* "starting", "polling", "backoff", "conflict", "unauthorized", "stopped",
 * "standby" (another daemon polls this bot). */
const char *tg_bot_state(const tg_bot_t *b);
/* The bot's accounts.id (0 until getMe was stored). */
int64_t tg_bot_account(const tg_bot_t *b);
uint64_t tg_bot_updates_applied(const tg_bot_t *b);

/* Figures for /metrics. */
typedef struct tg_bot_stats_s {
    uint64_t updates_applied;
    int sends_queued;               /* waiting or being sent */
    int media_active;               /* downloads in flight */
    uint64_t media_stored;          /* files downloaded into the store */
    uint64_t media_failed_upstream; /* download attempts the Bot API failed */
    uint64_t media_failed_store;    /* download attempts the store could not keep */
} tg_bot_stats_t;

void tg_bot_stats(const tg_bot_t *b, tg_bot_stats_t *out);

/* Appends the connector's Prometheus figures (updates applied, send queue,
 * media downloads) to out. */
struct buf_s;
void tg_bot_metrics(const tg_bot_t *b, struct buf_s *out);

/* The media downloader (NULL: downloads are off). */
tg_media_t *tg_bot_media(const tg_bot_t *b);

/* Queues sendMessage. topic and reply_to: 0 for none. Returns 0, UV_EBUSY
 * (queue full) or UV_ENOMEM; cb runs later. */
int tg_bot_send_message(tg_bot_t *b, int64_t chat, const char *text, int64_t topic,
                        int64_t reply_to, tg_bot_send_cb cb, void *data);

/* Queues sendDocument of the open regular file fd (opened and checked by
 * the caller; read from offset 0 when its turn comes), paced like
 * messages. fd is the queue's from the call on: closed once sent or
 * failed, and by this function when it returns an error. filename: the
 * name sent (NULL: "file"); caption: NULL for none; topic, reply_to: 0 for
 * none. */
int tg_bot_send_file(tg_bot_t *b, int64_t chat, int fd, const char *caption, const char *filename,
                     int64_t topic, int64_t reply_to, tg_bot_send_cb cb, void *data);

/* Calls Bot API method with a JSON body (not paced; for administration).
 * cb gets the method's "result" as JSON text. Returns 0 or UV_ENOMEM. */
int tg_bot_call(tg_bot_t *b, const char *method, const char *body, tg_bot_send_cb cb, void *data);

/* Stops polling and sending (queued sends fail with UV_ECANCELED); cb runs
 * once nothing is in flight. */
void tg_bot_close(tg_bot_t *b, void (*cb)(tg_bot_t *b, void *data), void *data);

#endif
