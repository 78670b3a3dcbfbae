/* app_serve: what serve starts after the migrations, in order, each
 * pushed on the entry's stack (app_stack.h) as it starts so that the stop
 * closes them in reverse: the read-only pool and the LISTEN connection,
 * the MCP server, the archive, the client for URLs tools give and the
 * uploads it feeds, the memory source, then the connectors and toolsets
 * (app_connect.c), the word forms' filler, the builder of the indexes
 * the migrations asked for and the followed import sources. Names no
 * connector, toolset or import source: it walks their tables. */
#include "app/serve_internal.h"
#include "app/steps.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "archive/archive.h"
#include "archive/memory_django.h"
#include "archive/memory_store.h"
#include "archive/search_forms.h"
#include "archive/uploads.h"
#include "db/listen.h"
#include "endpoints.h"
#include "import/follow.h"
#include "import/follow_dir.h"
#include "import/importers.h"
#include "metrics.h"
#include "net/http_client.h"
#include "sync/jobs.h"
#include "toolsets/surface.h"
#include "transport/secret_page.h"
#include "upstream/connectors.h"
#include "util/buf.h"
#include "util/dirs.h"
#include "util/log.h"
#include "util/sealed.h"

/* ---- the parts' stages ------------------------------------------------------ */

static void listen_closed(pg_listen_t *l)
{
    app_stack_next(&((app_t *)pg_listen_data(l))->stack);
}

static void listen_close(void *obj, app_stack_t *s)
{
    (void)s;
    pg_listen_close(obj, listen_closed);
}

static void mcp_stop(void *obj)
{
    ((mcp_server_t *)obj)->closing = true; /* no new sessions */
}

static bool mcp_idle(const void *obj)
{
    return ((const mcp_server_t *)obj)->stats.active_calls == 0;
}

static void mcp_closed(mcp_server_t *srv)
{
    app_stack_next(&((app_t *)((char *)srv - offsetof(app_t, mcp)))->stack);
}

/* Sessions close (calls still running are cancelled). */
static void mcp_close(void *obj, app_stack_t *s)
{
    (void)s;
    mcp_server_close(obj, mcp_closed);
}

static void net_close(void *obj, app_stack_t *s)
{
    net_client_close(obj, app_stack_next_cb, s);
}

static void memory_close(void *obj, app_stack_t *s)
{
    memory_django_close(obj, app_stack_next_cb, s);
}

static void archive_part_free(void *obj)
{
    archive_free(obj);
}

static void uploads_part_free(void *obj)
{
    uploads_free(obj);
}

static void memory_store_part_free(void *obj)
{
    memory_store_free(obj);
}

static void follow_stop(void *obj)
{
    import_follow_stop(obj);
}

static bool follow_idle(const void *obj)
{
    return import_follow_idle(obj);
}

static void follow_free(void *obj)
{
    import_follow_free(obj);
}

static void follow_dir_stop(void *obj)
{
    import_follow_dir_stop(obj);
}

static bool follow_dir_idle(const void *obj)
{
    return import_follow_dir_idle(obj);
}

static void follow_dir_free(void *obj)
{
    import_follow_dir_free(obj);
}

static const app_part_ops_t listen_part = {.name = "listen connection", .close = listen_close};
static const app_part_ops_t mcp_part = {
    .name = "MCP server", .stop = mcp_stop, .idle = mcp_idle, .close = mcp_close};
static const app_part_ops_t archive_part = {.name = "archive", .free = archive_part_free};
static const app_part_ops_t net_part = {.name = "URL client", .close = net_close};
static const app_part_ops_t uploads_part = {.name = "uploads", .free = uploads_part_free};
static const app_part_ops_t memory_part = {.name = "memory database", .close = memory_close};
static const app_part_ops_t memory_store_part = {.name = "memory", .free = memory_store_part_free};
static const app_part_ops_t follow_part = {
    .name = "follow", .stop = follow_stop, .idle = follow_idle, .free = follow_free};
static const app_part_ops_t follow_dir_part = {.name = "follow folder",
                                               .stop = follow_dir_stop,
                                               .idle = follow_dir_idle,
                                               .free = follow_dir_free};

/* ---- start ------------------------------------------------------------------ */

static void resource_changed(const char *uri, void *data)
{
    app_t *a = data;
    mcp_server_resource_updated(&a->mcp, uri);
}

/* The store changed (a write of any daemon on it, this one included):
 * its toolsets name the resources it touched, and the sessions that
 * watch them are told. */
static void on_notify(pg_listen_t *l, const char *channel, const char *payload)
{
    app_t *a = pg_listen_data(l);
    log_debug("listen", "notification on %s: %.200s", channel, payload);
    if (!a->mcp_started)
        return;
    toolsets_store_changed(payload, resource_changed, a);
    if (a->mcp.registry.hidden != 0)
        app_auto_refresh(a);
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

/* The read-only pool (searches leave at least one connection to the
 * other reads) and the LISTEN connection. */
static int start_reads(app_t *a, char *err, size_t errcap)
{
    const config_t *cfg = a->cfg;
    pg_conninfo_t ro_ci;
    int rc = cfg->db_ro_url[0] ? pg_conninfo_parse(&ro_ci, cfg->db_ro_url, err, errcap)
                               : pg_conninfo_copy(&ro_ci, &a->conninfo);
    if (rc != 0)
        return rc;
    int size = cfg->db_ro_pool_size;
    int limited_max =
        size > 1 ? (cfg->search_max_conns < size ? cfg->search_max_conns : size - 1) : 1;
    pg_pool_config_t pc = {
        .name = "db-ro",
        .size = size,
        .limited_max = limited_max,
        /* 0: a reserve when bearer tokens make several principals (one
         * token's searches never hold every search connection); without
         * tokens every client is one principal, which may use them all. */
        .limited_share_max = cfg->search_max_conns_per_principal > 0
                                 ? cfg->search_max_conns_per_principal
                             : cfg->token_file[0] == '\0' ? 0
                             : limited_max > 1            ? limited_max - 1
                                                          : 1,
        .queue_max = cfg->db_queue_max,
        .query_timeout_ms = (uint32_t)cfg->db_query_timeout_ms,
        .connect_timeout_ms = (uint32_t)cfg->db_connect_timeout_ms,
        .read_only = true,
        /* Tool calls: PostgreSQL itself stops a query at the deadline. */
        .statement_timeout_ms = (uint32_t)cfg->db_query_timeout_ms,
    };
    rc = pg_pool_new(&a->loop, &pc, &ro_ci, &a->ro, err, errcap);
    pg_conninfo_free(&ro_ci);
    if (rc != 0)
        return rc;
    pg_pool_set_data(a->ro, a);
    if ((rc = app_push(a, &app_pool_part, a->ro)) != 0)
        return rc;
    const char *channels[] = {APP_NOTIFY_CHANNEL, NULL};
    pg_listen_t *listen = NULL;
    rc = pg_listen_start(&a->loop, &a->conninfo, channels, (uint32_t)cfg->db_connect_timeout_ms,
                         on_notify, a, &listen, err, errcap);
    return rc != 0 ? rc : app_push(a, &listen_part, listen);
}

/* The key that seals 2026-07-28 requestState: state_key_file (it must
 * load), else DATA_DIR/mcp-state.key (made with the data directory when
 * missing), so daemons on one data directory share it; a data directory
 * that cannot hold it leaves the server's per-process key, with a
 * warning. A small file read once at start. */
static int load_state_key(app_t *a, char *err, size_t errcap)
{
    const config_t *cfg = a->cfg;
    char path[CONFIG_PATH_MAX + 32];
    bool named = cfg->state_key_file[0] != '\0';
    int rc = 0;
    if (named)
        snprintf(path, sizeof path, "%s", cfg->state_key_file);
    else if ((rc = dirs_make(cfg->data_dir, err, errcap)) == 0)
        snprintf(path, sizeof path, "%s/%s", cfg->data_dir, APP_STATE_KEY_FILE);
    sealed_key_t key;
    if (rc == 0)
        rc = sealed_key_load(path, &key, err, errcap);
    if (rc != 0 && !named) {
        log_warn(APP_TAG,
                 "requestState key: %s; this daemon seals with a key of its own (a round trip "
                 "must come back to it: set state_key_file to share one)",
                 err);
        err[0] = '\0';
        return 0;
    }
    if (rc != 0)
        return rc;
    mcp_server_set_state_key(&a->mcp, &key);
    sealed_key_wipe(&key);
    return 0;
}

/* The MCP server over the selected toolsets. */
static int start_mcp(app_t *a, char *err, size_t errcap)
{
    const config_t *cfg = a->cfg;
    /* The engine knows no toolset: it gets the table. */
    const mcp_toolset_t *available[MCP_REGISTRY_MAX_TOOLSETS + 1];
    toolsets_mcp_list(available, MCP_REGISTRY_MAX_TOOLSETS + 1);
    mcp_registry_t reg;
    int rc = mcp_registry_build(&reg, available, cfg->toolsets, cfg->read_only, err, errcap);
    if (rc != 0)
        return rc;
    if ((rc = mcp_registry_set_default(&reg, surface_default, surface_default_count, err,
                                       errcap)) != 0) {
        mcp_registry_free(&reg);
        return rc;
    }
    mcp_limits_t lim;
    mcp_limits_default(&lim);
    lim.max_message_bytes = (size_t)cfg->max_message_bytes;
    lim.session_max_inflight = cfg->session_max_inflight;
    lim.output_high_water = (size_t)cfg->output_high_water;
    lim.output_low_water = (size_t)cfg->output_low_water;
    lim.output_hard_limit = (size_t)cfg->output_hard_limit;
    lim.max_active_calls = cfg->max_active_calls;
    lim.max_sessions = cfg->max_sessions;
    /* Without bearer tokens every client is one user: its endpoint's
     * share is every slot unless the setting says otherwise. */
    lim.principal_share =
        cfg->token_file[0] == '\0' &&
                config_source_of(cfg, "principal_session_share") <= CONFIG_SRC_DEFAULT
            ? 100
            : cfg->principal_session_share;
    lim.request_timeout_ms = cfg->request_timeout_ms;
    lim.init_timeout_ms = cfg->init_timeout_ms;
    lim.tools_page_size = cfg->list_page_size;
    if (lim.output_low_water > lim.output_high_water)
        lim.output_low_water = lim.output_high_water;
    mcp_server_init(&a->mcp, &a->loop, &reg, &lim);
    a->mcp.default_brief = app_auto_selected(cfg);
    a->mcp.instructions =
        "parley is a conversation archive: Telegram-style chats, Bluesky posts, AI-assistant "
        "chats and agents' past sessions, kept in PostgreSQL. Use the tools to list, search "
        "and read conversations; list tools to see what this server offers.";
    a->mcp_started = true;
    if ((rc = app_push(a, &mcp_part, &a->mcp)) != 0)
        return rc;
    return load_state_key(a, err, errcap);
}

/* The store as the toolsets see it, the client for URLs tools give (under
 * the address policy) with the uploads it feeds, and the memory source:
 * the agents' sessions in the store, or a memory-lane database (its own
 * small read-only pool; unreachable is logged and reported per call). */
static int start_stores(app_t *a, char *err, size_t errcap)
{
    const config_t *cfg = a->cfg;
    archive_t *ar = NULL;
    int rc = archive_new(a->rw, a->ro, a->cfg->db_ro_url[0] != '\0', &ar);
    if (rc == 0)
        archive_set_regex_timeout(ar, (uint32_t)a->cfg->search_regex_timeout_ms);
    if (rc != 0 || (rc = app_push(a, &archive_part, ar)) != 0)
        return rc;
    a->env.archive = ar;
    addr_policy_t policy = {.allow_http = cfg->url_allow_http};
    char list[CONFIG_LIST_MAX];
    snprintf(list, sizeof list, "%s", cfg->url_allow_addresses);
    for (char *save = NULL, *tok = strtok_r(list, ", ", &save); tok;
         tok = strtok_r(NULL, ", ", &save)) {
        if (policy.nallow == ADDR_POLICY_ALLOW_MAX || strlen(tok) >= sizeof policy.allow[0]) {
            snprintf(err, errcap, "url_allow_addresses: at most %d addresses",
                     ADDR_POLICY_ALLOW_MAX);
            return UV_EINVAL;
        }
        snprintf(policy.allow[policy.nallow++], sizeof policy.allow[0], "%s", tok);
    }
    net_config_t nc = {.timeout_ms = (uint32_t)cfg->url_timeout_s * 1000};
    net_client_t *fetch = NULL;
    if ((rc = net_client_new(&a->loop, &nc, &policy, &fetch, err, errcap)) != 0 ||
        (rc = app_push(a, &net_part, fetch)) != 0)
        return rc;
    a->fetch = fetch;
    char media_root[CONFIG_PATH_MAX + 16];
    snprintf(media_root, sizeof media_root, "%s/media", cfg->data_dir);
    uploads_config_t uc = {.media_root = media_root,
                           .max_bytes = (uint64_t)cfg->inline_upload_max_mb << 20};
    if ((rc = uploads_new(&a->loop, ar, fetch, &uc, &a->env.uploads)) != 0 ||
        (rc = app_push(a, &uploads_part, a->env.uploads)) != 0)
        return rc;
    if (cfg->memory_db[0] == '\0') {
        memory_store_t *ms = NULL;
        if ((rc = memory_store_new(ar, &ms)) != 0 || (rc = app_push(a, &memory_store_part, ms)))
            return rc;
        a->env.memory = memory_store_source(ms);
        return 0;
    }
    pg_conninfo_t ci;
    if ((rc = pg_conninfo_parse(&ci, cfg->memory_db, err, errcap)) != 0)
        return rc;
    memory_django_t *m = NULL;
    rc = memory_django_new(&a->loop, &ci, (uint32_t)cfg->db_query_timeout_ms,
                           (uint32_t)cfg->db_connect_timeout_ms, &m, err, errcap);
    char desc[256];
    pg_conninfo_describe(&ci, desc, sizeof desc);
    pg_conninfo_free(&ci);
    if (rc != 0 || (rc = app_push(a, &memory_part, m)) != 0)
        return rc;
    log_info(APP_TAG, "memory database: %s (read-only)", desc);
    memory_django_check(m);
    a->env.memory = memory_django_source(m);
    return 0;
}

/* The transcript folders serve follows (claude_code_dir, codex_dir): each by its
 * source's importer (import/follow_dir.h). */
static int follow_folders(app_t *a, char *err, size_t errcap)
{
    const config_t *cfg = a->cfg;
    const struct {
        const char *setting, *path, *source;
    } folders[] = {
        {"claude_code_dir", cfg->claude_code_dir, "claude-code"},
        {"codex_dir", cfg->codex_dir, "codex"},
    };
    for (size_t i = 0; i < sizeof folders / sizeof folders[0]; i++) {
        if (folders[i].path[0] == '\0')
            continue;
        importer_env_t ie = {.loop = &a->loop,
                             .pool = a->rw,
                             .conninfo = &a->conninfo,
                             .path = folders[i].path,
                             .data_dir = cfg->data_dir,
                             .tz = cfg->tz,
                             .eras = cfg->eras};
        const importer_def_t *def = importers_find(folders[i].source);
        import_follow_dir_t *f = NULL;
        char why[CONFIG_ERR_MAX] = "not compiled in";
        int rc = def ? import_follow_dir_start(
                           def, &ie, &a->conninfo, (uint32_t)cfg->db_connect_timeout_ms,
                           (uint64_t)cfg->transcripts_rescan_s * 1000, &f, why, sizeof why)
                     : UV_ENOTSUP;
        if (rc != 0) {
            snprintf(err, errcap, "%s: %s", folders[i].setting, why);
            return rc;
        }
        if ((rc = app_push(a, &follow_dir_part, f)) != 0)
            return rc;
    }
    return 0;
}

/* The sources serve follows (claude_code_dir, codex_dir, chatwise_db):
 * started once the word forms are in use, so that no row they write can
 * land while the forms' trigger is being replaced (a row written by a
 * transaction older than the replacement, committed after the backfill
 * passed its key, would keep no forms and never be found). */
static int start_followers(app_t *a, char *err, size_t errcap)
{
    const config_t *cfg = a->cfg;
    int rc;
    if ((rc = follow_folders(a, err, errcap)) != 0)
        return rc;
    if (cfg->chatwise_db[0] == '\0')
        return 0;
    /* The setting names its source: chatwise_db is ChatWise's app.db. */
    importer_env_t ie = {.loop = &a->loop,
                         .pool = a->rw,
                         .conninfo = &a->conninfo,
                         .path = cfg->chatwise_db,
                         .data_dir = cfg->data_dir,
                         .tz = cfg->tz,
                         .eras = cfg->eras};
    import_follow_t *f = NULL;
    const importer_def_t *def = importers_find("chatwise");
    rc = def ? import_follow_start(def, &ie, cfg->chatwise_interval_s, &f) : UV_ENOTSUP;
    if (rc != 0) {
        snprintf(err, errcap, "chatwise_db: %s", uv_strerror(rc));
        return rc;
    }
    return app_push(a, &follow_part, f);
}

/* The word forms are in use: the followers start; or search_languages
 * names an unknown configuration: serve stops with the reason. */
static void search_forms_done(search_forms_t *sf, int status)
{
    app_t *a = search_forms_data(sf);
    char err[CONFIG_ERR_MAX] = "";
    if (status != 0)
        app_fatal(a, "search", search_forms_error(sf));
    else if (start_followers(a, err, sizeof err) != 0)
        app_fatal(a, "follow", err);
}

/* Every index the migrations asked for is built (the builder logged it;
 * a failure is tried again, never fatal). */
static void indexes_built(index_build_t *b, int status)
{
    (void)b;
    (void)status;
}

/* The word forms' filler, the builder of the indexes the migrations asked
 * for; the followers start once the forms are in use
 * (search_forms_done). */
static int start_background(app_t *a, char *err, size_t errcap)
{
    const config_t *cfg = a->cfg;
    search_forms_t *sf = NULL;
    char why[CONFIG_ERR_MAX] = "";
    int rc = search_forms_start(&a->loop, &a->conninfo, a->rw, cfg->search_languages,
                                cfg->search_fill_batch, (uint32_t)cfg->db_connect_timeout_ms,
                                search_forms_done, a, &sf, why, sizeof why);
    if (rc != 0)
        snprintf(err, errcap, "search_languages: %s", why);
    if (rc != 0 || (rc = app_push(a, &app_forms_part, sf)) != 0)
        return rc;
    return app_start_index_builds(a, false, indexes_built, err, errcap);
}

/* serve's steps, in order; one may return APP_STEP_PENDING and go on with
 * app_resume. A step without a name names the part in err. */
static const struct {
    const char *what;
    int (*start)(app_t *a, char *err, size_t errcap);
} serve_steps[] = {
    {"read-only database", start_reads}, {"toolsets", start_mcp},    {"stores", start_stores},
    {NULL, app_start_connectors},        {NULL, app_start_toolsets}, {"toolsets", app_auto_first},
    {NULL, app_start_endpoints},         {NULL, start_background},
};

static void serve_continue(app_t *a)
{
    while (a->serve_step < sizeof serve_steps / sizeof serve_steps[0]) {
        char err[CONFIG_ERR_MAX] = "";
        size_t i = a->serve_step++;
        int rc = serve_steps[i].start(a, err, sizeof err);
        if (rc == APP_STEP_PENDING) {
            a->resume = serve_continue; /* app_resume, once that stage is done */
            return;
        }
        if (rc != 0) {
            if (serve_steps[i].what)
                app_fatal(a, serve_steps[i].what, err[0] ? err : uv_strerror(rc));
            else
                app_fatal(a, err[0] ? err : uv_strerror(rc), NULL);
            return;
        }
    }
    a->state = APP_RUNNING;
    log_info(APP_TAG, "parleyd %s ready (schema version %d)", PARLEY_VERSION,
             a->mig.schema_version);
    /* systemd (Type=notify): every endpoint listens now. */
    char status[64];
    snprintf(status, sizeof status, "ready (schema version %d)", a->mig.schema_version);
    int rc = sdnotify_ready(status);
    if (rc != 0)
        log_warn(APP_TAG, "systemd notification: %s", uv_strerror(rc));
}

static void serve_start(app_t *a)
{
    a->env.loop = &a->loop;
    a->env.data_dir = a->cfg->data_dir;
    a->env.export_root = a->cfg->export_root;
    a->env.upload_root = a->cfg->upload_root;
    a->env.timezone = a->cfg->timezone;
    a->env.status_json = app_status_json;
    a->env.status_data = a;
    a->serve_step = 0;
    serve_continue(a);
}

const app_step_t app_step_serve = {
    .cmd = CLI_CMD_SERVE, .name = "serve", .after = APP_AFTER_MIGRATIONS, .start = serve_start};

_Static_assert(CONFIG_DEFAULT_SEARCH_REGEX_TIMEOUT_MS == ARCHIVE_REGEX_TIMEOUT_MS,
               "search_regex_timeout_ms's default is the archive's");
