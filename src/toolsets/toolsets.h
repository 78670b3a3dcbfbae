/* toolsets: every toolset compiled into parleyd, as the NULL-terminated
 * table mcp_toolsets_available (declared in mcp/registry.h, defined in
 * toolsets.c). Adding a toolset: write toolsets/NAME.c with its static
 * tables and add it to that table. */
#ifndef PARLEY_TOOLSETS_TOOLSETS_H
#define PARLEY_TOOLSETS_TOOLSETS_H

#include "mcp/registry.h"

#endif
