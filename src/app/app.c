/* app: the entry's sequencer (app.h): signals, then the database (the
 * embedded cluster started, or the configured URL), the read-write pool
 * and the migrations, as far as the command's step needs (app_step_t,
 * steps.h), then the step itself, found in the table of steps and never
 * named here. What every step shares (the stop and its drain, the parts
 * several start) is core.c's and parts.c's.
 *
 * Start: signals -> database -> read-write pool -> migrations -> the
 * step's parts. Stop (first SIGINT/SIGTERM, the end of migrate or import,
 * stdin's end, or a fatal start error): app_shutdown (core.c). A second
 * signal exits at once. */
#include "app/steps.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/heap.h"
#include "util/log.h"

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

/* ---- the database parts ---------------------------------------------------- */

static app_t *emb_app(pg_embedded_t *e)
{
    return pg_embedded_get_data(e);
}

static void emb_closed(pg_embedded_t *e)
{
    app_t *a = emb_app(e);
    a->emb = NULL;
    app_stack_next(&a->stack);
}

static void emb_stopped(pg_embedded_t *e, int status)
{
    app_t *a = emb_app(e);
    if (status != 0) {
        log_error(APP_TAG, "stopping the embedded PostgreSQL: %s", pg_embedded_error(e));
        if (a->exit_code == APP_EXIT_OK)
            a->exit_code = APP_EXIT_FAILURE;
    }
    pg_embedded_close(e, emb_closed);
}

/* The cluster stops (when no other parleyd uses it), then its handles
 * close. */
static void emb_close(void *obj, app_stack_t *s)
{
    (void)s;
    pg_embedded_t *e = obj;
    if (emb_app(e)->emb_running)
        pg_embedded_stop(e, emb_stopped);
    else
        pg_embedded_close(e, emb_closed);
}

static const app_part_ops_t emb_part = {.name = "embedded PostgreSQL", .close = emb_close};

static void migrate_done(migrate_t *m, int status)
{
    app_t *a = m->data;
    if (status != 0) {
        app_fatal(a, "database schema", m->error);
        return;
    }
    if (a->state == APP_STARTING)
        app_step_find(a->cmd)->start(a);
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
    if (app_push(a, &app_pool_part, a->rw) != 0)
        return;
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
    app_t *a = emb_app(e);
    if (status != 0) {
        log_error(APP_TAG, "embedded PostgreSQL: %s", pg_embedded_error(e));
        if (a->exit_code == APP_EXIT_OK)
            a->exit_code = APP_EXIT_FAILURE;
        app__close(a);
        return;
    }
    a->emb_running = true;
    if (pg_conninfo_copy(&a->conninfo, pg_embedded_conninfo(e)) != 0) {
        log_error(APP_TAG, "out of memory");
        a->exit_code = APP_EXIT_FAILURE;
        a->state = APP_DRAINING;
    }
    if (a->state != APP_STARTING) {
        /* A signal arrived while the cluster started: leave it again. */
        app__close(a);
        return;
    }
    const app_step_t *step = app_step_find(a->cmd);
    if (step->after == APP_AFTER_CLUSTER) {
        step->start(a); /* e.g. a copy of the cluster as it is: no migration */
        return;
    }
    app_open_database(a);
}

/* The embedded cluster (started, then the database opened) or the
 * configured server (opened at once). */
static void app_start_database(app_t *a)
{
    const config_t *cfg = a->cfg;
    char err[CONFIG_ERR_MAX];
    const app_step_t *step = app_step_find(a->cmd);
    if (step->check != NULL && step->check(cfg, err, sizeof err) != 0) {
        log_error(APP_TAG, "%s: %s", step->name, err);
        a->exit_code = APP_EXIT_FAILURE;
        app__close(a);
        return;
    }
    if (step->after == APP_AFTER_NOTHING) {
        step->start(a); /* e.g. a restore: no cluster runs */
        return;
    }
    if (cfg->db_external) {
        int rc = pg_conninfo_parse(&a->conninfo, cfg->db_url, err, sizeof err);
        if (rc != 0) {
            log_error(APP_TAG, "%s", err);
            a->exit_code = APP_EXIT_FAILURE;
            app__close(a);
            return;
        }
        app_open_database(a);
        return;
    }
    pg_embedded_config_t ec = {
        .data_dir = cfg->data_dir,
        .bindir = cfg->pg_bindir,
        .run_as = cfg->pg_user,
        .start_timeout_s = cfg->pg_start_timeout_s,
    };
    int rc = pg_embedded_new(&a->loop, &ec, &a->emb, err, sizeof err);
    if (rc != 0) {
        log_error(APP_TAG, "embedded PostgreSQL: %s", err);
        a->exit_code = APP_EXIT_FAILURE;
        app__close(a);
        return;
    }
    pg_embedded_set_data(a->emb, a);
    if (app_push(a, &emb_part, a->emb) != 0) {
        pg_embedded_close(a->emb, NULL);
        return;
    }
    log_info(APP_TAG, "data directory %s (embedded PostgreSQL)", cfg->data_dir);
    pg_embedded_start(a->emb, emb_started);
}

int app_run(const config_t *cfg, cli_command_t cmd)
{
    if (app_step_find(cmd) == NULL)
        return APP_EXIT_FAILURE; /* not a command that runs the daemon (main.c's) */
    app_t *a = calloc(1, sizeof *a);
    if (a == NULL)
        return APP_EXIT_FAILURE;
    a->cfg = cfg;
    a->cmd = cmd;
    a->stack.data = a;
    if (!heap_tune())
        log_debug(APP_TAG, "heap: the C library's own trim and mmap thresholds");
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
    /* Pings while the loop turns, from the start: systemd counts the
     * watchdog from READY=1 on (src/util/sdnotify.h). */
    rc = sdnotify_watchdog_start(&a->watchdog, &a->loop);
    if (rc != 0)
        log_warn(APP_TAG, "systemd watchdog: %s", uv_strerror(rc));
    app_start_database(a);

    uv_run(&a->loop, UV_RUN_DEFAULT);
    /* h2o's contexts (HTTP endpoints, password pages) are disposed outside
     * uv_run; then the loop runs once more for the closes left (a no-op
     * when there are none). */
    (void)app_stack_dispose(&a->stack);
    uv_run(&a->loop, UV_RUN_DEFAULT);
    app_stack_free(&a->stack);
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
