/* login_rounds: the logins of several rounds a toolset holds, their
 * outcomes and the calls of round 3 that wait (see login_rounds.h). */
#include "toolsets/login_rounds.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "transport/secret_page.h"
#include "util/strutil.h"

/* A call of round 3 waiting: for a login of this daemon (l), or a poll
 * (tick) until its deadline. */
struct login_rounds_wait_s {
    uv_timer_t timer;
    mcp_call_t *c;
    const login_rounds_ops_t *ops;
    login_rounds_login_t *l;   /* the login waited for; NULL once ended, or a poll */
    login_rounds_tick_fn tick; /* a poll's */
    uint64_t every, deadline;  /* a poll's: its ticks, its end (loop time) */
    bool cancelled;            /* a poll's call was cancelled: its next step ends it */
};

/* ---- the table --------------------------------------------------------- */

void login_rounds_init(login_rounds_t *t, const login_rounds_ops_t *ops)
{
    memset(t, 0, sizeof *t);
    t->ops = ops;
}

static void login_free(login_rounds_login_t *l)
{
    free(l->account);
    free(l->error);
    l->ops->free(l);
}

void login_rounds_release(login_rounds_login_t *l)
{
    if (l->table != NULL || l->waiter != NULL || l->ops->held(l))
        return; /* their callbacks come back here */
    login_free(l);
}

void login_rounds_unlist(login_rounds_login_t *l)
{
    login_rounds_t *t = l->table;
    for (int i = 0; t != NULL && i < t->n; i++)
        if (t->logins[i] == l) {
            t->logins[i] = t->logins[--t->n];
            break;
        }
    l->table = NULL; /* a late callback finds no toolset */
    login_rounds_release(l);
}

login_rounds_login_t *login_rounds_find(const login_rounds_t *t, const char *id)
{
    for (int i = 0; id != NULL && i < t->n; i++)
        if (strcmp(t->logins[i]->id, id) == 0)
            return t->logins[i];
    return NULL;
}

int login_rounds_add(login_rounds_t *t, login_rounds_login_t *l, uint64_t now)
{
    int max = t->ops->max < LOGIN_ROUNDS_MAX ? t->ops->max : LOGIN_ROUNDS_MAX;
    for (int k = t->n - 1; k >= 0; k--) {
        login_rounds_login_t *q = t->logins[k];
        if (q->done && q->waiter == NULL &&
            (now - q->opened_at > LOGIN_ROUNDS_TTL_MS || t->n >= max))
            login_rounds_unlist(q);
    }
    if (t->n >= max)
        return UV_EBUSY;
    uint8_t rnd[16];
    int rc = uv_random(NULL, NULL, rnd, sizeof rnd, 0, NULL);
    if (rc != 0)
        return rc;
    str_hex(rnd, sizeof rnd, l->id);
    l->ops = t->ops;
    l->opened_at = now;
    l->table = t;
    t->logins[t->n++] = l;
    return 0;
}

void login_rounds_set_error(login_rounds_login_t *l, const char *fmt, ...)
{
    /* The arguments may name the error it replaces. */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *e = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (e != NULL) {
        va_start(ap, fmt);
        vsnprintf(e, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    free(l->error);
    l->error = e;
}

/* ---- the state and the page request -------------------------------------- */

/* Wall-clock time in ms since the epoch (the state travels between
 * daemons: loop time would not do). */
static int64_t now_ms(void)
{
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

int64_t login_rounds_expires_at(void)
{
    return now_ms() + SECRET_PAGE_TTL_MS;
}

bool login_rounds_expired(const json_t *state)
{
    const json_t *expires = json_object_get(state, "expiresAt");
    return json_is_integer(expires) && json_integer_value(expires) < now_ms();
}

/* Finishes c asking for the page of state (stolen). */
static void ask(mcp_call_t *c, const login_rounds_ops_t *ops, json_t *state)
{
    char message[2000];
    ops->page_message(state, message, sizeof message);
    const char *url = json_string_value(json_object_get(state, "url"));
    json_t *request = json_pack("{s:s, s:{s:s, s:s, s:s}}", "method", "elicitation/create",
                                "params", "mode", "url", "message", message, "url", url ? url : "");
    mcp_call_finish_input_required(c, json_pack("{s:o}", ops->page_key, request), state);
}

void login_rounds_ask_page(mcp_call_t *c, const login_rounds_login_t *l, const char *url,
                           json_t *fields)
{
    json_t *state = fields ? fields : json_object();
    json_object_set_new(state, l->ops->state_key, json_string(l->id));
    json_object_set_new(state, "url", json_string(url));
    json_object_set_new(state, "expiresAt", json_integer(login_rounds_expires_at()));
    ask(c, l->ops, state);
}

/* Asks round 3 again: the page is still open and nothing came yet. */
static void ask_again(mcp_call_t *c, const login_rounds_ops_t *ops)
{
    ask(c, ops, json_deep_copy(mcp_call_request_state(c)));
}

login_rounds_answer_t login_rounds_answer(const json_t *answer)
{
    const char *action = json_string_value(json_object_get(answer, "action"));
    if (action == NULL)
        return LOGIN_ROUNDS_NONE;
    if (strcmp(action, "accept") == 0)
        return LOGIN_ROUNDS_ACCEPT;
    return strcmp(action, "decline") == 0 ? LOGIN_ROUNDS_DECLINE : LOGIN_ROUNDS_CANCEL;
}

/* ---- round 3: the waiters ------------------------------------------------ */

static void wait_closed(uv_handle_t *h)
{
    free(h->data);
}

/* Ends w (once) and gives back its call, for the caller to answer. */
static mcp_call_t *wait_end(login_rounds_wait_t *w)
{
    mcp_call_t *c = w->c;
    if (w->l != NULL)
        w->l->waiter = NULL;
    w->l = NULL;
    c->on_cancel = NULL;
    c->data = NULL;
    uv_close((uv_handle_t *)&w->timer, wait_closed);
    return c;
}

static void wait_timer(uv_timer_t *timer)
{
    login_rounds_wait_t *w = timer->data;
    if (w->tick != NULL) { /* a poll's next tick */
        if (w->cancelled)
            login_rounds_poll_call(w);
        else
            w->tick(w, w->c);
        return;
    }
    login_rounds_login_t *l = w->l;
    mcp_call_t *c = wait_end(w);
    ask_again(c, w->ops);
    if (l != NULL)
        login_rounds_release(l);
}

static void wait_cancelled(mcp_call_t *c)
{
    login_rounds_wait_t *w = c->data;
    if (w->tick != NULL) {
        w->cancelled = true; /* the timer or the tick's answer comes back and ends it */
        return;
    }
    login_rounds_login_t *l = w->l;
    wait_end(w);
    mcp_call_finish_error(c, "cancelled");
    if (l != NULL)
        login_rounds_release(l);
}

static uint64_t wait_ms(const login_rounds_ops_t *ops)
{
    return ops->wait_ms != 0 ? ops->wait_ms : LOGIN_ROUNDS_WAIT_MS;
}

/* Has c wait: on l, or polling with tick. NULL when out of memory (c is
 * finished). */
static login_rounds_wait_t *wait_start(mcp_call_t *c, const login_rounds_ops_t *ops,
                                       login_rounds_login_t *l, login_rounds_tick_fn tick)
{
    login_rounds_wait_t *w = calloc(1, sizeof *w);
    if (w == NULL) {
        mcp_call_finish_error(c, "out of memory");
        return NULL;
    }
    *w = (login_rounds_wait_t){.c = c, .ops = ops, .l = l, .tick = tick};
    uv_timer_init(mcp_call_loop(c), &w->timer);
    w->timer.data = w;
    c->data = w;
    c->on_cancel = wait_cancelled;
    w->deadline = uv_now(mcp_call_loop(c)) + wait_ms(ops);
    return w;
}

void login_rounds_poll(mcp_call_t *c, const login_rounds_ops_t *ops, uint64_t every_ms,
                       login_rounds_tick_fn tick)
{
    login_rounds_wait_t *w = wait_start(c, ops, NULL, tick);
    if (w == NULL)
        return;
    w->every = every_ms;
    tick(w, c);
}

mcp_call_t *login_rounds_poll_call(login_rounds_wait_t *w)
{
    if (!w->cancelled)
        return w->c;
    mcp_call_finish_error(wait_end(w), "cancelled");
    return NULL;
}

void login_rounds_poll_end(login_rounds_wait_t *w)
{
    wait_end(w);
}

void login_rounds_poll_again(login_rounds_wait_t *w)
{
    if (uv_now(w->timer.loop) >= w->deadline) {
        ask_again(wait_end(w), w->ops);
        return;
    }
    uv_timer_start(&w->timer, wait_timer, w->every, 0);
}

/* ---- round 3 --------------------------------------------------------------- */

void login_rounds_settle(login_rounds_login_t *l, bool keep)
{
    if (l->waiter != NULL) {
        l->ops->finish(wait_end(l->waiter), l);
        login_rounds_unlist(l); /* told: the outcome is used */
    } else if (keep) {
        login_rounds_release(l);
    } else {
        login_rounds_unlist(l); /* nobody asks for it again */
    }
}

bool login_rounds_outcome(login_rounds_t *t, mcp_call_t *c, const json_t *state)
{
    const login_rounds_ops_t *ops = t->ops;
    login_rounds_login_t *l =
        login_rounds_find(t, json_string_value(json_object_get(state, ops->state_key)));
    login_rounds_answer_t a = login_rounds_answer(mcp_call_input_response(c, ops->page_key));
    if (a == LOGIN_ROUNDS_DECLINE || a == LOGIN_ROUNDS_CANCEL) {
        bool declined = a == LOGIN_ROUNDS_DECLINE;
        if (l != NULL) {
            /* An earlier round that waits for this login gets the same
             * answer; then the login is withdrawn and unlisted. */
            l->said_no = declined ? "declined" : "cancelled";
            if (l->waiter != NULL)
                ops->said_no(wait_end(l->waiter), declined);
            ops->withdraw(l);
            login_rounds_unlist(l);
        }
        ops->said_no(c, declined);
        return true;
    }
    if (l == NULL)
        return false;
    if (l->done) {
        ops->finish(c, l);
        login_rounds_unlist(l);
        return true;
    }
    if (l->waiter != NULL) {
        mcp_call_finish_error(c, "%s", ops->busy);
        return true;
    }
    login_rounds_wait_t *w = wait_start(c, ops, l, NULL);
    if (w == NULL)
        return true;
    l->waiter = w;
    uv_timer_start(&w->timer, wait_timer, wait_ms(ops), 0);
    return true;
}

void login_rounds_close(login_rounds_t *t)
{
    while (t->n > 0) {
        login_rounds_login_t *l = t->logins[0];
        if (l->waiter != NULL)
            mcp_call_finish_error(wait_end(l->waiter), "parleyd is stopping; call %s again",
                                  t->ops->tool);
        t->ops->stop(l);
        login_rounds_unlist(l);
    }
}
