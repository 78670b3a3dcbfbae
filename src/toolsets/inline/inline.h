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

/* The toolset's row of the table of toolsets (toolsets.c). */
extern const toolset_t toolset_inline;

#endif
