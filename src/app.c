/* app: the lifecycle of serve, migrate and import (see app.h): signals,
 * the start sequence, the drain and the stop. The MCP endpoints are
 * endpoints.c's, /metrics is metrics.c's; this wires the parts together.
 *
 * Start: signals -> database (embedded start, or the configured URL) ->
 * read-write pool -> migrations -> (serve) read-only pool and LISTEN
 * connection -> MCP server, upstream connector, toolset contexts,
 * endpoints -> ready. Stop (first SIGINT/SIGTERM, the end of migrate or
 * import, stdin's end, or a fatal start error): stop taking work, wait
 * until the pools are idle (at most shutdown_timeout_ms), close the
 * endpoints, the connector and the pools, leave the embedded cluster
 * (stopping it when no other parleyd uses it), close every handle, and let
 * the loop end. A second signal exits at once. */
#include "app.h"

#include <jansson.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "archive/archive.h"
#include "archive/tg_import.h"
#include "archive/agent_import.h"
#include "archive/chatwise_import.h"
#include "sync/chatwise_watch.h"
#include "archive/search_forms.h"
#include "archive/memory_django.h"
#include "archive/memory_store.h"
#include "archive/uploads.h"
#include "db/embedded.h"
#include "db/listen.h"
#include "db/migrate.h"
#include "db/pool.h"
#include "endpoints.h"
#include "mcp/server.h"
#include "metrics.h"
#include "net/http_client.h"
#include "sync/jobs.h"
#include "toolsets/bluesky/bluesky.h"
#include "toolsets/toolset.h"
#include "upstream/tg_bot.h"
#include "transport/secret_page.h"
#include "upstream/bsky.h"
#include "upstream/tg_connector.h"
#include "util/buf.h"
#include "util/log.h"

#define APP_TAG           "main"
#define APP_DRAIN_POLL_MS 50

typedef enum {
    APP_STARTING = 0,
    APP_RUNNING,
    APP_DRAINING,
    APP_CLOSING,
} app_state_t;

typedef struct app_s {
    uv_loop_t loop;
    const config_t *cfg;
    cli_command_t cmd;
    app_state_t state;
    int exit_code;
    uv_signal_t sigint, sigterm;
    uv_timer_t drain_timer;
    uint64_t drain_deadline;
    pg_embedded_t *emb;
    pg_conninfo_t conninfo;
    pg_pool_t *rw, *ro;
    pg_listen_t *listen;
    int closing_parts; /* pools and listener still closing */
    migrate_t mig;
    /* MCP serving */
    bool mcp_started;
    bool mcp_closing;
    int mcp_parts; /* listeners, stdio and the server still closing */
    mcp_server_t mcp;
    endpoints_t *endpoints;
    tg_import_t *import;
    agent_import_t *agents;                       /* import claude-code */
    chatwise_import_t *chatwise;                  /* import chatwise */
    chatwise_watch_t *chatwise_watch;             /* serve: chatwise_db followed */
    search_forms_t *search_forms;                 /* serve: word forms brought in */
    long long words_merged;                       /* import: into the vocabulary */
    archive_t *archive;                           /* the store, as the toolsets see it */
    toolset_env_t env;                            /* what the toolsets' contexts are built from */
    void *toolset_ctx[MCP_REGISTRY_MAX_TOOLSETS]; /* by index in toolsets_table */
    net_client_t *net;                            /* the Telegram connector's */
    net_client_t *fetch;                          /* URLs tools give, under the address policy */
    uploads_t *uploads;
    memory_django_t *memory;      /* --memory-db */
    memory_store_t *memory_store; /* else: agents' sessions in the store */
    tg_bot_t *bot;
    tg_connector_t *tg_conn;
    net_client_t *bsky_net; /* the Bluesky connector's (trusted service) */
    bsky_t *bsky;
    secret_page_server_t *pages; /* URL-mode elicitation pages (bluesky login) */
    sync_runner_t *jobs;
    char media_root[CONFIG_PATH_MAX + 16];
} app_t;

static void app_shutdown(app_t *a, int exit_code);

static void app_fatal(app_t *a, const char *what, const char *detail)
{
    log_error(APP_TAG, "%s: %s", what, detail);
    app_shutdown(a, APP_EXIT_FAILURE);
}

/* ---- shutdown ----------------------------------------------------------- */

static void handle_closed(uv_handle_t *h)
{
    (void)h;
}

static void app_close_handles(app_t *a)
{
    /* h2o's own handles keep the loop alive until its contexts are
     * disposed, which must happen outside uv_run (app_run does it). */
    if (endpoints_hold_loop(a->endpoints) || a->pages)
        uv_stop(&a->loop);
    uv_close((uv_handle_t *)&a->sigint, handle_closed);
    uv_close((uv_handle_t *)&a->sigterm, handle_closed);
    uv_close((uv_handle_t *)&a->drain_timer, handle_closed);
}

static void emb_closed(pg_embedded_t *e)
{
    (void)e;
}

static void emb_stopped(pg_embedded_t *e, int status)
{
    app_t *a = pg_embedded_get_data(e);
    if (status != 0)
        log_error(APP_TAG, "stopping the embedded PostgreSQL: %s", pg_embedded_error(e));
    if (status != 0 && a->exit_code == APP_EXIT_OK)
        a->exit_code = APP_EXIT_FAILURE;
    a->emb = NULL;
    pg_embedded_close(e, emb_closed);
    app_close_handles(a);
}

static void app_parts_closed(app_t *a)
{
    if (--a->closing_parts > 0)
        return;
    if (a->emb != NULL)
        pg_embedded_stop(a->emb, emb_stopped);
    else
        app_close_handles(a);
}

static void pool_closed(pg_pool_t *p)
{
    app_parts_closed(pg_pool_get_data(p));
}

static void listen_closed(pg_listen_t *l)
{
    app_parts_closed(pg_listen_data(l));
}

static void app_close_parts(app_t *a)
{
    a->state = APP_CLOSING;
    uv_timer_stop(&a->drain_timer);
    a->closing_parts = 1; /* held until every close is issued */
    if (a->listen) {
        a->closing_parts++;
        pg_listen_close(a->listen, listen_closed);
        a->listen = NULL;
    }
    if (a->ro) {
        a->closing_parts++;
        pg_pool_close(a->ro, pool_closed);
        a->ro = NULL;
    }
    if (a->rw) {
        a->closing_parts++;
        pg_pool_close(a->rw, pool_closed);
        a->rw = NULL;
    }
    app_parts_closed(a);
}

static bool app_idle(const app_t *a)
{
    return (a->import == NULL || tg_import_done(a->import)) &&
           (a->agents == NULL || agent_import_done(a->agents)) &&
           (a->chatwise == NULL || chatwise_import_done(a->chatwise)) &&
           (a->chatwise_watch == NULL || chatwise_watch_idle(a->chatwise_watch)) &&
           (a->search_forms == NULL || search_forms_idle(a->search_forms)) &&
           (!a->mcp_started || a->mcp.stats.active_calls == 0) &&
           (a->rw == NULL || pg_pool_is_idle(a->rw)) && (a->ro == NULL || pg_pool_is_idle(a->ro));
}

static void app_mcp_part_closed(app_t *a)
{
    if (--a->mcp_parts == 0)
        app_close_parts(a);
}

static void endpoints_closed(void *data)
{
    app_mcp_part_closed(data);
}

static void mcp_closed(mcp_server_t *srv)
{
    app_mcp_part_closed((app_t *)((char *)srv - offsetof(app_t, mcp)));
}

static void memory_closed(void *data)
{
    app_t *a = data;
    a->memory = NULL;
    app_mcp_part_closed(a);
}

static void fetch_closed(void *data)
{
    app_t *a = data;
    a->fetch = NULL;
    app_mcp_part_closed(a);
}

static void net_closed(void *data)
{
    app_t *a = data;
    a->net = NULL;
    app_mcp_part_closed(a);
}

/* The connector is closed: then its HTTP client. */
static void bot_closed(tg_bot_t *b, void *data)
{
    app_t *a = data;
    (void)b;
    a->bot = NULL;
    if (a->net)
        net_client_close(a->net, net_closed, a);
    else
        app_mcp_part_closed(a);
}

static void bsky_net_closed(void *data)
{
    app_t *a = data;
    a->bsky_net = NULL;
    app_mcp_part_closed(a);
}

static void pages_closed(void *data)
{
    app_mcp_part_closed(data);
}

/* The Bluesky connector ended its operations: then its HTTP clients (the
 * fetch client too, which its untrusted calls use). */
static void bsky_closed(void *data)
{
    app_t *a = data;
    if (a->fetch) {
        a->mcp_parts++;
        net_client_close(a->fetch, fetch_closed, a);
    }
    if (a->bsky_net)
        net_client_close(a->bsky_net, bsky_net_closed, a);
    else
        app_mcp_part_closed(a);
}

/* The job runner stopped: then the connector. */
static void jobs_closed(void *data)
{
    app_t *a = data;
    a->jobs = NULL;
    if (a->bot)
        tg_bot_close(a->bot, bot_closed, a);
    else if (a->net)
        net_client_close(a->net, net_closed, a);
    else
        app_mcp_part_closed(a);
}

/* Closes the MCP side (listeners, stdio, sessions: calls still running are
 * cancelled), the connector, then the database parts. */
static void app_close_mcp(app_t *a)
{
    uv_timer_stop(&a->drain_timer);
    if (!a->mcp_started) {
        app_close_parts(a);
        return;
    }
    if (a->mcp_closing)
        return;
    a->mcp_closing = true;
    a->mcp_parts = 1; /* held until every close is issued */
    if (a->endpoints) {
        a->mcp_parts++;
        endpoints_close(a->endpoints, endpoints_closed, a);
    }
    if (a->jobs) {
        a->mcp_parts++;
        sync_runner_close(a->jobs, jobs_closed, a);
    } else if (a->bot) {
        a->mcp_parts++;
        tg_bot_close(a->bot, bot_closed, a);
    } else if (a->net) {
        a->mcp_parts++;
        net_client_close(a->net, net_closed, a);
    }
    if (a->pages) {
        a->mcp_parts++;
        secret_page_server_close(a->pages, pages_closed, a);
    }
    if (a->bsky) {
        a->mcp_parts++;
        bsky_close(a->bsky, bsky_closed, a);
    } else if (a->bsky_net) {
        a->mcp_parts++;
        net_client_close(a->bsky_net, bsky_net_closed, a);
    }
    if (a->fetch && a->bsky == NULL) { /* else after the connector */
        a->mcp_parts++;
        net_client_close(a->fetch, fetch_closed, a);
    }
    if (a->memory) {
        a->mcp_parts++;
        memory_django_close(a->memory, memory_closed, a);
    }
    a->mcp_parts++;
    mcp_server_close(&a->mcp, mcp_closed);
    app_mcp_part_closed(a);
}

static void drain_cb(uv_timer_t *t)
{
    app_t *a = t->data;
    if (app_idle(a)) {
        app_close_mcp(a);
        return;
    }
    if (uv_now(&a->loop) >= a->drain_deadline) {
        log_warn(APP_TAG, "in-flight work did not finish within %d ms; cancelling it",
                 a->cfg->shutdown_timeout_ms);
        app_close_mcp(a);
    }
}

static void app_shutdown(app_t *a, int exit_code)
{
    if (exit_code != APP_EXIT_OK && a->exit_code == APP_EXIT_OK)
        a->exit_code = exit_code;
    if (a->state == APP_DRAINING || a->state == APP_CLOSING)
        return;
    if (a->state == APP_STARTING && a->emb != NULL && a->rw == NULL) {
        /* The embedded cluster is still starting: its callback sees the
         * state and stops. */
        a->state = APP_DRAINING;
        return;
    }
    a->state = APP_DRAINING;
    if (a->mcp_started)
        a->mcp.closing = true; /* no new sessions */
    if (a->import != NULL && !tg_import_done(a->import))
        tg_import_stop(a->import);
    if (a->agents != NULL && !agent_import_done(a->agents))
        agent_import_stop(a->agents);
    if (a->chatwise != NULL && !chatwise_import_done(a->chatwise))
        chatwise_import_stop(a->chatwise);
    if (a->chatwise_watch != NULL)
        chatwise_watch_stop(a->chatwise_watch);
    search_forms_stop(a->search_forms);
    a->drain_deadline = uv_now(&a->loop) + (uint64_t)a->cfg->shutdown_timeout_ms;
    uv_timer_start(&a->drain_timer, drain_cb, 0, APP_DRAIN_POLL_MS);
}

static void on_signal(uv_signal_t *s, int signum)
{
    app_t *a = s->data;
    if (a->state == APP_DRAINING || a->state == APP_CLOSING) {
        log_warn(APP_TAG, "second %s: exiting now", signum == SIGINT ? "SIGINT" : "SIGTERM");
        _exit(APP_EXIT_FORCED);
    }
    log_info(APP_TAG, "%s: shutting down (send it again to exit at once)",
             signum == SIGINT ? "SIGINT" : "SIGTERM");
    app_shutdown(a, APP_EXIT_OK);
}

/* ---- start -------------------------------------------------------------- */

static void on_notify(pg_listen_t *l, const char *channel, const char *payload)
{
    (void)l;
    log_debug("listen", "notification on %s: %.200s", channel, payload);
}

/* /metrics: the figures of each part there is now. */
static void app_metrics(buf_t *b, void *data)
{
    app_t *a = data;
    metrics_sources_t src = {.mcp = &a->mcp,
                             .rw = a->rw,
                             .ro = a->ro,
                             .jobs = a->jobs,
                             .connectors = a->env.connectors,
                             .nconnectors = a->env.nconnectors};
    metrics_write(&src, b);
}

/* stdin ended while serving: stop like on a signal. */
static void stdio_ended(void *data)
{
    app_shutdown(data, APP_EXIT_OK);
}

/* The HTTP client for URLs that tools give (files_upload), under the
 * address policy, and the uploads it feeds. */
static int app_start_fetch(app_t *a, char *err, size_t errcap)
{
    addr_policy_t policy = {.allow_http = a->cfg->url_allow_http};
    char list[CONFIG_LIST_MAX];
    snprintf(list, sizeof list, "%s", a->cfg->url_allow_addresses);
    for (char *save = NULL, *tok = strtok_r(list, ", ", &save); tok;
         tok = strtok_r(NULL, ", ", &save)) {
        if (policy.nallow == ADDR_POLICY_ALLOW_MAX || strlen(tok) >= sizeof policy.allow[0]) {
            snprintf(err, errcap, "url_allow_addresses: at most %d addresses",
                     ADDR_POLICY_ALLOW_MAX);
            return UV_EINVAL;
        }
        snprintf(policy.allow[policy.nallow++], sizeof policy.allow[0], "%s", tok);
    }
    net_config_t nc = {.timeout_ms = (uint32_t)a->cfg->url_timeout_s * 1000};
    int rc = net_client_new(&a->loop, &nc, &policy, &a->fetch, err, errcap);
    if (rc != 0)
        return rc;
    uploads_config_t uc = {.media_root = a->media_root,
                           .max_bytes = (uint64_t)a->cfg->inline_upload_max_mb << 20};
    if ((rc = uploads_new(&a->loop, a->archive, a->fetch, &uc, &a->uploads)) != 0) {
        snprintf(err, errcap, "out of memory");
        return rc;
    }
    a->env.uploads = a->uploads;
    return 0;
}

/* The memory toolset's Django database, when one is configured: its own
 * small read-only pool. An unreachable database is logged and reported per
 * call; parleyd serves on. */
static int app_start_memory(app_t *a, char *err, size_t errcap)
{
    if (a->cfg->memory_db[0] == '\0') {
        int rc = memory_store_new(a->archive, &a->memory_store);
        if (rc != 0) {
            snprintf(err, errcap, "out of memory");
            return rc;
        }
        a->env.memory = memory_store_source(a->memory_store);
        return 0;
    }
    pg_conninfo_t ci;
    int rc = pg_conninfo_parse(&ci, a->cfg->memory_db, err, errcap);
    if (rc != 0)
        return rc;
    rc = memory_django_new(&a->loop, &ci, (uint32_t)a->cfg->db_query_timeout_ms,
                           (uint32_t)a->cfg->db_connect_timeout_ms, &a->memory, err, errcap);
    char desc[256];
    pg_conninfo_describe(&ci, desc, sizeof desc);
    pg_conninfo_free(&ci);
    if (rc != 0)
        return rc;
    log_info(APP_TAG, "memory database: %s (read-only)", desc);
    memory_django_check(a->memory);
    a->env.memory = memory_django_source(a->memory);
    return 0;
}

/* Starts the Telegram Bot API connector when a token is configured. */
static int app_start_upstream(app_t *a, char *err, size_t errcap)
{
    if (a->cfg->telegram_bot_token[0] == '\0')
        return 0;
    net_config_t nc = {.timeout_ms = (uint32_t)(a->cfg->telegram_poll_timeout_s + 30) * 1000};
    int rc = net_client_new(&a->loop, &nc, NULL, &a->net, err, errcap);
    if (rc != 0)
        return rc;
    tg_bot_config_t bc = {.token = a->cfg->telegram_bot_token,
                          .api_url = a->cfg->telegram_api_url,
                          .poll_timeout_s = a->cfg->telegram_poll_timeout_s,
                          .realtime = true,
                          .media_root = a->media_root,
                          .file_limit = (uint64_t)a->cfg->telegram_file_limit_mb << 20,
                          .media_stall_ms = (uint32_t)a->cfg->telegram_media_stall_s * 1000,
                          .media_retry_max_ms = (uint32_t)a->cfg->telegram_media_retry_max_s * 1000,
                          .conninfo = &a->conninfo,
                          .connect_timeout_ms = (uint32_t)a->cfg->db_connect_timeout_ms};
    rc = tg_bot_start(&a->loop, a->net, a->rw, &bc, &a->bot, err, errcap);
    if (rc != 0)
        return rc;
    if ((rc = tg_connector_new(a->bot, a->rw, &a->tg_conn)) != 0) {
        snprintf(err, errcap, "out of memory");
        return rc;
    }
    a->env.connectors[a->env.nconnectors++] = tg_connector_get(a->tg_conn);
    log_info(APP_TAG, "telegram: Bot API connector started (realtime sync)");
    return 0;
}

/* Creates dir and its parents (0700) when missing: the data directory
 * also holds state when the database is external. */
static int mkdir_parents(const char *dir, char *err, size_t errcap)
{
    char p[CONFIG_PATH_MAX];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
            int e = errno;
            snprintf(err, errcap, "%.200s: %s", p, strerror(e));
            return -e;
        }
        if ((*s = c) == '\0')
            return 0;
    }
}

/* The Bluesky connector, when the bluesky toolset is served: its own HTTP
 * client for the operator's service; a service a tool names goes through
 * the fetch client (address policy). */
static int app_start_bluesky(app_t *a, char *err, size_t errcap)
{
    if (!mcp_registry_has_toolset(&a->mcp.registry, &toolset_bluesky_mcp))
        return 0;
    int rc = mkdir_parents(a->cfg->data_dir, err, errcap);
    if (rc != 0)
        return rc;
    net_config_t nc = {0};
    if ((rc = net_client_new(&a->loop, &nc, NULL, &a->bsky_net, err, errcap)) != 0)
        return rc;
    char key[CONFIG_PATH_MAX + 32];
    snprintf(key, sizeof key, "%s/%s", a->cfg->data_dir, BSKY_KEY_FILE);
    bsky_config_t bc = {.service = a->cfg->bluesky_service,
                        .key_path = key,
                        .refresh_s = a->cfg->bluesky_refresh_s};
    if ((rc = bsky_new(&a->loop, a->bsky_net, a->fetch, a->rw, &bc, &a->bsky, err, errcap)) != 0)
        return rc;
    a->env.connectors[a->env.nconnectors++] = bsky_connector(a->bsky);
    if ((rc = secret_page_server_new(&a->loop, &a->pages)) != 0) {
        snprintf(err, errcap, "password pages: %s", uv_strerror(rc));
        return rc;
    }
    a->env.pages = a->pages;
    log_info(APP_TAG, "bluesky: connector ready (service %s)", a->cfg->bluesky_service);
    return 0;
}

/* The job runner, with the job classes of every connector started. */
static int app_start_jobs(app_t *a, char *err, size_t errcap)
{
    sync_class_t classes[SYNC_MAX_CLASSES];
    int n = 0;
    for (int i = 0; i < a->env.nconnectors; i++) {
        connector_t *conn = a->env.connectors[i];
        const sync_class_t *cls;
        int k = conn->ops->job_classes ? conn->ops->job_classes(conn->impl, &cls) : 0;
        for (int j = 0; j < k && n < SYNC_MAX_CLASSES; j++)
            classes[n++] = cls[j];
    }
    if (n == 0)
        return 0;
    int rc = sync_runner_start(&a->loop, a->rw, classes, n, &a->jobs);
    if (rc != 0)
        snprintf(err, errcap, "sync jobs: %s", uv_strerror(rc));
    return rc;
}

/* The daemon's own figures for serverStatus (malloc'd JSON). */
static char *app_status_json(void *data)
{
    app_t *a = data;
    pg_pool_stats_t rw = {0}, ro = {0};
    if (a->rw)
        pg_pool_stats(a->rw, &rw);
    if (a->ro)
        pg_pool_stats(a->ro, &ro);
    json_t *j = json_pack("{s:s, s:i, s:I, s:i, s:{s:i, s:i, s:i}, s:{s:i, s:i, s:i}}", "version",
                          PARLEY_VERSION, "sessions", a->mcp.stats.sessions_open, "toolCalls",
                          (json_int_t)a->mcp.stats.tool_calls, "activeCalls",
                          a->mcp.stats.active_calls, "dbPool", "busy", rw.conns_busy, "ready",
                          rw.conns_ready, "queued", rw.queued, "dbReadPool", "busy", ro.conns_busy,
                          "ready", ro.conns_ready, "queued", ro.queued);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

static int app_start_mcp(app_t *a)
{
    char err[CONFIG_ERR_MAX];
    int rc;
    /* The engine knows no toolset: it gets the table. */
    const mcp_toolset_t *available[MCP_REGISTRY_MAX_TOOLSETS + 1];
    toolsets_mcp_list(available, MCP_REGISTRY_MAX_TOOLSETS + 1);
    mcp_registry_t reg;
    rc = mcp_registry_build(&reg, available, a->cfg->toolsets, a->cfg->read_only, err, sizeof err);
    if (rc != 0) {
        app_fatal(a, "toolsets", err);
        return rc;
    }
    mcp_limits_t lim;
    mcp_limits_default(&lim);
    lim.max_message_bytes = (size_t)a->cfg->max_message_bytes;
    lim.session_max_inflight = a->cfg->session_max_inflight;
    lim.output_high_water = (size_t)a->cfg->output_high_water;
    lim.output_low_water = (size_t)a->cfg->output_low_water;
    lim.output_hard_limit = (size_t)a->cfg->output_hard_limit;
    lim.max_active_calls = a->cfg->max_active_calls;
    lim.max_sessions = a->cfg->max_sessions;
    lim.request_timeout_ms = a->cfg->request_timeout_ms;
    lim.init_timeout_ms = a->cfg->init_timeout_ms;
    lim.tools_page_size = a->cfg->list_page_size;
    if (lim.output_low_water > lim.output_high_water)
        lim.output_low_water = lim.output_high_water;
    snprintf(a->media_root, sizeof a->media_root, "%s/media", a->cfg->data_dir);
    mcp_server_init(&a->mcp, &a->loop, &reg, &lim);
    a->mcp.instructions =
        "parley is a conversation archive: Telegram-style chats, Bluesky posts, AI-assistant "
        "chats and agents' past sessions, kept in PostgreSQL. Use the tools to list, search "
        "and read conversations; list tools to see what this server offers.";
    a->mcp_started = true;
    if ((rc = archive_new(a->rw, a->ro, &a->archive)) != 0) {
        app_fatal(a, "archive", uv_strerror(rc));
        return rc;
    }
    a->env.loop = &a->loop;
    a->env.data_dir = a->cfg->data_dir;
    a->env.export_root = a->cfg->export_root;
    a->env.upload_root = a->cfg->upload_root;
    a->env.timezone = a->cfg->timezone;
    a->env.archive = a->archive;
    a->env.status_json = app_status_json;
    a->env.status_data = a;
    if ((rc = app_start_upstream(a, err, sizeof err)) != 0) {
        app_fatal(a, "telegram", err);
        return rc;
    }
    if ((rc = app_start_fetch(a, err, sizeof err)) != 0) {
        app_fatal(a, "url fetching", err);
        return rc;
    }
    if ((rc = app_start_memory(a, err, sizeof err)) != 0) {
        app_fatal(a, "memory database", err);
        return rc;
    }
    if ((rc = app_start_bluesky(a, err, sizeof err)) != 0) {
        app_fatal(a, "bluesky", err);
        return rc;
    }
    if ((rc = app_start_jobs(a, err, sizeof err)) != 0) {
        app_fatal(a, "sync jobs", err);
        return rc;
    }
    /* Each selected toolset builds its context from the environment. */
    for (int i = 0; toolsets_table[i].mcp && i < MCP_REGISTRY_MAX_TOOLSETS; i++) {
        const toolset_t *ts = &toolsets_table[i];
        if (ts->open == NULL || !mcp_registry_has_toolset(&a->mcp.registry, ts->mcp))
            continue;
        if ((rc = ts->open(&a->env, &a->toolset_ctx[i], err, sizeof err)) != 0) {
            app_fatal(a, ts->mcp->name, err);
            return rc;
        }
        mcp_registry_set_context(&a->mcp.registry, ts->mcp, a->toolset_ctx[i]);
    }
    log_info(APP_TAG, "MCP: %d tool(s), %d resource(s), %d prompt(s) from toolsets '%s'%s",
             a->mcp.registry.ntools, a->mcp.registry.nresources, a->mcp.registry.nprompts,
             a->cfg->toolsets, a->cfg->read_only ? " (read-only)" : "");
    endpoints_config_t ec = {.cfg = a->cfg,
                             .mcp = &a->mcp,
                             .metrics = app_metrics,
                             .metrics_data = a,
                             .stdio_ended = stdio_ended,
                             .data = a};
    if ((rc = endpoints_start(&a->loop, &ec, &a->endpoints, err, sizeof err)) != 0) {
        app_fatal(a, "MCP endpoints", err);
        return rc;
    }
    return 0;
}

/* The word forms are in use, or search_languages names an unknown
 * configuration: serve stops with the reason. */
static void search_forms_done(search_forms_t *sf, int status)
{
    app_t *a = search_forms_data(sf);
    if (status != 0)
        app_fatal(a, "search", search_forms_error(sf));
}

static int app_start_serving(app_t *a)
{
    char err[CONFIG_ERR_MAX];
    pg_conninfo_t ro_ci;
    int rc;
    if (a->cfg->db_ro_url[0])
        rc = pg_conninfo_parse(&ro_ci, a->cfg->db_ro_url, err, sizeof err);
    else
        rc = pg_conninfo_copy(&ro_ci, &a->conninfo);
    if (rc != 0) {
        app_fatal(a, "read-only database", err);
        return rc;
    }
    pg_pool_config_t pc = {
        .name = "db-ro",
        .size = a->cfg->db_ro_pool_size,
        /* Searches leave at least one connection to the other reads. */
        .limited_max =
            a->cfg->db_ro_pool_size > 1
                ? (a->cfg->search_max_conns < a->cfg->db_ro_pool_size ? a->cfg->search_max_conns
                                                                      : a->cfg->db_ro_pool_size - 1)
                : 1,
        .queue_max = a->cfg->db_queue_max,
        .query_timeout_ms = (uint32_t)a->cfg->db_query_timeout_ms,
        .connect_timeout_ms = (uint32_t)a->cfg->db_connect_timeout_ms,
        .read_only = true,
        /* Tool calls: PostgreSQL itself stops a query at the deadline. */
        .statement_timeout_ms = (uint32_t)a->cfg->db_query_timeout_ms,
    };
    rc = pg_pool_new(&a->loop, &pc, &ro_ci, &a->ro, err, sizeof err);
    pg_conninfo_free(&ro_ci);
    if (rc != 0) {
        app_fatal(a, "read-only pool", err);
        return rc;
    }
    pg_pool_set_data(a->ro, a);
    const char *channels[] = {APP_NOTIFY_CHANNEL, NULL};
    rc = pg_listen_start(&a->loop, &a->conninfo, channels, (uint32_t)a->cfg->db_connect_timeout_ms,
                         on_notify, a, &a->listen, err, sizeof err);
    if (rc != 0) {
        app_fatal(a, "listen connection", err);
        return rc;
    }
    if ((rc = app_start_mcp(a)) != 0)
        return rc;
    if (a->cfg->chatwise_db[0] &&
        (rc = chatwise_watch_start(&a->loop, a->rw, a->cfg->chatwise_db,
                                   a->cfg->chatwise_interval_s, &a->chatwise_watch)) != 0) {
        app_fatal(a, "chatwise_db", uv_strerror(rc));
        return rc;
    }
    rc = search_forms_start(&a->loop, &a->conninfo, a->rw, a->cfg->search_languages,
                            a->cfg->search_fill_batch, (uint32_t)a->cfg->db_connect_timeout_ms,
                            search_forms_done, a, &a->search_forms, err, sizeof err);
    if (rc != 0) {
        app_fatal(a, "search_languages", err);
        return rc;
    }
    a->state = APP_RUNNING;
    log_info(APP_TAG, "parleyd %s ready (schema version %d)", PARLEY_VERSION,
             a->mig.schema_version);
    return 0;
}

static void app_import_finish(app_t *a);

static void words_merged(void *data, int status, const char *value, const char *sqlstate,
                         const char *error)
{
    (void)sqlstate;
    app_t *a = data;
    if (status == 0) {
        long long n = value ? strtoll(value, NULL, 10) : 0;
        a->words_merged += n;
        if (n >= SEARCH_WORDS_MERGE_BATCH && a->state == APP_STARTING) {
            app_import_finish(a);
            return;
        }
        log_info(APP_TAG, "%lld new words merged into the fuzzy search's vocabulary",
                 a->words_merged);
    } else if (status != UV_ECANCELED) {
        log_warn(APP_TAG, "merging the new words into the vocabulary: %s (the next serve does)",
                 error ? error : uv_strerror(status));
    }
    app_shutdown(a, APP_EXIT_OK);
}

/* An import succeeded: the words its rows appended are merged into the
 * vocabulary, SEARCH_WORDS_MERGE_BATCH rows a statement (search_forms.c
 * does it while serving; after an import alone the fuzzy search would read
 * them unmerged), then the command ends. */
static void app_import_finish(app_t *a)
{
    char batch[16];
    snprintf(batch, sizeof batch, "%d", SEARCH_WORDS_MERGE_BATCH);
    const char *p[] = {batch};
    int rc = pg_pool_call(a->rw, NULL, "SELECT parley_search_words_merge($1::integer)", 1, p,
                          words_merged, a, NULL);
    if (rc != 0) {
        log_warn(APP_TAG, "merging the new words into the vocabulary: %s", uv_strerror(rc));
        app_shutdown(a, APP_EXIT_OK);
    }
}

static void import_done(tg_import_t *imp, int status)
{
    app_t *a = tg_import_data(imp);
    tg_import_stats_t st;
    tg_import_get_stats(imp, &st);
    if (status != 0) {
        log_error(APP_TAG, "import failed: %s", tg_import_error(imp));
        app_shutdown(a, APP_EXIT_FAILURE);
        return;
    }
    log_info(APP_TAG,
             "imported %llu chat%s, %llu messages (%llu new or changed), %llu contacts, %llu "
             "files stored (%llu not in the export); %llu message%s left out (see the warnings)",
             (unsigned long long)st.chats, st.chats == 1 ? "" : "s",
             (unsigned long long)st.messages, (unsigned long long)st.written,
             (unsigned long long)st.contacts, (unsigned long long)st.files_stored,
             (unsigned long long)st.files_missing, (unsigned long long)st.skipped,
             st.skipped == 1 ? "" : "s");
    app_import_finish(a);
}

static void chatwise_done(chatwise_import_t *imp, int status)
{
    app_t *a = chatwise_import_data(imp);
    chatwise_import_stats_t st;
    chatwise_import_get_stats(imp, &st);
    if (status != 0) {
        log_error(APP_TAG, "import failed: %s", chatwise_import_error(imp));
        app_shutdown(a, APP_EXIT_FAILURE);
        return;
    }
    log_info(APP_TAG,
             "imported %llu chat%s (%llu new or changed), %llu messages (%llu new or changed), "
             "%llu with tool calls; %llu without their chat skipped, %llu not stored; %llu "
             "with a value cut to %u MiB, %llu with a time left out",
             (unsigned long long)st.chats, st.chats == 1 ? "" : "s",
             (unsigned long long)st.chats_written, (unsigned long long)st.messages,
             (unsigned long long)st.written, (unsigned long long)st.tool_calls,
             (unsigned long long)st.orphans, (unsigned long long)st.refused,
             (unsigned long long)st.truncated, CHATWISE_IMPORT_MAX_VALUE >> 20,
             (unsigned long long)st.bad_times);
    app_import_finish(a);
}

static void agents_done(agent_import_t *imp, int status)
{
    app_t *a = agent_import_data(imp);
    agent_import_stats_t st;
    agent_import_get_stats(imp, &st);
    if (status != 0) {
        log_error(APP_TAG, "import failed: %s", agent_import_error(imp));
        app_shutdown(a, APP_EXIT_FAILURE);
        return;
    }
    log_info(APP_TAG,
             "imported %llu transcript file%s (%llu with new lines): %llu lines, %llu new "
             "session%s, %llu messages, %llu context heaps; %llu malformed line%s skipped, "
             "%llu over %u MiB skipped, %llu not stored, %llu file%s skipped (not regular or "
             "unreadable), %llu read again from the start",
             (unsigned long long)st.files, st.files == 1 ? "" : "s",
             (unsigned long long)st.files_changed, (unsigned long long)st.lines,
             (unsigned long long)st.sessions, st.sessions == 1 ? "" : "s",
             (unsigned long long)st.messages, (unsigned long long)st.heaps,
             (unsigned long long)st.malformed, st.malformed == 1 ? "" : "s",
             (unsigned long long)st.too_long, AGENT_IMPORT_MAX_LINE >> 20,
             (unsigned long long)st.refused, (unsigned long long)st.files_skipped,
             st.files_skipped == 1 ? "" : "s", (unsigned long long)st.reread);
    app_import_finish(a);
}

/* import: the importer of the command's source. */
static void app_start_import(app_t *a)
{
    char err[CONFIG_ERR_MAX];
    int rc;
    if (a->cfg->import_chatwise) {
        rc = chatwise_import_start(&a->loop, a->rw, a->cfg->import_path, true, chatwise_done, a,
                                   &a->chatwise, err, sizeof err);
    } else if (a->cfg->import_claude_code) {
        rc = agent_import_start(&a->loop, a->rw, a->cfg->import_path, a->cfg->eras, agents_done, a,
                                &a->agents, err, sizeof err);
    } else {
        char media_root[CONFIG_PATH_MAX + 16];
        snprintf(media_root, sizeof media_root, "%s/media", a->cfg->data_dir);
        rc = tg_import_start(&a->loop, a->rw, &a->conninfo, a->cfg->import_path, a->cfg->tz,
                             media_root, import_done, a, &a->import, err, sizeof err);
    }
    if (rc != 0)
        app_fatal(a, "import", err);
}

/* import: search_languages is the word forms' target before the rows are
 * written, so that the trigger fills their forms as they load (serve
 * brings in the rest, see archive/search_forms.h). */
static void import_target_done(void *data, int status, const char *value, const char *sqlstate,
                               const char *error)
{
    (void)value;
    (void)sqlstate;
    app_t *a = data;
    if (status != 0) {
        app_fatal(a, "search", error ? error : uv_strerror(status));
        return;
    }
    app_start_import(a);
}

static void migrate_done(migrate_t *m, int status)
{
    app_t *a = m->data;
    if (status != 0) {
        app_fatal(a, "database schema", m->error);
        return;
    }
    if (a->cmd == CLI_CMD_MIGRATE) {
        log_info(APP_TAG, "schema is at version %d (%d migration%s applied)", m->schema_version,
                 m->applied, m->applied == 1 ? "" : "s");
        app_shutdown(a, APP_EXIT_OK);
        return;
    }
    if (a->cmd == CLI_CMD_IMPORT) {
        const char *p[] = {a->cfg->search_languages};
        int rc = pg_pool_call(a->rw, NULL, "SELECT parley_search_forms_step($1::text)", 1, p,
                              import_target_done, a, NULL);
        if (rc != 0)
            app_fatal(a, "search", uv_strerror(rc));
        return;
    }
    if (a->state == APP_STARTING && app_start_serving(a) != 0)
        return;
}

static void app_open_database(app_t *a)
{
    char err[CONFIG_ERR_MAX];
    pg_pool_config_t pc = {
        .name = "db",
        .size = a->cfg->db_pool_size,
        .queue_max = a->cfg->db_queue_max,
        .query_timeout_ms = (uint32_t)a->cfg->db_query_timeout_ms,
        .connect_timeout_ms = (uint32_t)a->cfg->db_connect_timeout_ms,
    };
    int rc = pg_pool_new(&a->loop, &pc, &a->conninfo, &a->rw, err, sizeof err);
    if (rc != 0) {
        app_fatal(a, "database pool", err);
        return;
    }
    pg_pool_set_data(a->rw, a);
    char desc[256];
    pg_conninfo_describe(&a->conninfo, desc, sizeof desc);
    log_info(APP_TAG, "database: %s", desc);
    a->mig.cb = migrate_done;
    a->mig.data = a;
    rc = migrate_start(&a->mig, a->rw);
    if (rc != 0)
        app_fatal(a, "database schema", uv_strerror(rc));
}

static void emb_started(pg_embedded_t *e, int status)
{
    app_t *a = pg_embedded_get_data(e);
    if (status != 0) {
        log_error(APP_TAG, "embedded PostgreSQL: %s", pg_embedded_error(e));
        if (a->exit_code == APP_EXIT_OK)
            a->exit_code = APP_EXIT_FAILURE;
        a->state = APP_CLOSING;
        a->emb = NULL;
        pg_embedded_close(e, emb_closed);
        app_close_handles(a);
        return;
    }
    if (pg_conninfo_copy(&a->conninfo, pg_embedded_conninfo(e)) != 0) {
        log_error(APP_TAG, "out of memory");
        a->exit_code = APP_EXIT_FAILURE;
        a->state = APP_DRAINING;
    }
    if (a->state != APP_STARTING) {
        /* A signal arrived while the cluster started: leave it again. */
        a->state = APP_CLOSING;
        pg_embedded_stop(e, emb_stopped);
        return;
    }
    app_open_database(a);
}

int app_run(const config_t *cfg, cli_command_t cmd)
{
    app_t *a = calloc(1, sizeof *a);
    if (a == NULL)
        return APP_EXIT_FAILURE;
    a->cfg = cfg;
    a->cmd = cmd;
    int rc = uv_loop_init(&a->loop);
    if (rc != 0) {
        log_error(APP_TAG, "event loop: %s", uv_strerror(rc));
        free(a);
        return APP_EXIT_FAILURE;
    }
    uv_signal_init(&a->loop, &a->sigint);
    uv_signal_init(&a->loop, &a->sigterm);
    uv_timer_init(&a->loop, &a->drain_timer);
    a->sigint.data = a->sigterm.data = a->drain_timer.data = a;
    uv_signal_start(&a->sigint, on_signal, SIGINT);
    uv_signal_start(&a->sigterm, on_signal, SIGTERM);

    char err[CONFIG_ERR_MAX];
    if (!cfg->db_external) {
        pg_embedded_config_t ec = {
            .data_dir = cfg->data_dir,
            .bindir = cfg->pg_bindir,
            .run_as = cfg->pg_user,
            .start_timeout_s = cfg->pg_start_timeout_s,
        };
        rc = pg_embedded_new(&a->loop, &ec, &a->emb, err, sizeof err);
        if (rc != 0) {
            log_error(APP_TAG, "embedded PostgreSQL: %s", err);
            a->exit_code = APP_EXIT_FAILURE;
            a->state = APP_CLOSING;
            app_close_handles(a);
        } else {
            log_info(APP_TAG, "data directory %s (embedded PostgreSQL)", cfg->data_dir);
            pg_embedded_set_data(a->emb, a);
            pg_embedded_start(a->emb, emb_started);
        }
    } else {
        rc = pg_conninfo_parse(&a->conninfo, cfg->db_url, err, sizeof err);
        if (rc != 0) {
            log_error(APP_TAG, "%s", err);
            a->exit_code = APP_EXIT_FAILURE;
            a->state = APP_CLOSING;
            app_close_handles(a);
        } else {
            app_open_database(a);
        }
    }

    uv_run(&a->loop, UV_RUN_DEFAULT);
    /* h2o's contexts (HTTP endpoints, password pages) are disposed
     * outside uv_run; then the loop runs once more for the closes left
     * (a no-op when there are none). */
    bool again = endpoints_dispose(a->endpoints);
    if (a->pages && secret_page_server_dispose(a->pages))
        again = true;
    if (again || a->pages)
        uv_run(&a->loop, UV_RUN_DEFAULT);
    endpoints_free(a->endpoints);
    secret_page_server_free(a->pages);
    /* Sessions are gone: the toolsets' contexts and what they borrowed. */
    for (int i = 0; toolsets_table[i].mcp && i < MCP_REGISTRY_MAX_TOOLSETS; i++)
        if (a->toolset_ctx[i] && toolsets_table[i].close)
            toolsets_table[i].close(a->toolset_ctx[i]);
    if (a->tg_conn)
        tg_connector_free(a->tg_conn);
    bsky_free(a->bsky);
    uploads_free(a->uploads);
    memory_store_free(a->memory_store);
    archive_free(a->archive);
    tg_import_free(a->import);
    agent_import_free(a->agents);
    chatwise_watch_free(a->chatwise_watch);
    if (a->search_forms)
        search_forms_free(a->search_forms);
    chatwise_import_free(a->chatwise);
    rc = uv_loop_close(&a->loop);
    if (rc != 0)
        log_error(APP_TAG, "event loop did not close cleanly: %s", uv_strerror(rc));
    int code = a->exit_code;
    pg_conninfo_free(&a->conninfo);
    free(a);
    if (code == APP_EXIT_OK)
        log_info(APP_TAG, "stopped");
    return code;
}
