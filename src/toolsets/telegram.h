/* telegram: the telegram toolset, the 42 tools of the vNext schema
 * (../shared/specs/telegram-vnext-tools.md), served from the archive. Each
 * tool validates its arguments against its inputSchema (the MCP engine does
 * that), then one call of parley_tg_tool (migration 005) answers it with
 * JSON built by PostgreSQL. Tools that need the upstream connector (sending,
 * live search, group administration) answer isError saying what is
 * possible instead until a connector is configured. mediaDownload copies a
 * stored file under the export root. The MCP server's application context
 * must be an archive_t. */
#ifndef PARLEY_TOOLSETS_TELEGRAM_H
#define PARLEY_TOOLSETS_TELEGRAM_H

#include "mcp/registry.h"

extern const mcp_toolset_t toolset_telegram;

#endif
