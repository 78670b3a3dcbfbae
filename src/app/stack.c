/* app_stack: parts stopped, closed and freed in reverse start order (see
 * app_stack.h). */
#include "app/stack.h"

#include <string.h>
#include <uv.h>

int app_stack_push(app_stack_t *s, const app_part_ops_t *ops, void *obj)
{
    if (s->n == APP_STACK_MAX)
        return UV_ENOSPC;
    s->parts[s->n++] = (app_part_t){.ops = ops, .obj = obj};
    return 0;
}

int app_stack_insert(app_stack_t *s, int at, const app_part_ops_t *ops, void *obj)
{
    if (s->n == APP_STACK_MAX || at < 0 || at > s->n || s->started_closing)
        return UV_ENOSPC;
    memmove(&s->parts[at + 1], &s->parts[at], (size_t)(s->n - at) * sizeof s->parts[0]);
    s->parts[at] = (app_part_t){.ops = ops, .obj = obj};
    s->n++;
    return 0;
}

void app_stack_stop(app_stack_t *s)
{
    for (int i = s->n - 1; i >= 0; i--)
        if (s->parts[i].ops->stop)
            s->parts[i].ops->stop(s->parts[i].obj);
}

bool app_stack_idle(const app_stack_t *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->parts[i].ops->idle && !s->parts[i].ops->idle(s->parts[i].obj))
            return false;
    return true;
}

void app_stack_close(app_stack_t *s, void (*done)(app_stack_t *s))
{
    if (s->started_closing)
        return;
    s->started_closing = true;
    s->done = done;
    s->closing = s->n;
    app_stack_next(s);
}

void app_stack_next(app_stack_t *s)
{
    while (--s->closing >= 0) {
        app_part_t *p = &s->parts[s->closing];
        if (p->ops->close) {
            p->ops->close(p->obj, s);
            return;
        }
    }
    s->closing = 0;
    s->done(s);
}

void app_stack_next_cb(void *stack)
{
    app_stack_next(stack);
}

bool app_stack_dispose(app_stack_t *s)
{
    bool again = false;
    for (int i = s->n - 1; i >= 0; i--)
        if (s->parts[i].ops->dispose && s->parts[i].ops->dispose(s->parts[i].obj))
            again = true;
    return again;
}

void app_stack_free(app_stack_t *s)
{
    for (int i = s->n - 1; i >= 0; i--)
        if (s->parts[i].ops->free)
            s->parts[i].ops->free(s->parts[i].obj);
    s->n = 0;
}
