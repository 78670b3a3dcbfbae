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

extern const mcp_toolset_t toolset_telegram_mcp;

/* Builds the toolset's context from env: the store, the "telegram"
 * connector when there is one, the upload and export roots. */
int telegram_open(const toolset_env_t *env, void **ctx, char *err, size_t errcap);
void telegram_close(void *ctx);

#endif
