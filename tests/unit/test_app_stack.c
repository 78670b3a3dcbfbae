/* Tests for app_stack: parts stop newest first, the stack is idle only
 * when every part is, parts close one at a time newest first (the next
 * only once the previous called back, also from a timer later), then
 * dispose and free newest first; a part inserted below others closes
 * after them; a full stack refuses a part. */
#include <string.h>

#include "app/stack.h"
#include "testutil.h"

static char trace[256];

typedef struct {
    char name;
    bool busy;
    bool async; /* closes from a timer on the loop */
    uv_timer_t timer;
    app_stack_t *stack;
} part_t;

static void note(const char *what, char name)
{
    size_t n = strlen(trace);
    snprintf(trace + n, sizeof trace - n, "%s%c ", what, name);
}

static void p_stop(void *obj)
{
    note("s", ((part_t *)obj)->name);
}

static bool p_idle(const void *obj)
{
    return !((const part_t *)obj)->busy;
}

static void timer_closed(uv_handle_t *h)
{
    part_t *p = h->data;
    note("C", p->name);
    app_stack_next(p->stack);
}

static void timer_cb(uv_timer_t *t)
{
    uv_close((uv_handle_t *)t, timer_closed);
}

static void p_close(void *obj, app_stack_t *s)
{
    part_t *p = obj;
    note("c", p->name);
    if (p->async) {
        p->stack = s;
        uv_timer_start(&p->timer, timer_cb, 5, 0);
        return;
    }
    app_stack_next(s);
}

static bool p_dispose(void *obj)
{
    note("d", ((part_t *)obj)->name);
    return ((part_t *)obj)->name == 'b';
}

static void p_free(void *obj)
{
    note("f", ((part_t *)obj)->name);
}

static const app_part_ops_t ops = {.name = "part",
                                   .stop = p_stop,
                                   .idle = p_idle,
                                   .close = p_close,
                                   .dispose = p_dispose,
                                   .free = p_free};
static const app_part_ops_t bare = {.name = "bare"};

static bool done;
static void on_done(app_stack_t *s)
{
    (void)s;
    note("done", '!');
    done = true;
}

static void test_order(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    static app_stack_t s;
    memset(&s, 0, sizeof s);
    part_t a = {.name = 'a', .async = true}, b = {.name = 'b', .busy = true}, c = {.name = 'c'};
    uv_timer_init(&loop, &a.timer);
    a.timer.data = &a;
    assert_int_equal(app_stack_push(&s, &ops, &a), 0);
    assert_int_equal(app_stack_push(&s, &bare, NULL), 0);
    assert_int_equal(app_stack_push(&s, &ops, &b), 0);
    assert_int_equal(app_stack_push(&s, &ops, &c), 0);
    /* d goes in below b: closed after b and c, before a. */
    part_t d = {.name = 'd'};
    assert_int_equal(app_stack_insert(&s, 2, &ops, &d), 0);
    assert_int_equal(app_stack_insert(&s, 9, &ops, &d), UV_ENOSPC);
    app_stack_stop(&s);
    assert_string_equal(trace, "sc sb sd sa ");
    assert_false(app_stack_idle(&s));
    b.busy = false;
    assert_true(app_stack_idle(&s));
    trace[0] = '\0';
    app_stack_close(&s, on_done);
    /* c and b close at once; a from its timer, and done only then. */
    assert_string_equal(trace, "cc cb cd ca ");
    assert_false(done);
    app_stack_close(&s, on_done); /* once only */
    test_run_until(&loop, &done, 2000);
    assert_string_equal(trace, "cc cb cd ca Ca done! ");
    trace[0] = '\0';
    assert_true(app_stack_dispose(&s)); /* b asks for another run */
    app_stack_free(&s);
    assert_string_equal(trace, "dc db dd da fc fb fd fa ");
    assert_int_equal(s.n, 0);
    test_loop_close(&loop);
}

static void test_empty_and_full(void **state)
{
    (void)state;
    static app_stack_t s;
    memset(&s, 0, sizeof s);
    done = false;
    trace[0] = '\0';
    app_stack_close(&s, on_done); /* nothing to close: done at once */
    assert_true(done);
    memset(&s, 0, sizeof s);
    for (int i = 0; i < APP_STACK_MAX; i++)
        assert_int_equal(app_stack_push(&s, &bare, NULL), 0);
    assert_int_equal(app_stack_push(&s, &bare, NULL), UV_ENOSPC);
    app_stack_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_empty_and_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
