/* toolsets: the table of every toolset compiled into parleyd (declared in
 * mcp/registry.h). A new toolset adds one line here. */
#include "toolsets/toolsets.h"
#include "toolsets/conformance.h"
#include "toolsets/telegram.h"

const mcp_toolset_t *const mcp_toolsets_available[] = {
    &toolset_telegram,
    &toolset_conformance,
    NULL,
};
