/* bluesky: the bluesky toolset (../shared/specs/bluesky-tools.md): login
 * (with its subcommands list, default and delete; credentials through MCP
 * elicitation: the handle by form, the app password on a one-time local
 * page by URL mode, never through form mode), profile and search. Answers
 * are readable Markdown in which every line of user content is quoted
 * ("> "), plus the same data as structuredContent. Posts fetched are kept
 * in the archive. Upstream work goes through the "bluesky" connector. */
#ifndef PARLEY_TOOLSETS_BLUESKY_BLUESKY_H
#define PARLEY_TOOLSETS_BLUESKY_BLUESKY_H

#include "toolsets/toolset.h"

/* The toolset's row of the table of toolsets (toolsets.c). */
extern const toolset_t toolset_bluesky;

#endif
