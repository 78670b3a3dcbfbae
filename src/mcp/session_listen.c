/* session_listen: subscriptions/listen of MCP 2026-07-28 (see
 * session_internal.h). A listen is a request that stays open: its first
 * message is notifications/subscriptions/acknowledged with the subset of
 * the filter the server honours, then come the notifications it asked
 * for, each with _meta["io.modelcontextprotocol/subscriptionId"] = the
 * request's id, on the request's own stream (Streamable HTTP: the POST's
 * SSE response). It ends when the client cancels it (closes the stream;
 * notifications/cancelled on stdio and sockets), when the connection
 * closes, or at shutdown with a "complete" result ("Graceful Closure",
 * basic/patterns/subscriptions). Nothing outlives the connection: a
 * client that reconnects listens again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/jsonrpc.h"
#include "mcp/session_internal.h"
#include "util/log.h"

typedef struct mcp_listen_s {
    queue_node_t node; /* in session->listens */
    mcp_session_t *session;
    json_t *id;
    bool tools, prompts, resources;
    /* Until acknowledged, the resources asked for are probed (whether
     * this caller may read each, as resources/read decides): nothing is
     * sent on the listen before its acknowledgement. */
    bool acked;
    bool starting; /* its probes are being started: freed by the starter */
    bool gone;     /* ended while starting */
    int pending;   /* probes not answered yet */
    json_t *asked; /* the URIs probed, in the order asked (an array) */
    json_t *ok;    /* those a probe allowed (an object: uri -> true) */
    json_t *uris;  /* the honoured resourceSubscriptions (an array) */
} mcp_listen_t;

static void listen_free(mcp_listen_t *l)
{
    queue_remove(&l->node);
    queue_init(&l->node);
    /* Its probes still running answer no one now; their queries stop. */
    mcp_session_t *s = l->session;
    for (queue_node_t *n = s->calls.next; n != &s->calls;) {
        queue_node_t *next = n->next;
        mcp_call_t *c = queue_entry(n, mcp_call_t, node);
        if (c->probe_owner == l) {
            c->probe_owner = NULL;
            mcp_call__cancel(c);
        }
        n = next;
    }
    if (l->starting) {
        l->gone = true;
        return;
    }
    json_decref(l->id);
    json_decref(l->asked);
    json_decref(l->ok);
    json_decref(l->uris);
    free(l);
}

/* Sends notification method with params (stolen; _meta.subscriptionId
 * added) on l's stream. */
static void listen_send(mcp_session_t *s, mcp_listen_t *l, const char *method, json_t *params)
{
    json_t *meta = json_object_get(params, "_meta");
    if (meta == NULL)
        json_object_set_new(params, "_meta", meta = json_object());
    json_object_set(meta, MCP_META_SUBSCRIPTION_ID, l->id);
    size_t len = 0;
    char *m = jsonrpc_notification(method, params, &len);
    json_decref(params);
    mcp_session__send(s, m, len, l->id, false);
}

/* The boolean field of filter f, refusing other types. */
static int flag(const json_t *f, const char *key, bool *out)
{
    const json_t *v = json_object_get(f, key);
    *out = json_is_true(v);
    return v == NULL || json_is_boolean(v) ? 0 : -1;
}

/* Every probe answered: the listen watches what they allowed and says
 * so (notifications/subscriptions/acknowledged with the honoured
 * subset). */
static void listen_acknowledge(mcp_session_t *s, mcp_listen_t *l)
{
    json_t *uris = json_array();
    size_t i;
    json_t *u;
    json_array_foreach(l->asked, i, u)
    {
        if (json_object_get(l->ok, json_string_value(u)) != NULL)
            json_array_append(uris, u);
    }
    l->uris = uris;
    l->acked = true;
    json_t *honoured = json_object();
    if (l->tools)
        json_object_set_new(honoured, "toolsListChanged", json_true());
    if (l->prompts)
        json_object_set_new(honoured, "promptsListChanged", json_true());
    if (l->resources)
        json_object_set_new(honoured, "resourcesListChanged", json_true());
    if (json_array_size(uris) > 0)
        json_object_set(honoured, "resourceSubscriptions", uris);
    log_debug(s->tag, "listening (%zu of %zu resources)", json_array_size(uris),
              json_array_size(l->asked));
    listen_send(s, l, "notifications/subscriptions/acknowledged",
                json_pack("{s:o}", "notifications", honoured));
}

/* A probe of one of l's resources answered (see mcp_call_t.probe_done). */
static void listen_probed(mcp_call_t *c, char *msg, size_t len)
{
    mcp_listen_t *l = c->probe_owner;
    if (mcp_session__probe_allows(msg, len))
        json_object_set_new(l->ok, json_string_value(json_object_get(c->args, "uri")), json_true());
    free(msg);
    if (--l->pending == 0 && !l->starting)
        listen_acknowledge(c->session, l);
}

void mcp_session__handle_listen(mcp_session_t *s, json_t *id, const json_t *params)
{
    char msg[240];
    const json_t *f = json_object_get(params, "notifications");
    bool tools, prompts, resources;
    const json_t *subs = json_object_get(f, "resourceSubscriptions");
    if ((f != NULL && !json_is_object(f)) || flag(f, "toolsListChanged", &tools) ||
        flag(f, "promptsListChanged", &prompts) || flag(f, "resourcesListChanged", &resources) ||
        (subs != NULL && !json_is_array(subs))) {
        mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS,
                                "subscriptions/listen: params.notifications is an object of "
                                "toolsListChanged, promptsListChanged, resourcesListChanged "
                                "(booleans) and resourceSubscriptions (an array of URIs)",
                                NULL);
        return;
    }
    if (json_array_size(subs) > MCP_SESSION_MAX_SUBSCRIPTIONS ||
        s->nlistens >= MCP_SESSION_MAX_LISTENS) {
        snprintf(msg, sizeof msg,
                 "subscriptions/listen: at most %d listens per connection and %d resources per "
                 "listen; cancel one first",
                 MCP_SESSION_MAX_LISTENS, MCP_SESSION_MAX_SUBSCRIPTIONS);
        mcp_session__send_error(s, id, JSONRPC_INVALID_PARAMS, msg, NULL);
        return;
    }
    for (queue_node_t *n = s->listens.next; n != &s->listens; n = n->next)
        if (json_equal(queue_entry(n, mcp_listen_t, node)->id, id)) {
            mcp_session__send_error(s, id, JSONRPC_INVALID_REQUEST,
                                    "subscriptions/listen: a listen with this id is open", NULL);
            return;
        }
    /* Each resource is probed: a call each, within the cap on calls in
     * flight (past it, the listen is refused as busy, not cut short). */
    mcp_server_t *srv = s->srv;
    if (srv->stats.active_calls + (int)json_array_size(subs) > srv->limits.max_active_calls) {
        srv->stats.busy_rejections++;
        json_t *data = json_pack("{s:i}", "retryAfterMs", MCP_BUSY_RETRY_AFTER_MS);
        mcp_session__send_error(s, id, JSONRPC_SERVER_BUSY, "server busy, retry later", data);
        json_decref(data);
        return;
    }
    mcp_listen_t *l = calloc(1, sizeof *l);
    json_t *asked = json_array(), *ok = json_object();
    if (l == NULL || asked == NULL || ok == NULL) {
        free(l);
        json_decref(asked);
        json_decref(ok);
        mcp_session__send_error(s, id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
        return;
    }
    /* Honoured: list changes where lists can change, and the resources
     * this caller may read (an update would tell about a chat the token
     * does not allow): each is probed by its toolset's watch or read
     * handler, which checks the chat's source as resources/read does. */
    bool change = mcp_registry_lists_change(&srv->registry);
    l->session = s;
    l->id = json_incref(id);
    l->tools = tools && change;
    l->prompts = prompts && change && srv->registry.nprompts > 0;
    l->resources = resources && change && srv->registry.nresources > 0;
    l->asked = asked;
    l->ok = ok;
    queue_push_tail(&s->listens, &l->node);
    s->nlistens++;
    l->starting = true;
    l->pending = 1; /* until every probe is started */
    size_t i;
    json_t *u;
    json_array_foreach(subs, i, u)
    {
        const char *uri = mcp_session__str(u);
        if (uri == NULL)
            continue;
        bool dup = false;
        size_t j;
        json_t *v;
        json_array_foreach(asked, j, v)
        {
            dup = dup || json_equal(u, v);
        }
        if (dup)
            continue;
        json_array_append(asked, u);
        l->pending++;
        if (mcp_session__probe_resource(s, id, uri, l, listen_probed) != 0)
            l->pending--; /* not a resource of this caller's: not honoured */
        if (l->gone)
            break;
    }
    l->starting = false;
    if (l->gone) {
        l->pending = 0;
        listen_free(l);
        return;
    }
    if (--l->pending == 0)
        listen_acknowledge(s, l);
}

bool mcp_session__cancel_listen(mcp_session_t *s, const json_t *id)
{
    for (queue_node_t *n = s->listens.next; n != &s->listens; n = n->next) {
        mcp_listen_t *l = queue_entry(n, mcp_listen_t, node);
        if (json_equal(l->id, (json_t *)id)) {
            /* No response for a cancelled request: its stream ends. */
            if (!s->transport_gone && s->ops->abandon)
                s->ops->abandon(s->t, l->id);
            listen_free(l);
            s->nlistens--;
            return true;
        }
    }
    return false;
}

void mcp_session__listen_updated(mcp_session_t *s, const char *uri)
{
    for (queue_node_t *n = s->listens.next; n != &s->listens; n = n->next) {
        mcp_listen_t *l = queue_entry(n, mcp_listen_t, node);
        size_t i;
        json_t *u;
        if (!l->acked)
            continue;
        json_array_foreach(l->uris, i, u)
        {
            if (strcmp(json_string_value(u), uri) == 0) {
                listen_send(s, l, "notifications/resources/updated",
                            json_pack("{s:s}", "uri", uri));
                break;
            }
        }
        /* A failed send closes the session (its listens may be gone). */
        if (s->transport_gone || s->state >= MCP_SESSION_CLOSING)
            return;
    }
}

void mcp_session__list_changed(mcp_session_t *s, const char *list)
{
    char method[64];
    snprintf(method, sizeof method, "notifications/%s/list_changed", list);
    for (queue_node_t *n = s->listens.next; n != &s->listens; n = n->next) {
        mcp_listen_t *l = queue_entry(n, mcp_listen_t, node);
        bool want = !l->acked                      ? false
                    : strcmp(list, "tools") == 0   ? l->tools
                    : strcmp(list, "prompts") == 0 ? l->prompts
                                                   : l->resources;
        if (want)
            listen_send(s, l, method, json_object());
        if (s->transport_gone || s->state >= MCP_SESSION_CLOSING)
            return;
    }
    /* 2025-11-25: "notifications/tools/list_changed" (and prompts',
     * resources') to a session told at initialize that lists change. */
    if (s->told_lists_change && s->era == MCP_ERA_LEGACY && s->state == MCP_SESSION_READY &&
        !s->transport_gone) {
        size_t len = 0;
        char *m = jsonrpc_notification(method, NULL, &len);
        mcp_session__send(s, m, len, NULL, false);
    }
}

void mcp_session__end_listens(mcp_session_t *s, bool graceful)
{
    while (!queue_empty(&s->listens)) {
        /* Off the list before the send: a failing send may close the
         * session and end the others from inside. */
        mcp_listen_t *l = queue_entry(queue_head(&s->listens), mcp_listen_t, node);
        queue_remove(&l->node);
        queue_init(&l->node);
        s->nlistens--;
        if (graceful && !s->transport_gone && s->state < MCP_SESSION_CLOSING) {
            json_t *r = json_pack("{s:s, s:{s:O, s:{s:s, s:s}}}", "resultType", "complete", "_meta",
                                  MCP_META_SUBSCRIPTION_ID, l->id, MCP_META_SERVER_INFO, "name",
                                  s->srv->name, "version", s->srv->version);
            size_t len = 0;
            char *m = jsonrpc_result(l->id, r, &len);
            json_decref(r);
            mcp_session__send(s, m, len, l->id, true);
        }
        listen_free(l);
    }
}
