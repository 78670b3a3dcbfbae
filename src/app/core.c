/* app core: the entry's lifecycle that every step shares (app_internal.h):
 * a failure's log line and the stop it starts, the push of a part on the
 * stack, the drain (every part stops taking work; the stop waits until
 * each is idle, at most shutdown_timeout_ms) and the close of the parts in
 * reverse start order, then of the entry's own handles. A step that went
 * on later (APP_STEP_PENDING) resumes through app_resume. */
#include "app/app_internal.h"

#include <uv.h>

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

void app__close(app_t *a)
{
    a->state = APP_CLOSING;
    uv_timer_stop(&a->drain_timer);
    app_stack_close(&a->stack, stack_closed);
}

static void drain_cb(uv_timer_t *t)
{
    app_t *a = t->data;
    if (app_stack_idle(&a->stack)) {
        app__close(a);
        return;
    }
    if (uv_now(&a->loop) >= a->drain_deadline) {
        log_warn(APP_TAG, "in-flight work did not finish within %d ms; cancelling it",
                 a->cfg->shutdown_timeout_ms);
        app__close(a);
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

void app_resume(app_t *a)
{
    void (*resume)(app_t *) = a->resume;
    a->resume = NULL;
    if (resume != NULL)
        resume(a);
}
