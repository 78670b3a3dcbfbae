/* Tests for tests/support/fake_tdjson.c, the libtdjson the Telegram user
 * connector's tests load: dlopen of libfake_tdjson.so and its four
 * functions used as parleyd uses TDLib's (td_send from this thread,
 * td_receive from a thread of its own), against a scripted account: login
 * with a wrong code and a 2FA password, a signed-in restart, the wrong
 * database key, the td.binlog lock, loadChats until 404, a 1,000-message
 * history paged through a FloodWait, sendMessage, live and inbox updates
 * applied to the state, searches, a stalled method, close and logOut, and
 * td_execute. The cases run in order on one library instance (the script is
 * read once per process). */
#include "testutil.h"

#include <dlfcn.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How long a test waits for an expected object before failing. */
#define WAIT_MS 10000

typedef int (*create_fn)(void);
typedef void (*send_fn)(int, const char *);
typedef const char *(*receive_fn)(double);
typedef const char *(*execute_fn)(const char *);

static void *lib;
static create_fn td_create;
static send_fn td_send_;
static receive_fn td_receive_;
static execute_fn td_execute_;

static char *dir;
static char db[256], inbox[256];
static int client; /* the signed-in client the later cases use */
static int next_extra = 1;

static pthread_t receiver;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static json_t *received; /* every object td_receive returned, not yet taken */
static bool stopping;

static void *receive_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        bool stop = stopping;
        pthread_mutex_unlock(&mu);
        if (stop)
            return NULL;
        const char *s = td_receive_(0.1);
        if (!s)
            continue;
        json_t *o = json_loads(s, 0, NULL);
        if (!o) {
            fprintf(stderr, "td_receive returned invalid JSON: %s\n", s);
            abort();
        }
        pthread_mutex_lock(&mu);
        json_array_append_new(received, o);
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
}

static const char *str(json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));
    return s ? s : "";
}

static json_int_t num(json_t *o, const char *name)
{
    return json_integer_value(json_object_get(o, name));
}

/* Takes the first received object of client c matching: an answer to
 * extra (extra > 0) or an update of type (extra == 0). NULL after ms. */
static json_t *take(int c, int extra, const char *type, int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&mu);
    for (;;) {
        size_t i;
        json_t *o;
        json_array_foreach(received, i, o)
        {
            if (num(o, "@client_id") != c)
                continue;
            json_t *e = json_object_get(o, "@extra");
            bool hit =
                extra > 0 ? json_integer_value(e) == extra : !e && !strcmp(str(o, "@type"), type);
            if (hit) {
                json_incref(o);
                json_array_remove(received, i);
                pthread_mutex_unlock(&mu);
                return o;
            }
        }
        if (pthread_cond_timedwait(&cv, &mu, &until) != 0) {
            pthread_mutex_unlock(&mu);
            return NULL;
        }
    }
}

static json_t *wait_update(int c, const char *type)
{
    json_t *o = take(c, 0, type, WAIT_MS);
    if (!o)
        fail_msg("client %d: no %s", c, type);
    return o;
}

/* The next authorization state client c announced. */
static const char *next_auth_state(int c, json_t **hold)
{
    json_decref(*hold);
    *hold = wait_update(c, "updateAuthorizationState");
    return str(json_object_get(*hold, "authorization_state"), "@type");
}

static void expect_auth_state(int c, const char *want)
{
    json_t *u = NULL;
    assert_string_equal(next_auth_state(c, &u), want);
    json_decref(u);
}

/* Sends request (a JSON object without @extra) to c; returns its @extra. */
static int send_req(int c, const char *request)
{
    json_t *o = json_loads(request, 0, NULL);
    assert_non_null(o);
    int extra = next_extra++;
    json_object_set_new(o, "@extra", json_integer(extra));
    char *s = json_dumps(o, JSON_COMPACT);
    td_send_(c, s);
    free(s);
    json_decref(o);
    return extra;
}

static json_t *call(int c, const char *request)
{
    int extra = send_req(c, request);
    json_t *o = take(c, extra, NULL, WAIT_MS);
    if (!o)
        fail_msg("client %d: no answer to %s", c, request);
    return o;
}

static void expect_ok(int c, const char *request)
{
    json_t *o = call(c, request);
    assert_string_equal(str(o, "@type"), "ok");
    json_decref(o);
}

static void expect_error(int c, const char *request, int code, const char *message)
{
    json_t *o = call(c, request);
    assert_string_equal(str(o, "@type"), "error");
    assert_int_equal(num(o, "code"), code);
    if (strcmp(str(o, "message"), message) != 0)
        fail_msg("%s: message %s, want %s", request, str(o, "message"), message);
    json_decref(o);
}

static char *params(const char *database, int api_id, const char *key)
{
    static char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"@type\":\"setTdlibParameters\",\"database_directory\":\"%s\","
             "\"files_directory\":\"\",\"database_encryption_key\":\"%s\","
             "\"use_test_dc\":false,\"use_file_database\":false,"
             "\"use_chat_info_database\":true,\"use_message_database\":true,"
             "\"use_secret_chats\":false,\"api_id\":%d,\"api_hash\":\"0123abcd\","
             "\"system_language_code\":\"en\",\"device_model\":\"parley\","
             "\"system_version\":\"\",\"application_version\":\"0.1\"}",
             database, key, api_id);
    return buf;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
    (void)state;
    dir = test_tmpdir("fake_tdjson");
    snprintf(db, sizeof db, "%s/td", dir);
    snprintf(inbox, sizeof inbox, "%s/inbox", dir);
    assert_int_equal(mkdir(db, 0700), 0);
    assert_int_equal(mkdir(inbox, 0700), 0);
    char script[8192], path[300];
    snprintf(
        script, sizeof script,
        "{\"phone\":\"+15550001\",\"code\":\"12345\",\"password\":\"hunter2\","
        "\"password_hint\":\"pet\","
        "\"user\":{\"id\":777000111,\"first_name\":\"Ada\",\"last_name\":\"Lovelace\","
        "\"username\":\"ada\",\"phone_number\":\"15550001\"},"
        "\"users\":[{\"id\":42,\"first_name\":\"Bob\",\"username\":\"bob\"}],"
        "\"chats\":["
        "{\"id\":42,\"type\":\"private\",\"user_id\":42,\"title\":\"Bob\",\"messages\":30,"
        "\"history\":[{\"@type\":\"message\",\"id\":36700160,\"sender_id\":{\"@type\":"
        "\"messageSenderUser\",\"user_id\":777000111},\"is_outgoing\":true,\"date\":1700005000,"
        "\"content\":{\"@type\":\"messageText\",\"text\":{\"@type\":\"formattedText\","
        "\"text\":\"explicit\",\"entities\":[]}}}]},"
        "{\"id\":-4001,\"type\":\"basic_group\",\"title\":\"Team\",\"messages\":10,"
        "\"senders\":[42,777000111]},"
        "{\"id\":-1001234567890,\"type\":\"supergroup\",\"title\":\"Big group\","
        "\"messages\":1000,\"senders\":[42]},"
        "{\"id\":-1009876543210,\"type\":\"channel\",\"title\":\"News\","
        "\"username\":\"newsch\",\"messages\":5}],"
        "\"load_chats_per_call\":2,\"history_page_max\":50,"
        "\"flood_wait\":{\"method\":\"getChatHistory\",\"after_calls\":3,\"seconds\":1},"
        "\"stall_methods\":[\"getChatAdministrators\"],"
        "\"live\":[{\"after_ms\":200,\"update\":{\"@type\":\"updateNewMessage\",\"message\":"
        "{\"@type\":\"message\",\"id\":11534336,\"chat_id\":-4001,\"sender_id\":"
        "{\"@type\":\"messageSenderUser\",\"user_id\":42},\"is_outgoing\":false,"
        "\"date\":1700001000,\"edit_date\":0,\"reply_to\":null,\"message_thread_id\":0,"
        "\"content\":{\"@type\":\"messageText\",\"text\":{\"@type\":\"formattedText\","
        "\"text\":\"live hello\",\"entities\":[]}}}}}],"
        "\"inbox\":\"%s\",\"start_date\":1700000000}",
        inbox);
    snprintf(path, sizeof path, "%s/script.json", dir);
    write_file(path, script);
    assert_int_equal(setenv("FAKE_TDJSON_SCRIPT", path, 1), 0);

    lib = dlopen(FAKE_TDJSON_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        fail_msg("dlopen %s: %s", FAKE_TDJSON_PATH, dlerror());
    td_create = (create_fn)dlsym(lib, "td_create_client_id");
    td_send_ = (send_fn)dlsym(lib, "td_send");
    td_receive_ = (receive_fn)dlsym(lib, "td_receive");
    td_execute_ = (execute_fn)dlsym(lib, "td_execute");
    assert_true(td_create && td_send_ && td_receive_ && td_execute_);
    received = json_array();
    assert_int_equal(pthread_create(&receiver, NULL, receive_main, NULL), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    pthread_mutex_lock(&mu);
    stopping = true;
    pthread_mutex_unlock(&mu);
    pthread_join(receiver, NULL);
    json_decref(received);
    assert_int_equal(dlclose(lib), 0);
    test_rmdir(dir);
    return 0;
}

static json_t *execute(const char *request)
{
    const char *s = td_execute_(request);
    assert_non_null(s);
    json_t *o = json_loads(s, 0, NULL);
    assert_non_null(o);
    return o;
}

/* td_execute: text entities with UTF-16 offsets, version, log level. */
static void test_execute(void **state)
{
    (void)state;
    json_t *o = execute("{\"@type\":\"getTextEntities\",\"@extra\":\"x\","
                        "\"text\":\"hi @bob see https://example.com/x. \xf0\x9f\x98\x80 @ada\"}");
    assert_string_equal(str(o, "@type"), "textEntities");
    assert_string_equal(str(o, "@extra"), "x");
    json_t *e = json_object_get(o, "entities");
    assert_int_equal(json_array_size(e), 3);
    json_int_t want[3][2] = {{3, 4}, {12, 21}, {38, 4}}; /* the emoji is 2 UTF-16 units */
    const char *types[3] = {"textEntityTypeMention", "textEntityTypeUrl", "textEntityTypeMention"};
    for (size_t i = 0; i < 3; i++) {
        json_t *x = json_array_get(e, i);
        assert_int_equal(num(x, "offset"), want[i][0]);
        assert_int_equal(num(x, "length"), want[i][1]);
        assert_string_equal(str(json_object_get(x, "type"), "@type"), types[i]);
    }
    json_decref(o);
    o = execute("{\"@type\":\"getOption\",\"name\":\"version\"}");
    assert_string_equal(str(o, "@type"), "optionValueString");
    assert_string_equal(str(o, "value"), "1.8.99-fake");
    json_decref(o);
    o = execute("{\"@type\":\"setLogVerbosityLevel\",\"new_verbosity_level\":1}");
    assert_string_equal(str(o, "@type"), "ok");
    json_decref(o);
    o = execute("{\"@type\":\"getMe\"}");
    assert_string_equal(str(o, "@type"), "error");
    assert_int_equal(num(o, "code"), 400);
    json_decref(o);
}

/* The whole login with a wrong phone, code and password on the way, the
 * lock, a closed client that answers nothing, the wrong key, and a
 * restart that lands in Ready without asking. */
static void test_login(void **state)
{
    (void)state;
    int c1 = td_create();
    assert_true(c1 > 0);
    /* Nothing before the first request; then the option and the state. */
    json_t *o = call(c1, "{\"@type\":\"getOption\",\"name\":\"version\"}");
    assert_string_equal(str(o, "value"), "1.8.99-fake");
    assert_int_equal(num(o, "@client_id"), c1);
    json_decref(o);
    o = wait_update(c1, "updateOption");
    assert_string_equal(str(o, "name"), "version");
    json_decref(o);
    expect_auth_state(c1, "authorizationStateWaitTdlibParameters");

    expect_error(c1, "{\"@type\":\"getMe\"}", 401, "Unauthorized");
    expect_error(c1, params(db, 0, "a2V5"), 400,
                 "Valid api_id must be provided. Can be obtained at https://my.telegram.org");
    char missing[300], msg[700];
    snprintf(missing, sizeof missing, "%s/missing", dir);
    o = call(c1, params(missing, 94575, "a2V5"));
    assert_int_equal(num(o, "code"), 400);
    assert_non_null(strstr(str(o, "message"), missing));
    json_decref(o);
    struct stat st;
    assert_int_not_equal(stat(missing, &st), 0);

    expect_ok(c1, params(db, 94575, "a2V5"));
    expect_auth_state(c1, "authorizationStateWaitPhoneNumber");
    char binlog[300];
    snprintf(binlog, sizeof binlog, "%s/td.binlog", db);
    assert_int_equal(stat(binlog, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    expect_error(c1, "{\"@type\":\"setAuthenticationPhoneNumber\",\"phone_number\":\"+15550002\"}",
                 400, "PHONE_NUMBER_INVALID");
    expect_ok(c1, "{\"@type\":\"setAuthenticationPhoneNumber\",\"phone_number\":\"+1 555-0001\"}");
    json_t *u = NULL;
    assert_string_equal(next_auth_state(c1, &u), "authorizationStateWaitCode");
    json_t *info = json_object_get(json_object_get(u, "authorization_state"), "code_info");
    assert_string_equal(str(json_object_get(info, "type"), "@type"), "authenticationCodeTypeSms");
    assert_int_equal(num(json_object_get(info, "type"), "length"), 5);
    expect_error(c1, "{\"@type\":\"checkAuthenticationCode\",\"code\":\"54321\"}", 400,
                 "PHONE_CODE_INVALID");
    expect_ok(c1, "{\"@type\":\"checkAuthenticationCode\",\"code\":\"12345\"}");
    assert_string_equal(next_auth_state(c1, &u), "authorizationStateWaitPassword");
    assert_string_equal(str(json_object_get(u, "authorization_state"), "password_hint"), "pet");
    expect_error(c1, "{\"@type\":\"checkAuthenticationPassword\",\"password\":\"hunter3\"}", 400,
                 "PASSWORD_HASH_INVALID");
    expect_ok(c1, "{\"@type\":\"checkAuthenticationPassword\",\"password\":\"hunter2\"}");
    json_t *me = wait_update(c1, "updateUser");
    assert_int_equal(num(json_object_get(me, "user"), "id"), 777000111);
    json_decref(me);
    assert_string_equal(next_auth_state(c1, &u), "authorizationStateReady");
    json_decref(u);
    o = call(c1, "{\"@type\":\"getMe\"}");
    assert_string_equal(str(o, "@type"), "user");
    assert_string_equal(str(o, "first_name"), "Ada");
    assert_string_equal(
        json_string_value(json_array_get(
            json_object_get(json_object_get(o, "usernames"), "active_usernames"), 0)),
        "ada");
    json_decref(o);

    /* A second client on the same directory: the lock. */
    int c2 = td_create();
    assert_int_not_equal(c2, c1);
    snprintf(msg, sizeof msg,
             "Can't lock file \"%s\", because it is already in use; check that the "
             "database_directory is not used by another client",
             binlog);
    expect_error(c2, params(db, 94575, "a2V5"), 400, msg);
    expect_auth_state(c2, "authorizationStateWaitTdlibParameters");

    expect_ok(c1, "{\"@type\":\"close\"}");
    expect_auth_state(c1, "authorizationStateClosing");
    expect_auth_state(c1, "authorizationStateClosed");
    int lost = send_req(c1, "{\"@type\":\"getMe\"}");

    /* The same directory, the wrong key, then the right one: Ready at once. */
    expect_error(c2, params(db, 94575, "b3RoZXI="), 401, "Wrong database encryption key");
    expect_ok(c2, params(db, 94575, "a2V5"));
    expect_auth_state(c2, "authorizationStateReady");
    assert_null(take(c1, lost, NULL, 0)); /* requests are handled in order */
    client = c2;
}

/* loadChats until 404: every chat type's shape; getChat, groups, users. */
static void test_chats(void **state)
{
    (void)state;
    json_t *chats = json_array();
    for (int calls = 0;; calls++) {
        assert_true(calls < 10);
        json_t *o = call(client, "{\"@type\":\"loadChats\",\"chat_list\":{\"@type\":"
                                 "\"chatListMain\"},\"limit\":10}");
        if (!strcmp(str(o, "@type"), "error")) {
            assert_int_equal(num(o, "code"), 404);
            json_decref(o);
            assert_int_equal(calls, 2); /* load_chats_per_call 2 of 4 chats */
            break;
        }
        assert_string_equal(str(o, "@type"), "ok");
        json_decref(o);
        for (int k = 0; k < 2; k++) { /* the updates precede the ok */
            json_t *u = wait_update(client, "updateNewChat");
            json_array_append(chats, json_object_get(u, "chat"));
            json_decref(u);
        }
    }
    assert_int_equal(json_array_size(chats), 4);
    json_t *t;
    t = json_object_get(json_array_get(chats, 0), "type");
    assert_string_equal(str(t, "@type"), "chatTypePrivate");
    assert_int_equal(num(t, "user_id"), 42);
    t = json_object_get(json_array_get(chats, 1), "type");
    assert_string_equal(str(t, "@type"), "chatTypeBasicGroup");
    assert_int_equal(num(t, "basic_group_id"), 4001);
    t = json_object_get(json_array_get(chats, 2), "type");
    assert_string_equal(str(t, "@type"), "chatTypeSupergroup");
    assert_int_equal(num(t, "supergroup_id"), 1234567890);
    assert_false(json_is_true(json_object_get(t, "is_channel")));
    json_t *last = json_object_get(json_array_get(chats, 2), "last_message");
    assert_int_equal(num(last, "id"), 1000LL << 20);
    assert_string_equal(str(json_object_get(json_object_get(last, "content"), "text"), "text"),
                        "Big group message 1000");
    t = json_object_get(json_array_get(chats, 3), "type");
    assert_int_equal(num(t, "supergroup_id"), 9876543210LL);
    assert_true(json_is_true(json_object_get(t, "is_channel")));
    json_t *pos = json_array_get(json_object_get(json_array_get(chats, 3), "positions"), 0);
    assert_true(json_is_string(json_object_get(pos, "order")));
    json_decref(chats);

    json_t *o = call(client, "{\"@type\":\"getChat\",\"chat_id\":-1009876543210}");
    assert_string_equal(str(o, "title"), "News");
    json_decref(o);
    expect_error(client, "{\"@type\":\"getChat\",\"chat_id\":5}", 400, "Chat not found");
    o = call(client, "{\"@type\":\"getSupergroup\",\"supergroup_id\":9876543210}");
    assert_string_equal(str(o, "@type"), "supergroup");
    assert_string_equal(
        json_string_value(json_array_get(
            json_object_get(json_object_get(o, "usernames"), "active_usernames"), 0)),
        "newsch");
    json_decref(o);
    o = call(client, "{\"@type\":\"getBasicGroup\",\"basic_group_id\":4001}");
    assert_int_equal(num(o, "member_count"), 2);
    json_decref(o);
    o = call(client, "{\"@type\":\"getChats\",\"chat_list\":{\"@type\":\"chatListMain\"},"
                     "\"limit\":3}");
    assert_int_equal(num(o, "total_count"), 4);
    assert_int_equal(json_array_size(json_object_get(o, "chat_ids")), 3);
    json_decref(o);
    o = call(client, "{\"@type\":\"getUser\",\"user_id\":42}");
    assert_string_equal(str(o, "first_name"), "Bob");
    json_decref(o);
    expect_error(client, "{\"@type\":\"getUser\",\"user_id\":43}", 404, "User not found");
    expect_error(client, "{\"@type\":\"fooBar\"}", 400, "Unknown method \"fooBar\"");
    o = call(client, "{\"@type\":\"getOption\",\"name\":\"my_id\"}");
    assert_string_equal(str(o, "value"), "777000111");
    json_decref(o);
}

static json_t *get_message(json_int_t chat, json_int_t server)
{
    char req[160];
    snprintf(req, sizeof req, "{\"@type\":\"getMessage\",\"chat_id\":%lld,\"message_id\":%lld}",
             (long long)chat, (long long)(server << 20));
    return call(client, req);
}

static void sleep_s(json_int_t s)
{
    struct timespec ts = {.tv_sec = (time_t)s};
    nanosleep(&ts, NULL);
}

/* The 1,000-message supergroup paged from the newest to its start, as the
 * backfill does: the first page holds one message, pages start at (and
 * include) from_message_id, a FloodWait on the way is waited out and the
 * request repeated; the start is a page without a new id. */
static void test_history(void **state)
{
    (void)state;
    static bool seen[1001];
    int distinct = 0, floods = 0, pages = 0;
    json_int_t from = 0;
    for (;;) {
        assert_true(pages++ < 200);
        char req[256];
        snprintf(req, sizeof req,
                 "{\"@type\":\"getChatHistory\",\"chat_id\":-1001234567890,"
                 "\"from_message_id\":%lld,\"offset\":0,\"limit\":100,\"only_local\":false}",
                 (long long)from);
        json_t *o = call(client, req);
        if (!strcmp(str(o, "@type"), "error")) {
            assert_int_equal(num(o, "code"), 429);
            const char *m = str(o, "message");
            const char *prefix = "Too Many Requests: retry after ";
            assert_int_equal(strncmp(m, prefix, strlen(prefix)), 0);
            json_int_t secs = strtoll(m + strlen(prefix), NULL, 10);
            assert_int_equal(secs, 1);
            floods++;
            json_decref(o);
            sleep_s(secs);
            continue;
        }
        assert_string_equal(str(o, "@type"), "messages");
        json_t *msgs = json_object_get(o, "messages");
        if (from == 0)
            assert_int_equal(json_array_size(msgs), 1);
        else
            assert_true(json_array_size(msgs) <= 50);
        assert_int_equal(num(o, "total_count"), (json_int_t)json_array_size(msgs));
        int fresh = 0;
        size_t i;
        json_t *m;
        json_int_t prev = 0;
        json_array_foreach(msgs, i, m)
        {
            json_int_t id = num(m, "id");
            assert_int_equal(id % (1 << 20), 0);
            json_int_t server = id >> 20;
            assert_true(server >= 1 && server <= 1000);
            if (prev)
                assert_true(id < prev); /* newest first */
            prev = id;
            if (i == 0 && from != 0)
                assert_int_equal(id, from); /* inclusive */
            if (!seen[server]) {
                seen[server] = true;
                distinct++;
                fresh++;
            }
            from = id;
        }
        json_decref(o);
        if (fresh == 0)
            break;
    }
    assert_int_equal(distinct, 1000);
    assert_int_equal(floods, 1);

    json_t *o = call(client, "{\"@type\":\"getMessage\",\"chat_id\":-1001234567890,"
                             "\"message_id\":1048576}");
    assert_string_equal(str(json_object_get(json_object_get(o, "content"), "text"), "text"),
                        "Big group message 1");
    assert_int_equal(num(o, "date"), 1700000060);
    assert_int_equal(num(json_object_get(o, "sender_id"), "user_id"), 42);
    assert_false(json_is_true(json_object_get(o, "is_outgoing")));
    json_decref(o);
    o = call(client, "{\"@type\":\"getMessage\",\"chat_id\":-1009876543210,"
                     "\"message_id\":5242880}");
    assert_string_equal(str(json_object_get(o, "sender_id"), "@type"), "messageSenderChat");
    json_decref(o);
    o = get_message(42, 35); /* the script's explicit history */
    assert_int_equal(num(o, "chat_id"), 42);
    assert_string_equal(str(json_object_get(json_object_get(o, "content"), "text"), "text"),
                        "explicit");
    json_decref(o);
    expect_error(client, "{\"@type\":\"getMessage\",\"chat_id\":42,\"message_id\":1}", 404,
                 "Not Found");
    expect_error(client, "{\"@type\":\"getChatHistory\",\"chat_id\":42,\"limit\":101}", 400,
                 "Parameter limit must be positive and not greater than 100");
}

/* sendMessage: a pending message with a temporary id, then its final id
 * in the history. */
static void test_send(void **state)
{
    (void)state;
    expect_error(client,
                 "{\"@type\":\"sendMessage\",\"chat_id\":42,\"input_message_content\":{\"@type\":"
                 "\"inputMessageText\",\"text\":{\"@type\":\"formattedText\",\"text\":\"\"}}}",
                 400, "Message must be non-empty");
    expect_error(client,
                 "{\"@type\":\"sendMessage\",\"chat_id\":7,\"input_message_content\":{\"@type\":"
                 "\"inputMessageText\",\"text\":{\"@type\":\"formattedText\",\"text\":\"x\"}}}",
                 400, "Chat not found");
    json_t *o = call(client, "{\"@type\":\"sendMessage\",\"chat_id\":42,\"message_thread_id\":0,"
                             "\"reply_to\":null,\"input_message_content\":{\"@type\":"
                             "\"inputMessageText\",\"text\":{\"@type\":\"formattedText\","
                             "\"text\":\"hello Bob\"}}}");
    assert_string_equal(str(o, "@type"), "message");
    json_int_t temp = num(o, "id");
    assert_int_not_equal(temp % (1 << 20), 0);
    assert_string_equal(str(json_object_get(o, "sending_state"), "@type"),
                        "messageSendingStatePending");
    assert_true(json_is_true(json_object_get(o, "is_outgoing")));
    json_decref(o);
    o = wait_update(client, "updateNewMessage");
    assert_int_equal(num(json_object_get(o, "message"), "id"), temp);
    json_decref(o);
    o = wait_update(client, "updateMessageSendSucceeded");
    assert_int_equal(num(o, "old_message_id"), temp);
    json_int_t final = num(json_object_get(o, "message"), "id");
    assert_int_equal(final, 36LL << 20); /* after the script's explicit message 35 */
    assert_null(json_object_get(json_object_get(o, "message"), "sending_state"));
    json_decref(o);
    char req[128];
    snprintf(req, sizeof req, "{\"@type\":\"getMessage\",\"chat_id\":42,\"message_id\":%lld}",
             (long long) final);
    o = call(client, req);
    assert_string_equal(str(json_object_get(json_object_get(o, "content"), "text"), "text"),
                        "hello Bob");
    json_decref(o);
}

/* The script's live message and an inbox file of an edit, a deletion and a
 * cache eviction, each applied to the fake's state. */
static void test_live(void **state)
{
    (void)state;
    json_t *o = wait_update(client, "updateNewMessage");
    assert_int_equal(num(json_object_get(o, "message"), "id"), 11LL << 20);
    json_decref(o);
    o = get_message(-4001, 11);
    assert_string_equal(str(json_object_get(json_object_get(o, "content"), "text"), "text"),
                        "live hello");
    json_decref(o);

    char tmp[300], final[300];
    snprintf(tmp, sizeof tmp, "%s/01.tmp", inbox);
    snprintf(final, sizeof final, "%s/01.json", inbox);
    write_file(tmp, "[{\"@type\":\"updateMessageContent\",\"chat_id\":-4001,\"message_id\":"
                    "1048576,\"new_content\":{\"@type\":\"messageText\",\"text\":{\"@type\":"
                    "\"formattedText\",\"text\":\"edited\",\"entities\":[]}}},"
                    "{\"@type\":\"updateMessageEdited\",\"chat_id\":-4001,\"message_id\":1048576,"
                    "\"edit_date\":1700009999},"
                    "{\"@type\":\"updateDeleteMessages\",\"chat_id\":-4001,\"message_ids\":"
                    "[2097152],\"is_permanent\":true,\"from_cache\":false},"
                    "{\"@type\":\"updateDeleteMessages\",\"chat_id\":-4001,\"message_ids\":"
                    "[3145728],\"is_permanent\":false,\"from_cache\":true}]");
    assert_int_equal(rename(tmp, final), 0);
    json_decref(wait_update(client, "updateMessageContent"));
    json_decref(wait_update(client, "updateMessageEdited"));
    json_decref(wait_update(client, "updateDeleteMessages"));
    json_decref(wait_update(client, "updateDeleteMessages"));
    struct stat st;
    assert_int_not_equal(stat(final, &st), 0);
    o = get_message(-4001, 1);
    assert_string_equal(str(json_object_get(json_object_get(o, "content"), "text"), "text"),
                        "edited");
    assert_int_equal(num(o, "edit_date"), 1700009999);
    json_decref(o);
    o = get_message(-4001, 2);
    assert_string_equal(str(o, "@type"), "error");
    json_decref(o);
    o = get_message(-4001, 3);
    assert_string_equal(str(o, "@type"), "message");
    json_decref(o);
}

/* Dialog and message searches; paging by next_from_message_id. */
static void test_search(void **state)
{
    (void)state;
    json_t *o = call(client, "{\"@type\":\"searchChatsOnServer\",\"query\":\"NEWS\",\"limit\":10}");
    assert_int_equal(num(o, "total_count"), 1);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(o, "chat_ids"), 0)),
                     -1009876543210LL);
    json_decref(o);
    o = call(client, "{\"@type\":\"searchPublicChats\",\"query\":\"newsch\"}");
    assert_int_equal(num(o, "total_count"), 1);
    json_decref(o);
    o = call(client, "{\"@type\":\"searchMessages\",\"chat_list\":null,\"query\":"
                     "\"big group message 99\",\"offset\":\"\",\"limit\":100}");
    assert_string_equal(str(o, "@type"), "foundMessages");
    assert_int_equal(num(o, "total_count"), 11); /* 99, 990..999 */
    assert_string_equal(str(o, "next_offset"), "");
    assert_int_equal(num(json_array_get(json_object_get(o, "messages"), 0), "id"), 999LL << 20);
    json_decref(o);
    /* Team: 1 edited, 2 deleted, 3..10 and the live one left: 8 match. */
    json_int_t from = 0;
    int got = 0;
    for (int pages = 0; pages < 10; pages++) {
        char req[200];
        snprintf(req, sizeof req,
                 "{\"@type\":\"searchChatMessages\",\"chat_id\":-4001,\"query\":\"team "
                 "message\",\"from_message_id\":%lld,\"offset\":0,\"limit\":3}",
                 (long long)from);
        o = call(client, req);
        assert_string_equal(str(o, "@type"), "foundChatMessages");
        assert_int_equal(num(o, "total_count"), 8);
        got += (int)json_array_size(json_object_get(o, "messages"));
        from = num(o, "next_from_message_id");
        json_decref(o);
        if (!from)
            break;
    }
    assert_int_equal(got, 8);
}

/* A stalled method is never answered; the client keeps answering. */
static void test_stall(void **state)
{
    (void)state;
    int stalled = send_req(client, "{\"@type\":\"getChatAdministrators\",\"chat_id\":-4001}");
    json_t *o = call(client, "{\"@type\":\"getMe\"}");
    assert_string_equal(str(o, "@type"), "user");
    json_decref(o);
    assert_null(take(client, stalled, NULL, 0));
}

/* close: Closing, Closed, the lock released; logOut forgets the login. */
static void test_close(void **state)
{
    (void)state;
    expect_ok(client, "{\"@type\":\"close\"}");
    expect_auth_state(client, "authorizationStateClosing");
    expect_auth_state(client, "authorizationStateClosed");

    int c = td_create();
    expect_ok(c, params(db, 94575, "a2V5"));
    expect_auth_state(c, "authorizationStateWaitTdlibParameters");
    expect_auth_state(c, "authorizationStateReady");
    expect_ok(c, "{\"@type\":\"logOut\"}");
    expect_auth_state(c, "authorizationStateLoggingOut");
    expect_auth_state(c, "authorizationStateClosing");
    expect_auth_state(c, "authorizationStateClosed");
    int again = td_create();
    expect_ok(again, params(db, 94575, "a2V5"));
    expect_auth_state(again, "authorizationStateWaitTdlibParameters");
    expect_auth_state(again, "authorizationStateWaitPhoneNumber");
    expect_ok(again, "{\"@type\":\"close\"}");
}

static char self[512];

/* Without a script (FAKE_TDJSON_SCRIPT unset or naming no valid file)
 * every request answers error 500: a child process of this binary, since
 * the script is read once per process. */
static int no_script_main(void)
{
    void *h = dlopen(FAKE_TDJSON_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 2;
    create_fn create = (create_fn)dlsym(h, "td_create_client_id");
    send_fn send = (send_fn)dlsym(h, "td_send");
    receive_fn receive = (receive_fn)dlsym(h, "td_receive");
    int c = create();
    send(c, "{\"@type\":\"getAuthorizationState\",\"@extra\":7}");
    int rc = 3;
    for (int i = 0; i < 50 && rc == 3; i++) {
        const char *r = receive(0.2);
        json_t *o = r ? json_loads(r, 0, NULL) : NULL;
        if (o && json_integer_value(json_object_get(o, "@extra")) == 7)
            rc = num(o, "code") == 500 && !strcmp(str(o, "message"), "fake_tdjson: no script") ? 0
                                                                                               : 4;
        json_decref(o);
    }
    dlclose(h);
    return rc;
}

static void test_no_script(void **state)
{
    (void)state;
    assert_int_equal(test_sh("env -u FAKE_TDJSON_SCRIPT '%s' --no-script", self), 0);
    assert_int_equal(
        test_sh("env FAKE_TDJSON_SCRIPT=/nonexistent/script.json '%s' --no-script", self), 0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--no-script"))
        return no_script_main();
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = '\0';
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_execute), cmocka_unit_test(test_login),
        cmocka_unit_test(test_chats),   cmocka_unit_test(test_history),
        cmocka_unit_test(test_live),    cmocka_unit_test(test_send),
        cmocka_unit_test(test_search),  cmocka_unit_test(test_stall),
        cmocka_unit_test(test_close),   cmocka_unit_test(test_no_script),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
