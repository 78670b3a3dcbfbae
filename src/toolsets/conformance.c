/* conformance: fixtures of the MCP conformance suite (see conformance.h).
 * Values follow the suite's reference server; the suite checks shapes, the
 * audio MIME type, template variables and the elicitation schemas. */
#include "toolsets/conformance.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "mcp/call.h"
#include "toolsets/conformance_modern.h"

#define PNG_1X1                                                                                    \
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJg" \
    "gg=="
#define WAV_TINY "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

#define NO_ARGS "{\"type\":\"object\",\"properties\":{}}"
#define RO      (MCP_TOOL_READ_ONLY | MCP_TOOL_IDEMPOTENT)

static json_t *text_block(const char *text)
{
    return json_pack("{s:s, s:s}", "type", "text", "text", text);
}

static void finish_content(mcp_call_t *c, json_t *content)
{
    mcp_call_finish_result(c, json_pack("{s:o}", "content", content));
}

/* ---- simple content ----------------------------------------------------- */

/* A constant answered as text, as the database's tools answer with
 * PostgreSQL's (the benchmarks' trivial call). */
static void simple_text(mcp_call_t *c)
{
    static const char r[] = "{\"content\":[{\"type\":\"text\",\"text\":"
                            "\"This is a simple text response for testing.\"}]}";
    mcp_call_finish_result_text(c, r, sizeof r - 1);
}

static void image_content(mcp_call_t *c)
{
    finish_content(c, json_pack("[{s:s, s:s, s:s}]", "type", "image", "data", PNG_1X1, "mimeType",
                                "image/png"));
}

static void audio_content(mcp_call_t *c)
{
    finish_content(c, json_pack("[{s:s, s:s, s:s}]", "type", "audio", "data", WAV_TINY, "mimeType",
                                "audio/wav"));
}

static void embedded_resource(mcp_call_t *c)
{
    finish_content(c, json_pack("[{s:s, s:{s:s, s:s, s:s}}]", "type", "resource", "resource", "uri",
                                "test://embedded-resource", "mimeType", "text/plain", "text",
                                "This is an embedded resource content."));
}

static void multiple_content(mcp_call_t *c)
{
    finish_content(c, json_pack("[o, {s:s, s:s, s:s}, {s:s, s:{s:s, s:s, s:s}}]",
                                text_block("Multiple content types test:"), "type", "image", "data",
                                PNG_1X1, "mimeType", "image/png", "type", "resource", "resource",
                                "uri", "test://mixed-content-resource", "mimeType",
                                "application/json", "text", "{\"test\":\"data\",\"value\":123}"));
}

static void error_handling(mcp_call_t *c)
{
    mcp_call_finish_result(c, json_pack("{s:[o], s:b}", "content",
                                        text_block("This tool intentionally returns an error "
                                                   "for testing"),
                                        "isError", 1));
}

static void schema_2020_12(mcp_call_t *c)
{
    char *args = json_dumps(c->args, JSON_COMPACT);
    char text[1024];
    snprintf(text, sizeof text, "JSON Schema 2020-12 tool called with: %s", args ? args : "{}");
    free(args);
    finish_content(c, json_pack("[o]", text_block(text)));
}

/* ---- stepped tools (logging, progress, reconnection) -------------------- */

typedef struct stepper_s {
    uv_timer_t timer;
    mcp_call_t *call;
    int step;
    void (*run)(struct stepper_s *st); /* one step; finishes the call at the end */
} stepper_t;

static void stepper_closed(uv_handle_t *h)
{
    free(h->data);
}

static void stepper_end(stepper_t *st)
{
    st->call->data = NULL;
    uv_close((uv_handle_t *)&st->timer, stepper_closed);
}

static void stepper_tick(uv_timer_t *t)
{
    stepper_t *st = t->data;
    st->run(st);
}

static void stepper_cancel(mcp_call_t *c)
{
    stepper_t *st = c->data;
    uv_timer_stop(&st->timer);
    stepper_end(st);
    mcp_call_finish_error(c, "cancelled");
}

static void stepper_start(mcp_call_t *c, void (*run)(stepper_t *))
{
    stepper_t *st = calloc(1, sizeof *st);
    if (st == NULL) {
        mcp_call_finish_error(c, "out of memory");
        return;
    }
    st->call = c;
    st->run = run;
    uv_timer_init(mcp_call_loop(c), &st->timer);
    st->timer.data = st;
    c->data = st;
    c->on_cancel = stepper_cancel;
    run(st);
}

static void logging_step(stepper_t *st)
{
    static const char *const msgs[] = {"Tool execution started", "Tool processing data",
                                       "Tool execution completed"};
    mcp_call_t *c = st->call;
    mcp_call_log(c, MCP_LOG_INFO, "conformance-test-server", json_string(msgs[st->step]));
    if (++st->step < 3) {
        uv_timer_start(&st->timer, stepper_tick, CONFORMANCE_STEP_MS, 0);
        return;
    }
    stepper_end(st);
    finish_content(c, json_pack("[o]", text_block("Tool with logging executed successfully")));
}

/* Each report is followed by a pause, the last one too: clients handle
 * notifications asynchronously and drop progress that arrives in the same
 * read as the result. */
static void progress_step(stepper_t *st)
{
    mcp_call_t *c = st->call;
    if (st->step < 3) {
        char msg[64];
        snprintf(msg, sizeof msg, "Completed step %d of 100", st->step * 50);
        mcp_call_progress(c, st->step * 50, 100, msg);
    }
    if (++st->step < 4) {
        uv_timer_start(&st->timer, stepper_tick, CONFORMANCE_STEP_MS, 0);
        return;
    }
    stepper_end(st);
    /* The reference answers String(progressToken). */
    const json_t *t = c->progress_token;
    char *tok = t && !json_is_string(t) ? json_dumps(t, JSON_ENCODE_ANY) : NULL;
    finish_content(c, json_pack("[o]", text_block(tok ? tok : t ? json_string_value(t) : "0")));
    free(tok);
}

/* Ends the request's SSE stream (Streamable HTTP) after its priming event,
 * then answers: the client must resume with Last-Event-ID to get it. */
static void reconnection_step(stepper_t *st)
{
    mcp_call_t *c = st->call;
    if (st->step++ == 0) {
        mcp_call_end_stream(c);
        uv_timer_start(&st->timer, stepper_tick, 2 * CONFORMANCE_STEP_MS, 0);
        return;
    }
    stepper_end(st);
    finish_content(c, json_pack("[o]", text_block("Reconnection test completed successfully. If "
                                                  "you received this, the client properly "
                                                  "reconnected after stream closure.")));
}

static void tool_with_logging(mcp_call_t *c)
{
    stepper_start(c, logging_step);
}

static void tool_with_progress(mcp_call_t *c)
{
    stepper_start(c, progress_step);
}

static void reconnection(mcp_call_t *c)
{
    stepper_start(c, reconnection_step);
}

/* ---- sampling and elicitation ------------------------------------------- */

static void request_failed(mcp_call_t *c, const char *what, int status, const json_t *error)
{
    const char *m = json_string_value(json_object_get(error, "message"));
    if (status == UV_EPROTO)
        mcp_call_finish_error(c, "%s failed: the client answered with an error: %s", what,
                              m ? m : "(no message)");
    else
        mcp_call_finish_error(c, "%s failed: %s", what, uv_strerror(status));
}

static void sampling_reply(mcp_call_t *c, int status, const json_t *result, const json_t *error)
{
    if (status != 0) {
        request_failed(c, "sampling", status, error);
        return;
    }
    const char *text =
        json_string_value(json_object_get(json_object_get(result, "content"), "text"));
    char out[2048];
    snprintf(out, sizeof out, "LLM response: %s", text ? text : "(no text)");
    finish_content(c, json_pack("[o]", text_block(out)));
}

static void sampling(mcp_call_t *c)
{
    const char *prompt = json_string_value(json_object_get(c->args, "prompt"));
    json_t *params = json_pack("{s:[{s:s, s:{s:s, s:s}}], s:i}", "messages", "role", "user",
                               "content", "type", "text", "text", prompt, "maxTokens", 100);
    int rc = mcp_call_request(c, "sampling", "sampling/createMessage", params, sampling_reply);
    if (rc == UV_ENOTSUP)
        mcp_call_finish_error(c, "This client does not support sampling (it did not declare the "
                                 "sampling capability); nothing was asked.");
    else if (rc != 0)
        mcp_call_finish_error(c, "sampling failed: %s", uv_strerror(rc));
}

static void elicitation_reply(mcp_call_t *c, int status, const json_t *result, const json_t *error)
{
    if (status != 0) {
        request_failed(c, "elicitation", status, error);
        return;
    }
    const char *action = json_string_value(json_object_get(result, "action"));
    const json_t *content = json_object_get(result, "content");
    char *cj = content ? json_dumps(content, JSON_COMPACT) : NULL;
    char out[2048];
    snprintf(out, sizeof out, "User response: action=%s, content=%s", action ? action : "?",
             cj ? cj : "{}");
    free(cj);
    finish_content(c, json_pack("[o]", text_block(out)));
}

static void elicit(mcp_call_t *c, json_t *params)
{
    int rc = mcp_call_request(c, "elicitation", "elicitation/create", params, elicitation_reply);
    if (rc == UV_ENOTSUP)
        mcp_call_finish_error(c, "This client does not support elicitation (it did not declare "
                                 "the elicitation capability); nothing was asked.");
    else if (rc != 0)
        mcp_call_finish_error(c, "elicitation failed: %s", uv_strerror(rc));
}

static void elicitation(mcp_call_t *c)
{
    const char *message = json_string_value(json_object_get(c->args, "message"));
    json_error_t je;
    json_t *schema =
        json_loads("{\"type\":\"object\",\"properties\":{"
                   "\"username\":{\"type\":\"string\",\"description\":\"User's response\"},"
                   "\"email\":{\"type\":\"string\",\"description\":\"User's email address\"}},"
                   "\"required\":[\"username\",\"email\"]}",
                   0, &je);
    elicit(c, json_pack("{s:s, s:o}", "message", message, "requestedSchema", schema));
}

static void elicitation_defaults(mcp_call_t *c)
{
    json_error_t je;
    json_t *schema = json_loads(
        "{\"type\":\"object\",\"properties\":{"
        "\"name\":{\"type\":\"string\",\"description\":\"User name\",\"default\":\"John Doe\"},"
        "\"age\":{\"type\":\"integer\",\"description\":\"User age\",\"default\":30},"
        "\"score\":{\"type\":\"number\",\"description\":\"User score\",\"default\":95.5},"
        "\"status\":{\"type\":\"string\",\"description\":\"User status\","
        "\"enum\":[\"active\",\"inactive\",\"pending\"],\"default\":\"active\"},"
        "\"verified\":{\"type\":\"boolean\",\"description\":\"Verification status\","
        "\"default\":true}},\"required\":[]}",
        0, &je);
    elicit(c, json_pack("{s:s, s:s, s:o}", "mode", "form", "message",
                        "Please review and update the form fields with defaults", "requestedSchema",
                        schema));
}

static void elicitation_enums(mcp_call_t *c)
{
    json_error_t je;
    json_t *schema = json_loads(
        "{\"type\":\"object\",\"properties\":{"
        "\"untitledSingle\":{\"type\":\"string\",\"description\":\"Select one option\","
        "\"enum\":[\"option1\",\"option2\",\"option3\"]},"
        "\"titledSingle\":{\"type\":\"string\",\"description\":\"Select one option with titles\","
        "\"oneOf\":[{\"const\":\"value1\",\"title\":\"First Option\"},"
        "{\"const\":\"value2\",\"title\":\"Second Option\"},"
        "{\"const\":\"value3\",\"title\":\"Third Option\"}]},"
        "\"legacyEnum\":{\"type\":\"string\",\"description\":\"Select one option (legacy)\","
        "\"enum\":[\"opt1\",\"opt2\",\"opt3\"],"
        "\"enumNames\":[\"Option One\",\"Option Two\",\"Option Three\"]},"
        "\"untitledMulti\":{\"type\":\"array\",\"description\":\"Select multiple options\","
        "\"minItems\":1,\"maxItems\":3,"
        "\"items\":{\"type\":\"string\",\"enum\":[\"option1\",\"option2\",\"option3\"]}},"
        "\"titledMulti\":{\"type\":\"array\",\"description\":\"Select multiple options with "
        "titles\",\"minItems\":1,\"maxItems\":3,\"items\":{\"anyOf\":["
        "{\"const\":\"value1\",\"title\":\"First Choice\"},"
        "{\"const\":\"value2\",\"title\":\"Second Choice\"},"
        "{\"const\":\"value3\",\"title\":\"Third Choice\"}]}}},\"required\":[]}",
        0, &je);
    elicit(c, json_pack("{s:s, s:s, s:o}", "mode", "form", "message",
                        "Please select options from the enum fields", "requestedSchema", schema));
}

/* ---- resources ---------------------------------------------------------- */

static void contents(mcp_call_t *c, json_t *item)
{
    mcp_call_finish_result(c, json_pack("{s:[o]}", "contents", item));
}

static void read_static_text(mcp_call_t *c)
{
    contents(c, json_pack("{s:s, s:s, s:s}", "uri", "test://static-text", "mimeType", "text/plain",
                          "text", "This is the content of the static text resource."));
}

static void read_static_binary(mcp_call_t *c)
{
    contents(c, json_pack("{s:s, s:s, s:s}", "uri", "test://static-binary", "mimeType", "image/png",
                          "blob", PNG_1X1));
}

static void read_watched(mcp_call_t *c)
{
    contents(c, json_pack("{s:s, s:s, s:s}", "uri", "test://watched-resource", "mimeType",
                          "text/plain", "text", "Watched resource content"));
}

static void read_template(mcp_call_t *c)
{
    const char *id = json_string_value(json_object_get(json_object_get(c->args, "vars"), "id"));
    json_t *data =
        json_pack("{s:s, s:b, s:s+}", "id", id, "templateTest", 1, "data", "Data for ID: ", id);
    char *text = json_dumps(data, JSON_COMPACT);
    json_decref(data);
    contents(c,
             json_pack("{s:s, s:s, s:s}", "uri", json_string_value(json_object_get(c->args, "uri")),
                       "mimeType", "application/json", "text", text ? text : "{}"));
    free(text);
}

/* ---- prompts ------------------------------------------------------------ */

static void user_messages(mcp_call_t *c, json_t *a, json_t *b)
{
    json_t *msgs = json_array();
    json_array_append_new(msgs, json_pack("{s:s, s:o}", "role", "user", "content", a));
    if (b)
        json_array_append_new(msgs, json_pack("{s:s, s:o}", "role", "user", "content", b));
    mcp_call_finish_result(c, json_pack("{s:o}", "messages", msgs));
}

static void prompt_simple(mcp_call_t *c)
{
    user_messages(c, text_block("This is a simple prompt for testing."), NULL);
}

static void prompt_arguments(mcp_call_t *c)
{
    char text[1024];
    snprintf(text, sizeof text, "Prompt with arguments: arg1='%s', arg2='%s'",
             json_string_value(json_object_get(c->args, "arg1")),
             json_string_value(json_object_get(c->args, "arg2")));
    user_messages(c, text_block(text), NULL);
}

static void prompt_embedded(mcp_call_t *c)
{
    const char *uri = json_string_value(json_object_get(c->args, "resourceUri"));
    user_messages(c,
                  json_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "resource", "resource", "uri", uri,
                            "mimeType", "text/plain", "text",
                            "Embedded resource content for testing."),
                  text_block("Please process the embedded resource above."));
}

static void prompt_image(mcp_call_t *c)
{
    user_messages(
        c, json_pack("{s:s, s:s, s:s}", "type", "image", "data", PNG_1X1, "mimeType", "image/png"),
        text_block("Please analyze the image above."));
}

/* ---- tables ------------------------------------------------------------- */

static const mcp_tool_def_t tools[] = {
    {"test_simple_text", "Simple text", "Returns a simple text response.", NO_ARGS, NULL, RO,
     simple_text, NULL},
    {"test_image_content", "Image content", "Returns an image (a 1x1 PNG).", NO_ARGS, NULL, RO,
     image_content, NULL},
    {"test_audio_content", "Audio content", "Returns a short audio clip (WAV).", NO_ARGS, NULL, RO,
     audio_content, NULL},
    {"test_embedded_resource", "Embedded resource", "Returns an embedded text resource.", NO_ARGS,
     NULL, RO, embedded_resource, NULL},
    {"test_multiple_content_types", "Mixed content", "Returns text, an image and a resource.",
     NO_ARGS, NULL, RO, multiple_content, NULL},
    {"test_tool_with_logging", "Logging", "Sends three log messages while it runs.", NO_ARGS, NULL,
     RO, tool_with_logging, NULL},
    {"test_tool_with_progress", "Progress",
     "Reports progress 0, 50 and 100 of 100 when given a progressToken.", NO_ARGS, NULL, RO,
     tool_with_progress, NULL},
    {"test_error_handling", "Error handling", "Always returns an error result (isError).", NO_ARGS,
     NULL, RO, error_handling, NULL},
    {"test_sampling", "Sampling", "Asks the client's model to complete a prompt.",
     "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\",\"description\":"
     "\"The prompt to send to the LLM\"}},\"required\":[\"prompt\"]}",
     NULL, RO, sampling, NULL},
    {"test_elicitation", "Elicitation", "Asks the user for a username and an email address.",
     "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\",\"description\":"
     "\"The message to show the user\"}},\"required\":[\"message\"]}",
     NULL, RO, elicitation, NULL},
    {"test_elicitation_sep1034_defaults", "Elicitation defaults",
     "Asks the user to review a form whose fields have defaults (SEP-1034).", NO_ARGS, NULL, RO,
     elicitation_defaults, NULL},
    {"test_elicitation_sep1330_enums", "Elicitation enums",
     "Asks the user to pick from enum fields of every shape (SEP-1330).", NO_ARGS, NULL, RO,
     elicitation_enums, NULL},
    {"test_reconnection", "Reconnection",
     "Ends its Streamable HTTP response stream early and answers on the resumed stream.", NO_ARGS,
     NULL, RO, reconnection, NULL},
    {"json_schema_2020_12_tool", "JSON Schema 2020-12", "Tool with JSON Schema 2020-12 features",
     "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
     "\"$defs\":{\"address\":{\"$anchor\":\"addressDef\",\"type\":\"object\",\"properties\":{"
     "\"street\":{\"type\":\"string\"},\"city\":{\"type\":\"string\"}}}},\"properties\":{"
     "\"name\":{\"type\":\"string\"},\"address\":{\"$ref\":\"#/$defs/address\"},"
     "\"contactMethod\":{\"type\":\"string\",\"enum\":[\"phone\",\"email\"]},\"phone\":{"
     "\"type\":\"string\"},\"email\":{\"type\":\"string\"}},\"allOf\":[{\"anyOf\":[{"
     "\"required\":[\"phone\"]},{\"required\":[\"email\"]}]}],\"if\":{\"properties\":{"
     "\"contactMethod\":{\"const\":\"phone\"}},\"required\":[\"contactMethod\"]},\"then\":{"
     "\"required\":[\"phone\"]},\"else\":{\"required\":[\"email\"]},"
     "\"additionalProperties\":false}",
     NULL, RO, schema_2020_12, NULL},
    /* 2026-07-28 (conformance_modern.c). */
    {"test_missing_capability", "Missing capability",
     "Needs the client's sampling capability: without it, error -32021.", NO_ARGS, NULL, RO,
     conformance_missing_capability, NULL},
    {"test_streaming_elicitation", "Streaming elicitation",
     "Asks for a confirmation by a multi round-trip request, never by a request on the stream.",
     NO_ARGS, NULL, RO, conformance_streaming_elicitation, NULL},
    {"test_logging_tool", "Logging on request",
     "Logs a message only when the request asks for a log level.", NO_ARGS, NULL, RO,
     conformance_logging_tool, NULL},
    {"test_custom_header", "Custom header",
     "Echoes its region, which HTTP clients mirror into the Mcp-Param-Region header.",
     "{\"type\":\"object\",\"properties\":{\"region\":{\"type\":\"string\",\"description\":"
     "\"Region, mirrored into Mcp-Param-Region\",\"x-mcp-header\":\"Region\"}},\"required\":["
     "\"region\"]}",
     NULL, RO, conformance_custom_header, NULL},
    {"test_trigger_tool_change", "Tool list change",
     "Tells subscriptions/listen listeners that the tool list changed.", NO_ARGS, NULL, RO,
     conformance_trigger_tool_change, NULL},
    {"test_trigger_prompt_change", "Prompt list change",
     "Tells subscriptions/listen listeners that the prompt list changed.", NO_ARGS, NULL, RO,
     conformance_trigger_prompt_change, NULL},
    {"test_input_required_result_elicitation", "MRTR elicitation",
     "Asks the user's name by a multi round-trip request (key user_name).", NO_ARGS, NULL, RO,
     conformance_ir_elicitation, NULL},
    {"test_input_required_result_sampling", "MRTR sampling",
     "Asks the client's model a question by a multi round-trip request.", NO_ARGS, NULL, RO,
     conformance_ir_sampling, NULL},
    {"test_input_required_result_list_roots", "MRTR roots",
     "Asks the client's roots by a multi round-trip request.", NO_ARGS, NULL, RO,
     conformance_ir_list_roots, NULL},
    {"test_input_required_result_request_state", "MRTR request state",
     "Asks a confirmation and checks the requestState it sealed.", NO_ARGS, NULL, RO,
     conformance_ir_request_state, NULL},
    {"test_input_required_result_multiple_inputs", "MRTR several inputs",
     "Asks a name, a model's greeting and the roots in one round.", NO_ARGS, NULL, RO,
     conformance_ir_multiple_inputs, NULL},
    {"test_input_required_result_multi_round", "MRTR two rounds",
     "Asks a name, then a colour, carrying the name in requestState.", NO_ARGS, NULL, RO,
     conformance_ir_multi_round, NULL},
    {"test_input_required_result_tampered_state", "MRTR sealed state",
     "Refuses a requestState that was changed.", NO_ARGS, NULL, RO, conformance_ir_tampered_state,
     NULL},
    {"test_input_required_result_capabilities", "MRTR capabilities",
     "Asks only what the request's capabilities allow.", NO_ARGS, NULL, RO,
     conformance_ir_capabilities, NULL},
};

static const mcp_resource_def_t resources[] = {
    {"test://static-text", "static-text", "Static text", "A static text resource.", "text/plain",
     read_static_text, NULL},
    {"test://static-binary", "static-binary", "Static binary", "A static binary resource (PNG).",
     "image/png", read_static_binary, NULL},
    {"test://watched-resource", "watched-resource", "Watched resource",
     "A resource clients may subscribe to.", "text/plain", read_watched, NULL},
    {"test://template/{id}/data", "template", "Template",
     "A resource template with parameter substitution", "application/json", read_template, NULL},
};

static const mcp_prompt_def_t prompts[] = {
    {"test_simple_prompt", "Simple prompt", "A prompt without arguments.", NULL, prompt_simple},
    {"test_prompt_with_arguments", "Prompt with arguments", "A prompt with two required arguments.",
     "[{\"name\":\"arg1\",\"description\":\"First test argument\",\"required\":true},"
     "{\"name\":\"arg2\",\"description\":\"Second test argument\",\"required\":true}]",
     prompt_arguments},
    {"test_prompt_with_embedded_resource", "Prompt with a resource",
     "A prompt that embeds a resource.",
     "[{\"name\":\"resourceUri\",\"description\":\"URI of the resource to embed\","
     "\"required\":true}]",
     prompt_embedded},
    {"test_prompt_with_image", "Prompt with an image", "A prompt that includes an image.", NULL,
     prompt_image},
    {"test_input_required_result_prompt", "MRTR prompt",
     "MRTR: prompt that requires elicitation input", NULL, conformance_ir_prompt},
};

const mcp_toolset_t toolset_conformance = {
    .name = "conformance",
    .description = "Fixtures for the MCP conformance suite",
    .tools = tools,
    .ntools = (int)(sizeof tools / sizeof tools[0]),
    .resources = resources,
    .nresources = (int)(sizeof resources / sizeof resources[0]),
    .prompts = prompts,
    .nprompts = (int)(sizeof prompts / sizeof prompts[0]),
    .on_request_only = true,
    .lists_change = true,
};
