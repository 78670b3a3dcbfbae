/* telegram: the telegram toolset, the 42 tools of the vNext schema
 * (../shared/specs/telegram-vnext-tools.md). Each tool's table entry names
 * the SQL function that answers it from the archive (src/db/sql/telegram/);
 * the tools that need the upstream connector (sending, live search and
 * chat info, group administration, downloads) run it after the archive
 * answered, asking the connector's capabilities first and saying what to
 * use instead where it lacks one. mediaDownload copies a stored file under
 * the export root. */
#ifndef PARLEY_TOOLSETS_TELEGRAM_TELEGRAM_H
#define PARLEY_TOOLSETS_TELEGRAM_TELEGRAM_H

#include "toolsets/toolset.h"

/* The toolset's row of the table of toolsets (toolsets.c). */
extern const toolset_t toolset_telegram;

#endif
