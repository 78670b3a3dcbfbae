/* chatwise: the chatwise toolset (../shared/specs/chatwise-tools.md) over
 * the AI-assistant chats imported from ChatWise (parleyd import chatwise):
 * search_conversations (intent search aggregated per chat, with a
 * confidence and guidance that says what to call next), gather_chats (one
 * chat's timeline, or several with their common alignment) and
 * resolve_ids (ids by prefix). Each tool's SQL function answers
 * (src/db/sql/chatwise/tools.sql). */
#ifndef PARLEY_TOOLSETS_CHATWISE_CHATWISE_H
#define PARLEY_TOOLSETS_CHATWISE_CHATWISE_H

#include "toolsets/toolset.h"

/* The toolset's row of the table of toolsets (toolsets.c). */
extern const toolset_t toolset_chatwise;

#endif
