/* call: a tools/call in flight and the results it sends (see call.h). */
#include "mcp/call.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/envelope.h"
#include "mcp/jsonrpc.h"
#include "mcp/request_state.h"
#include "mcp/schema.h"
#include "mcp/server.h"
#include "mcp/session.h"
#include "mcp/session_internal.h"
#include "util/buf.h"
#include "util/json_out.h"
#include "util/log.h"
#include "util/strutil.h"

const char *const mcp_log_level_names[] = {"debug", "info",     "notice", "warning",
                                           "error", "critical", "alert",  "emergency"};

mcp_call_t *mcp_call__new(mcp_session_t *s, mcp_call_kind_t kind, const char *name, json_t *id,
                          json_t *args, json_t *progress_token)
{
    mcp_call_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->session = s;
    c->kind = kind;
    c->name = name;
    c->id = json_incref(id);
    c->args = json_incref(args);
    c->progress_token = json_incref(progress_token);
    c->last_progress = -1e300;
    return c;
}

void mcp_call__pin_digest(mcp_call_t *c)
{
    if (c->modern && c->state_digest[0] == '\0' && schema_holds_real(c->args))
        mcp_session__request_digest(c->args, c->state_digest);
}

void *mcp_call_context(const mcp_call_t *c)
{
    return c->context;
}

bool mcp_call_serves_tool(const mcp_call_t *c, const char *name)
{
    return mcp_session__serves_tool(c->session, name);
}

const char *mcp_call_tool_name(const mcp_call_t *c, const char *name)
{
    return mcp_session__tool_name(c->session, name);
}

bool mcp_call_policy_scoped(const mcp_call_t *c)
{
    return mcp_session__policy_scoped(c->session);
}

bool mcp_call_policy_names(const mcp_call_t *c, const char *name)
{
    return mcp_session__policy_names(c->session, name);
}

const char *mcp_call_principal(const mcp_call_t *c)
{
    return c->session->principal;
}

uv_loop_t *mcp_call_loop(const mcp_call_t *c)
{
    return mcp_session__server(c->session)->loop;
}

void mcp_call_end_stream(mcp_call_t *c)
{
    if (c->probe_done == NULL && !c->cancelled && !c->finished)
        mcp_session__end_stream(c->session, c->id);
}

/* Ends the wait for the client's answer and hands it to the handler. */
static void wait_end(mcp_call_t *c, int status, const json_t *result, const json_t *error)
{
    mcp_reply_fn cb = c->wait_cb;
    c->wait_id = 0;
    c->wait_cb = NULL;
    mcp_server__wait_stop(mcp_session__server(c->session), c);
    cb(c, status, result, error);
}

void mcp_call__cancel(mcp_call_t *c)
{
    if (c->cancelled || c->finished)
        return;
    c->cancelled = true;
    if (c->wait_id != 0) {
        /* Tell the client to drop our request too. */
        if (mcp_session_state(c->session) < MCP_SESSION_CLOSING) {
            json_t *p = json_pack("{s:I, s:s}", "requestId", (json_int_t)c->wait_id, "reason",
                                  "the tool call was cancelled");
            size_t len = 0;
            char *m = jsonrpc_notification("notifications/cancelled", p, &len);
            json_decref(p);
            mcp_session__send(c->session, m, len, c->id, false);
        }
        wait_end(c, UV_ECANCELED, NULL, NULL);
        return;
    }
    if (c->on_cancel)
        c->on_cancel(c);
}

void mcp_call__answer(mcp_call_t *c, const json_t *result, const json_t *error)
{
    if (c->wait_id == 0)
        return;
    wait_end(c, error ? UV_EPROTO : 0, result, error);
}

void mcp_call__wait_abort(mcp_call_t *c, int status)
{
    if (c->wait_id != 0)
        wait_end(c, status, NULL, NULL);
}

void mcp_call__wait_expired(mcp_call_t *c)
{
    if (c->wait_id == 0)
        return;
    log_info(mcp_session_tag(c->session), "%s: the client did not answer request %lld in time",
             c->name, (long long)c->wait_id);
    wait_end(c, UV_ETIMEDOUT, NULL, NULL);
}

int mcp_call_request(mcp_call_t *c, const char *capability, const char *method, json_t *params,
                     mcp_reply_fn cb)
{
    int rc = 0;
    if (c->cancelled || c->finished)
        rc = UV_ECANCELED;
    else if (c->wait_id != 0)
        rc = UV_EALREADY;
    else if (c->modern || c->probe_done != NULL || !mcp_session__client_has(c->session, capability))
        rc = UV_ENOTSUP;
    if (rc != 0) {
        json_decref(params);
        return rc;
    }
    mcp_server_t *srv = mcp_session__server(c->session);
    c->wait_id = mcp_session__next_request_id(c->session);
    c->wait_cb = cb;
    c->wait_deadline = uv_now(srv->loop) + (uint64_t)srv->limits.request_timeout_ms;
    json_t *env = json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", (json_int_t)c->wait_id,
                            "method", method, "params", params);
    char *m = env ? json_dumps(env, JSON_COMPACT) : NULL;
    json_decref(env);
    mcp_server__wait_start(srv, c);
    mcp_session__send(c->session, m, m ? strlen(m) : 0, c->id, false);
    return 0;
}

static bool call_can_send(const mcp_call_t *c)
{
    return c->probe_done == NULL && !c->finished && !c->cancelled &&
           mcp_session_state(c->session) < MCP_SESSION_CLOSING;
}

/* Sends the notification method with params (taken) on the call's
 * stream. */
static void notify(mcp_call_t *c, const char *method, json_t *params)
{
    size_t len;
    char *m = jsonrpc_notification(method, params, &len);
    json_decref(params);
    mcp_session__send(c->session, m, len, c->id, false);
}

void mcp_call_progress(mcp_call_t *c, double progress, double total, const char *message)
{
    if (c->progress_token == NULL || !call_can_send(c) || progress <= c->last_progress)
        return;
    c->last_progress = progress;
    json_t *p = json_pack("{s:O, s:f}", "progressToken", c->progress_token, "progress", progress);
    if (total > 0)
        json_object_set_new(p, "total", json_real(total));
    if (message)
        json_object_set_new(p, "message", json_string(message));
    notify(c, "notifications/progress", p);
}

void mcp_call_log(mcp_call_t *c, mcp_log_level_t level, const char *logger, json_t *data)
{
    int threshold = c->modern ? c->log_level : mcp_session__log_level(c->session);
    if (!call_can_send(c) || (int)level < threshold) {
        json_decref(data);
        return;
    }
    json_t *p = json_pack("{s:s, s:o}", "level", mcp_log_level_names[level], "data", data);
    if (logger)
        json_object_set_new(p, "logger", json_string(logger));
    notify(c, "notifications/message", p);
}

bool mcp_call_client_has(const mcp_call_t *c, const char *cap, const char *mode)
{
    const json_t *v =
        c->modern ? json_object_get(c->caps, cap) : mcp_session__client_cap(c->session, cap);
    if (v == NULL || mode == NULL)
        return v != NULL;
    if (json_object_get(v, mode) != NULL)
        return true;
    /* "elicitation": {} is form mode (2025-11-25, backwards compatible). */
    return strcmp(cap, "elicitation") == 0 && strcmp(mode, "form") == 0 &&
           json_object_get(v, "url") == NULL;
}

static void call_end(mcp_call_t *c, char *msg, size_t len);

void mcp_call_list_changed(mcp_call_t *c, const char *list)
{
    mcp_server_list_changed(mcp_session__server(c->session), list);
}

bool mcp_call_can_ask(const mcp_call_t *c)
{
    return c->modern;
}

const json_t *mcp_call_input_response(const mcp_call_t *c, const char *key)
{
    return json_object_get(c->input_responses, key);
}

const json_t *mcp_call_request_state(const mcp_call_t *c)
{
    return c->request_state;
}

/* The client capability input request r needs ("elicitation" in url mode
 * needs elicitation.url), or NULL when it has it. */
static const char *missing_capability(const mcp_call_t *c, const json_t *r, const char **mode)
{
    const char *method = json_string_value(json_object_get(r, "method"));
    const char *m = json_string_value(json_object_get(json_object_get(r, "params"), "mode"));
    *mode = NULL;
    if (method && strcmp(method, "elicitation/create") == 0) {
        *mode = m && strcmp(m, "url") == 0 ? "url" : "form";
        return mcp_call_client_has(c, "elicitation", *mode) ? NULL : "elicitation";
    }
    if (method && strcmp(method, "sampling/createMessage") == 0)
        return mcp_call_client_has(c, "sampling", NULL) ? NULL : "sampling";
    if (method && strcmp(method, "roots/list") == 0)
        return mcp_call_client_has(c, "roots", NULL) ? NULL : "roots";
    return "an input request method of elicitation/create, sampling/createMessage or roots/list";
}

void mcp_call_finish_input_required(mcp_call_t *c, json_t *input_requests, json_t *state)
{
    mcp_server_t *srv = mcp_session__server(c->session);
    if (!c->modern || !srv->state_key_ok) {
        json_decref(input_requests);
        json_decref(state);
        mcp_call_finish_rpc_error(c, JSONRPC_INTERNAL_ERROR,
                                  "this call cannot ask the client for input", NULL);
        return;
    }
    const char *key;
    json_t *r;
    json_object_foreach(input_requests, key, r)
    {
        const char *mode, *cap = missing_capability(c, r, &mode);
        if (cap != NULL) {
            char msg[200];
            snprintf(msg, sizeof msg,
                     "Missing required client capability: %s%s (declare it in "
                     "_meta[\"io.modelcontextprotocol/clientCapabilities\"])",
                     cap, mode && strcmp(mode, "url") == 0 ? " (url mode)" : "");
            json_t *req = json_object();
            json_object_set_new(req, cap,
                                mode && strcmp(mode, "url") == 0 ? json_pack("{s:{}}", "url")
                                                                 : json_object());
            json_decref(input_requests);
            json_decref(state);
            mcp_call_finish_rpc_error(c, MCP_ERROR_MISSING_CAPABILITY, msg,
                                      json_pack("{s:o}", "requiredCapabilities", req));
            return;
        }
    }
    json_t *result = json_pack("{s:o}", "inputRequests", input_requests);
    if (state != NULL) {
        char ctx[MCP_STATE_CONTEXT_MAX], *text = NULL;
        uv_timeval64_t tv;
        uv_gettimeofday(&tv);
        if (c->state_digest[0] == '\0') /* not made at the start (session_methods.c) */
            mcp_session__request_digest(c->args, c->state_digest);
        mcp_session__state_context(c->session, (int)c->kind, c->name, c->state_digest, ctx,
                                   sizeof ctx);
        int rc =
            mcp_request_state_seal(&srv->state_key, ctx, state,
                                   (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000, &text);
        json_decref(state);
        if (rc != 0) {
            json_decref(result);
            mcp_call_finish_rpc_error(c, JSONRPC_INTERNAL_ERROR, "cannot seal the request state",
                                      NULL);
            return;
        }
        json_object_set_new(result, "requestState", json_string(text));
        free(text);
    }
    if (mcp_envelope_complete(result, srv->name, srv->version) != 0 ||
        json_object_set_new(result, "resultType", json_string("input_required")) != 0) {
        json_decref(result);
        result = NULL;
    }
    size_t len = 0;
    char *msg = jsonrpc_result(c->id, result, &len);
    json_decref(result);
    call_end(c, msg, len);
}

void mcp_call_notify(mcp_call_t *c, const char *method, json_t *params)
{
    if (!call_can_send(c)) {
        json_decref(params);
        return;
    }
    size_t len;
    char *m = jsonrpc_notification(method, params, &len);
    json_decref(params);
    mcp_session__send(c->session, m, len, c->id, false);
}

/* Sends (unless cancelled) and releases the call. */
static void call_end(mcp_call_t *c, char *msg, size_t len)
{
    mcp_session_t *s = c->session;
    if (c->finished) {
        log_error(mcp_session_tag(s), "%s finished a call twice", c->name);
        free(msg);
        return;
    }
    if (c->wait_id != 0) {
        /* Finished without waiting for the answer: it will be ignored. */
        c->wait_id = 0;
        mcp_server__wait_stop(mcp_session__server(s), c);
    }
    c->finished = true;
    if (c->probe_done != NULL && !c->cancelled && c->probe_owner != NULL)
        c->probe_done(c, msg, len);
    else if (c->probe_done == NULL && !c->cancelled)
        mcp_session__send(s, msg, len, c->id, true);
    else
        free(msg);
    json_decref(c->id);
    json_decref(c->args);
    json_decref(c->progress_token);
    json_decref(c->caps);
    json_decref(c->input_responses);
    json_decref(c->request_state);
    mcp_session__call_done(s, c);
    free(c);
}

/* A raw line break in valid JSON text can only be whitespace between
 * tokens (strings escape theirs): blanks those in [at, end), so the message
 * stays one line for newline-delimited transports. */
static void blank_line_breaks(char *at, char *end)
{
    for (const char *nl = "\n\r"; *nl; nl++)
        for (char *p = at; (p = memchr(p, *nl, (size_t)(end - p))) != NULL;)
            *p++ = ' ';
}

void mcp_call_finish_json(mcp_call_t *c, const char *json, size_t len)
{
    buf_t b;
    buf_init(&b, (size_t)1 << 30);
    const char *tail = c->modern ? mcp_server__complete_text(mcp_session__server(c->session)) : "";
    if (tail == NULL)
        tail = ",\"resultType\":\"complete\""; /* without serverInfo: the answer still goes */
    int rc = buf_append_str(&b, "{\"jsonrpc\":\"2.0\",\"id\":") ||
             (c->id ? json_out_append(&b, c->id) : buf_append_str(&b, "null")) ||
             buf_append_str(&b, ",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"") ||
             buf_append_json_escaped(&b, json, len) ||
             buf_append_str(&b, "\"}],\"structuredContent\":") || buf_append(&b, json, len) ||
             buf_append_str(&b, tail) || buf_append_str(&b, "}}");
    if (rc == 0)
        blank_line_breaks(b.data + b.len - len - 2 - strlen(tail), b.data + b.len);
    size_t mlen = 0;
    char *msg = rc ? NULL : buf_steal(&b, &mlen);
    buf_free(&b);
    call_end(c, msg, mlen);
}

/* JSON's whitespace (RFC 8259: space, tab, line feed, carriage return). */
static bool is_json_ws(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* True when json[0..len) holds "_meta" or "resultType" (quotes included)
 * anywhere: one pass over its quotes rather than a search for each. */
static bool names_envelope_member(const char *json, size_t len)
{
    const char *end = json + len;
    for (const char *p = json; (p = memchr(p, '"', (size_t)(end - p))) != NULL; p++) {
        size_t left = (size_t)(end - p);
        if ((left >= 7 && p[1] == '_' && memcmp(p, "\"_meta\"", 7) == 0) ||
            (left >= 12 && p[1] == 'r' && memcmp(p, "\"resultType\"", 12) == 0))
            return true;
    }
    return false;
}

void mcp_call_finish_result_text(mcp_call_t *c, const char *json, size_t len)
{
    while (len > 0 && is_json_ws(json[len - 1]))
        len--;
    size_t open = 0;
    while (open < len && is_json_ws(json[open]))
        open++;
    const char *tail = "";
    if (c->modern)
        tail = c->kind != MCP_CALL_RESOURCE
                   ? mcp_server__complete_text(mcp_session__server(c->session))
                   : NULL;
    if (tail == NULL || len - open < 2 || json[open] != '{' || json[len - 1] != '}' ||
        (*tail != '\0' && names_envelope_member(json, len))) {
        /* A read's cache hints, an identity the prebuilt envelope cannot
         * hold, members of the envelope's own (merged, not repeated), or
         * not an object: completed as an object. */
        json_error_t je;
        json_t *r = json_loadb(json, len, 0, &je);
        if (!json_is_object(r)) {
            log_error(mcp_session_tag(c->session), "%s: its result is not a JSON object (%s)",
                      c->name, r ? "another value" : je.text);
            json_decref(r);
            mcp_call_finish_rpc_error(
                c, JSONRPC_INTERNAL_ERROR,
                r ? "the result is not a JSON object" : "the result is not valid JSON", NULL);
            return;
        }
        mcp_call_finish_result(c, r);
        return;
    }
    /* The object without its closing brace, then the envelope's members
     * (the first without its comma when the object is empty). */
    size_t inner = open + 1;
    while (inner < len - 1 && is_json_ws(json[inner]))
        inner++;
    if (*tail != '\0' && inner == len - 1)
        tail++;
    buf_t b;
    buf_init(&b, (size_t)1 << 30);
    int rc = jsonrpc_open_response(&b, c->id, "result");
    size_t at = b.len;
    rc = rc || buf_append(&b, json + open, len - 1 - open) || buf_append_str(&b, tail) ||
         buf_append_str(&b, "}}");
    if (rc == 0)
        blank_line_breaks(b.data + at, b.data + b.len);
    size_t mlen = 0;
    char *msg = rc ? NULL : buf_steal(&b, &mlen);
    buf_free(&b);
    call_end(c, msg, mlen);
}

void mcp_call_finish_result(mcp_call_t *c, json_t *result)
{
    size_t len = 0;
    const char *tail = c->modern && c->kind != MCP_CALL_RESOURCE && mcp_envelope_spliceable(result)
                           ? mcp_server__complete_text(mcp_session__server(c->session))
                           : NULL;
    if (tail != NULL) {
        /* The envelope as the server's prebuilt text, not built per call. */
        char *msg = jsonrpc_result_spliced(c->id, result, tail, &len);
        json_decref(result);
        call_end(c, msg, len);
        return;
    }
    if (c->modern && result != NULL) {
        mcp_server_t *srv = mcp_session__server(c->session);
        /* A read answers with the store's data as it is now, for this
         * caller: immediately stale, private. */
        if (mcp_envelope_complete(result, srv->name, srv->version) != 0 ||
            (c->kind == MCP_CALL_RESOURCE &&
             mcp_envelope_cache(result, MCP_CACHE_READ_TTL_MS, true) != 0)) {
            json_decref(result);
            result = NULL; /* jsonrpc_result(NULL) fails: out of memory */
        }
    }
    char *msg = jsonrpc_result(c->id, result, &len);
    json_decref(result);
    call_end(c, msg, len);
}

void mcp_call_finish_error(mcp_call_t *c, const char *fmt, ...)
{
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    /* A cut (the buffer's, or a "%.100s" of a client's text in the middle)
     * must not leave half a character: the result could not be encoded. */
    str_utf8_trim_end(text);
    str_utf8_repair(text);
    if (c->kind != MCP_CALL_TOOL) {
        /* resources/read and prompts/get results have no isError. */
        mcp_call_finish_rpc_error(c, JSONRPC_INTERNAL_ERROR, text, NULL);
        return;
    }
    mcp_session__server(c->session)->stats.tool_errors++;
    json_t *r =
        json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", text, "isError", 1);
    mcp_call_finish_result(c, r);
}

void mcp_call_finish_rpc_error(mcp_call_t *c, int code, const char *message, json_t *data)
{
    /* 2026-07-28: "-32002 — resource not found (replaced by -32602)". */
    if (c->modern && code == MCP_ERROR_RESOURCE_NOT_FOUND)
        code = JSONRPC_INVALID_PARAMS;
    size_t len = 0;
    char *msg = jsonrpc_error(c->id, code, message, data, &len);
    json_decref(data);
    call_end(c, msg, len);
}
