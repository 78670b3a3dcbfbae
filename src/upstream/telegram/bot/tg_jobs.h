/* tg_jobs: what the sync_jobs classes mean with the Telegram Bot API
 * connector: "sync" (history backfill) cannot be done by a bot, so the job
 * goes idle saying that new messages arrive in real time; "metadata"
 * refreshes a chat with getChat. */
#ifndef PARLEY_UPSTREAM_TELEGRAM_BOT_TG_JOBS_H
#define PARLEY_UPSTREAM_TELEGRAM_BOT_TG_JOBS_H

#include "db/pool.h"
#include "sync/jobs.h"
#include "upstream/telegram/bot/tg_bot.h"

typedef struct tg_jobs_ctx_s {
    tg_bot_t *bot;
    pg_pool_t *rw;
} tg_jobs_ctx_t;

void tg_jobs_sync(sync_job_t *job, void *ctx);
void tg_jobs_metadata(sync_job_t *job, void *ctx);

#endif
