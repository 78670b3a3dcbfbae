/* server: shared MCP server state and the session sweep (see server.h). */
#include "mcp/server.h"

#include <string.h>

#include <stdio.h>

#include "mcp/call.h"
#include "mcp/envelope.h"
#include "mcp/session.h"
#include "util/log.h"
#include "util/prom_text.h"

const char *const mcp_method_names[MCP_M_COUNT] = {
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "server/discover",
    "subscriptions/listen",
    "other",
};

const double mcp_latency_bounds[MCP_LATENCY_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                        0.05,   0.1,   0.25,   0.5,   1,    5};

void mcp_limits_default(mcp_limits_t *l)
{
    l->max_message_bytes = MCP_DEFAULT_MAX_MESSAGE_BYTES;
    l->session_max_inflight = MCP_DEFAULT_SESSION_MAX_INFLIGHT;
    l->output_high_water = MCP_DEFAULT_OUTPUT_HIGH_WATER;
    l->output_low_water = MCP_DEFAULT_OUTPUT_LOW_WATER;
    l->output_hard_limit = MCP_DEFAULT_OUTPUT_HARD_LIMIT;
    l->max_active_calls = MCP_DEFAULT_MAX_ACTIVE_CALLS;
    l->tools_page_size = MCP_DEFAULT_TOOLS_PAGE_SIZE;
    l->max_sessions = MCP_DEFAULT_MAX_SESSIONS;
    l->principal_share = MCP_DEFAULT_PRINCIPAL_SHARE;
    l->request_timeout_ms = MCP_DEFAULT_REQUEST_TIMEOUT_MS;
}

bool mcp_server_admit(mcp_server_t *srv)
{
    return mcp_server_admit_owner(srv, NULL) == MCP_ADMIT_OK;
}

int mcp_server_owner_cap(const mcp_server_t *srv)
{
    int share = srv->limits.principal_share;
    if (share <= 0 || share > 100)
        share = 100;
    long long cap = (long long)srv->limits.max_sessions * share / 100;
    return cap < 1 ? 1 : (int)cap;
}

int mcp_server_owner_open(const mcp_server_t *srv, const char *owner)
{
    if (owner == NULL || owner[0] == '\0' || srv->owners == NULL)
        return 0;
    return (int)json_integer_value(json_object_get(srv->owners, owner));
}

mcp_admit_t mcp_server_admit_owner(mcp_server_t *srv, const char *owner)
{
    if (srv->closing || srv->stats.sessions_open >= srv->limits.max_sessions) {
        srv->stats.refused_sessions++;
        return MCP_ADMIT_FULL;
    }
    if (mcp_server_owner_open(srv, owner) >= mcp_server_owner_cap(srv)) {
        srv->stats.refused_share++;
        return MCP_ADMIT_SHARE;
    }
    return MCP_ADMIT_OK;
}

void mcp_server__owner_add(mcp_server_t *srv, const char *owner, int delta)
{
    if (owner == NULL || owner[0] == '\0')
        return;
    if (srv->owners == NULL && (srv->owners = json_object()) == NULL)
        return;
    json_t *count = json_object_get(srv->owners, owner);
    json_int_t n = json_integer_value(count) + delta;
    if (n <= 0)
        json_object_del(srv->owners, owner);
    else if (count != NULL)
        json_integer_set(count, n); /* in place: one lookup, no allocation */
    else
        json_object_set_new(srv->owners, owner, json_integer(n));
}

void mcp_server_observe_latency(mcp_server_t *srv, double seconds)
{
    int i = 0;
    while (i < MCP_LATENCY_BUCKETS && seconds > mcp_latency_bounds[i])
        i++;
    srv->stats.latency_count[i]++;
    srv->stats.latency_sum += seconds;
}

/* A send may close a session, which may then move to the sweep list at
 * once: the walks take the next node first. */
void mcp_server_list_changed(mcp_server_t *srv, const char *list)
{
    for (queue_node_t *n = srv->sessions.next, *next; n != &srv->sessions; n = next) {
        next = n->next;
        mcp_session__list_changed(mcp_session__from_node(n), list);
    }
}

void mcp_server_resource_updated(mcp_server_t *srv, const char *uri)
{
    for (queue_node_t *n = srv->sessions.next, *next; n != &srv->sessions; n = next) {
        next = n->next;
        mcp_session__resource_updated(mcp_session__from_node(n), uri);
    }
}

static void wait_tick(uv_timer_t *t)
{
    mcp_server_t *srv = t->data;
    uint64_t now = uv_now(srv->loop);
    /* The expired waits move to a list of their own first, so the scan is
     * linear however many expire at once. Ending one may end others (a
     * session closing cancels its calls): ending a wait unlinks its node,
     * from this list too, and a node unlinked twice stays unlinked. */
    queue_node_t expired;
    queue_init(&expired);
    for (queue_node_t *n = srv->waiting.next; n != &srv->waiting;) {
        queue_node_t *next = n->next;
        if (queue_entry(n, mcp_call_t, wait_node)->wait_deadline <= now) {
            queue_remove(n);
            queue_push_tail(&expired, n);
        }
        n = next;
    }
    while (!queue_empty(&expired)) {
        queue_node_t *n = queue_head(&expired);
        queue_remove(n);
        mcp_call__wait_expired(queue_entry(n, mcp_call_t, wait_node));
    }
    if (queue_empty(&srv->waiting))
        uv_timer_stop(&srv->wait_ticker);
}

/* Connections that opened but did not initialize in time (a client that
 * connects and says nothing, a TLS handshake that never ends) are closed,
 * so they cannot hold session slots. Sessions are listed oldest first: the
 * scan stops at the first one too young to be late. */
static void init_tick(uv_timer_t *t)
{
    mcp_server_t *srv = t->data;
    uint64_t now = uv_now(srv->loop);
    uint64_t limit = (uint64_t)srv->limits.init_timeout_ms;
    bool waiting = false;
    for (queue_node_t *n = srv->sessions.next; n != &srv->sessions;) {
        queue_node_t *next = n->next;
        mcp_session_t *s = mcp_session__from_node(n);
        if (mcp_session_state(s) == MCP_SESSION_NEW && strcmp(mcp_session_kind(s), "stdio") != 0) {
            if (now - mcp_session__opened_at(s) < limit) {
                waiting = true;
                break;
            }
            log_info(mcp_session_tag(s), "closing: no initialize within %d ms",
                     srv->limits.init_timeout_ms);
            mcp_session_close(s);
        }
        n = next;
    }
    if (!waiting)
        uv_timer_stop(&srv->init_ticker);
}

void mcp_server__session_opened(mcp_server_t *srv)
{
    if (srv->limits.init_timeout_ms > 0 && !uv_is_active((uv_handle_t *)&srv->init_ticker))
        uv_timer_start(&srv->init_ticker, init_tick, MCP_INIT_TICK_MS, MCP_INIT_TICK_MS);
}

void mcp_server__wait_start(mcp_server_t *srv, mcp_call_t *c)
{
    queue_push_tail(&srv->waiting, &c->wait_node);
    if (!uv_is_active((uv_handle_t *)&srv->wait_ticker))
        uv_timer_start(&srv->wait_ticker, wait_tick, MCP_WAIT_TICK_MS, MCP_WAIT_TICK_MS);
}

void mcp_server__wait_stop(mcp_server_t *srv, mcp_call_t *c)
{
    queue_remove(&c->wait_node);
    if (queue_empty(&srv->waiting))
        uv_timer_stop(&srv->wait_ticker);
}

static void sweep_cb(uv_idle_t *h)
{
    mcp_server_t *srv = h->data;
    while (!queue_empty(&srv->sweep)) {
        queue_node_t *n = queue_head(&srv->sweep);
        queue_remove(n);
        mcp_session__free(mcp_session__from_node(n));
    }
    uv_idle_stop(&srv->sweeper);
    if (srv->closing && queue_empty(&srv->sessions) && srv->close_cb) {
        void (*cb)(mcp_server_t *) = srv->close_cb;
        srv->close_cb = NULL;
        uv_close((uv_handle_t *)&srv->sweeper, NULL);
        uv_close((uv_handle_t *)&srv->wait_ticker, NULL);
        uv_close((uv_handle_t *)&srv->init_ticker, NULL);
        mcp_registry_free(&srv->registry);
        json_decref(srv->owners);
        srv->owners = NULL;
        sealed_key_wipe(&srv->state_key);
        mcp_envelope_memo_clear(&srv->envelope_memo);
        if (cb)
            cb(srv);
    }
}

void mcp_server_init(mcp_server_t *srv, uv_loop_t *loop, mcp_registry_t *registry,
                     const mcp_limits_t *limits)
{
    memset(srv, 0, sizeof *srv);
    srv->loop = loop;
    srv->name = "parley";
    srv->version = PARLEY_VERSION;
    srv->instructions = "List the tools to see what this server offers.";
    srv->registry = *registry;
    memset(registry, 0, sizeof *registry);
    srv->limits = *limits;
    queue_init(&srv->sessions);
    queue_init(&srv->sweep);
    queue_init(&srv->waiting);
    uv_idle_init(loop, &srv->sweeper);
    srv->sweeper.data = srv;
    uv_timer_init(loop, &srv->wait_ticker);
    srv->wait_ticker.data = srv;
    uv_timer_init(loop, &srv->init_ticker);
    srv->init_ticker.data = srv;
    /* A key of this process alone until the entry sets a shared one. */
    srv->state_key_ok =
        uv_random(NULL, NULL, srv->state_key.key, sizeof srv->state_key.key, 0, NULL) == 0;
    if (!srv->state_key_ok)
        log_error("mcp", "no random bytes for the requestState key: multi round-trip requests "
                         "are refused");
}

void mcp_server_set_state_key(mcp_server_t *srv, const sealed_key_t *key)
{
    srv->state_key = *key;
    srv->state_key_ok = true;
}

const char *mcp_server__complete_text(mcp_server_t *srv)
{
    if (srv->complete_text[0] == '\0' &&
        mcp_envelope_complete_text(srv->name, srv->version, srv->complete_text,
                                   sizeof srv->complete_text) < 0) {
        srv->complete_text[0] = '\0'; /* tried again at the next result */
        return NULL;
    }
    return srv->complete_text;
}

void mcp_server__sweep_later(mcp_server_t *srv, queue_node_t *node)
{
    queue_remove(node);
    queue_push_tail(&srv->sweep, node);
    uv_idle_start(&srv->sweeper, sweep_cb);
}

void mcp_server_close(mcp_server_t *srv, void (*cb)(mcp_server_t *))
{
    srv->closing = true;
    srv->close_cb = cb;
    uv_timer_stop(&srv->init_ticker);
    for (queue_node_t *n = srv->sessions.next; n != &srv->sessions;) {
        queue_node_t *next = n->next;
        mcp_session_close(mcp_session__from_node(n));
        n = next;
    }
    uv_idle_start(&srv->sweeper, sweep_cb);
}

void mcp_server_metrics(const mcp_server_t *srv, buf_t *out)
{
    const mcp_server_stats_t *st = &srv->stats;
    static const char *const kinds[] = {"stdio", "unix", "tcp", "http"};
    int counts[4] = {0};
    for (queue_node_t *n = srv->sessions.next; n != &srv->sessions; n = n->next) {
        const char *k = mcp_session_kind(mcp_session__from_node(n));
        for (int i = 0; i < 4; i++)
            if (strcmp(k, kinds[i]) == 0)
                counts[i]++;
    }
    prom_text_family(out, "parley_sessions", PROM_TEXT_GAUGE, "Open MCP sessions.");
    for (int i = 0; i < 4; i++)
        prom_text_int(out, "parley_sessions", PROM_LABELS("transport", kinds[i]), counts[i]);
    prom_text_counter(out, "parley_sessions_opened_total", "Sessions opened.", st->sessions_opened);
    prom_text_family(out, "parley_sessions_refused_total", PROM_TEXT_COUNTER,
                     "Sessions refused: max_sessions open, or the principal at its share of them.");
    prom_text_uint(out, "parley_sessions_refused_total", PROM_LABELS("reason", "max_sessions"),
                   st->refused_sessions);
    prom_text_uint(out, "parley_sessions_refused_total", PROM_LABELS("reason", "principal_share"),
                   st->refused_share);
    prom_text_family(out, "parley_requests_total", PROM_TEXT_COUNTER,
                     "JSON-RPC requests by method.");
    for (int i = 0; i < MCP_M_COUNT; i++)
        prom_text_uint(out, "parley_requests_total", PROM_LABELS("method", mcp_method_names[i]),
                       st->by_method[i]);
    prom_text_counter(out, "parley_errors_total", "JSON-RPC error responses.", st->errors);
    prom_text_counter(out, "parley_tool_calls_total", "Tool calls.", st->tool_calls);
    prom_text_counter(out, "parley_tool_errors_total", "Tool results with isError.",
                      st->tool_errors);
    prom_text_counter(out, "parley_busy_total", "Requests refused as busy.", st->busy_rejections);
    prom_text_gauge(out, "parley_active_calls", "Calls in flight.", st->active_calls);
    prom_text_family(out, "parley_call_duration_seconds", PROM_TEXT_HISTOGRAM,
                     "Duration of tool calls, resource reads and prompt gets.");
    uint64_t cum = 0;
    for (int i = 0; i <= MCP_LATENCY_BUCKETS; i++) {
        char le[32] = "+Inf";
        if (i < MCP_LATENCY_BUCKETS)
            snprintf(le, sizeof le, "%g", mcp_latency_bounds[i]);
        cum += st->latency_count[i];
        prom_text_uint(out, "parley_call_duration_seconds_bucket", PROM_LABELS("le", le), cum);
    }
    prom_text_double(out, "parley_call_duration_seconds_sum", NULL, st->latency_sum);
    prom_text_uint(out, "parley_call_duration_seconds_count", NULL, cum);
}
