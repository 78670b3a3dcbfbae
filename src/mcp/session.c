/* session: the MCP protocol state machine of one session (see session.h). */
#include "mcp/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/call.h"
#include "mcp/jsonrpc.h"
#include "mcp/schema.h"
#include "util/log.h"

const char *const mcp_protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                             NULL};

struct mcp_session_s {
    queue_node_t node; /* in server->sessions, then server->sweep */
    mcp_server_t *srv;
    const mcp_transport_ops_t *ops;
    void *t;
    mcp_session_state_t state;
    char tag[32];
    const char *kind;
    char protocol[16];
    json_t *client_info;
    json_t *client_caps;
    int log_level; /* notifications/message at or above this are sent */
    queue_node_t calls;
    int inflight;
    int64_t next_request_id;
    mcp_policy_t policy;
    char *subs[MCP_SESSION_MAX_SUBSCRIPTIONS]; /* subscribed resource URIs */
    int nsubs;
    bool reading; /* what we last asked of the transport */
    bool transport_gone;
    bool swept;         /* handed to the server's sweep */
    uint64_t opened_at; /* loop time */
};

static void session_update_reading(mcp_session_t *s);
static void session_maybe_finish(mcp_session_t *s);

mcp_session_t *mcp_session__from_node(queue_node_t *node)
{
    return queue_entry(node, mcp_session_t, node);
}

uint64_t mcp_session__opened_at(const mcp_session_t *s)
{
    return s->opened_at;
}

mcp_server_t *mcp_session__server(const mcp_session_t *s)
{
    return s->srv;
}

int mcp_session__log_level(const mcp_session_t *s)
{
    return s->log_level;
}

const char *mcp_session_tag(const mcp_session_t *s)
{
    return s->tag;
}

const char *mcp_session_kind(const mcp_session_t *s)
{
    return s->kind;
}

mcp_session_state_t mcp_session_state(const mcp_session_t *s)
{
    return s->state;
}

const char *mcp_session_protocol_version(const mcp_session_t *s)
{
    return s->protocol;
}

mcp_session_t *mcp_session_new(mcp_server_t *srv, const mcp_transport_ops_t *ops, void *t,
                               const char *kind)
{
    mcp_session_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->srv = srv;
    s->ops = ops;
    s->t = t;
    s->kind = kind;
    s->log_level = MCP_LOG_DEBUG;
    s->policy.toolset_mask = ~0u;
    s->reading = true;
    queue_init(&s->calls);
    snprintf(s->tag, sizeof s->tag, "s:%llu", (unsigned long long)++srv->next_session_id);
    s->opened_at = uv_now(srv->loop);
    queue_push_tail(&srv->sessions, &s->node);
    mcp_server__session_opened(srv);
    srv->stats.sessions_opened++;
    srv->stats.sessions_open++;
    log_debug(s->tag, "session opened (%s)", kind);
    return s;
}

void mcp_session_set_policy(mcp_session_t *s, const mcp_policy_t *p)
{
    s->policy = *p;
}

bool mcp_protocol_supported(const char *version)
{
    for (int i = 0; mcp_protocol_versions[i]; i++)
        if (strcmp(version, mcp_protocol_versions[i]) == 0)
            return true;
    return false;
}

/* True when the session's policy lets it see tool t. */
static bool tool_allowed(const mcp_session_t *s, const mcp_tool_t *t)
{
    if (s->policy.read_only && !(t->def->annotations & MCP_TOOL_READ_ONLY))
        return false;
    const mcp_registry_t *r = &s->srv->registry;
    for (int i = 0; i < r->ntoolsets && i < 32; i++)
        if (r->toolsets[i] == t->toolset)
            return (s->policy.toolset_mask >> i) & 1u;
    return true;
}

int mcp_session_inflight(const mcp_session_t *s)
{
    return s->inflight;
}

bool mcp_session__client_has(const mcp_session_t *s, const char *cap)
{
    return json_object_get(s->client_caps, cap) != NULL;
}

void mcp_session__end_stream(mcp_session_t *s, const json_t *id)
{
    if (!s->transport_gone && s->state < MCP_SESSION_CLOSING && s->ops->end_stream)
        s->ops->end_stream(s->t, id);
}

int64_t mcp_session__next_request_id(mcp_session_t *s)
{
    return ++s->next_request_id;
}

void mcp_session__free(mcp_session_t *s)
{
    for (int i = 0; i < s->nsubs; i++)
        free(s->subs[i]);
    json_decref(s->client_info);
    json_decref(s->client_caps);
    free(s);
}

/* ---- output --------------------------------------------------------------- */

void mcp_session__send(mcp_session_t *s, char *msg, size_t len, const json_t *related, bool final)
{
    if (msg == NULL) {
        log_error(s->tag, "out of memory building a message; closing the session");
        mcp_session_close(s);
        return;
    }
    if (s->transport_gone || s->state == MCP_SESSION_CLOSING || s->state == MCP_SESSION_CLOSED) {
        free(msg);
        return;
    }
    int rc = s->ops->send(s->t, msg, len, related, final);
    if (rc != 0) {
        log_warn(s->tag, "cannot send: %s; closing the session", uv_strerror(rc));
        mcp_session_close(s);
        return;
    }
    size_t queued = s->ops->queued_bytes(s->t);
    if (queued > s->srv->limits.output_hard_limit) {
        log_warn(s->tag,
                 "closing the session: %zu bytes of output queued (limit %zu); the client "
                 "does not read its responses",
                 queued, s->srv->limits.output_hard_limit);
        mcp_session_close(s);
        return;
    }
    session_update_reading(s);
}

static void send_error(mcp_session_t *s, const json_t *id, int code, const char *message,
                       const json_t *data)
{
    size_t len;
    char *m = jsonrpc_error(id, code, message, data, &len);
    s->srv->stats.errors++;
    log_debug(s->tag, "error %d: %s", code, message);
    mcp_session__send(s, m, len, id, true);
}

static void send_result(mcp_session_t *s, const json_t *id, json_t *result)
{
    size_t len;
    char *m = jsonrpc_result(id, result, &len);
    json_decref(result);
    mcp_session__send(s, m, len, id, true);
}

/* ---- backpressure ------------------------------------------------------------ */

static void session_update_reading(mcp_session_t *s)
{
    if (s->transport_gone || s->state >= MCP_SESSION_DRAINING)
        return;
    size_t queued = s->ops->queued_bytes(s->t);
    bool want;
    if (s->inflight >= s->srv->limits.session_max_inflight)
        want = false;
    else if (s->reading)
        want = queued <= s->srv->limits.output_high_water;
    else
        want = queued <= s->srv->limits.output_low_water;
    if (want != s->reading) {
        s->reading = want;
        log_debug(s->tag, "%s reading (in flight %d, queued %zu bytes)",
                  want ? "resuming" : "pausing", s->inflight, queued);
        s->ops->set_reading(s->t, want);
    }
}

void mcp_session_drained(mcp_session_t *s)
{
    session_update_reading(s);
    session_maybe_finish(s);
}

/* ---- lifecycle ---------------------------------------------------------------- */

static void handle_initialize(mcp_session_t *s, const json_t *id, const json_t *params)
{
    if (s->state != MCP_SESSION_NEW) {
        send_error(s, id, JSONRPC_INVALID_REQUEST, "initialize was already received", NULL);
        return;
    }
    const json_t *pv = json_object_get(params, "protocolVersion");
    if (!json_is_string(pv)) {
        send_error(s, id, JSONRPC_INVALID_PARAMS,
                   "initialize: params.protocolVersion must be a string", NULL);
        return;
    }
    /* "If the server supports the requested protocol version, it MUST
     * respond with the same version. Otherwise, the server MUST respond
     * with another protocol version it supports" (the latest). */
    const char *chosen = mcp_protocol_versions[0];
    for (int i = 0; mcp_protocol_versions[i]; i++)
        if (strcmp(json_string_value(pv), mcp_protocol_versions[i]) == 0)
            chosen = mcp_protocol_versions[i];
    snprintf(s->protocol, sizeof s->protocol, "%s", chosen);
    s->client_caps = json_incref(json_object_get(params, "capabilities"));
    s->client_info = json_incref(json_object_get(params, "clientInfo"));
    const json_t *cname = json_object_get(s->client_info, "name");
    log_info(s->tag, "initialized by %s (%s), protocol %s",
             json_is_string(cname) ? json_string_value(cname) : "unknown client", s->kind,
             s->protocol);
    const mcp_registry_t *r = &s->srv->registry;
    json_t *caps =
        json_pack("{s:{s:b}, s:{}, s:{}}", "tools", "listChanged", 0, "logging", "completions");
    if (r->nresources > 0)
        json_object_set_new(caps, "resources",
                            json_pack("{s:b, s:b}", "subscribe", 1, "listChanged", 0));
    if (r->nprompts > 0)
        json_object_set_new(caps, "prompts", json_pack("{s:b}", "listChanged", 0));
    json_t *result =
        json_pack("{s:s, s:o, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", s->protocol,
                  "capabilities", caps, "serverInfo", "name", s->srv->name, "title", "parley",
                  "version", s->srv->version, "instructions", s->srv->instructions);
    s->state = MCP_SESSION_READY;
    send_result(s, id, result);
}

static void handle_set_level(mcp_session_t *s, const json_t *id, const json_t *params)
{
    const char *lv = json_string_value(json_object_get(params, "level"));
    for (int i = 0; lv && i <= MCP_LOG_EMERGENCY; i++) {
        if (strcmp(lv, mcp_log_level_names[i]) == 0) {
            s->log_level = i;
            send_result(s, id, json_object());
            return;
        }
    }
    send_error(s, id, JSONRPC_INVALID_PARAMS,
               "logging/setLevel: params.level must be one of debug, info, notice, warning, "
               "error, critical, alert, emergency",
               NULL);
}

/* ---- tools ------------------------------------------------------------------- */

/* Lists entries [start, start+page) of one kind; cursors are offsets. */
static void list_page(mcp_session_t *s, const json_t *id, const json_t *params, const char *what,
                      json_t *all)
{
    long start = 0, n = (long)json_array_size(all), page = s->srv->limits.tools_page_size;
    const json_t *cursor = json_object_get(params, "cursor");
    if (cursor != NULL && !json_is_null(cursor)) {
        const char *c = json_string_value(cursor);
        char *end = NULL;
        if (c != NULL && c[0] != '\0')
            start = strtol(c, &end, 10);
        if (c == NULL || c[0] == '\0' || *end != '\0' || start <= 0 || start >= n) {
            char msg[160];
            snprintf(msg, sizeof msg,
                     "%s/list: invalid cursor (pass the nextCursor of the previous page)",
                     strcmp(what, "resourceTemplates") == 0 ? "resources/templates" : what);
            send_error(s, id, JSONRPC_INVALID_PARAMS, msg, NULL);
            json_decref(all);
            return;
        }
    }
    json_t *items = json_array();
    for (long i = start; i < n && i < start + page; i++)
        json_array_append(items, json_array_get(all, (size_t)i));
    json_decref(all);
    json_t *result = json_object();
    json_object_set_new(result, what, items);
    if (start + page < n) {
        char next[24];
        snprintf(next, sizeof next, "%ld", start + page);
        json_object_set_new(result, "nextCursor", json_string(next));
    }
    send_result(s, id, result);
}

static void handle_tools_list(mcp_session_t *s, const json_t *id, const json_t *params)
{
    const mcp_registry_t *r = &s->srv->registry;
    json_t *all = json_array();
    for (int i = 0; i < r->ntools; i++)
        if (tool_allowed(s, &r->tools[i]))
            json_array_append(all, r->tools[i].listing);
    list_page(s, id, params, "tools", all);
}

/* Admits a request that a handler answers: checks the global cap on work
 * in flight (a busy error with retryAfterMs past it), and registers the
 * call. NULL when it was answered already. */
static mcp_call_t *call_start(mcp_session_t *s, mcp_call_kind_t kind, const char *name, json_t *id,
                              json_t *args, const json_t *params)
{
    mcp_server_t *srv = s->srv;
    if (srv->stats.active_calls >= srv->limits.max_active_calls) {
        srv->stats.busy_rejections++;
        json_t *data = json_pack("{s:i}", "retryAfterMs", MCP_BUSY_RETRY_AFTER_MS);
        send_error(s, id, JSONRPC_SERVER_BUSY, "server busy, retry later", data);
        json_decref(data);
        return NULL;
    }
    const json_t *meta = json_object_get(params, "_meta");
    json_t *token = json_object_get(meta, "progressToken");
    if (token && !json_is_string(token) && !json_is_integer(token))
        token = NULL;
    mcp_call_t *c = mcp_call__new(s, kind, name, id, args, token);
    if (c == NULL) {
        send_error(s, id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
        return NULL;
    }
    c->started_ns = uv_hrtime();
    queue_push_tail(&s->calls, &c->node);
    s->inflight++;
    srv->stats.active_calls++;
    return c;
}

static void handle_tools_call(mcp_session_t *s, json_t *id, const json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    if (name == NULL) {
        send_error(s, id, JSONRPC_INVALID_PARAMS, "tools/call: params.name must be a string", NULL);
        return;
    }
    const mcp_tool_t *tool = mcp_registry_find(&s->srv->registry, name);
    if (tool != NULL && !tool_allowed(s, tool))
        tool = NULL;
    if (tool == NULL) {
        char msg[160];
        snprintf(msg, sizeof msg, "Unknown tool: %.100s (see tools/list)", name);
        send_error(s, id, JSONRPC_INVALID_PARAMS, msg, NULL);
        return;
    }
    json_t *args = json_object_get(params, "arguments");
    if (args == NULL || json_is_null(args))
        args = json_object();
    else if (!json_is_object(args)) {
        send_error(s, id, JSONRPC_INVALID_PARAMS, "tools/call: params.arguments must be an object",
                   NULL);
        return;
    } else
        json_incref(args);
    mcp_server_t *srv = s->srv;
    mcp_call_t *c = call_start(s, MCP_CALL_TOOL, tool->name, id, args, params);
    json_decref(args);
    if (c == NULL)
        return;
    c->tool = tool;
    c->context = mcp_registry_context(&srv->registry, tool->toolset);
    srv->stats.tool_calls++;
    char err[512];
    if (!schema_validate(tool->input_schema, c->args, err, sizeof err)) {
        mcp_call_finish_error(c, "Invalid arguments for %s: %s", tool->name, err);
        return;
    }
    tool->def->fn(c);
}

void mcp_session__call_done(mcp_session_t *s, mcp_call_t *c)
{
    mcp_server_observe_latency(s->srv, (double)(uv_hrtime() - c->started_ns) / 1e9);
    queue_remove(&c->node);
    s->inflight--;
    s->srv->stats.active_calls--;
    session_update_reading(s);
    session_maybe_finish(s);
}

/* ---- resources and prompts ----------------------------------------------- */

static void handle_resources_list(mcp_session_t *s, const json_t *id, const json_t *params,
                                  bool templates)
{
    const mcp_registry_t *r = &s->srv->registry;
    json_t *all = json_array();
    for (int i = 0; i < r->nresources; i++)
        if (r->resources[i].is_template == templates)
            json_array_append(all, r->resources[i].listing);
    list_page(s, id, params, templates ? "resourceTemplates" : "resources", all);
}

static void handle_resources_read(mcp_session_t *s, json_t *id, const json_t *params)
{
    const char *uri = json_string_value(json_object_get(params, "uri"));
    if (uri == NULL) {
        send_error(s, id, JSONRPC_INVALID_PARAMS, "resources/read: params.uri must be a string",
                   NULL);
        return;
    }
    json_t *vars = NULL;
    const mcp_resource_t *res = mcp_registry_find_resource(&s->srv->registry, uri, &vars);
    if (res == NULL) {
        /* "Resource not found" is -32002 in the MCP specification. */
        json_t *data = json_pack("{s:s}", "uri", uri);
        send_error(s, id, MCP_ERROR_RESOURCE_NOT_FOUND,
                   "Resource not found (see resources/list and resources/templates/list)", data);
        json_decref(data);
        return;
    }
    json_t *args = json_pack("{s:s, s:o}", "uri", uri, "vars", vars ? vars : json_object());
    mcp_call_t *c = call_start(s, MCP_CALL_RESOURCE, res->def->uri, id, args, params);
    json_decref(args);
    if (c == NULL)
        return;
    c->context = mcp_registry_context(&s->srv->registry, res->toolset);
    res->def->fn(c);
}

static void handle_subscribe(mcp_session_t *s, const json_t *id, const json_t *params, bool on)
{
    const char *uri = json_string_value(json_object_get(params, "uri"));
    if (uri == NULL) {
        send_error(s, id, JSONRPC_INVALID_PARAMS,
                   on ? "resources/subscribe: params.uri must be a string"
                      : "resources/unsubscribe: params.uri must be a string",
                   NULL);
        return;
    }
    int found = -1;
    for (int i = 0; i < s->nsubs; i++)
        if (strcmp(s->subs[i], uri) == 0)
            found = i;
    if (on && found < 0) {
        char *copy = NULL;
        if (s->nsubs == MCP_SESSION_MAX_SUBSCRIPTIONS || (copy = strdup(uri)) == NULL) {
            free(copy);
            send_error(s, id, JSONRPC_INVALID_PARAMS,
                       "resources/subscribe: too many subscriptions; unsubscribe from some first",
                       NULL);
            return;
        }
        s->subs[s->nsubs++] = copy;
    } else if (!on && found >= 0) {
        free(s->subs[found]);
        s->subs[found] = s->subs[--s->nsubs];
    }
    send_result(s, id, json_object());
}

void mcp_session__resource_updated(mcp_session_t *s, const char *uri)
{
    for (int i = 0; i < s->nsubs; i++) {
        if (strcmp(s->subs[i], uri) == 0) {
            json_t *p = json_pack("{s:s}", "uri", uri);
            size_t len = 0;
            char *m = jsonrpc_notification("notifications/resources/updated", p, &len);
            json_decref(p);
            mcp_session__send(s, m, len, NULL, false);
            return;
        }
    }
}

static void handle_prompts_list(mcp_session_t *s, const json_t *id, const json_t *params)
{
    const mcp_registry_t *r = &s->srv->registry;
    json_t *all = json_array();
    for (int i = 0; i < r->nprompts; i++)
        json_array_append(all, r->prompts[i].listing);
    list_page(s, id, params, "prompts", all);
}

static void handle_prompts_get(mcp_session_t *s, json_t *id, const json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    if (name == NULL) {
        send_error(s, id, JSONRPC_INVALID_PARAMS, "prompts/get: params.name must be a string",
                   NULL);
        return;
    }
    const mcp_prompt_t *p = mcp_registry_find_prompt(&s->srv->registry, name);
    if (p == NULL) {
        char msg[160];
        snprintf(msg, sizeof msg, "Unknown prompt: %.100s (see prompts/list)", name);
        send_error(s, id, JSONRPC_INVALID_PARAMS, msg, NULL);
        return;
    }
    json_t *args = json_object_get(params, "arguments");
    if (args != NULL && !json_is_null(args) && !json_is_object(args)) {
        send_error(s, id, JSONRPC_INVALID_PARAMS, "prompts/get: params.arguments must be an object",
                   NULL);
        return;
    }
    /* Required arguments must be present. */
    size_t i;
    json_t *a;
    json_array_foreach(p->arguments, i, a)
    {
        const char *an = json_string_value(json_object_get(a, "name"));
        if (an && json_is_true(json_object_get(a, "required")) &&
            !json_is_string(json_object_get(args, an))) {
            char msg[200];
            snprintf(msg, sizeof msg, "prompts/get %.60s: argument '%.60s' is required", name, an);
            send_error(s, id, JSONRPC_INVALID_PARAMS, msg, NULL);
            return;
        }
    }
    json_t *owned = json_is_object(args) ? json_incref(args) : json_object();
    mcp_call_t *c = call_start(s, MCP_CALL_PROMPT, p->def->name, id, owned, params);
    json_decref(owned);
    if (c == NULL)
        return;
    c->context = mcp_registry_context(&s->srv->registry, p->toolset);
    p->def->fn(c);
}

/* completion/complete: no argument of ours has completions yet; the answer
 * is an empty list (the result shape the specification requires). */
static void handle_complete(mcp_session_t *s, const json_t *id, const json_t *params)
{
    const json_t *ref = json_object_get(params, "ref");
    const json_t *arg = json_object_get(params, "argument");
    if (!json_is_object(ref) || !json_is_object(arg)) {
        send_error(s, id, JSONRPC_INVALID_PARAMS,
                   "completion/complete: params.ref and params.argument must be objects", NULL);
        return;
    }
    send_result(
        s, id, json_pack("{s:{s:[], s:i, s:b}}", "completion", "values", "total", 0, "hasMore", 0));
}

/* A response from the client to one of our requests. */
static void handle_response(mcp_session_t *s, const json_t *m)
{
    const json_t *id = json_object_get(m, "id");
    if (!json_is_integer(id))
        return;
    for (queue_node_t *n = s->calls.next; n != &s->calls; n = n->next) {
        mcp_call_t *c = queue_entry(n, mcp_call_t, node);
        if (c->wait_id != 0 && c->wait_id == json_integer_value(id)) {
            /* An error member of any shape is an error (a malformed one
             * included); a result is taken only without one. */
            const json_t *err = json_object_get(m, "error");
            mcp_call__answer(c, err ? NULL : json_object_get(m, "result"), err);
            return;
        }
    }
    log_debug(s->tag, "response to unknown request %lld ignored",
              (long long)json_integer_value(id));
}

static void handle_cancelled(mcp_session_t *s, const json_t *params)
{
    const json_t *rid = json_object_get(params, "requestId");
    if (rid == NULL)
        return;
    for (queue_node_t *n = s->calls.next; n != &s->calls; n = n->next) {
        mcp_call_t *c = queue_entry(n, mcp_call_t, node);
        if (!c->cancelled && json_equal(c->id, (json_t *)rid)) {
            log_debug(s->tag, "call %s cancelled by the client", c->name);
            /* No response will come: transports that route by request
             * (Streamable HTTP) end its stream. */
            if (!s->transport_gone && s->ops->abandon)
                s->ops->abandon(s->t, c->id);
            mcp_call__cancel(c);
            return;
        }
    }
}

/* ---- dispatch ------------------------------------------------------------------ */

static bool valid_id(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

static bool want_more(const mcp_session_t *s)
{
    return s->reading && s->state < MCP_SESSION_DRAINING;
}

bool mcp_session_receive(mcp_session_t *s, const char *msg, size_t len)
{
    if (s->state >= MCP_SESSION_CLOSING)
        return false;
    json_error_t je;
    json_t *m = json_loadb(msg, len, JSON_ALLOW_NUL | JSON_DECODE_ANY, &je);
    if (m == NULL) {
        char text[200];
        snprintf(text, sizeof text, "Parse error: %s at byte %d", je.text, je.position);
        send_error(s, NULL, JSONRPC_PARSE_ERROR, text, NULL);
        return want_more(s);
    }
    bool more = mcp_session_receive_json(s, m);
    json_decref(m);
    return more;
}

static mcp_method_t method_index(const char *name)
{
    for (int i = 0; i < MCP_M_OTHER; i++)
        if (strcmp(name, mcp_method_names[i]) == 0)
            return (mcp_method_t)i;
    return MCP_M_OTHER;
}

bool mcp_session_receive_json(mcp_session_t *s, json_t *m)
{
    if (s->state >= MCP_SESSION_CLOSING)
        return false;
    json_incref(m);
    if (!json_is_object(m)) {
        send_error(s, NULL, JSONRPC_INVALID_REQUEST,
                   json_is_array(m) ? "Invalid Request: batches are not supported"
                                    : "Invalid Request: a message must be a JSON object",
                   NULL);
        json_decref(m);
        return want_more(s);
    }
    json_t *id = json_object_get(m, "id");
    const char *ver = json_string_value(json_object_get(m, "jsonrpc"));
    const json_t *method = json_object_get(m, "method");
    if (ver == NULL || strcmp(ver, "2.0") != 0) {
        send_error(s, valid_id(id) ? id : NULL, JSONRPC_INVALID_REQUEST,
                   "Invalid Request: \"jsonrpc\" must be \"2.0\"", NULL);
        json_decref(m);
        return want_more(s);
    }
    if (method == NULL) {
        if (json_object_get(m, "result") != NULL || json_object_get(m, "error") != NULL)
            handle_response(s, m);
        else
            send_error(s, valid_id(id) ? id : NULL, JSONRPC_INVALID_REQUEST,
                       "Invalid Request: no method", NULL);
        json_decref(m);
        return want_more(s);
    }
    if (!json_is_string(method)) {
        send_error(s, valid_id(id) ? id : NULL, JSONRPC_INVALID_REQUEST,
                   "Invalid Request: \"method\" must be a string", NULL);
        json_decref(m);
        return want_more(s);
    }
    const char *name = json_string_value(method);
    json_t *params = json_object_get(m, "params");
    if (params != NULL && !json_is_object(params)) {
        if (id != NULL)
            send_error(s, valid_id(id) ? id : NULL, JSONRPC_INVALID_PARAMS,
                       "Invalid params: \"params\" must be an object", NULL);
        json_decref(m);
        return want_more(s);
    }
    if (id == NULL) {
        s->srv->stats.notifications++;
        if (strcmp(name, "notifications/cancelled") == 0)
            handle_cancelled(s, params);
        /* notifications/initialized and unknown notifications: nothing. */
        json_decref(m);
        return want_more(s);
    }
    if (!valid_id(id)) {
        send_error(s, NULL, JSONRPC_INVALID_REQUEST,
                   "Invalid Request: \"id\" must be a string or an integer", NULL);
        json_decref(m);
        return want_more(s);
    }
    s->srv->stats.requests++;
    mcp_method_t mi = method_index(name);
    s->srv->stats.by_method[mi]++;
    bool has_resources = s->srv->registry.nresources > 0;
    bool has_prompts = s->srv->registry.nprompts > 0;
    switch (mi) {
    case MCP_M_INITIALIZE:
        handle_initialize(s, id, params);
        break;
    case MCP_M_PING:
        send_result(s, id, json_object());
        break;
    case MCP_M_TOOLS_LIST:
        handle_tools_list(s, id, params);
        break;
    case MCP_M_TOOLS_CALL:
        handle_tools_call(s, id, params);
        break;
    case MCP_M_RESOURCES_LIST:
    case MCP_M_RESOURCES_TEMPLATES_LIST:
        if (has_resources)
            handle_resources_list(s, id, params, mi == MCP_M_RESOURCES_TEMPLATES_LIST);
        break;
    case MCP_M_RESOURCES_READ:
        if (has_resources)
            handle_resources_read(s, id, params);
        break;
    case MCP_M_RESOURCES_SUBSCRIBE:
    case MCP_M_RESOURCES_UNSUBSCRIBE:
        if (has_resources)
            handle_subscribe(s, id, params, mi == MCP_M_RESOURCES_SUBSCRIBE);
        break;
    case MCP_M_PROMPTS_LIST:
        if (has_prompts)
            handle_prompts_list(s, id, params);
        break;
    case MCP_M_PROMPTS_GET:
        if (has_prompts)
            handle_prompts_get(s, id, params);
        break;
    case MCP_M_COMPLETION_COMPLETE:
        handle_complete(s, id, params);
        break;
    case MCP_M_LOGGING_SET_LEVEL:
        handle_set_level(s, id, params);
        break;
    case MCP_M_OTHER:
    case MCP_M_COUNT:
        break;
    }
    bool unserved =
        mi == MCP_M_OTHER ||
        (!has_resources && mi >= MCP_M_RESOURCES_LIST && mi <= MCP_M_RESOURCES_UNSUBSCRIBE) ||
        (!has_prompts && (mi == MCP_M_PROMPTS_LIST || mi == MCP_M_PROMPTS_GET));
    if (unserved) {
        char text[160];
        snprintf(text, sizeof text, "Method not found: %.100s", name);
        send_error(s, id, JSONRPC_METHOD_NOT_FOUND, text, NULL);
    }
    json_decref(m);
    session_update_reading(s); /* a call may have reached the in-flight cap */
    return want_more(s);
}

void mcp_session_oversize(mcp_session_t *s, size_t limit)
{
    char text[128];
    s->srv->stats.oversize_messages++;
    snprintf(text, sizeof text, "Invalid Request: message larger than %zu bytes was dropped",
             limit);
    log_warn(s->tag, "%s", text);
    send_error(s, NULL, JSONRPC_INVALID_REQUEST, text, NULL);
}

/* ---- ending ---------------------------------------------------------------------- */

static void session_maybe_finish(mcp_session_t *s)
{
    if (s->transport_gone) {
        if (s->inflight == 0 && s->state == MCP_SESSION_CLOSED && !s->swept) {
            s->swept = true;
            mcp_server__sweep_later(s->srv, &s->node);
        }
        return;
    }
    if (s->state == MCP_SESSION_DRAINING && s->inflight == 0 && s->ops->queued_bytes(s->t) == 0)
        mcp_session_close(s);
}

void mcp_session_input_ended(mcp_session_t *s)
{
    if (s->state < MCP_SESSION_DRAINING) {
        log_debug(s->tag, "input ended; finishing %d call(s) in flight", s->inflight);
        s->state = MCP_SESSION_DRAINING;
        /* The client can no longer answer our requests: those calls get
         * their failure now rather than at the timeout. */
        for (queue_node_t *n = s->calls.next; n != &s->calls;) {
            queue_node_t *next = n->next;
            mcp_call_t *c = queue_entry(n, mcp_call_t, node);
            if (c->wait_id != 0)
                mcp_call__wait_abort(c, UV_EOF);
            n = next;
        }
    }
    session_maybe_finish(s);
}

void mcp_session_close(mcp_session_t *s)
{
    if (s->transport_gone || s->state == MCP_SESSION_CLOSING || s->state == MCP_SESSION_CLOSED)
        return;
    s->state = MCP_SESSION_CLOSING;
    s->ops->close(s->t);
}

void mcp_session_transport_closed(mcp_session_t *s)
{
    s->transport_gone = true;
    s->state = MCP_SESSION_CLOSED;
    s->srv->stats.sessions_open--;
    s->srv->stats.sessions_closed++;
    log_debug(s->tag, "session closed");
    /* Calls still running are cancelled; they free themselves when their
     * handlers finish them. */
    for (queue_node_t *n = s->calls.next; n != &s->calls;) {
        queue_node_t *next = n->next;
        mcp_call__cancel(queue_entry(n, mcp_call_t, node));
        n = next;
    }
    session_maybe_finish(s);
}
