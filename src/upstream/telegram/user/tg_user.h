/* tg_user: Telegram user accounts as a connector, through TDLib (loaded at
 * run time: upstream/tdjson.h). An account is signed in once with
 * `parleyd login telegram --phone +NNN` (this connector's login); serve
 * then runs every account signed in under the data directory: its chats
 * and their updates go to the store, its history is backfilled by the job
 * class "telegram.history", and it sends where the bot cannot. Files and
 * life of an account: tg_user_internal.h. */
#ifndef PARLEY_UPSTREAM_TELEGRAM_USER_TG_USER_H
#define PARLEY_UPSTREAM_TELEGRAM_USER_TG_USER_H

#include "upstream/connectors.h"

/* Wanted when an account is signed in under DATA_DIR/telegram/; needs
 * telegram_api_id and telegram_api_hash, and TDLib (telegram_tdjson). */
extern const connector_def_t tg_user_connector_def;

#endif
