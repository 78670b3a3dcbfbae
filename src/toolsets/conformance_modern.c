/* conformance_modern: 2026-07-28 fixtures of the conformance suite (see
 * conformance_modern.h). Texts and input-request keys follow the suite's
 * reference server; each round is decided from the request alone (its
 * inputResponses and the state the server sealed into requestState). */
#include "toolsets/conformance_modern.h"

#include <stdio.h>
#include <string.h>

#include "mcp/envelope.h"
#include "mcp/jsonrpc.h"

static void finish_text(mcp_call_t *c, const char *text)
{
    mcp_call_finish_result(c,
                           json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text", text));
}

/* Round-trip fixtures need a request that can ask (2026-07-28). */
static bool can_ask(mcp_call_t *c)
{
    if (mcp_call_can_ask(c))
        return true;
    mcp_call_finish_error(c,
                          "%s asks for input by a multi round-trip request: call it with MCP "
                          "2026-07-28 (_meta io.modelcontextprotocol/protocolVersion)",
                          c->name);
    return false;
}

static json_t *elicit_request(const char *message, const char *field, const char *type)
{
    return json_pack("{s:s, s:{s:s, s:{s:s, s:{s:{s:s}}, s:[s]}}}", "method", "elicitation/create",
                     "params", "message", message, "requestedSchema", "type", "object",
                     "properties", field, "type", type, "required", field);
}

static json_t *sampling_request(const char *text, int max_tokens)
{
    return json_pack("{s:s, s:{s:[{s:s, s:{s:s, s:s}}], s:i}}", "method", "sampling/createMessage",
                     "params", "messages", "role", "user", "content", "type", "text", "text", text,
                     "maxTokens", max_tokens);
}

static json_t *roots_request(void)
{
    return json_pack("{s:s, s:{}}", "method", "roots/list", "params");
}

/* The accepted content field of an elicitation answer, or NULL. */
static const char *accepted(const json_t *answer, const char *field)
{
    const char *action = json_string_value(json_object_get(answer, "action"));
    if (action == NULL || strcmp(action, "accept") != 0)
        return NULL;
    return json_string_value(json_object_get(json_object_get(answer, "content"), field));
}

/* Whether the state this call got is of kind (a fixture's own tag). */
static bool state_is(mcp_call_t *c, const char *kind)
{
    const char *k = json_string_value(json_object_get(mcp_call_request_state(c), "kind"));
    return k != NULL && strcmp(k, kind) == 0;
}

/* ---- capabilities, logging, headers --------------------------------------- */

void conformance_missing_capability(mcp_call_t *c)
{
    if (!mcp_call_client_has(c, "sampling", NULL)) {
        mcp_call_finish_rpc_error(
            c, MCP_ERROR_MISSING_CAPABILITY,
            "Missing required client capability: sampling (declare it in the request's "
            "clientCapabilities)",
            json_pack("{s:{s:{}}}", "requiredCapabilities", "sampling"));
        return;
    }
    finish_text(c, "Success");
}

void conformance_streaming_elicitation(mcp_call_t *c)
{
    if (!mcp_call_can_ask(c) || mcp_call_input_response(c, "confirm") != NULL ||
        !mcp_call_client_has(c, "elicitation", "form")) {
        finish_text(c, "Streaming complete");
        return;
    }
    mcp_call_progress(c, 0, 1, "asking for confirmation");
    json_t *reqs = json_pack("{s:o}", "confirm",
                             json_pack("{s:s, s:{s:s, s:{s:s, s:{s:{s:s}}, s:[s]}}}", "method",
                                       "elicitation/create", "params", "message", "Please confirm",
                                       "requestedSchema", "type", "object", "properties", "ok",
                                       "type", "boolean", "required", "ok"));
    mcp_call_finish_input_required(c, reqs, NULL);
}

void conformance_logging_tool(mcp_call_t *c)
{
    /* mcp_call_log sends nothing unless the request asked for a level. */
    mcp_call_log(c, MCP_LOG_INFO, "conformance-test-server", json_string("Logging evaluated"));
    finish_text(c, "Logging evaluated");
}

void conformance_custom_header(mcp_call_t *c)
{
    char text[300];
    snprintf(text, sizeof text, "region=%.250s",
             json_string_value(json_object_get(c->args, "region")));
    finish_text(c, text);
}

void conformance_trigger_tool_change(mcp_call_t *c)
{
    mcp_call_list_changed(c, "tools");
    finish_text(c, "tools/list_changed sent");
}

void conformance_trigger_prompt_change(mcp_call_t *c)
{
    mcp_call_list_changed(c, "prompts");
    finish_text(c, "prompts/list_changed sent");
}

/* ---- multi round-trip requests -------------------------------------------- */

void conformance_ir_elicitation(mcp_call_t *c)
{
    if (!can_ask(c))
        return;
    const json_t *a = mcp_call_input_response(c, "user_name");
    if (a != NULL && json_is_string(json_object_get(a, "action"))) {
        const char *name = accepted(a, "name");
        char text[200];
        snprintf(text, sizeof text, "Hello, %.150s!", name ? name : "unknown");
        finish_text(c, text);
        return;
    }
    mcp_call_finish_input_required(
        c, json_pack("{s:o}", "user_name", elicit_request("What is your name?", "name", "string")),
        NULL);
}

void conformance_ir_sampling(mcp_call_t *c)
{
    if (!can_ask(c))
        return;
    const json_t *a = mcp_call_input_response(c, "capital_question");
    if (a != NULL) {
        const char *t = json_string_value(json_object_get(json_object_get(a, "content"), "text"));
        char text[300];
        snprintf(text, sizeof text, "Sampling result: %.250s", t ? t : "");
        finish_text(c, text);
        return;
    }
    mcp_call_finish_input_required(
        c,
        json_pack("{s:o}", "capital_question",
                  sampling_request("What is the capital of France?", 100)),
        NULL);
}

void conformance_ir_list_roots(mcp_call_t *c)
{
    if (!can_ask(c))
        return;
    const json_t *a = mcp_call_input_response(c, "client_roots");
    if (a != NULL && json_is_array(json_object_get(a, "roots"))) {
        char text[64];
        snprintf(text, sizeof text, "Found %zu root(s)",
                 json_array_size(json_object_get(a, "roots")));
        finish_text(c, text);
        return;
    }
    mcp_call_finish_input_required(c, json_pack("{s:o}", "client_roots", roots_request()), NULL);
}

/* The "confirm" round with a sealed state of kind; done says what the
 * text is once the client confirmed with the state. */
static void confirm_round(mcp_call_t *c, const char *kind, const char *done)
{
    if (!can_ask(c))
        return;
    if (state_is(c, kind) && mcp_call_input_response(c, "confirm") != NULL) {
        finish_text(c, done);
        return;
    }
    mcp_call_finish_input_required(
        c,
        json_pack("{s:{s:s, s:{s:s, s:{s:s, s:{s:{s:s}}, s:[s]}}}}", "confirm", "method",
                  "elicitation/create", "params", "message", "Please confirm", "requestedSchema",
                  "type", "object", "properties", "ok", "type", "boolean", "required", "ok"),
        json_pack("{s:s}", "kind", kind));
}

void conformance_ir_request_state(mcp_call_t *c)
{
    confirm_round(c, "request-state", "state-ok: requestState validated");
}

void conformance_ir_tampered_state(mcp_call_t *c)
{
    /* A changed requestState never reaches here: the session refuses it
     * with -32602 ("requestState integrity check failed"). */
    confirm_round(c, "tamper-test", "integrity-ok: state verified");
}

void conformance_ir_multiple_inputs(mcp_call_t *c)
{
    if (!can_ask(c))
        return;
    const json_t *name = mcp_call_input_response(c, "user_name");
    const json_t *greeting = mcp_call_input_response(c, "greeting");
    const json_t *roots = mcp_call_input_response(c, "client_roots");
    if (state_is(c, "multiple-inputs") && name && greeting && roots) {
        const char *n = accepted(name, "name");
        const char *g =
            json_string_value(json_object_get(json_object_get(greeting, "content"), "text"));
        char text[400];
        snprintf(text, sizeof text, "Name: %.100s; Greeting: %.200s; Roots: %zu", n ? n : "unknown",
                 g ? g : "", json_array_size(json_object_get(roots, "roots")));
        finish_text(c, text);
        return;
    }
    mcp_call_finish_input_required(
        c,
        json_pack("{s:o, s:o, s:o}", "user_name",
                  elicit_request("What is your name?", "name", "string"), "greeting",
                  sampling_request("Generate a greeting", 50), "client_roots", roots_request()),
        json_pack("{s:s}", "kind", "multiple-inputs"));
}

void conformance_ir_multi_round(mcp_call_t *c)
{
    if (!can_ask(c))
        return;
    const json_t *st = mcp_call_request_state(c);
    json_int_t round = json_integer_value(json_object_get(st, "round"));
    const char *step1 = accepted(mcp_call_input_response(c, "step1"), "name");
    const char *step2 = accepted(mcp_call_input_response(c, "step2"), "color");
    if (state_is(c, "multi-round") && round == 2 && step2 != NULL) {
        char text[300];
        snprintf(text, sizeof text, "Multi-round complete for %.100s who likes %.100s",
                 json_string_value(json_object_get(st, "name")), step2);
        finish_text(c, text);
        return;
    }
    if (state_is(c, "multi-round") && round == 1 && step1 != NULL) {
        mcp_call_finish_input_required(
            c,
            json_pack("{s:o}", "step2",
                      elicit_request("Step 2: What is your favorite color?", "color", "string")),
            json_pack("{s:s, s:i, s:s}", "kind", "multi-round", "round", 2, "name", step1));
        return;
    }
    mcp_call_finish_input_required(
        c,
        json_pack("{s:o}", "step1", elicit_request("Step 1: What is your name?", "name", "string")),
        json_pack("{s:s, s:i}", "kind", "multi-round", "round", 1));
}

void conformance_ir_capabilities(mcp_call_t *c)
{
    if (!can_ask(c))
        return;
    if (json_object_size(c->input_responses) > 0) {
        char text[300] = "capabilities-ok: received";
        const char *key;
        json_t *v;
        json_object_foreach(c->input_responses, key, v)
        {
            size_t n = strlen(text);
            snprintf(text + n, sizeof text - n, " %.60s", key);
        }
        finish_text(c, text);
        return;
    }
    /* Only what the request's capabilities allow. */
    json_t *reqs = json_object();
    if (mcp_call_client_has(c, "elicitation", "form"))
        json_object_set_new(reqs, "elicit_input",
                            elicit_request("Elicitation input", "value", "string"));
    if (mcp_call_client_has(c, "sampling", NULL))
        json_object_set_new(reqs, "sample_input", sampling_request("Sample request", 50));
    if (json_object_size(reqs) == 0) {
        json_decref(reqs);
        finish_text(c, "No supported capabilities declared");
        return;
    }
    mcp_call_finish_input_required(c, reqs, NULL);
}

void conformance_ir_prompt(mcp_call_t *c)
{
    if (!mcp_call_can_ask(c)) {
        mcp_call_finish_rpc_error(c, JSONRPC_INVALID_PARAMS,
                                  "test_input_required_result_prompt asks for input by a multi "
                                  "round-trip request: get it with MCP 2026-07-28",
                                  NULL);
        return;
    }
    const char *context = accepted(mcp_call_input_response(c, "user_context"), "context");
    if (context != NULL) {
        char text[300];
        snprintf(text, sizeof text, "Prompt with context: %.250s", context);
        mcp_call_finish_result(c, json_pack("{s:[{s:s, s:{s:s, s:s}}]}", "messages", "role", "user",
                                            "content", "type", "text", "text", text));
        return;
    }
    mcp_call_finish_input_required(
        c,
        json_pack("{s:o}", "user_context",
                  elicit_request("What context should the prompt use?", "context", "string")),
        NULL);
}
