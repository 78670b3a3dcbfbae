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
    json_t *id;
    bool tools, prompts, resources;
    json_t *uris; /* the honoured resourceSubscriptions (an array) */
} mcp_listen_t;

static void listen_free(mcp_listen_t *l)
{
    queue_remove(&l->node);
    json_decref(l->id);
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
    mcp_listen_t *l = calloc(1, sizeof *l);
    json_t *uris = json_array();
    if (l == NULL || uris == NULL) {
        free(l);
        json_decref(uris);
        mcp_session__send_error(s, id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
        return;
    }
    /* Honoured: list changes where lists can change, and the resources
     * this connection may read (an update would tell about a chat the
     * token does not allow). */
    bool change = mcp_registry_lists_change(&s->srv->registry);
    l->id = json_incref(id);
    l->tools = tools && change;
    l->prompts = prompts && change && s->srv->registry.nprompts > 0;
    l->resources = resources && change && s->srv->registry.nresources > 0;
    size_t i;
    json_t *u;
    json_array_foreach(subs, i, u)
    {
        const char *uri = mcp_session__str(u);
        if (uri != NULL && mcp_registry_find_resource(&s->srv->registry, uri,
                                                      s->policy.toolset_mask, NULL) != NULL)
            json_array_append(uris, u);
    }
    l->uris = uris;
    queue_push_tail(&s->listens, &l->node);
    s->nlistens++;
    json_t *honoured = json_object();
    if (l->tools)
        json_object_set_new(honoured, "toolsListChanged", json_true());
    if (l->prompts)
        json_object_set_new(honoured, "promptsListChanged", json_true());
    if (l->resources)
        json_object_set_new(honoured, "resourcesListChanged", json_true());
    if (json_array_size(uris) > 0)
        json_object_set(honoured, "resourceSubscriptions", uris);
    log_debug(s->tag, "listening (%zu resources)", json_array_size(uris));
    listen_send(s, l, "notifications/subscriptions/acknowledged",
                json_pack("{s:o}", "notifications", honoured));
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
        bool want = strcmp(list, "tools") == 0     ? l->tools
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
