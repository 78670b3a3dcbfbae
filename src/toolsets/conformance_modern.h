/* conformance_modern: the conformance suite's fixtures for MCP 2026-07-28
 * (listed in conformance.c's tables): multi round-trip requests (the
 * test_input_required_result_* tools and prompt), a tool that needs a
 * capability the client did not declare (-32021), logging only when a
 * request asks, and a tool whose argument is mirrored into an HTTP header
 * (x-mcp-header). Under 2025-11-25 the round-trip fixtures answer isError
 * saying they need 2026-07-28. */
#ifndef PARLEY_TOOLSETS_CONFORMANCE_MODERN_H
#define PARLEY_TOOLSETS_CONFORMANCE_MODERN_H

#include "mcp/call.h"

void conformance_missing_capability(mcp_call_t *c);
void conformance_streaming_elicitation(mcp_call_t *c);
void conformance_logging_tool(mcp_call_t *c);
void conformance_custom_header(mcp_call_t *c);
void conformance_trigger_tool_change(mcp_call_t *c);
void conformance_trigger_prompt_change(mcp_call_t *c);
void conformance_ir_elicitation(mcp_call_t *c);
void conformance_ir_sampling(mcp_call_t *c);
void conformance_ir_list_roots(mcp_call_t *c);
void conformance_ir_request_state(mcp_call_t *c);
void conformance_ir_multiple_inputs(mcp_call_t *c);
void conformance_ir_multi_round(mcp_call_t *c);
void conformance_ir_tampered_state(mcp_call_t *c);
void conformance_ir_capabilities(mcp_call_t *c);
void conformance_ir_prompt(mcp_call_t *c);

#endif
