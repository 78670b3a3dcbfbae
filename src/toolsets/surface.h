/* surface: the default selection, the compact surface an agent gets when
 * it names no toolset (`auto`, the endpoint's own path): at most
 * SURFACE_DEFAULT_MAX_TOOLS tools in at most SURFACE_DEFAULT_MAX_CHARS
 * characters of tools/list, with recall the one search across sources and
 * a per-source tool only for what recall cannot do (a chat's history and
 * unread, sending, opening a hit, logins, the ChatWise alignment, the
 * memory bootstrap). Each entry is a tool of a toolset, under a name that
 * says its service and a short description that says when to use it;
 * its schemas and handler stay the toolset's. docs/tools.md is its table
 * (a test keeps the two the same). */
#ifndef PARLEY_TOOLSETS_SURFACE_H
#define PARLEY_TOOLSETS_SURFACE_H

#include "mcp/registry.h"

/* The goal the default is held to (tests/e2e/surface.test.mjs). */
#define SURFACE_DEFAULT_MAX_TOOLS 25
#define SURFACE_DEFAULT_MAX_CHARS 20000

extern const mcp_brief_def_t surface_default[];
extern const int surface_default_count;

#endif
