/* app_connect: what serve connects, walking the tables: every wanted
 * connector (upstream/connectors.c) and the job runner for their job
 * classes, the password pages when a toolset logs accounts in, each
 * selected toolset's context (toolsets/toolsets.c), and the MCP
 * endpoints. Each is pushed on the entry's stack as it starts. */
#include "app/serve_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "endpoints.h"
#include "metrics.h"
#include "sync/jobs.h"
#include "transport/secret_page.h"
#include "upstream/connectors.h"
#include "util/buf.h"
#include "util/log.h"

static void jobs_close(void *obj, app_stack_t *s)
{
    ((app_t *)s->data)->jobs = NULL;
    sync_runner_close(obj, app_stack_next_cb, s);
}

static void pages_close(void *obj, app_stack_t *s)
{
    secret_page_server_close(obj, app_stack_next_cb, s);
}

static bool pages_dispose(void *obj)
{
    return secret_page_server_dispose(obj);
}

static void pages_free(void *obj)
{
    secret_page_server_free(obj);
}

static void endpoints_part_close(void *obj, app_stack_t *s)
{
    endpoints_close(obj, app_stack_next_cb, s);
}

static bool endpoints_part_dispose(void *obj)
{
    return endpoints_dispose(obj);
}

static void endpoints_part_free(void *obj)
{
    endpoints_free(obj);
}

static const app_part_ops_t jobs_part = {.name = "sync jobs", .close = jobs_close};
static const app_part_ops_t pages_part = {
    .name = "password pages", .close = pages_close, .dispose = pages_dispose, .free = pages_free};
static const app_part_ops_t endpoints_part = {.name = "MCP endpoints",
                                              .close = endpoints_part_close,
                                              .dispose = endpoints_part_dispose,
                                              .free = endpoints_part_free};

/* A connector: its definition's close and free (the part's object). */
typedef struct {
    const connector_def_t *def;
    void *obj;
} conn_part_t;

static void conn_close(void *obj, app_stack_t *s)
{
    conn_part_t *cp = obj;
    cp->def->close(cp->obj, app_stack_next_cb, s);
}

static void conn_free(void *obj)
{
    conn_part_t *cp = obj;
    cp->def->free(cp->obj);
    free(cp);
}

static const app_part_ops_t conn_part = {
    .name = "connector", .close = conn_close, .free = conn_free};

/* A toolset's context: its close after the sessions are gone. */
typedef struct {
    const toolset_t *ts;
    void *ctx;
} ts_part_t;

static void ts_free(void *obj)
{
    ts_part_t *tp = obj;
    if (tp->ts->close)
        tp->ts->close(tp->ctx);
    free(tp);
}

static const app_part_ops_t ts_part = {.name = "toolset", .free = ts_free};

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

/* The capabilities the selected toolsets use. */
static unsigned caps_wanted(const app_t *a)
{
    unsigned caps = 0;
    for (int i = 0; toolsets_table[i]; i++)
        if (mcp_registry_has_toolset(&a->mcp.registry, toolsets_table[i]->mcp))
            caps |= toolsets_table[i]->caps;
    return caps;
}

/* Every wanted connector (the table's order), the job runner with their
 * job classes, and the password pages when a toolset logs accounts in. */
/* Serve's parts: 14 of its own, a toolset context each, a connector each. */
_Static_assert(16 + MCP_REGISTRY_MAX_TOOLSETS + TOOLSET_MAX_CONNECTORS <= APP_STACK_MAX,
               "APP_STACK_MAX too small for serve's parts");

int app_start_connectors(app_t *a, char *err, size_t errcap)
{
    /* This daemon's name for its claims: unique on the database. */
    uint8_t rnd[4] = {0};
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    (void)uv_random(NULL, NULL, rnd, sizeof rnd, 0, NULL);
    snprintf(a->owner, sizeof a->owner, "%.64s:%d:%02x%02x%02x%02x", host, (int)getpid(), rnd[0],
             rnd[1], rnd[2], rnd[3]);
    connector_env_t ce = {.loop = &a->loop,
                          .rw = a->rw,
                          .conninfo = &a->conninfo,
                          .fetch = a->fetch,
                          .data_dir = a->cfg->data_dir,
                          .setting = app_connector_setting,
                          .setting_data = a->cfg,
                          .caps_wanted = caps_wanted(a),
                          .owner = a->owner};
    sync_class_t classes[SYNC_MAX_CLASSES];
    int nclasses = 0, rc;
    int first = a->stack.n; /* the connectors' parts start here */
    for (int i = 0; connectors_table[i]; i++) {
        const connector_def_t *def = connectors_table[i];
        if (!def->wanted(&ce))
            continue;
        conn_part_t *cp = calloc(1, sizeof *cp);
        connector_t *conn = NULL;
        if (cp == NULL || a->env.nconnectors == TOOLSET_MAX_CONNECTORS) {
            free(cp);
            snprintf(err, errcap, "%s: too many connectors", def->name);
            return UV_ENOMEM;
        }
        cp->def = def;
        char why[CONFIG_ERR_MAX] = "";
        if ((rc = def->open(&ce, &cp->obj, &conn, why, sizeof why)) != 0) {
            def->free(cp->obj);
            free(cp);
            snprintf(err, errcap, "%s: %s", def->name, why[0] ? why : uv_strerror(rc));
            return rc;
        }
        if ((rc = app_push(a, &conn_part, cp)) != 0)
            return rc;
        a->env.connectors[a->env.nconnectors++] = conn;
        const sync_class_t *cls;
        int k = connector_job_classes(conn, &cls);
        for (int j = 0; j < k && nclasses < SYNC_MAX_CLASSES; j++)
            classes[nclasses++] = cls[j];
    }
    if (nclasses > 0) {
        sync_runner_t *jobs = NULL;
        sync_presence_t presence = {.owner = a->owner,
                                    .conninfo = &a->conninfo,
                                    .connect_timeout_ms = (uint32_t)a->cfg->db_connect_timeout_ms};
        if ((rc = sync_runner_start(&a->loop, a->rw, classes, nclasses, &presence, &jobs)) != 0) {
            snprintf(err, errcap, "sync jobs: %s", uv_strerror(rc));
            return rc;
        }
        /* The runner closes after the connectors whose close ends their
         * jobs and before those whose jobs use what their close frees:
         * those first (stable), then the runner above them. */
        int at = first;
        for (int i = first; i < a->stack.n; i++) {
            const conn_part_t *cp = a->stack.parts[i].obj;
            if (cp->def->closes_after_jobs) {
                app_part_t p = a->stack.parts[i];
                memmove(&a->stack.parts[at + 1], &a->stack.parts[at], (size_t)(i - at) * sizeof p);
                a->stack.parts[at++] = p;
            }
        }
        if ((rc = app_stack_insert(&a->stack, at, &jobs_part, jobs)) != 0) {
            app_fatal(a, "sync jobs", "too many parts (APP_STACK_MAX)");
            return rc;
        }
        a->jobs = jobs;
    }
    if (ce.caps_wanted & CONNECTOR_CAN_LOGIN) {
        secret_page_server_t *pages = NULL;
        if ((rc = secret_page_server_new(&a->loop, &pages)) != 0) {
            snprintf(err, errcap, "password pages: %s", uv_strerror(rc));
            return rc;
        }
        if ((rc = app_push(a, &pages_part, pages)) != 0)
            return rc;
        a->env.pages = pages;
    }
    return 0;
}

/* Each selected toolset builds its context from the environment. */
int app_start_toolsets(app_t *a, char *err, size_t errcap)
{
    for (int i = 0; toolsets_table[i] && i < MCP_REGISTRY_MAX_TOOLSETS; i++) {
        const toolset_t *ts = toolsets_table[i];
        if (ts->open == NULL || !mcp_registry_has_toolset(&a->mcp.registry, ts->mcp))
            continue;
        ts_part_t *tp = calloc(1, sizeof *tp);
        if (tp == NULL)
            return UV_ENOMEM;
        tp->ts = ts;
        int rc = ts->open(&a->env, &tp->ctx, err, errcap);
        if (rc != 0) {
            free(tp);
            char what[CONFIG_ERR_MAX];
            snprintf(what, sizeof what, "%s", err);
            snprintf(err, errcap, "%s: %s", ts->mcp->name, what);
            return rc;
        }
        if ((rc = app_push(a, &ts_part, tp)) != 0)
            return rc;
        mcp_registry_set_context(&a->mcp.registry, ts->mcp, tp->ctx);
    }
    return 0;
}

/* The MCP endpoints, once the toolsets serve. */
int app_start_endpoints(app_t *a, char *err, size_t errcap)
{
    int ntools, nresources, nprompts;
    mcp_registry_count_served(&a->mcp.registry, a->mcp.default_brief, &ntools, &nresources,
                              &nprompts);
    log_info(APP_TAG, "MCP: %d tool(s), %d resource(s), %d prompt(s) served %s (toolsets '%s')%s",
             ntools, nresources, nprompts,
             a->mcp.default_brief ? "by the default selection" : "whole", a->cfg->toolsets,
             a->cfg->read_only ? " (read-only)" : "");
    endpoints_config_t ec = {.cfg = a->cfg,
                             .mcp = &a->mcp,
                             .metrics = app_metrics,
                             .metrics_data = a,
                             .stdio_ended = stdio_ended,
                             .data = a};
    endpoints_t *eps = NULL;
    char why[CONFIG_ERR_MAX] = "";
    int rc = endpoints_start(&a->loop, &ec, &eps, why, sizeof why);
    if (rc != 0)
        snprintf(err, errcap, "MCP endpoints: %s", why);
    /* *eps is set either way: pushed so that it is closed. */
    int prc = eps ? app_push(a, &endpoints_part, eps) : 0;
    return rc != 0 ? rc : prc;
}
