/* app: the lifecycle of serve, migrate, import, login, bootstrap, backup
 * and restore (see app.h): signals, the state machine, the database and
 * the migrations, the drain and the stop. What serve starts is
 * app_serve.c's, one import is app_import.c's, a login app_login.c's, a
 * bootstrap app_bootstrap.c's, a backup app_backup.c's (once the embedded
 * cluster runs, without migrations) and a restore app_restore.c's (with
 * no database at all);
 * each pushes what it starts on the stack (app_stack.h), which this file
 * stops, drains and closes.
 *
 * Start: signals -> database (embedded start, or the configured URL) ->
 * read-write pool -> migrations -> the command's parts. Stop (first
 * SIGINT/SIGTERM, the end of migrate or import, stdin's end, or a fatal
 * start error): every part stops taking work; the drain waits until every
 * part is idle (at most shutdown_timeout_ms); then the parts close one by
 * one in reverse start order (the embedded cluster last, stopped unless
 * another parleyd uses it), the signal handles close, and the loop ends.
 * A second signal exits at once. */
#include "app/app_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/heap.h"
#include "util/log.h"

#define APP_DRAIN_POLL_MS 50

void app_fatal(app_t *a, const char *what, const char *detail)
{
    if (detail)
        log_error(APP_TAG, "%s: %s", what, detail);
    else
        log_error(APP_TAG, "%s", what);
    app_shutdown(a, APP_EXIT_FAILURE);
}

int app_push(app_t *a, const app_part_ops_t *ops, void *obj)
{
    int rc = app_stack_push(&a->stack, ops, obj);
    if (rc != 0)
        app_fatal(a, ops->name, "too many parts (APP_STACK_MAX)");
    return rc;
}

/* ---- stop ---------------------------------------------------------------- */

static void handle_closed(uv_handle_t *h)
{
    (void)h;
}

/* Every part is closed: the entry's own handles, then the loop ends
 * (stopped, since h2o's handles keep it alive until they are disposed,
 * which app_run does outside uv_run). */
static void stack_closed(app_stack_t *s)
{
    app_t *a = s->data;
    uv_close((uv_handle_t *)&a->sigint, handle_closed);
    uv_close((uv_handle_t *)&a->sigterm, handle_closed);
    uv_close((uv_handle_t *)&a->drain_timer, handle_closed);
    sdnotify_watchdog_close(&a->watchdog, handle_closed);
    uv_stop(&a->loop);
}

static void app_close(app_t *a)
{
    a->state = APP_CLOSING;
    uv_timer_stop(&a->drain_timer);
    app_stack_close(&a->stack, stack_closed);
}

static void drain_cb(uv_timer_t *t)
{
    app_t *a = t->data;
    if (app_stack_idle(&a->stack)) {
        app_close(a);
        return;
    }
    if (uv_now(&a->loop) >= a->drain_deadline) {
        log_warn(APP_TAG, "in-flight work did not finish within %d ms; cancelling it",
                 a->cfg->shutdown_timeout_ms);
        app_close(a);
    }
}

void app_shutdown(app_t *a, int exit_code)
{
    if (exit_code != APP_EXIT_OK && a->exit_code == APP_EXIT_OK)
        a->exit_code = exit_code;
    if (a->state == APP_DRAINING || a->state == APP_CLOSING)
        return;
    (void)sdnotify_stopping(); /* systemd: the stop has begun */
    if (a->state == APP_STARTING && a->emb != NULL && !a->emb_running) {
        /* The embedded cluster is still starting: its callback sees the
         * state and closes. */
        a->state = APP_DRAINING;
        return;
    }
    a->state = APP_DRAINING;
    app_stack_stop(&a->stack);
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

static void pool_closed(pg_pool_t *p)
{
    app_t *a = pg_pool_get_data(p);
    app_stack_next(&a->stack);
}

static void pool_close(void *obj, app_stack_t *s)
{
    (void)s;
    pg_pool_close(obj, pool_closed);
}

static bool pool_idle(const void *obj)
{
    return pg_pool_is_idle((pg_pool_t *)obj);
}

const app_part_ops_t app_pool_part = {.name = "pool", .idle = pool_idle, .close = pool_close};

static void index_stop(void *obj)
{
    index_build_stop(obj);
}

static bool index_idle(const void *obj)
{
    return index_build_idle(obj);
}

static void index_free(void *obj)
{
    index_build_free(obj);
}

static const app_part_ops_t index_part = {
    .name = "index builds", .stop = index_stop, .idle = index_idle, .free = index_free};

int app_start_index_builds(app_t *a, bool fail_fast, index_build_cb cb, char *err, size_t errcap)
{
    index_build_opts_t o = {.connect_timeout_ms = (uint32_t)a->cfg->db_connect_timeout_ms,
                            .fail_fast = fail_fast};
    index_build_t *b = NULL;
    int rc = index_build_start(&a->loop, &a->conninfo, a->rw, &o, cb, a, &b, err, errcap);
    if (rc != 0)
        return rc;
    rc = app_push(a, &index_part, b);
    if (rc != 0) {
        index_build_stop(b); /* not owned: left to the loop's end */
        snprintf(err, errcap, "too many parts");
    }
    return rc;
}

/* migrate: the indexes the migrations asked for are built (or none was
 * pending); a failed build ends it with the reason (serve tries again). */
static void migrate_indexes_done(index_build_t *b, int status)
{
    app_t *a = index_build_data(b);
    if (status != 0) {
        char why[INDEX_BUILD_ERR_MAX + 128];
        snprintf(why, sizeof why,
                 "%s (the schema is applied; serve builds the index at start and tries again "
                 "until it succeeds)",
                 index_build_error(b));
        app_fatal(a, "index build", why);
        return;
    }
    if (a->state == APP_STARTING)
        app_shutdown(a, APP_EXIT_OK);
}

static void migrate_done(migrate_t *m, int status)
{
    app_t *a = m->data;
    if (status != 0) {
        app_fatal(a, "database schema", m->error);
        return;
    }
    if (a->state != APP_STARTING)
        return;
    if (a->cmd == CLI_CMD_MIGRATE) {
        log_info(APP_TAG, "schema is at version %d (%d migration%s applied)", m->schema_version,
                 m->applied, m->applied == 1 ? "" : "s");
        /* Then the indexes they asked for, before it exits (serve would
         * build them too, while it serves). */
        char err[CONFIG_ERR_MAX] = "";
        if (app_start_index_builds(a, true, migrate_indexes_done, err, sizeof err) != 0)
            app_fatal(a, "index builds", err);
    } else if (a->cmd == CLI_CMD_IMPORT) {
        app_import_start(a);
    } else if (a->cmd == CLI_CMD_LOGIN) {
        app_login_start(a);
    } else if (a->cmd == CLI_CMD_BOOTSTRAP) {
        app_bootstrap_start(a);
    } else {
        app_serve_start(a);
    }
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
        app_close(a);
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
        app_close(a);
        return;
    }
    if (a->cmd == CLI_CMD_BACKUP) {
        app_backup_start(a); /* a copy of the cluster as it is: no migration */
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
    if (a->cmd == CLI_CMD_RESTORE) {
        app_restore_start(a); /* no cluster runs during a restore */
        return;
    }
    if (a->cmd == CLI_CMD_BACKUP && app_backup_check(cfg, err, sizeof err) != 0) {
        log_error(APP_TAG, "backup: %s", err);
        a->exit_code = APP_EXIT_FAILURE;
        app_close(a);
        return;
    }
    if (cfg->db_external) {
        int rc = pg_conninfo_parse(&a->conninfo, cfg->db_url, err, sizeof err);
        if (rc != 0) {
            log_error(APP_TAG, "%s", err);
            a->exit_code = APP_EXIT_FAILURE;
            app_close(a);
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
        app_close(a);
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
