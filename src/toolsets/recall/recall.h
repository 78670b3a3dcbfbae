/* recall: the recall toolset, one surface over every source in the store:
 * recall (one search over Telegram-style chats, AI-assistant chats, agent
 * transcripts, Bluesky posts and, when --memory-db names one, a
 * memory-lane database; one ranked list whose hits each carry the call
 * that opens them in their own surface) and recall_timeline (what
 * happened in a window, by source). The SQL functions answer
 * (src/db/sql/recall.sql); docs/recall.md. */
#ifndef PARLEY_TOOLSETS_RECALL_RECALL_H
#define PARLEY_TOOLSETS_RECALL_RECALL_H

#include "toolsets/toolset.h"

/* The toolset's row of the table of toolsets (toolsets.c). */
extern const toolset_t toolset_recall;

#endif
