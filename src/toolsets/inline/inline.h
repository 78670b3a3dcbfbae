/* inline: the inline toolset (../shared/specs/inline-v2-tools.md):
 * task-first chat tools over the same store as the telegram toolset, so
 * that "the last message I sent to Dena" takes two calls. Conversations
 * are found by a ranked lookup (a person's name, a title or an id; a
 * direct chat preferred), messages are read by chat or person with
 * direction, time (relative dates in the configured timezone), content
 * and unread filters. Each tool's SQL function is parley_inline_<tool>
 * (src/db/sql/inline/). Names are listed with underscores and accepted
 * with dots too (conversations.list). */
#ifndef PARLEY_TOOLSETS_INLINE_INLINE_H
#define PARLEY_TOOLSETS_INLINE_INLINE_H

#include "toolsets/toolset.h"

extern const mcp_toolset_t toolset_inline_mcp;

/* Builds the context: the store and the timezone (checked here: an IANA
 * name known to the system, or UTC). */
int inline_open(const toolset_env_t *env, void **ctx, char *err, size_t errcap);
void inline_close(void *ctx);
/* inline://chat/{chatId} for each chat of a store event, and
 * inline://chat/{chatId}/message/{messageId} for each message (see
 * toolset_t.store_changed). */
void inline_store_changed(const json_t *event, toolset_uri_cb updated, void *data);

#endif
