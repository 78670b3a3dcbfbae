/* session: the MCP protocol state machine of one session (see session.h):
 * initialize and the lifecycle, output, backpressure, dispatch of every
 * message, answers to the server's requests, cancellation, the end. The
 * feature methods are session_methods.c's. */
#include "mcp/session.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/call.h"
#include "mcp/envelope.h"
#include "mcp/jsonrpc.h"
#include "mcp/schema.h"
#include "mcp/session_internal.h"
#include "util/log.h"
#include "util/strutil.h"

const char *const mcp_protocol_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                             NULL};

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
    s->policy.toolset_mask = MCP_REGISTRY_ALL_TOOLSETS;
    s->select_mask = MCP_REGISTRY_ALL_TOOLSETS;
    s->brief = srv->default_brief;
    s->reading = true;
    queue_init(&s->calls);
    queue_init(&s->listens);
    /* "s:N", formatted by hand: a session is made per 2026-07-28 request
     * over HTTP, and snprintf is a tenth of its set-up. */
    char digits[24];
    int nd = 0;
    for (uint64_t id = ++srv->next_session_id; nd == 0 || id > 0; id /= 10)
        digits[nd++] = (char)('0' + id % 10);
    s->tag[0] = 's';
    s->tag[1] = ':';
    for (int i = 0; i < nd; i++)
        s->tag[2 + i] = digits[nd - 1 - i];
    s->tag[2 + nd] = '\0';
    mcp_session_set_anonymous(s, kind);
    s->opened_at = uv_now(srv->loop);
    queue_push_tail(&srv->sessions, &s->node);
    mcp_server__session_opened(srv);
    srv->stats.sessions_opened++;
    srv->stats.sessions_open++;
    log_debug(s->tag, "session opened (%s)", kind);
    return s;
}

void mcp_session_set_selection(mcp_session_t *s, unsigned mask, bool brief)
{
    s->select_mask = mask;
    s->brief = brief;
}

void mcp_session_set_policy(mcp_session_t *s, const mcp_policy_t *p)
{
    s->policy = *p;
    s->policy_private = true;
}

void mcp_session_set_owner(mcp_session_t *s, const char *owner)
{
    if (s->owner[0] != '\0' || owner == NULL || owner[0] == '\0' ||
        strlen(owner) >= sizeof s->owner)
        return;
    memcpy(s->owner, owner, strlen(owner) + 1);
    mcp_server__owner_add(s->srv, s->owner, 1);
}

void mcp_session_set_principal(mcp_session_t *s, const char *principal)
{
    snprintf(s->principal, sizeof s->principal, "%.64s", principal);
}

void mcp_session_set_anonymous(mcp_session_t *s, const char *label)
{
    /* "anon:" keeps it apart from every token's principal (64 hex
     * digits). A label too long for the buffer (a socket's path) keeps its
     * start and a 64-bit FNV-1a of the whole, so two long labels differ.
     * Not a secret, so no cryptographic digest: a session is made per
     * 2026-07-28 request, and this stays cheap (and needs no library). */
    size_t n = strlen(label);
    if (n + 5 < sizeof s->principal) {
        memcpy(s->principal, "anon:", 5);
        memcpy(s->principal + 5, label, n + 1);
        return;
    }
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)label; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    snprintf(s->principal, sizeof s->principal, "anon:%.*s#%016llx",
             (int)(sizeof s->principal - 5 - 18), label, (unsigned long long)h);
}

void mcp_session__state_context(const mcp_session_t *s, int kind, const char *name,
                                const char *digest, char *out, size_t cap)
{
    snprintf(out, cap, "parley-mcp-state|%d|%.200s|%s|%s", kind, name, s->principal, digest);
}

void mcp_session__request_digest(const json_t *args, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    char *text = json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    out[0] = '\0';
    if (text != NULL && EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL) == 1 && n >= 32)
        str_hex(md, 32, out);
    free(text);
}

bool mcp_protocol_supported(const char *version)
{
    for (int i = 0; mcp_protocol_versions[i]; i++)
        if (strcmp(version, mcp_protocol_versions[i]) == 0)
            return true;
    return false;
}

/* True when the session's policy lets it see tool t. */
bool mcp_session__tool_allowed(const mcp_session_t *s, const mcp_tool_t *t)
{
    if (s->policy.read_only && !(t->def->annotations & MCP_TOOL_READ_ONLY))
        return false;
    if (s->brief && t->brief_listing == NULL)
        return false;
    return mcp_registry_toolset_in(&s->srv->registry, t->toolset, mcp_session__mask(s));
}

unsigned mcp_session__mask(const mcp_session_t *s)
{
    unsigned mask = s->policy.toolset_mask & s->select_mask;
    return s->brief ? mcp_registry_shown(&s->srv->registry, mask) : mask;
}

bool mcp_session__serves_tool(const mcp_session_t *s, const char *name)
{
    return mcp_session__tool_name(s, name) != NULL;
}

const char *mcp_session__tool_name(const mcp_session_t *s, const char *name)
{
    const mcp_tool_t *t = mcp_registry_find(&s->srv->registry, name);
    if (t == NULL || !mcp_session__tool_allowed(s, t))
        return NULL;
    return s->brief ? json_string_value(json_object_get(t->brief_listing, "name")) : t->name;
}

bool mcp_session__policy_scoped(const mcp_session_t *s)
{
    return s->policy.toolset_mask != MCP_REGISTRY_ALL_TOOLSETS;
}

bool mcp_session__policy_names(const mcp_session_t *s, const char *name)
{
    const mcp_registry_t *r = &s->srv->registry;
    if (!mcp_session__policy_scoped(s))
        return true;
    /* By the token's own list: a toolset held back for now (hidden) is
     * still one the token names. */
    for (int i = 0; i < r->ntoolsets && i < MCP_REGISTRY_MAX_TOOLSETS; i++)
        if (strcmp(r->toolsets[i]->name, name) == 0)
            return (s->policy.toolset_mask >> i) & 1u;
    return false;
}

int mcp_session_inflight(const mcp_session_t *s)
{
    return s->inflight;
}

const char *mcp_session__str(const json_t *v)
{
    const char *s = json_string_value(v);
    return s && strlen(s) == json_string_length(v) ? s : NULL;
}

bool mcp_session__client_has(const mcp_session_t *s, const char *cap)
{
    return json_object_get(s->client_caps, cap) != NULL;
}

const json_t *mcp_session__client_cap(const mcp_session_t *s, const char *cap)
{
    return json_object_get(s->client_caps, cap);
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
    mcp_session__end_listens(s, false);
    for (int i = 0; i < s->nsubs; i++)
        free(s->subs[i]);
    free(s->subs);
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
    mcp_session__update_reading(s);
}

void mcp_session__send_error(mcp_session_t *s, const json_t *id, int code, const char *message,
                             const json_t *data)
{
    size_t len;
    char *m = jsonrpc_error(id, code, message, data, &len);
    s->srv->stats.errors++;
    log_debug(s->tag, "error %d: %s", code, message);
    mcp_session__send(s, m, len, id, true);
}

void mcp_session__send_result(mcp_session_t *s, const json_t *id, json_t *result)
{
    size_t len;
    const char *tail = s->env != NULL && mcp_envelope_spliceable(result)
                           ? mcp_server__complete_text(s->srv)
                           : NULL;
    if (tail != NULL) {
        char *m = jsonrpc_result_spliced(id, result, tail, &len);
        json_decref(result);
        mcp_session__send(s, m, len, id, true);
        return;
    }
    if (s->env != NULL && result != NULL &&
        mcp_envelope_complete(result, s->srv->name, s->srv->version) != 0) {
        json_decref(result);
        result = NULL; /* out of memory: the session closes */
    }
    char *m = jsonrpc_result(id, result, &len);
    json_decref(result);
    mcp_session__send(s, m, len, id, true);
}

void mcp_session__send_listing(mcp_session_t *s, const json_t *id, json_t *result)
{
    if (s->env != NULL && result != NULL &&
        mcp_envelope_cache(result, MCP_CACHE_LIST_TTL_MS, s->policy_private) != 0) {
        json_decref(result);
        result = NULL;
    }
    mcp_session__send_result(s, id, result);
}

/* ---- backpressure ------------------------------------------------------------ */

void mcp_session__update_reading(mcp_session_t *s)
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
    mcp_session__update_reading(s);
    mcp_session__maybe_finish(s);
}

/* ---- lifecycle ---------------------------------------------------------------- */

json_t *mcp_session__capabilities(mcp_session_t *s)
{
    const mcp_registry_t *r = &s->srv->registry;
    json_t *caps =
        json_pack("{s:{s:b}, s:{}, s:{}}", "tools", "listChanged", 0, "logging", "completions");
    /* 2026-07-28: list changes and resource updates reach listeners
     * (subscriptions/listen); lists change only with a toolset that says
     * they can. 2025-11-25: resources/subscribe. */
    bool change = s->env != NULL && mcp_registry_lists_change(r);
    /* Either revision: a toolset held back until its data arrives
     * (mcp_registry_t.hidden) is listed then. */
    if (r->hidden != 0) {
        change = true;
        s->told_lists_change = true;
    }
    json_object_set_new(json_object_get(caps, "tools"), "listChanged", json_boolean(change));
    if (r->nresources > 0)
        json_object_set_new(caps, "resources",
                            json_pack("{s:b, s:b}", "subscribe", 1, "listChanged", change));
    if (r->nprompts > 0)
        json_object_set_new(caps, "prompts", json_pack("{s:b}", "listChanged", change));
    return caps;
}

/* server/discover (2026-07-28, "Servers MUST implement it"): the
 * revisions, capabilities and identity, cacheable like a list. */
static void handle_discover(mcp_session_t *s, const json_t *id)
{
    json_t *versions = json_array();
    for (int i = 0; mcp_envelope_all_versions[i]; i++)
        json_array_append_new(versions, json_string(mcp_envelope_all_versions[i]));
    json_t *result = json_pack("{s:o, s:o, s:s}", "supportedVersions", versions, "capabilities",
                               mcp_session__capabilities(s), "instructions", s->srv->instructions);
    mcp_session__send_listing(s, id, result);
}

static void handle_initialize(mcp_session_t *s, const json_t *id, const json_t *params)
{
    if (s->state != MCP_SESSION_NEW) {
        mcp_session__send_error(s, id, JSONRPC_INVALID_REQUEST, "initialize was already received",
                                NULL);
        return;
    }
    const json_t *pv = json_object_get(params, "protocolVersion");
    if (!json_is_string(pv)) {
        mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS,
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
    json_t *result = json_pack("{s:s, s:o, s:{s:s, s:s, s:s}, s:s}", "protocolVersion", s->protocol,
                               "capabilities", mcp_session__capabilities(s), "serverInfo", "name",
                               s->srv->name, "title", "parley", "version", s->srv->version,
                               "instructions", s->srv->instructions);
    s->state = MCP_SESSION_READY;
    s->era = MCP_ERA_LEGACY;
    mcp_session__send_result(s, id, result);
}

static void handle_set_level(mcp_session_t *s, const json_t *id, const json_t *params)
{
    const char *lv = json_string_value(json_object_get(params, "level"));
    for (int i = 0; lv && i <= MCP_LOG_EMERGENCY; i++) {
        if (strcmp(lv, mcp_log_level_names[i]) == 0) {
            s->log_level = i;
            mcp_session__send_result(s, id, json_object());
            return;
        }
    }
    mcp_session__send_error(
        s, id, JSONRPC_INVALID_PARAMS,
        "logging/setLevel: params.level must be one of debug, info, notice, warning, "
        "error, critical, alert, emergency",
        NULL);
}

static void handle_response(mcp_session_t *s, const jsonrpc_members_t *mm)
{
    const json_t *id = mm->id;
    if (!json_is_integer(id))
        return;
    for (queue_node_t *n = s->calls.next; n != &s->calls; n = n->next) {
        mcp_call_t *c = queue_entry(n, mcp_call_t, node);
        if (c->wait_id != 0 && c->wait_id == json_integer_value(id)) {
            /* An error member of any shape is an error (a malformed one
             * included); a result is taken only without one. */
            const json_t *err = mm->error;
            mcp_call__answer(c, err ? NULL : mm->result, err);
            return;
        }
    }
    log_debug(s->tag, "response to unknown request %lld ignored",
              (long long)json_integer_value(id));
}

static void handle_cancelled(mcp_session_t *s, const json_t *params)
{
    const json_t *rid = json_object_get(params, "requestId");
    if (rid == NULL || mcp_session__cancel_listen(s, rid))
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
    jsonrpc_msg_t m;
    if (jsonrpc_read(msg, len, &m, &je) != 0) {
        char text[200];
        jsonrpc_parse_error(&je, text, sizeof text);
        mcp_session__send_error(s, NULL, JSONRPC_PARSE_ERROR, text, NULL);
        return want_more(s);
    }
    bool more;
    if (m.other != NULL) {
        mcp_session__send_error(s, NULL, JSONRPC_INVALID_REQUEST,
                                json_is_array(m.other)
                                    ? "Invalid Request: batches are not supported"
                                    : "Invalid Request: a message must be a JSON object",
                                NULL);
        more = want_more(s);
    } else {
        more = mcp_session_receive_members(s, &m.mm, NULL);
    }
    jsonrpc_msg_release(&m);
    return more;
}

static mcp_method_t method_index(const char *name)
{
    for (int i = 0; i < MCP_M_OTHER; i++)
        if (strcmp(name, mcp_method_names[i]) == 0)
            return (mcp_method_t)i;
    return MCP_M_OTHER;
}

/* Answers one request under the session's revision (s->env set: a
 * 2026-07-28 request). Methods a revision does not have, and those of
 * features no toolset offers, are "Method not found". */
static void dispatch(mcp_session_t *s, json_t *id, const char *name, mcp_method_t mi,
                     json_t *params)
{
    bool modern = s->env != NULL;
    bool has_resources = s->srv->registry.nresources > 0;
    bool has_prompts = s->srv->registry.nprompts > 0;
    bool served = true;
    switch (mi) {
    case MCP_M_INITIALIZE:
        if ((served = !modern))
            handle_initialize(s, id, params);
        break;
    case MCP_M_PING: /* removed in 2026-07-28 */
        if ((served = !modern))
            mcp_session__send_result(s, id, json_object());
        break;
    case MCP_M_SERVER_DISCOVER:
        if ((served = modern))
            handle_discover(s, id);
        break;
    case MCP_M_SUBSCRIPTIONS_LISTEN:
        if ((served = modern))
            mcp_session__handle_listen(s, id, params);
        break;
    case MCP_M_TOOLS_LIST:
        mcp_session__handle_tools_list(s, id, params);
        break;
    case MCP_M_TOOLS_CALL:
        mcp_session__handle_tools_call(s, id, params);
        break;
    case MCP_M_RESOURCES_LIST:
    case MCP_M_RESOURCES_TEMPLATES_LIST:
        if ((served = has_resources))
            mcp_session__handle_resources_list(s, id, params, mi == MCP_M_RESOURCES_TEMPLATES_LIST);
        break;
    case MCP_M_RESOURCES_READ:
        if ((served = has_resources))
            mcp_session__handle_resources_read(s, id, params);
        break;
    case MCP_M_RESOURCES_SUBSCRIBE: /* 2026-07-28: subscriptions/listen */
    case MCP_M_RESOURCES_UNSUBSCRIBE:
        if ((served = has_resources && !modern))
            mcp_session__handle_subscribe(s, id, params, mi == MCP_M_RESOURCES_SUBSCRIBE);
        break;
    case MCP_M_PROMPTS_LIST:
        if ((served = has_prompts))
            mcp_session__handle_prompts_list(s, id, params);
        break;
    case MCP_M_PROMPTS_GET:
        if ((served = has_prompts))
            mcp_session__handle_prompts_get(s, id, params);
        break;
    case MCP_M_COMPLETION_COMPLETE:
        mcp_session__handle_complete(s, id, params);
        break;
    case MCP_M_LOGGING_SET_LEVEL: /* 2026-07-28: the level is per request */
        if ((served = !modern))
            handle_set_level(s, id, params);
        break;
    case MCP_M_OTHER:
    case MCP_M_COUNT:
        served = false;
        break;
    }
    if (!served) {
        char text[200];
        snprintf(text, sizeof text, "Method not found: %.100s%s", name,
                 modern ? " (not a method of MCP " MCP_MODERN_VERSION ")" : "");
        mcp_session__send_error(s, id, JSONRPC_METHOD_NOT_FOUND, text, NULL);
    }
}

/* A request that claims the 2026-07-28 envelope (or server/discover): it
 * is answered from what it carries, never from the connection's past. */
static void receive_modern(mcp_session_t *s, json_t *id, const char *name, mcp_method_t mi,
                           json_t *params, const mcp_envelope_claim_t *claim,
                           const mcp_envelope_t *read)
{
    mcp_envelope_t env;
    if (read != NULL) {
        env = *read;
    } else {
        char msg[320];
        json_t *data = NULL;
        int code =
            mcp_envelope_parse_memo(&s->srv->envelope_memo, claim, &env, msg, sizeof msg, &data);
        if (code != 0) {
            mcp_session__send_error(s, id, code, msg, data);
            json_decref(data);
            return;
        }
    }
    if (s->era == MCP_ERA_UNDECIDED) {
        s->era = MCP_ERA_MODERN;
        if (log_get_level() <= LOG_DEBUG) {
            const char *cname = json_string_value(json_object_get(env.client_info, "name"));
            log_debug(s->tag, "MCP %s requests from %s (%s)", MCP_MODERN_VERSION,
                      cname ? cname : "an unnamed client", s->kind);
        }
    }
    if (s->state == MCP_SESSION_NEW)
        s->state = MCP_SESSION_READY; /* it needs no initialize */
    s->env = &env;
    dispatch(s, id, name, mi, params);
    s->env = NULL;
}

bool mcp_session_receive_members(mcp_session_t *s, const jsonrpc_members_t *mm,
                                 const mcp_envelope_t *read)
{
    if (s->state >= MCP_SESSION_CLOSING)
        return false;
    /* The members stay the caller's for the whole call; a handler keeps
     * what it needs by reference (mcp_call__new). */
    json_t *id = mm->id;
    const char *ver = json_string_value(mm->jsonrpc);
    const json_t *method = mm->method;
    if (ver == NULL || strcmp(ver, "2.0") != 0) {
        mcp_session__send_error(s, valid_id(id) ? id : NULL, JSONRPC_INVALID_REQUEST,
                                "Invalid Request: \"jsonrpc\" must be \"2.0\"", NULL);
        return want_more(s);
    }
    if (method == NULL) {
        if (mm->result != NULL || mm->error != NULL)
            handle_response(s, mm);
        else
            mcp_session__send_error(s, valid_id(id) ? id : NULL, JSONRPC_INVALID_REQUEST,
                                    "Invalid Request: no method", NULL);
        return want_more(s);
    }
    if (mcp_session__str(method) == NULL) {
        mcp_session__send_error(s, valid_id(id) ? id : NULL, JSONRPC_INVALID_REQUEST,
                                "Invalid Request: \"method\" must be a string without NUL", NULL);
        return want_more(s);
    }
    const char *name = json_string_value(method);
    json_t *params = mm->params;
    if (params != NULL && !json_is_object(params)) {
        if (id != NULL)
            mcp_session__send_error(s, valid_id(id) ? id : NULL, JSONRPC_INVALID_PARAMS,
                                    "Invalid params: \"params\" must be an object", NULL);
        return want_more(s);
    }
    if (id == NULL) {
        s->srv->stats.notifications++;
        if (strcmp(name, "notifications/cancelled") == 0)
            handle_cancelled(s, params);
        /* notifications/initialized and unknown notifications: nothing. */
        return want_more(s);
    }
    if (!valid_id(id)) {
        mcp_session__send_error(s, NULL, JSONRPC_INVALID_REQUEST,
                                "Invalid Request: \"id\" must be a string or an integer", NULL);
        return want_more(s);
    }
    s->srv->stats.requests++;
    mcp_method_t mi = method_index(name);
    s->srv->stats.by_method[mi]++;
    /* An envelope read is one claimed. */
    mcp_envelope_claim_t claim = {NULL, NULL};
    if (read == NULL)
        claim = mcp_envelope_claim_memo(&s->srv->envelope_memo, params);
    if (read != NULL || claim.version != NULL || mi == MCP_M_SERVER_DISCOVER)
        receive_modern(s, id, name, mi, params, &claim, read);
    else if (s->era == MCP_ERA_MODERN)
        mcp_session__send_error(
            s, id, JSONRPC_INVALID_PARAMS,
            mi == MCP_M_INITIALIZE
                ? "initialize: this connection speaks MCP " MCP_MODERN_VERSION
                  " (its first request did); open a new connection to "
                  "initialize a 2025-11-25 session"
                : "Invalid params: params._meta[\"" MCP_META_PROTOCOL_VERSION
                  "\"] is required on every request of this connection (MCP " MCP_MODERN_VERSION
                  ")",
            NULL);
    else
        dispatch(s, id, name, mi, params);
    mcp_session__update_reading(s); /* a call may have reached the in-flight cap */
    return want_more(s);
}

void mcp_session_oversize(mcp_session_t *s, size_t limit)
{
    char text[128];
    s->srv->stats.oversize_messages++;
    snprintf(text, sizeof text, "Invalid Request: message larger than %zu bytes was dropped",
             limit);
    log_warn(s->tag, "%s", text);
    mcp_session__send_error(s, NULL, JSONRPC_INVALID_REQUEST, text, NULL);
}

/* ---- ending ---------------------------------------------------------------------- */

void mcp_session__maybe_finish(mcp_session_t *s)
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
    mcp_session__maybe_finish(s);
}

void mcp_session_close(mcp_session_t *s)
{
    if (s->transport_gone || s->state == MCP_SESSION_CLOSING || s->state == MCP_SESSION_CLOSED)
        return;
    /* "When the server ends a subscription on its own initiative ... it
     * SHOULD respond to the original subscriptions/listen request with a
     * completion result before closing the stream." Once: a send that
     * fails (or passes the output limit) closes the session again from
     * inside, and then it closes without them. */
    if (!s->ending) {
        s->ending = true;
        mcp_session__end_listens(s, true);
    }
    if (s->transport_gone || s->state == MCP_SESSION_CLOSING || s->state == MCP_SESSION_CLOSED)
        return; /* a send failed and closed it */
    s->state = MCP_SESSION_CLOSING;
    s->ops->close(s->t);
}

void mcp_session_transport_closed(mcp_session_t *s)
{
    s->transport_gone = true;
    s->state = MCP_SESSION_CLOSED;
    s->srv->stats.sessions_open--;
    s->srv->stats.sessions_closed++;
    mcp_server__owner_add(s->srv, s->owner, -1);
    log_debug(s->tag, "session closed");
    mcp_session__end_listens(s, false);
    /* Calls still running are cancelled; they free themselves when their
     * handlers finish them. */
    for (queue_node_t *n = s->calls.next; n != &s->calls;) {
        queue_node_t *next = n->next;
        mcp_call__cancel(queue_entry(n, mcp_call_t, node));
        n = next;
    }
    mcp_session__maybe_finish(s);
}
