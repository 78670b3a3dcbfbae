/* tg_entities: the entities a Telegram Desktop export message keeps, as
 * parley_tg_entities did in SQL: text_entities when the message has them,
 * else the parts of an array text (a string part as {"type": "plain",
 * "text": ...}); none when every run is plain text, which the text says
 * whole (Telegram Desktop writes such a list for every message). Pure;
 * the import's mapping (tg_map.c) calls it. */
#ifndef PARLEY_IMPORT_TG_ENTITIES_H
#define PARLEY_IMPORT_TG_ENTITIES_H

#include <jansson.h>
#include <stdbool.h>

/* The entities of export message m into *out (a new reference, or NULL for
 * none) and in *link whether one is a link or text_link (as the SQL
 * "entities @? '$[*] ? (@.type == \"link\" || @.type == \"text_link\")'",
 * lax: an array element is unwrapped once). 0, or UV_ENOMEM (*out NULL). */
int tg_entities_of(const json_t *m, json_t **out, bool *link);

#endif
