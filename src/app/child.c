/* app_child: a child process as a step of a command (see app_child.h). */
#include "app/child.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"

#define CHILD_TAG "main"

static void progress_cb(uv_timer_t *t)
{
    app_child_t *c = t->data;
    log_info(CHILD_TAG, "%s: still running (%llu s)", c->what,
             (unsigned long long)((uv_now(c->loop) - c->started) / 1000));
}

static void maybe_closed(app_child_t *c)
{
    if (c->closing && c->handles == 0 && c->close_cb)
        c->close_cb(c);
}

static void proc_closed(uv_handle_t *h)
{
    app_child_t *c = h->data;
    c->running = false;
    c->handles--;
    if (c->closing) {
        maybe_closed(c);
        return;
    }
    int status = 0;
    if (c->term_signal != 0) {
        snprintf(c->error, sizeof c->error, "%s: killed by signal %d", c->what, c->term_signal);
        status = UV_EIO;
    } else if (c->exit_status != 0) {
        snprintf(c->error, sizeof c->error, "%s: exit status %lld", c->what,
                 (long long)c->exit_status);
        status = UV_EIO;
    }
    app_child_cb cb = c->cb;
    c->cb = NULL;
    if (cb)
        cb(c, status);
}

static void proc_exit(uv_process_t *p, int64_t exit_status, int term_signal)
{
    app_child_t *c = p->data;
    c->exit_status = exit_status;
    c->term_signal = term_signal;
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)p, proc_closed);
}

static void timer_closed(uv_handle_t *h)
{
    app_child_t *c = h->data;
    c->handles--;
    maybe_closed(c);
}

void app_child_init(app_child_t *c, uv_loop_t *loop)
{
    memset(c, 0, sizeof *c);
    c->loop = loop;
    c->progress_ms = APP_CHILD_PROGRESS_MS;
    uv_timer_init(loop, &c->timer);
    c->timer.data = c;
    c->handles = 1;
}

int app_child_run(app_child_t *c, char **argv, const char *what, app_child_cb cb)
{
    return app_child_run_as(c, argv, what, -1, -1, cb);
}

int app_child_run_as(app_child_t *c, char **argv, const char *what, long uid, long gid,
                     app_child_cb cb)
{
    if (c->running)
        return UV_EBUSY;
    snprintf(c->what, sizeof c->what, "%s", what);
    c->error[0] = '\0';
    c->exit_status = 0;
    c->term_signal = 0;
    c->cb = cb;
    /* Nothing of parleyd's environment (a PG* variable, a PGPASSFILE)
     * reaches the child: it is told everything on its command line. */
    char *env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", NULL};
    /* stdout too goes to stderr: stdout is MCP's alone in parleyd. */
    uv_stdio_container_t stdio[3] = {
        {.flags = UV_IGNORE},
        {.flags = UV_INHERIT_FD, .data.fd = 2},
        {.flags = UV_INHERIT_FD, .data.fd = 2},
    };
    uv_process_options_t o = {
        .exit_cb = proc_exit,
        .file = argv[0],
        .args = argv,
        .env = env,
        .stdio_count = 3,
        .stdio = stdio,
    };
    if (uid >= 0) {
        o.flags |= UV_PROCESS_SETUID | UV_PROCESS_SETGID;
        o.uid = (uv_uid_t)uid;
        o.gid = (uv_gid_t)gid;
    }
    c->proc.data = c;
    int rc = uv_spawn(c->loop, &c->proc, &o);
    if (rc != 0) {
        snprintf(c->error, sizeof c->error, "%s: cannot run %s: %s", what, argv[0],
                 uv_strerror(rc));
        /* A failed uv_spawn still initialised the handle: close it. */
        c->cb = NULL;
        c->running = true;
        c->handles++;
        uv_close((uv_handle_t *)&c->proc, proc_closed);
        return rc;
    }
    c->running = true;
    c->handles++;
    c->started = uv_now(c->loop);
    uv_timer_start(&c->timer, progress_cb, (uint64_t)c->progress_ms, (uint64_t)c->progress_ms);
    log_debug(CHILD_TAG, "%s: running %s", what, argv[0]);
    return 0;
}

void app_child_kill(app_child_t *c)
{
    if (c->running && c->cb != NULL)
        uv_process_kill(&c->proc, SIGTERM);
}

bool app_child_running(const app_child_t *c)
{
    return c->running;
}

void app_child_close(app_child_t *c, void (*cb)(app_child_t *c))
{
    c->close_cb = cb;
    c->closing = true;
    uv_close((uv_handle_t *)&c->timer, timer_closed);
}
