/* session_methods: the feature methods of an MCP session (see
 * session_internal.h): tools/list with pagination, tools/call with
 * argument validation, resources (list, templates, read, subscribe),
 * prompts (list, get) and completion. Each call is an mcp_call_t handed to
 * its toolset's handler. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/jsonrpc.h"
#include "mcp/request_state.h"
#include "mcp/schema.h"
#include "mcp/session_internal.h"
#include "util/json_members.h"
#include "util/log.h"

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
            mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS, msg, NULL);
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
    mcp_session__send_listing(s, id, result);
}

void mcp_session__handle_tools_list(mcp_session_t *s, const json_t *id, const json_t *params)
{
    const mcp_registry_t *r = &s->srv->registry;
    json_t *all = json_array();
    for (int i = 0; i < r->ntools; i++)
        if (mcp_session__tool_allowed(s, &r->tools[i]))
            json_array_append(all, s->brief ? r->tools[i].brief_listing : r->tools[i].listing);
    list_page(s, id, params, "tools", all);
}

/* The members of a request's params that its handler and call_start
 * read, found in one pass (json_members); each borrowed, NULL when absent.
 * call_params returns p. */
typedef struct call_params_s {
    json_t *name, *arguments, *uri, *meta, *input_responses, *request_state;
} call_params_t;

static call_params_t *call_params(const json_t *params, call_params_t *p)
{
    static const char *const names[] = {"name",  "arguments",      "uri",
                                        "_meta", "inputResponses", "requestState"};
    json_t *v[sizeof names / sizeof names[0]];
    json_members(params, names, sizeof names / sizeof names[0], v);
    *p = (call_params_t){.name = v[0],
                         .arguments = v[1],
                         .uri = v[2],
                         .meta = v[3],
                         .input_responses = v[4],
                         .request_state = v[5]};
    return p;
}

/* A request's string member v (what: "method: params.member"), or NULL
 * when it answered the error: none, not a string, or holding a NUL. */
static const char *call_string(mcp_session_t *s, const json_t *id, const json_t *v,
                               const char *what)
{
    const char *str = mcp_session__str(v);
    if (str == NULL) {
        char msg[120];
        snprintf(msg, sizeof msg, "%s must be a string without NUL", what);
        mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS, msg, NULL);
    }
    return str;
}

/* The multi round-trip fields of a 2026-07-28 request of kind/name:
 * params.inputResponses (an object of objects) and params.requestState
 * (opened and checked against the digest of args, written to digest;
 * digest stays "" without a requestState). Returns false when it answered
 * an error. */
static bool modern_round(mcp_session_t *s, const json_t *id, mcp_call_kind_t kind, const char *name,
                         const json_t *args, char digest[65], const call_params_t *params,
                         json_t **responses, json_t **state)
{
    char msg[300];
    *responses = *state = NULL;
    const json_t *ir = params->input_responses;
    if (ir != NULL && !json_is_null(ir)) {
        const char *key;
        const json_t *v;
        if (!json_is_object(ir)) {
            mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS,
                                    "Invalid params: inputResponses must be an object (the key of "
                                    "each input request -> the client's answer to it)",
                                    NULL);
            return false;
        }
        json_object_foreach((json_t *)ir, key, v)
        {
            if (!json_is_object(v)) {
                snprintf(msg, sizeof msg,
                         "Invalid params: inputResponses[\"%.80s\"] must be an object (an "
                         "ElicitResult, CreateMessageResult or ListRootsResult)",
                         key);
                mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS, msg, NULL);
                return false;
            }
        }
        *responses = json_incref((json_t *)ir);
    }
    const json_t *rs = params->request_state;
    if (rs == NULL || json_is_null(rs))
        return true;
    const char *text = mcp_session__str(rs);
    int rc = UV_EINVAL;
    if (text != NULL && s->srv->state_key_ok) {
        char ctx[MCP_STATE_CONTEXT_MAX];
        mcp_session__request_digest(args, digest);
        uv_timeval64_t tv;
        uv_gettimeofday(&tv);
        mcp_session__state_context(s, kind, name, digest, ctx, sizeof ctx);
        rc =
            mcp_request_state_open(&s->srv->state_key, ctx, text,
                                   (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000, state);
    }
    if (rc == 0)
        return true;
    json_decref(*responses);
    *responses = NULL;
    mcp_session__send_error(
        s, id, JSONRPC_INVALID_PARAMS,
        rc == UV_ETIMEDOUT
            ? "Invalid params: requestState expired (a round trip must end within 15 minutes); "
              "call again without inputResponses and requestState"
            : "Invalid params: requestState integrity check failed (changed, or sealed for "
              "another tool, other arguments, another token or another server key); call again "
              "without inputResponses and requestState",
        NULL);
    return false;
}

/* Registers new call c of s: for a 2026-07-28 request the envelope's
 * client capabilities and log level, then its start and the counts of
 * work in flight. */
static void call_register(mcp_session_t *s, mcp_call_t *c)
{
    if (s->env != NULL) {
        c->modern = true;
        c->caps = json_incref((json_t *)s->env->caps);
        c->log_level = s->env->log_level;
    }
    c->started_ns = uv_hrtime();
    queue_push_tail(&s->calls, &c->node);
    s->inflight++;
    s->srv->stats.active_calls++;
}

/* Admits a request that a handler answers: checks the global cap on work
 * in flight (a busy error with retryAfterMs past it), and registers the
 * call. NULL when it was answered already. */
static mcp_call_t *call_start(mcp_session_t *s, mcp_call_kind_t kind, const char *name, json_t *id,
                              json_t *args, const call_params_t *params)
{
    mcp_server_t *srv = s->srv;
    if (srv->stats.active_calls >= srv->limits.max_active_calls) {
        srv->stats.busy_rejections++;
        json_t *data = json_pack("{s:i}", "retryAfterMs", MCP_BUSY_RETRY_AFTER_MS);
        mcp_session__send_error(s, id, JSONRPC_SERVER_BUSY, "server busy, retry later", data);
        json_decref(data);
        return NULL;
    }
    json_t *responses = NULL, *state = NULL;
    /* What a requestState is bound to: the digest of the request's own
     * arguments (before any normalisation), or for a read its URI. Made
     * here when the request brings a state to open; else when the call
     * seals one (mcp_call_finish_input_required), or before its arguments
     * are normalised (mcp_call__pin_digest): most calls never need it
     * (sorted JSON and a SHA-256: a tenth of a trivial call). */
    char digest[65] = "";
    if (s->env != NULL &&
        !modern_round(s, id, kind, name, args, digest, params, &responses, &state))
        return NULL;
    const json_t *meta = s->env != NULL ? s->env->meta : params->meta;
    json_t *token = json_object_get(meta, "progressToken");
    if (token && !json_is_string(token) && !json_is_integer(token))
        token = NULL;
    mcp_call_t *c = mcp_call__new(s, kind, name, id, args, token);
    if (c == NULL) {
        json_decref(responses);
        json_decref(state);
        mcp_session__send_error(s, id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
        return NULL;
    }
    if (s->env != NULL) {
        c->input_responses = responses;
        c->request_state = state;
        memcpy(c->state_digest, digest, sizeof c->state_digest);
    }
    call_register(s, c);
    return c;
}

void mcp_session__handle_tools_call(mcp_session_t *s, json_t *id, const json_t *params)
{
    call_params_t p;
    const char *name = call_string(s, id, call_params(params, &p)->name, "tools/call: params.name");
    if (name == NULL)
        return;
    const mcp_tool_t *tool = mcp_registry_find(&s->srv->registry, name);
    if (tool != NULL && !mcp_session__tool_allowed(s, tool)) {
        /* A tool of the toolsets the token allows that the default
         * selection leaves out: say where it is served. */
        bool elsewhere = s->brief && mcp_registry_toolset_in(&s->srv->registry, tool->toolset,
                                                             s->policy.toolset_mask);
        if (elsewhere) {
            char msg[300];
            snprintf(msg, sizeof msg,
                     "Unknown tool: %.100s is not in the default selection (see tools/list); "
                     "the %s toolset serves it whole (HTTP: the endpoint's path/%s)",
                     name, tool->toolset->name, tool->toolset->name);
            mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS, msg, NULL);
            return;
        }
        tool = NULL;
    }
    if (tool == NULL) {
        char msg[160];
        snprintf(msg, sizeof msg, "Unknown tool: %.100s (see tools/list)", name);
        mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS, msg, NULL);
        return;
    }
    json_t *args = p.arguments;
    if (args == NULL || json_is_null(args))
        args = json_object();
    else if (!json_is_object(args)) {
        mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS,
                                "tools/call: params.arguments must be an object", NULL);
        return;
    } else
        json_incref(args);
    mcp_server_t *srv = s->srv;
    const char *listed = mcp_session__tool_name(s, name);
    mcp_call_t *c = call_start(s, MCP_CALL_TOOL, listed ? listed : tool->name, id, args, &p);
    json_decref(args);
    if (c == NULL)
        return;
    c->tool = tool;
    c->context = mcp_registry_context(&srv->registry, tool->toolset);
    srv->stats.tool_calls++;
    char err[512];
    if (!schema_validate(tool->input_schema, c->args, err, sizeof err)) {
        mcp_call_finish_error(c, "Invalid arguments for %s: %s", listed ? listed : tool->name, err);
        return;
    }
    mcp_call__pin_digest(c);
    schema_normalize(tool->input_schema, c->args);
    tool->def->fn(c);
}

void mcp_session__call_done(mcp_session_t *s, mcp_call_t *c)
{
    mcp_server_observe_latency(s->srv, (double)(uv_hrtime() - c->started_ns) / 1e9);
    queue_remove(&c->node);
    s->inflight--;
    s->srv->stats.active_calls--;
    mcp_session__update_reading(s);
    mcp_session__maybe_finish(s);
}

/* ---- resources and prompts ----------------------------------------------- */

void mcp_session__handle_resources_list(mcp_session_t *s, const json_t *id, const json_t *params,
                                        bool templates)
{
    const mcp_registry_t *r = &s->srv->registry;
    json_t *all = json_array();
    for (int i = 0; i < r->nresources; i++)
        if (r->resources[i].is_template == templates &&
            mcp_registry_toolset_in(r, r->resources[i].toolset, mcp_session__mask(s)))
            json_array_append(all, r->resources[i].listing);
    list_page(s, id, params, templates ? "resourceTemplates" : "resources", all);
}

/* "Resource not found" is -32002 in 2025-11-25 and -32602 in 2026-07-28
 * ("Implementations of this protocol version MUST NOT emit -32002"); a
 * resource of a toolset the session's token does not allow is not found
 * either (its existence is not told). */
static void resource_not_found(mcp_session_t *s, const json_t *id, const char *uri)
{
    json_t *data = json_pack("{s:s}", "uri", uri);
    mcp_session__send_error(s, id, s->env ? JSONRPC_INVALID_PARAMS : MCP_ERROR_RESOURCE_NOT_FOUND,
                            "Resource not found (see resources/list and resources/templates/list)",
                            data);
    json_decref(data);
}

void mcp_session__handle_resources_read(mcp_session_t *s, json_t *id, const json_t *params)
{
    call_params_t p;
    const char *uri =
        call_string(s, id, call_params(params, &p)->uri, "resources/read: params.uri");
    if (uri == NULL)
        return;
    json_t *vars = NULL;
    const mcp_resource_t *res =
        mcp_registry_find_resource(&s->srv->registry, uri, mcp_session__mask(s), &vars);
    if (res == NULL) {
        resource_not_found(s, id, uri);
        return;
    }
    json_t *args = json_pack("{s:s, s:o}", "uri", uri, "vars", vars ? vars : json_object());
    mcp_call_t *c = call_start(s, MCP_CALL_RESOURCE, res->def->uri, id, args, &p);
    json_decref(args);
    if (c == NULL)
        return;
    c->context = mcp_registry_context(&s->srv->registry, res->toolset);
    res->def->fn(c);
}

int mcp_session__probe_resource(mcp_session_t *s, const json_t *id, const char *uri, void *owner,
                                void (*done)(mcp_call_t *c, char *msg, size_t len))
{
    json_t *vars = NULL;
    const mcp_resource_t *res =
        mcp_registry_find_resource(&s->srv->registry, uri, mcp_session__mask(s), &vars);
    if (res == NULL)
        return UV_ENOENT;
    mcp_server_t *srv = s->srv;
    if (srv->stats.active_calls >= srv->limits.max_active_calls) {
        json_decref(vars);
        return UV_EBUSY;
    }
    json_t *args = json_pack("{s:s, s:o}", "uri", uri, "vars", vars ? vars : json_object());
    mcp_call_t *c =
        args ? mcp_call__new(s, MCP_CALL_RESOURCE, res->def->uri, (json_t *)id, args, NULL) : NULL;
    json_decref(args);
    if (c == NULL)
        return UV_ENOMEM;
    c->probe_done = done;
    c->probe_owner = owner;
    c->context = mcp_registry_context(&srv->registry, res->toolset);
    call_register(s, c);
    (res->def->watch ? res->def->watch : res->def->fn)(c);
    return 0;
}

bool mcp_session__probe_allows(const char *msg, size_t len)
{
    json_error_t je;
    json_t *m = msg ? json_loadb(msg, len, 0, &je) : NULL;
    const json_t *r = json_object_get(m, "result");
    const char *type = json_string_value(json_object_get(r, "resultType"));
    bool ok = json_is_object(r) && json_object_get(m, "error") == NULL &&
              (type == NULL || strcmp(type, "complete") == 0);
    json_decref(m);
    return ok;
}

/* The probe of a resources/subscribe (its owner: the session) ended:
 * the subscription is made and {} answered, or the error the probe got
 * (resources/read's) is the answer. */
static void subscribe_probed(mcp_call_t *c, char *msg, size_t len)
{
    mcp_session_t *s = c->session;
    if (msg == NULL || !mcp_session__probe_allows(msg, len)) {
        if (msg != NULL)
            s->srv->stats.errors++;
        /* The read's own error, for the subscribe's id (the probe's). */
        mcp_session__send(s, msg, len, c->id, true);
        return;
    }
    free(msg);
    const char *uri = json_string_value(json_object_get(c->args, "uri"));
    bool found = false;
    for (int i = 0; i < s->nsubs; i++)
        found = found || strcmp(s->subs[i], uri) == 0;
    char *copy = NULL;
    if (!found && s->subs == NULL)
        s->subs = calloc(MCP_SESSION_MAX_SUBSCRIPTIONS, sizeof *s->subs);
    if (!found && (s->nsubs == MCP_SESSION_MAX_SUBSCRIPTIONS || s->subs == NULL ||
                   (copy = strdup(uri)) == NULL)) {
        mcp_session__send_error(
            s, c->id, JSONRPC_INVALID_PARAMS,
            "resources/subscribe: too many subscriptions; unsubscribe from some first", NULL);
        return;
    }
    if (!found)
        s->subs[s->nsubs++] = copy;
    mcp_session__send_result(s, c->id, json_object());
}

void mcp_session__handle_subscribe(mcp_session_t *s, const json_t *id, const json_t *params,
                                   bool on)
{
    const char *uri = mcp_session__str(json_object_get(params, "uri"));
    if (uri == NULL) {
        mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS,
                                on ? "resources/subscribe: params.uri must be a string"
                                   : "resources/unsubscribe: params.uri must be a string",
                                NULL);
        return;
    }
    int found = -1;
    for (int i = 0; i < s->nsubs; i++)
        if (strcmp(s->subs[i], uri) == 0)
            found = i;
    if (!on) {
        if (found >= 0) {
            free(s->subs[found]);
            s->subs[found] = s->subs[--s->nsubs];
        }
        mcp_session__send_result(s, id, json_object());
        return;
    }
    if (found < 0 && s->nsubs == MCP_SESSION_MAX_SUBSCRIPTIONS) {
        mcp_session__send_error(
            s, id, JSONRPC_INVALID_PARAMS,
            "resources/subscribe: too many subscriptions; unsubscribe from some first", NULL);
        return;
    }
    /* Only what the session may read can be watched: its updates would
     * tell what happens in a chat the token does not allow. The toolset
     * decides per resource (the chat's source), as resources/read does:
     * the probe answers asynchronously (subscribe_probed). */
    int rc = mcp_session__probe_resource(s, id, uri, s, subscribe_probed);
    if (rc == UV_ENOENT) {
        resource_not_found(s, id, uri);
    } else if (rc == UV_EBUSY) {
        s->srv->stats.busy_rejections++;
        json_t *data = json_pack("{s:i}", "retryAfterMs", MCP_BUSY_RETRY_AFTER_MS);
        mcp_session__send_error(s, id, JSONRPC_SERVER_BUSY, "server busy, retry later", data);
        json_decref(data);
    } else if (rc != 0) {
        mcp_session__send_error(s, id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
    }
}

void mcp_session__resource_updated(mcp_session_t *s, const char *uri)
{
    mcp_session__listen_updated(s, uri);
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

void mcp_session__handle_prompts_list(mcp_session_t *s, const json_t *id, const json_t *params)
{
    const mcp_registry_t *r = &s->srv->registry;
    json_t *all = json_array();
    for (int i = 0; i < r->nprompts; i++)
        if (mcp_registry_toolset_in(r, r->prompts[i].toolset, mcp_session__mask(s)))
            json_array_append(all, r->prompts[i].listing);
    list_page(s, id, params, "prompts", all);
}

void mcp_session__handle_prompts_get(mcp_session_t *s, json_t *id, const json_t *params)
{
    call_params_t cp;
    const char *name =
        call_string(s, id, call_params(params, &cp)->name, "prompts/get: params.name");
    if (name == NULL)
        return;
    const mcp_prompt_t *p = mcp_registry_find_prompt(&s->srv->registry, name, mcp_session__mask(s));
    if (p == NULL) {
        char msg[160];
        snprintf(msg, sizeof msg, "Unknown prompt: %.100s (see prompts/list)", name);
        mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS, msg, NULL);
        return;
    }
    json_t *args = cp.arguments;
    if (args != NULL && !json_is_null(args) && !json_is_object(args)) {
        mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS,
                                "prompts/get: params.arguments must be an object", NULL);
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
            mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS, msg, NULL);
            return;
        }
    }
    json_t *owned = json_is_object(args) ? json_incref(args) : json_object();
    mcp_call_t *c = call_start(s, MCP_CALL_PROMPT, p->def->name, id, owned, &cp);
    json_decref(owned);
    if (c == NULL)
        return;
    c->context = mcp_registry_context(&s->srv->registry, p->toolset);
    p->def->fn(c);
}

/* True when a template or fixed resource of the toolsets in mask has the
 * URI uri as written (completion refers to a template by its text). */
static bool resource_named(const mcp_registry_t *r, const char *uri, unsigned mask)
{
    for (int i = 0; i < r->nresources; i++)
        if (strcmp(r->resources[i].def->uri, uri) == 0 &&
            mcp_registry_toolset_in(r, r->resources[i].toolset, mask))
            return true;
    return mcp_registry_find_resource(r, uri, mask, NULL) != NULL;
}

/* completion/complete: no argument of ours has completions yet; the answer
 * is an empty list (the result shape the specification requires). The
 * reference must name a prompt or resource the session may use: the
 * specification's ref is {"type":"ref/prompt","name"} or
 * {"type":"ref/resource","uri"}. */
void mcp_session__handle_complete(mcp_session_t *s, const json_t *id, const json_t *params)
{
    const json_t *ref = json_object_get(params, "ref");
    const json_t *arg = json_object_get(params, "argument");
    if (!json_is_object(ref) || !json_is_object(arg)) {
        mcp_session__send_error(
            s, id, JSONRPC_INVALID_PARAMS,
            "completion/complete: params.ref and params.argument must be objects", NULL);
        return;
    }
    const mcp_registry_t *r = &s->srv->registry;
    unsigned mask = mcp_session__mask(s);
    const char *type = mcp_session__str(json_object_get(ref, "type"));
    const char *name = mcp_session__str(json_object_get(ref, "name"));
    const char *uri = mcp_session__str(json_object_get(ref, "uri"));
    if (type != NULL && strcmp(type, "ref/prompt") == 0 && name != NULL) {
        if (mcp_registry_find_prompt(r, name, mask) == NULL) {
            char msg[160];
            snprintf(msg, sizeof msg, "Unknown prompt: %.100s (see prompts/list)", name);
            mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS, msg, NULL);
            return;
        }
    } else if (type != NULL && strcmp(type, "ref/resource") == 0 && uri != NULL) {
        if (!resource_named(r, uri, mask)) {
            resource_not_found(s, id, uri);
            return;
        }
    } else {
        mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS,
                                "completion/complete: params.ref must be {\"type\":\"ref/prompt\","
                                "\"name\"} or {\"type\":\"ref/resource\",\"uri\"}",
                                NULL);
        return;
    }
    mcp_session__send_result(
        s, id, json_pack("{s:{s:[], s:i, s:b}}", "completion", "values", "total", 0, "hasMore", 0));
}

/* A response from the client to one of our requests. */
