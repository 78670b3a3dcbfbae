/* reference: a toolset's tools, resources and prompts as Markdown, for the
 * docs (parleyd --help-tools NAME; tools/gen-docs writes it into the
 * toolset's page, and tests/integration/docs.sh checks that the page says
 * what the binary serves). Each tool: its listed name (a spec name with
 * dots is listed with underscores and accepted in both spellings), its
 * title and description, whether it only reads, and each parameter with
 * its type, whether it is required, its bounds and its description. */
#ifndef PARLEY_MCP_REFERENCE_H
#define PARLEY_MCP_REFERENCE_H

#include <stdio.h>

#include "mcp/registry.h"

/* Prints ts's reference to out. Returns 0, or UV_EINVAL when a table's
 * JSON text does not parse (the registry refuses such a table at start
 * too). */
int mcp_reference_print(FILE *out, const mcp_toolset_t *ts);

#endif
