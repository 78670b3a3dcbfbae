/* tg_connector: the Telegram Bot API account as a connector (see
 * upstream/connector.h): the typed verbs map onto Bot API methods of
 * tg_bot, downloads onto tg_media, and the job classes "telegram.sync" and
 * "telegram.metadata" onto tg_jobs. A bot sends, administers the groups it
 * is an admin of, reads chat info and receives new messages in real time;
 * it cannot read history, list its dialogs, join by invite, or add
 * members, and says so. */
#ifndef PARLEY_UPSTREAM_TELEGRAM_BOT_TG_CONNECTOR_H
#define PARLEY_UPSTREAM_TELEGRAM_BOT_TG_CONNECTOR_H

#include "db/pool.h"
#include "upstream/connector.h"
#include "upstream/connectors.h"
#include "upstream/telegram/bot/tg_bot.h"

typedef struct tg_connector_s tg_connector_t;

/* Wraps bot (borrowed; it outlives the connector). rw is the pool the job
 * executors write to. Returns 0 or UV_ENOMEM. */
int tg_connector_new(tg_bot_t *bot, pg_pool_t *rw, tg_connector_t **out);
void tg_connector_free(tg_connector_t *tc);

/* The connector interface of tc (valid until tg_connector_free). */
connector_t *tg_connector_get(tg_connector_t *tc);

/* The Telegram Bot API connector as the entry starts it (connectors.h):
 * wanted when telegram_bot_token is set; owns its HTTP client, its bot
 * (polling in real time, media into DATA_DIR/media) and its job classes. */
extern const connector_def_t tg_connector_def;

#endif
