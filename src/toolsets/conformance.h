/* conformance: the fixture tools, resources and prompts the official MCP
 * conformance suite (@modelcontextprotocol/conformance) expects of a
 * server. Served only when asked for (--toolsets conformance); it touches
 * no data. */
#ifndef PARLEY_TOOLSETS_CONFORMANCE_H
#define PARLEY_TOOLSETS_CONFORMANCE_H

#include "mcp/registry.h"

/* Pause between the steps of the logging and progress fixtures. */
#define CONFORMANCE_STEP_MS 50

extern const mcp_toolset_t toolset_conformance;

#endif
