/* Tests for toolsets/login_rounds: the user's answer, expiry, the table
 * of logins (room, finding, freeing only when nothing holds a login), and
 * the rounds through a session of 2026-07-28 requests (an in-memory
 * transport): round 2 asks for the page, round 3 waits for the outcome
 * and gets it, a second round 3 is refused, the wait runs out and asks
 * again, a no answers every waiting round and withdraws the login, a
 * login this daemon does not hold polls until its tick finds it or the
 * time runs out, a cancelled call ends its wait, and closing tells a
 * waiting round parleyd stops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/call.h"
#include "mcp/server.h"
#include "mcp/session.h"
#include "testutil.h"
#include "toolsets/login_rounds.h"

/* A login of the test's connector. */
typedef struct {
    login_rounds_login_t lr; /* first */
    bool held;               /* its page is open */
} fake_t;

static int freed, withdrawn, stopped;

static void fake_page_message(const json_t *state, char *out, size_t cap)
{
    snprintf(out, cap, "open the page for %s", json_string_value(json_object_get(state, "who")));
}

static void fake_finish(mcp_call_t *c, const login_rounds_login_t *l)
{
    if (l->status != 0) {
        mcp_call_finish_error(c, "failed: %s", l->error ? l->error : "?");
        return;
    }
    mcp_call_finish_result(
        c, json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text", l->account));
}

static void fake_said_no(mcp_call_t *c, bool declined)
{
    mcp_call_finish_result(c, json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text",
                                        declined ? "declined" : "cancelled"));
}

static void fake_withdraw(login_rounds_login_t *l)
{
    withdrawn++;
    ((fake_t *)l)->held = false;
}

static void fake_stop(login_rounds_login_t *l)
{
    stopped++;
    ((fake_t *)l)->held = false;
}

static bool fake_held(const login_rounds_login_t *l)
{
    return ((const fake_t *)l)->held;
}

static void fake_free(login_rounds_login_t *l)
{
    freed++;
    free(l);
}

static const login_rounds_ops_t ops = {
    .tool = "login",
    .state_key = "page",
    .page_key = "the_page",
    .busy = "busy",
    .max = 3,
    .wait_ms = 100,
    .page_message = fake_page_message,
    .finish = fake_finish,
    .said_no = fake_said_no,
    .withdraw = fake_withdraw,
    .stop = fake_stop,
    .held = fake_held,
    .free = fake_free,
};

static fake_t *fake_new(login_rounds_t *t, uint64_t now)
{
    fake_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->held = true;
    if (login_rounds_add(t, &f->lr, now) != 0) {
        free(f);
        return NULL;
    }
    return f;
}

/* ---- without a loop -------------------------------------------------------- */

static void test_answer(void **state)
{
    (void)state;
    assert_int_equal(login_rounds_answer(NULL), LOGIN_ROUNDS_NONE);
    json_t *a = json_object();
    assert_int_equal(login_rounds_answer(a), LOGIN_ROUNDS_NONE);
    static const struct {
        const char *action;
        login_rounds_answer_t want;
    } cases[] = {{"accept", LOGIN_ROUNDS_ACCEPT},
                 {"decline", LOGIN_ROUNDS_DECLINE},
                 {"cancel", LOGIN_ROUNDS_CANCEL},
                 {"other", LOGIN_ROUNDS_CANCEL}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_object_set_new(a, "action", json_string(cases[i].action));
        assert_int_equal(login_rounds_answer(a), cases[i].want);
    }
    json_object_set_new(a, "action", json_integer(1));
    assert_int_equal(login_rounds_answer(a), LOGIN_ROUNDS_NONE);
    json_decref(a);
}

static void test_expired(void **state)
{
    (void)state;
    json_t *s = json_object();
    assert_false(login_rounds_expired(s)); /* none said: the page decides */
    json_object_set_new(s, "expiresAt", json_integer(login_rounds_expires_at()));
    assert_false(login_rounds_expired(s));
    json_object_set_new(s, "expiresAt", json_integer(login_rounds_expires_at() - 11 * 60 * 1000));
    assert_true(login_rounds_expired(s));
    json_object_set_new(s, "expiresAt", json_string("0"));
    assert_false(login_rounds_expired(s));
    json_decref(s);
}

static void test_table(void **state)
{
    (void)state;
    login_rounds_t t;
    login_rounds_init(&t, &ops);
    freed = 0;
    fake_t *a = fake_new(&t, 1000), *b = fake_new(&t, 1000), *c = fake_new(&t, 1000);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_int_equal(strlen(a->lr.id), 32);
    assert_string_not_equal(a->lr.id, b->lr.id);
    assert_ptr_equal(login_rounds_find(&t, b->lr.id), &b->lr);
    assert_null(login_rounds_find(&t, "nope"));
    assert_null(login_rounds_find(&t, NULL));
    assert_true(login_rounds_listed(&a->lr));

    /* Full of logins in progress: no room. */
    assert_null(fake_new(&t, 2000));
    assert_int_equal(t.n, 3);
    /* One finished: it makes room (freed once its page is gone). */
    b->lr.done = true;
    b->held = false;
    fake_t *d = fake_new(&t, 2000);
    assert_non_null(d);
    assert_int_equal(freed, 1);
    assert_int_equal(t.n, 3);
    /* A finished one a round waits for stays; past its time, one nobody
     * waits for goes even when there is room. */
    c->lr.done = true;
    c->lr.waiter = (login_rounds_wait_t *)1; /* stands for a waiting round */
    assert_null(fake_new(&t, 3000));
    c->lr.waiter = NULL;
    login_rounds_unlist(&d->lr); /* held: still allocated */
    assert_int_equal(freed, 1);
    assert_false(login_rounds_listed(&d->lr));
    d->held = false;
    login_rounds_release(&d->lr);
    assert_int_equal(freed, 2);
    assert_int_equal(t.n, 2);
    fake_t *e = fake_new(&t, 1000 + LOGIN_ROUNDS_TTL_MS + 1);
    assert_non_null(e);
    assert_int_equal(freed, 2); /* c still held: unlisted, not freed */
    assert_int_equal(t.n, 2);
    assert_null(login_rounds_find(&t, c->lr.id));
    c->held = false;
    login_rounds_release(&c->lr);
    assert_int_equal(freed, 3);

    /* The error may be made of the one it replaces. */
    login_rounds_set_error(&a->lr, "first %d", 1);
    login_rounds_set_error(&a->lr, "%s, then second", a->lr.error);
    assert_string_equal(a->lr.error, "first 1, then second");

    /* Settling a listed login nobody waits for keeps it, or unlists it. */
    a->lr.done = true;
    a->held = false;
    login_rounds_settle(&a->lr, true);
    assert_true(login_rounds_listed(&a->lr));
    login_rounds_settle(&a->lr, false);
    assert_int_equal(freed, 4);

    /* Closing stops and frees the rest. */
    login_rounds_close(&t);
    assert_int_equal(stopped, 1);
    assert_int_equal(t.n, 0);
    assert_int_equal(freed, 5);
}

/* ---- the rounds, through a session --------------------------------------------- */

static login_rounds_t table;
static fake_t *last_login;
static int ticks;
static bool ticked;
static login_rounds_wait_t *polling;

static void tick(login_rounds_wait_t *w, mcp_call_t *c)
{
    (void)c;
    ticks++;
    ticked = true;
    polling = w; /* the test answers it */
}

static void tool_login(mcp_call_t *c)
{
    const json_t *state = mcp_call_request_state(c);
    if (state == NULL) { /* round 2 */
        last_login = fake_new(&table, uv_now(mcp_call_loop(c)));
        assert_non_null(last_login);
        login_rounds_ask_page(c, &last_login->lr, "http://127.0.0.1:1/p/x",
                              json_pack("{s:s}", "who", "alice"));
        return;
    }
    if (login_rounds_outcome(&table, c, state))
        return;
    if (login_rounds_expired(state)) {
        mcp_call_finish_error(c, "expired");
        return;
    }
    login_rounds_poll(c, &ops, 10, tick);
}

static const mcp_tool_def_t tools[] = {
    {"login", "Login", "Logs in.", "{\"type\":\"object\"}", NULL, MCP_TOOL_DESTRUCTIVE, tool_login,
     NULL},
};
static const mcp_toolset_t set = {"l", "L", tools, 1, NULL, 0, NULL, 0, false, false};
static const mcp_toolset_t *const available[] = {&set, NULL};

typedef struct {
    json_t *out[64];
    int n;
    mcp_session_t *s;
} mem_t;

static uv_loop_t loop;
static mcp_server_t srv;
static mem_t mem;
static bool sent;

static int mem_send(void *t, char *msg, size_t len, const json_t *related, bool final)
{
    mem_t *m = t;
    (void)related;
    (void) final;
    assert_true(m->n < 64);
    m->out[m->n] = json_loadb(msg, len, 0, NULL);
    assert_non_null(m->out[m->n]);
    m->n++;
    free(msg);
    sent = true;
    return 0;
}

static size_t mem_queued(void *t)
{
    (void)t;
    return 0;
}

static void mem_set_reading(void *t, bool on)
{
    (void)t;
    (void)on;
}

static void mem_close(void *t)
{
    mcp_session_transport_closed(((mem_t *)t)->s);
}

static const mcp_transport_ops_t mem_ops = {
    .send = mem_send,
    .queued_bytes = mem_queued,
    .set_reading = mem_set_reading,
    .close = mem_close,
};

#define META                                                                                       \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{\"form\":{},\"url\":{}}}}"

/* Sends call id of login: round 2 (state NULL), or round 3 with state and
 * the answer action. */
static void call(int id, const char *state, const char *action)
{
    char msg[4096];
    if (state == NULL)
        snprintf(msg, sizeof msg,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"login\",\"arguments\":{}," META "}}",
                 id);
    else
        snprintf(msg, sizeof msg,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"login\",\"arguments\":{},\"inputResponses\":{\"the_page\":{\"action\":\"%s\"}},"
                 "\"requestState\":\"%s\"," META "}}",
                 id, action, state);
    sent = false;
    mcp_session_receive(mem.s, msg, strlen(msg));
}

/* The answer to id, waiting for it up to ms; NULL when none came. */
static const json_t *answer(int id, uint64_t ms)
{
    for (;;) {
        for (int i = 0; i < mem.n; i++)
            if (json_integer_value(json_object_get(mem.out[i], "id")) == id)
                return json_object_get(mem.out[i], "result");
        if (ms == 0)
            return NULL;
        sent = false;
        test_run_until(&loop, &sent, ms);
    }
}

static const char *text(const json_t *r)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"));
}

/* Round 2: the page request and the sealed state (copied into st). */
static void round2(int id, char *st, size_t cap)
{
    call(id, NULL, NULL);
    const json_t *r = answer(id, 0);
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "input_required");
    const json_t *page = json_object_get(json_object_get(r, "inputRequests"), "the_page");
    assert_string_equal(json_string_value(json_object_get(page, "method")), "elicitation/create");
    const json_t *p = json_object_get(page, "params");
    assert_string_equal(json_string_value(json_object_get(p, "mode")), "url");
    assert_string_equal(json_string_value(json_object_get(p, "message")),
                        "open the page for alice");
    assert_string_equal(json_string_value(json_object_get(p, "url")), "http://127.0.0.1:1/p/x");
    snprintf(st, cap, "%s", json_string_value(json_object_get(r, "requestState")));
}

static bool closed_flag;
static void server_closed(mcp_server_t *s)
{
    (void)s;
    closed_flag = true;
}

static void test_rounds(void **state)
{
    (void)state;
    uv_loop_init(&loop);
    mcp_registry_t r;
    char err[256];
    assert_int_equal(mcp_registry_build(&r, available, "all", false, err, sizeof err), 0);
    mcp_limits_t lim;
    mcp_limits_default(&lim);
    mcp_server_init(&srv, &loop, &r, &lim);
    mem.s = mcp_session_new(&srv, &mem_ops, &mem, "mem");
    assert_non_null(mem.s);
    login_rounds_init(&table, &ops);
    freed = withdrawn = stopped = 0;
    char st[2048], st2[2048];

    /* Round 3 waits; the outcome comes and answers it. */
    round2(1, st, sizeof st);
    fake_t *f = last_login;
    call(2, st, "accept");
    assert_null(answer(2, 0));
    assert_non_null(f->lr.waiter);
    call(3, st, "accept"); /* a second round 3 on the same login */
    assert_string_equal(text(answer(3, 0)), "busy");
    f->held = false;
    f->lr.done = true;
    f->lr.account = strdup("{\"handle\":\"alice\"}");
    login_rounds_settle(&f->lr, true);
    assert_string_equal(text(answer(2, 0)), "{\"handle\":\"alice\"}");
    assert_int_equal(freed, 1); /* told: unlisted and freed */

    /* An outcome that came first answers round 3 at once. */
    round2(4, st, sizeof st);
    f = last_login;
    f->held = false;
    f->lr.done = true;
    f->lr.status = UV_EACCES;
    login_rounds_set_error(&f->lr, "refused");
    login_rounds_settle(&f->lr, true); /* nobody waits: kept */
    call(5, st, "accept");
    assert_string_equal(text(answer(5, 0)), "failed: refused");
    assert_int_equal(freed, 2);

    /* Nothing comes within wait_ms: round 3 is asked again, same state. */
    round2(6, st, sizeof st);
    f = last_login;
    call(7, st, "accept");
    const json_t *again = answer(7, 2000);
    assert_non_null(again);
    assert_string_equal(json_string_value(json_object_get(again, "resultType")), "input_required");
    assert_non_null(json_object_get(json_object_get(again, "inputRequests"), "the_page"));
    assert_null(f->lr.waiter);

    /* A no: the round waiting and the one that says it both learn it; the
     * login is withdrawn and freed. */
    call(8, st, "accept");
    call(9, st, "decline");
    assert_string_equal(text(answer(9, 0)), "declined");
    assert_string_equal(text(answer(8, 0)), "declined");
    assert_int_equal(withdrawn, 1);
    assert_int_equal(freed, 3);
    /* Now nobody holds it: the tool polls. Its tick finds it... */
    call(10, st, "accept");
    assert_int_equal(ticks, 1);
    assert_null(answer(10, 0));
    login_rounds_wait_t *w = polling;
    polling = NULL;
    ticked = false;
    login_rounds_poll_again(w); /* not yet */
    test_run_until(&loop, &ticked, 2000);
    assert_int_equal(ticks, 2);
    mcp_call_t *c = login_rounds_poll_call(polling);
    assert_non_null(c);
    login_rounds_poll_end(polling);
    polling = NULL;
    mcp_call_finish_error(c, "found");
    assert_string_equal(text(answer(10, 0)), "found");
    /* ... or the time runs out and round 3 is asked again. */
    ticks = 0;
    call(11, st, "cancel");
    assert_string_equal(text(answer(11, 0)), "cancelled");
    call(12, st, "accept");
    for (;;) {
        w = polling;
        polling = NULL;
        ticked = false;
        login_rounds_poll_again(w);
        if (answer(12, 0) != NULL)
            break;
        test_run_until(&loop, &ticked, 2000);
    }
    assert_string_equal(json_string_value(json_object_get(answer(12, 0), "resultType")),
                        "input_required");
    assert_true(ticks >= 2);

    /* A cancelled call ends its wait (nothing is sent). */
    round2(13, st2, sizeof st2);
    f = last_login;
    call(14, st2, "accept");
    assert_non_null(f->lr.waiter);
    mcp_session_receive(mem.s,
                        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
                        "\"requestId\":14}}",
                        strlen("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                               "\"params\":{\"requestId\":14}}"));
    assert_null(f->lr.waiter);
    assert_null(answer(14, 0));

    /* Closing tells a waiting round that parleyd stops. */
    call(15, st2, "accept");
    assert_non_null(f->lr.waiter);
    login_rounds_close(&table);
    assert_int_equal(stopped, 1);
    assert_int_equal(freed, 4);
    const json_t *stop = answer(15, 0);
    assert_true(json_is_true(json_object_get(stop, "isError")));
    assert_string_equal(text(stop), "parleyd is stopping; call login again");

    for (int i = 0; i < mem.n; i++)
        json_decref(mem.out[i]);
    mcp_server_close(&srv, server_closed);
    test_run_until(&loop, &closed_flag, 5000);
    test_loop_close(&loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answer),
        cmocka_unit_test(test_expired),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_rounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
