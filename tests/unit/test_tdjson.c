/* Tests for upstream/tdjson: TDLib's JSON interface on the loop (the
 * library loaded with dlopen, its receiving thread, requests matched by
 * "@extra", objects routed by "@client_id").
 *
 * Against the fake libtdjson (tests/support/fake_tdjson*.c, its script
 * written by each case and named by FAKE_TDJSON_SCRIPT): open, the
 * version, td_execute of getTextEntities, a client's first request waking
 * it with its authorization states as updates, several requests of two
 * clients each answered to its own callback (the same @extra on both), a
 * stalled request timing out with UV_ETIMEDOUT while later ones are
 * answered, TDLib's errors mapped (400, 401, 404, 429 with its retry
 * time, 500), a client's close waiting for authorizationStateClosed and
 * cancelling what is pending (or ending at its deadline when the library
 * never reports it), and a missing or foreign library refused
 * with a clear error.
 *
 * Against the real libtdjson deps/install.sh installs (required, offline):
 * its version, getTextEntities, a client's first request bringing
 * authorizationStateWaitTdlibParameters, and its close reaching
 * authorizationStateClosed.
 *
 * Both libraries keep process-wide state (the script is read once, TDLib
 * is never unloaded), so each case runs in a process of its own: this
 * binary runs itself with `--case NAME` under `timeout`. Every case ends
 * with tdjson_close (the receiving thread ended) and the loop closed
 * cleanly. */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "upstream/telegram/user/tdjson.h"

/* How long a case waits for an expected answer or update. */
#define WAIT_MS 10000
/* How long one case's process may run. */
#define CASE_TIMEOUT_S 60
/* The version the real libtdjson of deps/install.sh reports. */
#define REAL_TDLIB_VERSION "1.8.67"

static char self[512];

/* ---- a loop, a library and what arrived ---- */

typedef struct {
    uv_loop_t loop;
    tdjson_t *td;
    char *dir;
    json_t *updates[2]; /* per client: every update, in order */
    bool td_closed;
} env_t;

typedef struct {
    bool done;
    int status;
    json_t *reply;
    int order; /* 1 for the first answer of the case, then 2... */
} answer_t;

static int answers_seen;

static void set_flag(void *data)
{
    *(bool *)data = true;
}

static void on_update(tdjson_client_t *c, json_t *update, void *data)
{
    (void)c;
    json_array_append(data, update);
}

static void on_reply(void *data, int status, json_t *reply)
{
    answer_t *a = data;
    assert_false(a->done); /* exactly once */
    a->done = true;
    a->status = status;
    a->reply = json_incref(reply);
    a->order = ++answers_seen;
}

static void answer_free(answer_t *a)
{
    json_decref(a->reply);
    a->reply = NULL;
}

static void env_open(env_t *e, const char *lib)
{
    memset(e, 0, sizeof *e);
    assert_int_equal(uv_loop_init(&e->loop), 0);
    e->dir = test_tmpdir("parley-tdjson");
    e->updates[0] = json_array();
    e->updates[1] = json_array();
    char err[512] = "";
    int rc = tdjson_open(&e->loop, lib, &e->td, err, sizeof err);
    if (rc != 0)
        fail_msg("tdjson_open(%s): %s (%s)", lib ? lib : "NULL", err, uv_strerror(rc));
}

/* tdjson_close ends the receiving thread; then every handle is closed. */
static void env_close(env_t *e)
{
    tdjson_close(e->td, set_flag, &e->td_closed);
    test_run_until(&e->loop, &e->td_closed, WAIT_MS);
    test_loop_close(&e->loop);
    tdjson_free(e->td);
    json_decref(e->updates[0]);
    json_decref(e->updates[1]);
    test_rmdir(e->dir);
}

/* Writes the fake's script into the case's directory and names it. */
static void write_script(env_t *e, const char *json)
{
    char path[256];
    snprintf(path, sizeof path, "%s/script.json", e->dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
    assert_int_equal(setenv("FAKE_TDJSON_SCRIPT", path, 1), 0);
}

static tdjson_client_t *client_new(env_t *e, int i, uint32_t timeout_ms)
{
    tdjson_client_t *c = NULL;
    assert_int_equal(tdjson_client_new(e->td, timeout_ms, on_update, e->updates[i], &c), 0);
    return c;
}

static void send_json(tdjson_client_t *c, const char *request, answer_t *a)
{
    json_t *rq = json_loads(request, 0, NULL);
    assert_non_null(rq);
    assert_int_equal(tdjson_send(c, rq, on_reply, a), 0);
}

static void wait_answer(env_t *e, answer_t *a)
{
    test_run_until(&e->loop, &a->done, WAIT_MS);
}

/* Sends request and waits for its answer. */
static void call(env_t *e, tdjson_client_t *c, const char *request, answer_t *a)
{
    send_json(c, request, a);
    wait_answer(e, a);
}

static const char *str(const json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));
    return s ? s : "";
}

static const char *type_of(const json_t *o)
{
    return str(o, "@type");
}

static const char *auth_state(const json_t *u)
{
    if (strcmp(type_of(u), "updateAuthorizationState") != 0)
        return NULL;
    return type_of(json_object_get(u, "authorization_state"));
}

static long find_auth_state(json_t *updates, const char *state)
{
    size_t i;
    json_t *u;
    json_array_foreach(updates, i, u)
    {
        const char *s = auth_state(u);
        if (s && !strcmp(s, state))
            return (long)i;
    }
    return -1;
}

/* Runs the loop until client i's updates hold this authorization state. */
static void wait_auth_state(env_t *e, int i, const char *state)
{
    for (uint64_t t = 0; find_auth_state(e->updates[i], state) < 0; t += 20) {
        if (t > WAIT_MS)
            fail_msg("no updateAuthorizationState %s in %d ms", state, WAIT_MS);
        test_run_for(&e->loop, 20);
    }
}

static void assert_error(const answer_t *a, int status, int code, const char *message)
{
    assert_true(a->done);
    assert_int_equal(a->status, status);
    assert_string_equal(type_of(a->reply), "error");
    assert_int_equal(json_integer_value(json_object_get(a->reply, "code")), code);
    if (message)
        assert_string_equal(tdjson_error_message(a->reply, "?"), message);
}

static void client_close(env_t *e, tdjson_client_t *c)
{
    bool closed = false;
    tdjson_client_close(c, set_flag, &closed);
    test_run_until(&e->loop, &closed, WAIT_MS);
}

/* The fake's account: a phone and a code, no 2FA; getMe stalls; getChats
 * answers a FloodWait at its first call. */
static const char k_script[] =
    "{\"phone\": \"+15550001\", \"code\": \"12345\","
    " \"user\": {\"id\": 100, \"first_name\": \"Ann\", \"phone_number\": \"15550001\"},"
    " \"users\": [{\"id\": 101, \"first_name\": \"Bob\"}],"
    " \"chats\": [{\"id\": 101, \"type\": \"private\", \"title\": \"Bob\", \"user_id\": 101,"
    "   \"messages\": 3}],"
    " \"stall_methods\": [\"getMe\"],"
    " \"flood_wait\": {\"method\": \"getChats\", \"after_calls\": 0, \"seconds\": 7}}";

/* ---- against the fake ---- */

static void test_fake_open_version_execute(void **state)
{
    (void)state;
    env_t e;
    env_open(&e, FAKE_TDJSON_PATH);
    char v[64];
    assert_string_equal(tdjson_version(e.td, v, sizeof v), "1.8.99-fake");

    json_t *rq = json_pack("{s:s, s:s}", "@type", "getTextEntities", "text",
                           "ask @alice at https://example.org/a, please");
    json_t *r = tdjson_execute(e.td, rq);
    json_decref(rq);
    assert_string_equal(type_of(r), "textEntities");
    json_t *list = json_object_get(r, "entities");
    assert_int_equal(json_array_size(list), 2);
    json_t *m = json_array_get(list, 0), *u = json_array_get(list, 1);
    assert_string_equal(type_of(json_object_get(m, "type")), "textEntityTypeMention");
    assert_int_equal(json_integer_value(json_object_get(m, "offset")), 4);
    assert_int_equal(json_integer_value(json_object_get(m, "length")), 6);
    assert_string_equal(type_of(json_object_get(u, "type")), "textEntityTypeUrl");
    assert_int_equal(json_integer_value(json_object_get(u, "offset")), 14);
    assert_int_equal(json_integer_value(json_object_get(u, "length")), 21);
    json_decref(r);

    /* A method TDLib does not answer synchronously: its error object. */
    rq = json_pack("{s:s}", "@type", "getMe");
    r = tdjson_execute(e.td, rq);
    json_decref(rq);
    assert_string_equal(type_of(r), "error");
    json_decref(r);
    env_close(&e);
}

static void test_fake_first_request_wakes(void **state)
{
    (void)state;
    env_t e;
    env_open(&e, FAKE_TDJSON_PATH);
    write_script(&e, k_script);
    tdjson_client_t *c = client_new(&e, 0, 0);
    /* Nothing until the first request (as TDLib). */
    test_run_for(&e.loop, 300);
    assert_int_equal(json_array_size(e.updates[0]), 0);

    answer_t a = {0};
    call(&e, c, "{\"@type\": \"getOption\", \"name\": \"version\"}", &a);
    assert_int_equal(a.status, 0);
    assert_string_equal(type_of(a.reply), "optionValueString");
    assert_string_equal(str(a.reply, "value"), "1.8.99-fake");
    wait_auth_state(&e, 0, "authorizationStateWaitTdlibParameters");
    json_t *first = json_array_get(e.updates[0], 0);
    assert_string_equal(type_of(first), "updateOption");
    assert_string_equal(str(first, "name"), "version");
    /* The answer went to its callback only: no update carries an @extra. */
    size_t i;
    json_t *u;
    json_array_foreach(e.updates[0], i, u)
    {
        assert_null(json_object_get(u, "@extra"));
    }
    assert_int_equal(tdjson_client_pending(c), 0);
    answer_free(&a);
    client_close(&e, c);
    env_close(&e);
}

static void test_fake_answers_matched(void **state)
{
    (void)state;
    env_t e;
    env_open(&e, FAKE_TDJSON_PATH);
    write_script(&e, k_script);
    tdjson_client_t *c1 = client_new(&e, 0, 0), *c2 = client_new(&e, 1, 0);
    char bad_dir[512];
    snprintf(bad_dir, sizeof bad_dir,
             "{\"@type\": \"setTdlibParameters\", \"api_id\": 1, \"api_hash\": \"h\","
             " \"database_directory\": \"%s/missing\"}",
             e.dir);
    /* Each client's first request has the same @extra (1): the answers are
     * told apart by @client_id. */
    answer_t a[5] = {{0}}, b[4] = {{0}};
    send_json(c1, "{\"@type\": \"getAuthorizationState\"}", &a[0]);
    send_json(c2, "{\"@type\": \"getOption\", \"name\": \"version\"}", &b[0]);
    send_json(c1, "{\"@type\": \"noSuchMethod\"}", &a[1]);
    send_json(c2, bad_dir, &b[1]);
    send_json(c1, "{\"@type\": \"getOption\", \"name\": \"my_id\"}", &a[2]);
    send_json(c2, "{\"@type\": \"getAuthorizationState\"}", &b[2]);
    send_json(c1, "{\"@type\": \"getOption\", \"name\": \"version\"}", &a[3]);
    send_json(c2, "{\"@type\": \"noSuchMethod\"}", &b[3]);
    send_json(c1, "{\"@type\": \"getMe\"}", &a[4]);
    assert_int_equal(tdjson_client_pending(c1), 5);
    assert_int_equal(tdjson_client_pending(c2), 4);
    for (int i = 0; i < 4; i++) {
        wait_answer(&e, &a[i]);
        wait_answer(&e, &b[i]);
    }
    assert_int_equal(a[0].status, 0);
    assert_string_equal(type_of(a[0].reply), "authorizationStateWaitTdlibParameters");
    assert_error(&a[1], UV_EINVAL, 400, "Unknown method \"noSuchMethod\"");
    assert_string_equal(type_of(a[2].reply), "optionValueEmpty");
    assert_string_equal(type_of(a[3].reply), "optionValueString");
    assert_string_equal(type_of(b[0].reply), "optionValueString");
    assert_error(&b[1], UV_EINVAL, 400, NULL);
    assert_non_null(strstr(tdjson_error_message(b[1].reply, ""), "/missing"));
    assert_string_equal(type_of(b[2].reply), "authorizationStateWaitTdlibParameters");
    assert_error(&b[3], UV_EINVAL, 400, "Unknown method \"noSuchMethod\"");
    /* getMe (stalled by the script) is still waiting; closing its client
     * cancels it. */
    assert_false(a[4].done);
    assert_int_equal(tdjson_client_pending(c1), 1);
    assert_int_equal(tdjson_client_pending(c2), 0);
    /* Both clients woke with their own updates. */
    wait_auth_state(&e, 0, "authorizationStateWaitTdlibParameters");
    wait_auth_state(&e, 1, "authorizationStateWaitTdlibParameters");
    for (int i = 0; i < 4; i++) {
        answer_free(&a[i]);
        answer_free(&b[i]);
    }
    client_close(&e, c2);
    client_close(&e, c1);
    assert_int_equal(a[4].status, UV_ECANCELED);
    env_close(&e);
}

static void test_fake_stalled_times_out(void **state)
{
    (void)state;
    env_t e;
    env_open(&e, FAKE_TDJSON_PATH);
    write_script(&e, k_script);
    tdjson_client_t *c = client_new(&e, 0, 300);
    answer_t stalled = {0}, later = {0};
    answers_seen = 0;
    send_json(c, "{\"@type\": \"getMe\"}", &stalled);
    send_json(c, "{\"@type\": \"getAuthorizationState\"}", &later);
    wait_answer(&e, &stalled);
    assert_true(later.done);
    /* The later request was answered first; the stalled one timed out. */
    assert_int_equal(later.order, 1);
    assert_int_equal(later.status, 0);
    assert_int_equal(stalled.order, 2);
    assert_int_equal(stalled.status, UV_ETIMEDOUT);
    assert_null(stalled.reply);
    assert_int_equal(tdjson_client_pending(c), 0);
    /* The client still works. */
    answer_t again = {0};
    call(&e, c, "{\"@type\": \"getOption\", \"name\": \"version\"}", &again);
    assert_int_equal(again.status, 0);
    answer_free(&later);
    answer_free(&again);
    client_close(&e, c);
    env_close(&e);
}

/* Signs the fake's account in on client c (database directory db). */
static void login(env_t *e, tdjson_client_t *c, const char *db)
{
    char rq[512];
    snprintf(rq, sizeof rq,
             "{\"@type\": \"setTdlibParameters\", \"api_id\": 1, \"api_hash\": \"h\","
             " \"database_directory\": \"%s\", \"database_encryption_key\": \"\"}",
             db);
    answer_t p = {0}, ph = {0}, code = {0};
    call(e, c, rq, &p);
    assert_int_equal(p.status, 0);
    wait_auth_state(e, 0, "authorizationStateWaitPhoneNumber");
    call(e, c, "{\"@type\": \"setAuthenticationPhoneNumber\", \"phone_number\": \"+15550001\"}",
         &ph);
    assert_int_equal(ph.status, 0);
    wait_auth_state(e, 0, "authorizationStateWaitCode");
    call(e, c, "{\"@type\": \"checkAuthenticationCode\", \"code\": \"12345\"}", &code);
    assert_int_equal(code.status, 0);
    wait_auth_state(e, 0, "authorizationStateReady");
    answer_free(&p);
    answer_free(&ph);
    answer_free(&code);
}

static void test_fake_errors(void **state)
{
    (void)state;
    env_t e;
    env_open(&e, FAKE_TDJSON_PATH);
    write_script(&e, k_script);
    tdjson_client_t *c = client_new(&e, 0, 0);
    char db[256];
    snprintf(db, sizeof db, "%s/db", e.dir);
    assert_int_equal(mkdir(db, 0700), 0);

    /* 401 before sign-in. */
    answer_t unauth = {0};
    call(&e, c, "{\"@type\": \"getUser\", \"user_id\": 101}", &unauth);
    assert_error(&unauth, UV_EACCES, 401, "Unauthorized");
    assert_int_equal(tdjson_retry_after(unauth.reply), 0);
    login(&e, c, db);
    /* 400: a bad argument. */
    answer_t bad = {0};
    call(&e, c, "{\"@type\": \"getChatHistory\", \"chat_id\": 101, \"limit\": 0}", &bad);
    assert_error(&bad, UV_EINVAL, 400, NULL);
    /* 404. */
    answer_t nf = {0}, found = {0};
    call(&e, c, "{\"@type\": \"getUser\", \"user_id\": 999}", &nf);
    assert_error(&nf, UV_ENOENT, 404, "User not found");
    call(&e, c, "{\"@type\": \"getUser\", \"user_id\": 101}", &found);
    assert_int_equal(found.status, 0);
    assert_string_equal(str(found.reply, "first_name"), "Bob");
    /* 429 and how long to wait: the script's 7 s, then what is left of it. */
    answer_t fw = {0}, fw2 = {0};
    call(&e, c, "{\"@type\": \"getChats\", \"limit\": 10}", &fw);
    assert_error(&fw, UV_EAGAIN, 429, "Too Many Requests: retry after 7");
    assert_int_equal(tdjson_retry_after(fw.reply), 7);
    call(&e, c, "{\"@type\": \"getChats\", \"limit\": 10}", &fw2);
    assert_error(&fw2, UV_EAGAIN, 429, NULL);
    long left = tdjson_retry_after(fw2.reply);
    assert_true(left >= 1 && left <= 7);
    /* A 429 without a number still says to wait (at least 1 s). */
    json_t *plain =
        json_pack("{s:s, s:i, s:s}", "@type", "error", "code", 429, "message", "Too Many Requests");
    assert_int_equal(tdjson_retry_after(plain), 1);
    json_decref(plain);
    assert_int_equal(tdjson_retry_after(NULL), 0);
    assert_string_equal(tdjson_error_message(NULL, "fallback"), "fallback");

    answer_t *all[] = {&unauth, &bad, &nf, &found, &fw, &fw2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        answer_free(all[i]);
    client_close(&e, c);
    env_close(&e);
}

/* Without a script the fake answers every request with error 500, close
 * included: it never reports authorizationStateClosed, so the close ends
 * at tdjson's own deadline (TDJSON_CLOSE_TIMEOUT_MS) and still calls back. */
static void test_fake_no_script_is_500(void **state)
{
    (void)state;
    env_t e;
    env_open(&e, FAKE_TDJSON_PATH);
    assert_int_equal(unsetenv("FAKE_TDJSON_SCRIPT"), 0);
    tdjson_client_t *c = client_new(&e, 0, 0);
    answer_t a = {0};
    call(&e, c, "{\"@type\": \"getAuthorizationState\"}", &a);
    assert_error(&a, UV_EIO, 500, "fake_tdjson: no script");
    answer_free(&a);
    bool closed = false;
    tdjson_client_close(c, set_flag, &closed);
    test_run_until(&e.loop, &closed, 2 * TDJSON_CLOSE_TIMEOUT_MS);
    env_close(&e);
}

static void test_fake_client_close(void **state)
{
    (void)state;
    env_t e;
    env_open(&e, FAKE_TDJSON_PATH);
    write_script(&e, k_script);
    char db[256], params[512];
    snprintf(db, sizeof db, "%s/db", e.dir);
    assert_int_equal(mkdir(db, 0700), 0);
    snprintf(params, sizeof params,
             "{\"@type\": \"setTdlibParameters\", \"api_id\": 1, \"api_hash\": \"h\","
             " \"database_directory\": \"%s\"}",
             db);
    tdjson_client_t *c = client_new(&e, 0, 0);
    answer_t p = {0}, stalled = {0};
    call(&e, c, params, &p);
    assert_int_equal(p.status, 0); /* the fake now holds db/td.binlog's lock */
    send_json(c, "{\"@type\": \"getMe\"}", &stalled);
    assert_int_equal(tdjson_client_pending(c), 1);

    size_t seen = json_array_size(e.updates[0]);
    bool closed = false;
    tdjson_client_close(c, set_flag, &closed);
    /* A closing client takes no request. */
    json_t *late = json_pack("{s:s}", "@type", "getAuthorizationState");
    assert_int_equal(tdjson_send(c, late, on_reply, NULL), UV_ECANCELED);
    test_run_until(&e.loop, &closed, WAIT_MS);
    /* What was pending failed before the close's callback... */
    assert_true(stalled.done);
    assert_int_equal(stalled.status, UV_ECANCELED);
    assert_null(stalled.reply);
    /* ...and no update reached the owner after the close began. */
    assert_int_equal(json_array_size(e.updates[0]), seen);

    /* The library closed that client (Closed: the lock is free), so a new
     * client takes the same database directory. */
    tdjson_client_t *c2 = client_new(&e, 1, 0);
    answer_t p2 = {0};
    call(&e, c2, params, &p2);
    assert_int_equal(p2.status, 0);
    answer_free(&p);
    answer_free(&p2);
    client_close(&e, c2);
    env_close(&e);
}

static void test_missing_library(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    tdjson_t *td = (void *)&loop; /* set to NULL on failure */
    char err[512] = "";
    int rc = tdjson_open(&loop, "/nonexistent/libtdjson.so", &td, err, sizeof err);
    assert_int_equal(rc, UV_ENOENT);
    assert_null(td);
    assert_non_null(strstr(err, "cannot load TDLib (/nonexistent/libtdjson.so)"));
    assert_non_null(strstr(err, "deps/install.sh"));
    assert_non_null(strstr(err, "telegram_tdjson"));

    /* A library that is not TDLib's JSON interface. */
    err[0] = '\0';
    rc = tdjson_open(&loop, "libm.so.6", &td, err, sizeof err);
    assert_int_equal(rc, UV_EINVAL);
    assert_null(td);
    assert_non_null(strstr(err, "libm.so.6 is not TDLib's JSON interface"));
    test_loop_close(&loop);
}

/* ---- against the real libtdjson (deps/install.sh) ---- */

static void test_real_version_execute(void **state)
{
    (void)state;
    env_t e;
    env_open(&e, NULL); /* the default name, libtdjson.so */
    char v[64];
    assert_string_equal(tdjson_version(e.td, v, sizeof v), REAL_TDLIB_VERSION);

    const char *text = "see https://telegram.org/faq and ask @telegram";
    json_t *rq = json_pack("{s:s, s:s}", "@type", "getTextEntities", "text", text);
    json_t *r = tdjson_execute(e.td, rq);
    json_decref(rq);
    assert_string_equal(type_of(r), "textEntities");
    bool url = false, mention = false;
    size_t i;
    json_t *ent;
    json_array_foreach(json_object_get(r, "entities"), i, ent)
    {
        const char *t = type_of(json_object_get(ent, "type"));
        json_int_t off = json_integer_value(json_object_get(ent, "offset"));
        json_int_t len = json_integer_value(json_object_get(ent, "length"));
        if (!strcmp(t, "textEntityTypeUrl") && off == 4 && len == 24)
            url = true;
        if (!strcmp(t, "textEntityTypeMention") && off == 37 && len == 9)
            mention = true;
    }
    if (!url || !mention) {
        char *s = json_dumps(r, 0);
        fail_msg("getTextEntities(\"%s\"): %s", text, s);
    }
    json_decref(r);
    env_close(&e);
}

static void test_real_client(void **state)
{
    (void)state;
    env_t e;
    env_open(&e, NULL);
    tdjson_client_t *c = client_new(&e, 0, 0);
    answer_t a = {0};
    call(&e, c, "{\"@type\": \"getOption\", \"name\": \"version\"}", &a);
    assert_int_equal(a.status, 0);
    assert_string_equal(type_of(a.reply), "optionValueString");
    assert_string_equal(str(a.reply, "value"), REAL_TDLIB_VERSION);
    wait_auth_state(&e, 0, "authorizationStateWaitTdlibParameters");
    answer_free(&a);

    /* The close ends with TDLib's authorizationStateClosed, not with
     * tdjson's own deadline (which would log "did not report closed"):
     * stderr is kept in a file while the client closes. */
    char log[256];
    snprintf(log, sizeof log, "%s/stderr.log", e.dir);
    fflush(stderr);
    int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    assert_true(dup2(fd, 2) >= 0);
    close(fd);
    bool closed = false;
    tdjson_client_close(c, set_flag, &closed);
    test_run_until(&e.loop, &closed, 2 * TDJSON_CLOSE_TIMEOUT_MS);
    fflush(stderr);
    assert_true(dup2(saved, 2) >= 0);
    close(saved);
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        fputs(line, stderr);
        assert_null(strstr(line, "did not report closed"));
    }
    fclose(f);
    env_close(&e);
}

/* ---- each case in a process of its own ---- */

typedef struct {
    const char *name;
    void (*fn)(void **state);
} case_t;

static const case_t k_cases[] = {
    {"fake_open_version_execute", test_fake_open_version_execute},
    {"fake_first_request_wakes", test_fake_first_request_wakes},
    {"fake_answers_matched", test_fake_answers_matched},
    {"fake_stalled_times_out", test_fake_stalled_times_out},
    {"fake_errors", test_fake_errors},
    {"fake_no_script_is_500", test_fake_no_script_is_500},
    {"fake_client_close", test_fake_client_close},
    {"missing_library", test_missing_library},
    {"real_version_execute", test_real_version_execute},
    {"real_client", test_real_client},
};
#define NCASES (sizeof k_cases / sizeof k_cases[0])

static void run_case(void **state)
{
    const case_t *k = *state;
    assert_int_equal(test_sh("timeout -k 5 %d '%s' --case %s", CASE_TIMEOUT_S, self, k->name), 0);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--case")) {
        for (size_t i = 0; i < NCASES; i++) {
            if (strcmp(k_cases[i].name, argv[2]) != 0)
                continue;
            const struct CMUnitTest one[] = {
                {k_cases[i].name, k_cases[i].fn, NULL, NULL, NULL},
            };
            return cmocka_run_group_tests_name(k_cases[i].name, one, NULL, NULL);
        }
        fprintf(stderr, "no case %s\n", argv[2]);
        return 2;
    }
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = '\0';
    struct CMUnitTest tests[NCASES];
    for (size_t i = 0; i < NCASES; i++)
        tests[i] = (struct CMUnitTest){k_cases[i].name, run_case, NULL, NULL, (void *)&k_cases[i]};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
