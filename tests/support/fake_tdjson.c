/* fake_tdjson: a libtdjson for tests. Built as libfake_tdjson.so and
 * loaded with dlopen in place of TDLib's own libtdjson, it speaks TDLib's
 * JSON interface (td_json_client.h of TDLib 1.8.x: td_create_client_id,
 * td_send, td_receive, td_execute) with TDLib's object shapes
 * (td_api.tl) and replays a scripted account: login with a code and a 2FA
 * password, chats of each type, long histories, FloodWait, live updates,
 * edits, deletions and sending. No network, no TDLib.
 *
 * Threads, as TDLib's: td_send is thread-safe and only queues the request;
 * td_receive is called from ONE thread, processes the queued requests,
 * blocks up to `timeout` seconds for the next object and returns NULL on
 * timeout; its string stays valid until the next td_receive call.
 * td_execute answers synchronously into a thread-local buffer valid until
 * the next td_execute on that thread. One mutex and one condition variable
 * (CLOCK_MONOTONIC) guard everything. Each client (td_create_client_id)
 * has its own state and sends nothing until its first request (as TDLib:
 * "the instance will not send updates until the first request is sent to
 * it"); then updateOption "version" and updateAuthorizationState
 * authorizationStateWaitTdlibParameters come first. Every object carries
 * "@client_id"; answers carry the request's "@extra" as given; updates
 * carry none. Auth state changes are updates, sent after the `ok`.
 *
 * The script: the environment variable FAKE_TDJSON_SCRIPT names a JSON
 * file read at the first td_create_client_id (missing or invalid: every
 * request answers error 500 "fake_tdjson: no script"). One object:
 *
 *   phone            "+15550001"  setAuthenticationPhoneNumber's number
 *                                 (digits compared, "+1 555-0001" matches)
 *   code             "12345"      the login code
 *   password         "hunter2"    the 2FA password; absent: no 2FA
 *   password_hint    "pet"
 *   user             {id, first_name, last_name, username, phone_number,
 *                     is_contact, bot}            the account's user
 *   users            [user...]                    other users (senders)
 *   chats            [{id, type: "private"|"basic_group"|"supergroup"|
 *                      "channel", title, user_id (private), username,
 *                      member_count, messages: N, senders: [user ids],
 *                      history: [message objects], public: true (a chat
 *                      not joined: outside the chat list, found only by
 *                      searchPublicChats, which finds chats with a
 *                      username)}]
 *   load_chats_per_call  chats per loadChats (default 100)
 *   history_page_max     most messages per getChatHistory (default 100)
 *   flood_wait       {method, after_calls, seconds}: the (after_calls+1)-th
 *                    call of method answers 429 "Too Many Requests: retry
 *                    after <seconds>", later calls within those seconds
 *                    answer the same error with the seconds left (rounded
 *                    up), then the method answers normally again (once per
 *                    client)
 *   stall_methods    [method names]: never answered
 *   connection_state "connectionStateConnecting": sent as updateConnectionState
 *                    right after the client's first updates (absent: none,
 *                    as TDLib before it reports one)
 *   live             [{after_ms, update}]: sent (and applied) after_ms after
 *                    the client becomes ready
 *   inbox            a directory polled every 100 ms by td_receive while a
 *                    client is ready: each *.json file (one update object
 *                    or an array of them) is applied and sent to every
 *                    ready client, then deleted (write it under another
 *                    name and rename it in; an unparsable file is retried)
 *   start_date       unix time of message 0 (default 1700000000)
 *
 * A chat's `messages: N` makes messages with server ids 1..N (TDLib ids
 * server id << 20), text "<title> message <n>", date start_date + n*60,
 * sender senders[(n-1) % len] (default: the chat's user_id in a private
 * chat, the chat itself (messageSenderChat) in a channel, the account's
 * user elsewhere); is_outgoing when the sender is the account's user.
 * `history` adds explicit message objects (TDLib ids; chat_id filled in).
 * basic_group_id = -chat_id; supergroup_id = -(chat_id + 10^12).
 *
 * Behaviour worth knowing (see also tests/unit/test_fake_tdjson.c):
 * - setTdlibParameters: api_id 0 / empty api_hash -> 400; the
 *   database_directory must exist (never created here) -> else 400 naming
 *   it; <dir>/td.binlog is created 0600 and flock(LOCK_EX|LOCK_NB)ed, held
 *   until close/logOut (a second client on the directory: 400 "Can't lock
 *   file ..."); <dir>/fake_td.json {authorized, key, user_id} remembers a
 *   login (getMe then answers user_id, the script's user otherwise: a
 *   script rewritten between two logins makes two users): the same
 *   database_encryption_key goes straight to Ready, another
 *   answers 401 "Wrong database encryption key" (state unchanged).
 * - Before Ready everything but the auth methods, getAuthorizationState,
 *   getOption, close and logOut answers 401 "Unauthorized"; an unknown
 *   @type answers 400 "Unknown method \"name\"".
 * - getChatHistory, searches, sendMessage and the updates the fake
 *   applies: see fake_tdjson_chats.c; administration, joining and adding
 *   members (and the script fields they read): fake_tdjson_admin.c.
 * - close: ok, Closing, Closed (lock released); logOut: ok, LoggingOut,
 *   Closing, Closed, fake_td.json deleted. A closed client answers nothing.
 *   With FAKE_TDJSON_ENDINGS set to a file, each adds a line to it:
 *   "close DIR" or "logOut DIR".
 * - td_execute: getTextEntities (@mentions, http(s) URLs; offsets in UTF-16
 *   units), setLogVerbosityLevel, getOption "version"; else error 400.
 *
 * - downloadFile, deleteFile and documents sent: see fake_tdjson_files.c.
 *
 * This file owns the four exported functions, the clients and their
 * request and output queues, the script, users and the login (auth
 * states, setTdlibParameters' directory, lock and key, close and logOut),
 * the method table with stalls and FloodWait, and td_execute;
 * fake_tdjson_chats.c owns chats, messages, history, search, sending and
 * the updates applied to them (live and inbox). Shared declarations:
 * fake_tdjson_internal.h. */
#include "fake_tdjson_internal.h"

#include <ctype.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

__attribute__((visibility("default"))) int td_create_client_id(void);
__attribute__((visibility("default"))) void td_send(int client_id, const char *request);
__attribute__((visibility("default"))) const char *td_receive(double timeout);
__attribute__((visibility("default"))) const char *td_execute(const char *request);

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_inited;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv;
static pthread_key_t g_exec_key;
static bool g_script_read;
json_t *fake__script;
fake_client_t **fake__clients;
size_t fake__nclients;
static fake_req_t *g_req_head;
static fake_req_t **g_req_tail = &g_req_head;
static fake_out_t *g_out;
static char *g_received;
static uint64_t g_next_poll_ms;

static void init_once(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&g_cv, &a);
    pthread_condattr_destroy(&a);
    pthread_key_create(&g_exec_key, free);
    g_inited = true;
}

uint64_t fake__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

json_int_t fake__script_int(const char *name, json_int_t dflt)
{
    json_t *v = json_object_get(fake__script, name);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

const char *fake__str_of(json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));
    return s ? s : "";
}

/* ---- output queue ---- */

/* Queues obj (stolen) for client cid after delay_ms. With apply, the
 * update changes the client's state first: now when it is due now, else
 * at delivery. */

void fake__out_push(int cid, json_t *obj, uint64_t delay_ms, bool apply, bool drop_if_closed)
{
    if (apply && delay_ms == 0) {
        fake_client_t *c = fake__client_find(cid);
        if (c)
            fake__apply_update(c, obj);
        apply = false;
    }
    fake_out_t *o = calloc(1, sizeof *o);
    if (!o)
        abort();
    o->due_ms = fake__now_ms() + delay_ms;
    o->client_id = cid;
    o->apply = apply;
    o->drop_if_closed = drop_if_closed;
    o->obj = obj;
    fake_out_t **p = &g_out;
    while (*p && (*p)->due_ms <= o->due_ms)
        p = &(*p)->next;
    o->next = *p;
    *p = o;
    pthread_cond_signal(&g_cv);
}

void fake__answer(fake_client_t *c, json_t *extra, json_t *obj)
{
    if (extra)
        json_object_set(obj, "@extra", extra);
    fake__out_push(c->id, obj, 0, false, false);
}

void fake__answer_ok(fake_client_t *c, json_t *extra)
{
    fake__answer(c, extra, json_pack("{s:s}", "@type", "ok"));
}

void fake__answer_error(fake_client_t *c, json_t *extra, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fake__answer(c, extra,
                 json_pack("{s:s,s:i,s:s}", "@type", "error", "code", code, "message", msg));
}

void fake__update(fake_client_t *c, json_t *obj)
{
    fake__out_push(c->id, obj, 0, false, false);
}

/* ---- objects ---- */

json_t *fake__user_object(json_t *u)
{
    json_t *o = json_pack(
        "{s:s,s:I,s:s,s:s,s:s,s:{s:s},s:b,s:b}", "@type", "user", "id",
        json_integer_value(json_object_get(u, "id")), "first_name", fake__str_of(u, "first_name"),
        "last_name", fake__str_of(u, "last_name"), "phone_number", fake__str_of(u, "phone_number"),
        "type", "@type",
        json_is_true(json_object_get(u, "bot")) ? "userTypeBot" : "userTypeRegular", "is_contact",
        json_is_true(json_object_get(u, "is_contact")), "is_mutual_contact", 0);
    const char *un = json_string_value(json_object_get(u, "username"));
    if (un && *un)
        json_object_set_new(o, "usernames",
                            json_pack("{s:s,s:[s],s:[],s:s}", "@type", "usernames",
                                      "active_usernames", un, "disabled_usernames",
                                      "editable_username", un));
    return o;
}

json_int_t fake__me_id(void)
{
    return json_integer_value(json_object_get(json_object_get(fake__script, "user"), "id"));
}

static json_t *user_find(json_int_t id)
{
    json_t *me = json_object_get(fake__script, "user");
    if (me && json_integer_value(json_object_get(me, "id")) == id)
        return me;
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(fake__script, "users"), i, u)
    {
        if (json_integer_value(json_object_get(u, "id")) == id)
            return u;
    }
    return NULL;
}

/* ---- clients ---- */

fake_client_t *fake__client_find(int id)
{
    return id >= 1 && (size_t)id <= fake__nclients ? fake__clients[id - 1] : NULL;
}

static void client_unlock(fake_client_t *c)
{
    if (c->lock_fd >= 0)
        close(c->lock_fd);
    c->lock_fd = -1;
}

static void client_free(fake_client_t *c)
{
    client_unlock(c);
    free(c->db_dir);
    free(c->key);
    json_decref(c->chats);
    free(c);
}

static void auth_update(fake_client_t *c, json_t *state)
{
    fake__update(c, json_pack("{s:s,s:o}", "@type", "updateAuthorizationState",
                              "authorization_state", state));
}

static json_t *state_plain(const char *type)
{
    return json_pack("{s:s}", "@type", type);
}

static json_t *state_wait_code(void)
{
    return json_pack("{s:s,s:{s:s,s:s,s:{s:s,s:i},s:i}}", "@type", "authorizationStateWaitCode",
                     "code_info", "@type", "authenticationCodeInfo", "phone_number",
                     fake__str_of(fake__script, "phone"), "type", "@type",
                     "authenticationCodeTypeSms", "length",
                     (int)strlen(fake__str_of(fake__script, "code")), "timeout", 0);
}

static json_t *state_wait_password(void)
{
    return json_pack("{s:s,s:s,s:b,s:s}", "@type", "authorizationStateWaitPassword",
                     "password_hint", fake__str_of(fake__script, "password_hint"),
                     "has_recovery_email_address", 0, "recovery_email_address_pattern", "");
}

static json_t *state_object(fake_client_t *c)
{
    switch (c->state) {
    case ST_WAIT_PARAMS:
        return state_plain("authorizationStateWaitTdlibParameters");
    case ST_WAIT_PHONE:
        return state_plain("authorizationStateWaitPhoneNumber");
    case ST_WAIT_CODE:
        return state_wait_code();
    case ST_WAIT_PASSWORD:
        return state_wait_password();
    case ST_READY:
        return state_plain("authorizationStateReady");
    case ST_CLOSED:
        break;
    }
    return state_plain("authorizationStateClosed");
}

char *fake__path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    char *p = malloc(n + strlen(name) + 2);
    if (!p)
        abort();
    sprintf(p, "%.*s/%s", (int)n, dir, name);
    return p;
}

static void go_ready(fake_client_t *c)
{
    char *p = fake__path_in(c->db_dir, "fake_td.json");
    json_t *st = json_pack("{s:b,s:s,s:I}", "authorized", 1, "key", c->key, "user_id",
                           c->me_id ? c->me_id : fake__me_id());
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        json_dumpfd(st, fd, JSON_COMPACT);
        close(fd);
    }
    json_decref(st);
    free(p);
    c->state = ST_READY;
    fake__update(c, json_pack("{s:s,s:o}", "@type", "updateUser", "user",
                              fake__user_object(json_object_get(fake__script, "user"))));
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(fake__script, "users"), i, u)
    {
        fake__update(c,
                     json_pack("{s:s,s:o}", "@type", "updateUser", "user", fake__user_object(u)));
    }
    auth_update(c, state_plain("authorizationStateReady"));
    fake__schedule_live(c);
}

/* ---- requests ---- */

static void unexpected(fake_client_t *c, json_t *req, json_t *extra)
{
    fake__answer_error(c, extra, 400, "Call to %s unexpected", fake__str_of(req, "@type"));
}

static bool digits_equal(const char *a, const char *b)
{
    for (;;) {
        while (*a && !isdigit((unsigned char)*a))
            a++;
        while (*b && !isdigit((unsigned char)*b))
            b++;
        if (*a != *b)
            return false;
        if (!*a)
            return true;
        a++;
        b++;
    }
}

static void h_set_params(fake_client_t *c, json_t *req, json_t *extra)
{
    if (c->state != ST_WAIT_PARAMS) {
        unexpected(c, req, extra);
        return;
    }
    if (json_integer_value(json_object_get(req, "api_id")) <= 0 ||
        !*fake__str_of(req, "api_hash")) {
        fake__answer_error(
            c, extra, 400,
            "Valid api_id must be provided. Can be obtained at https://my.telegram.org");
        return;
    }
    const char *dir = fake__str_of(req, "database_directory");
    struct stat st;
    if (!*dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fake__answer_error(c, extra, 400, "Can't open database directory \"%s\": %s", dir,
                           *dir ? strerror(errno ? errno : ENOTDIR) : "not given");
        return;
    }
    char *bin = fake__path_in(dir, "td.binlog");
    int fd = open(bin, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        fake__answer_error(c, extra, 400, "Can't open file \"%s\": %s", bin, strerror(errno));
        free(bin);
        return;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        fake__answer_error(c, extra, 400,
                           "Can't lock file \"%s\", because it is already in use; check that the "
                           "database_directory is not used by another client",
                           bin);
        close(fd);
        free(bin);
        return;
    }
    free(bin);
    const char *key = fake__str_of(req, "database_encryption_key");
    char *sp = fake__path_in(dir, "fake_td.json");
    json_t *saved = json_load_file(sp, 0, NULL);
    free(sp);
    bool authorized = json_is_true(json_object_get(saved, "authorized"));
    if (authorized && strcmp(fake__str_of(saved, "key"), key) != 0) {
        json_decref(saved);
        close(fd);
        fake__answer_error(c, extra, 401, "Wrong database encryption key");
        return;
    }
    if (authorized && json_integer_value(json_object_get(saved, "user_id")) != fake__me_id())
        c->me_id = json_integer_value(json_object_get(saved, "user_id"));
    json_decref(saved);
    c->lock_fd = fd;
    c->db_dir = strdup(dir);
    c->key = strdup(key);
    if (!c->db_dir || !c->key)
        abort();
    fake__answer_ok(c, extra);
    if (authorized) {
        go_ready(c);
    } else {
        c->state = ST_WAIT_PHONE;
        auth_update(c, state_plain("authorizationStateWaitPhoneNumber"));
    }
}

static void h_phone(fake_client_t *c, json_t *req, json_t *extra)
{
    if (c->state != ST_WAIT_PHONE) {
        unexpected(c, req, extra);
        return;
    }
    if (!digits_equal(fake__str_of(req, "phone_number"), fake__str_of(fake__script, "phone")) ||
        !*fake__str_of(req, "phone_number")) {
        fake__answer_error(c, extra, 400, "PHONE_NUMBER_INVALID");
        return;
    }
    fake__answer_ok(c, extra);
    c->state = ST_WAIT_CODE;
    auth_update(c, state_wait_code());
}

static void h_code(fake_client_t *c, json_t *req, json_t *extra)
{
    if (c->state != ST_WAIT_CODE) {
        unexpected(c, req, extra);
        return;
    }
    if (strcmp(fake__str_of(req, "code"), fake__str_of(fake__script, "code")) != 0) {
        fake__answer_error(c, extra, 400, "PHONE_CODE_INVALID");
        return;
    }
    fake__answer_ok(c, extra);
    if (json_is_string(json_object_get(fake__script, "password"))) {
        c->state = ST_WAIT_PASSWORD;
        auth_update(c, state_wait_password());
    } else {
        go_ready(c);
    }
}

static void h_password(fake_client_t *c, json_t *req, json_t *extra)
{
    if (c->state != ST_WAIT_PASSWORD) {
        unexpected(c, req, extra);
        return;
    }
    if (strcmp(fake__str_of(req, "password"), fake__str_of(fake__script, "password")) != 0) {
        fake__answer_error(c, extra, 400, "PASSWORD_HASH_INVALID");
        return;
    }
    fake__answer_ok(c, extra);
    go_ready(c);
}

static void h_get_auth_state(fake_client_t *c, json_t *req, json_t *extra)
{
    (void)req;
    fake__answer(c, extra, state_object(c));
}

static json_t *option_version(void)
{
    return json_pack("{s:s,s:s}", "@type", "optionValueString", "value", FAKE_VERSION);
}

static void h_get_option(fake_client_t *c, json_t *req, json_t *extra)
{
    const char *name = fake__str_of(req, "name");
    if (!strcmp(name, "version")) {
        fake__answer(c, extra, option_version());
    } else if (!strcmp(name, "my_id") && c->state == ST_READY) {
        char v[32];
        snprintf(v, sizeof v, "%lld", (long long)fake__me_id());
        fake__answer(c, extra, json_pack("{s:s,s:s}", "@type", "optionValueInteger", "value", v));
    } else {
        fake__answer(c, extra, json_pack("{s:s}", "@type", "optionValueEmpty"));
    }
}

static void finish(fake_client_t *c, json_t *extra, bool logout)
{
    /* FAKE_TDJSON_ENDINGS names a file that gets a line for each client
     * ended: "close DIR" or "logOut DIR" (the tests see which). */
    const char *log = getenv("FAKE_TDJSON_ENDINGS");
    FILE *f = log && log[0] ? fopen(log, "a") : NULL;
    if (f != NULL) {
        fprintf(f, "%s %s\n", logout ? "logOut" : "close", c->db_dir ? c->db_dir : "");
        fclose(f);
    }
    fake__answer_ok(c, extra);
    if (logout) {
        auth_update(c, state_plain("authorizationStateLoggingOut"));
        if (c->db_dir) {
            char *p = fake__path_in(c->db_dir, "fake_td.json");
            unlink(p);
            free(p);
        }
    }
    auth_update(c, state_plain("authorizationStateClosing"));
    client_unlock(c);
    c->state = ST_CLOSED;
    auth_update(c, state_plain("authorizationStateClosed"));
}

static void h_close(fake_client_t *c, json_t *req, json_t *extra)
{
    (void)req;
    finish(c, extra, false);
}

static void h_logout(fake_client_t *c, json_t *req, json_t *extra)
{
    (void)req;
    finish(c, extra, true);
}

static void h_get_me(fake_client_t *c, json_t *req, json_t *extra)
{
    (void)req;
    json_t *me = json_deep_copy(json_object_get(fake__script, "user"));
    if (me && c->me_id != 0) /* signed in by another script: that user */
        json_object_set_new(me, "id", json_integer(c->me_id));
    fake__answer(c, extra, fake__user_object(me));
    json_decref(me);
}

static void h_get_user(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *u = user_find(json_integer_value(json_object_get(req, "user_id")));
    if (u)
        fake__answer(c, extra, fake__user_object(u));
    else
        fake__answer_error(c, extra, 404, "User not found");
}

static const fake_method_t k_methods[] = {
    {"setTdlibParameters", h_set_params, false},
    {"setAuthenticationPhoneNumber", h_phone, false},
    {"checkAuthenticationCode", h_code, false},
    {"checkAuthenticationPassword", h_password, false},
    {"getAuthorizationState", h_get_auth_state, false},
    {"getOption", h_get_option, false},
    {"close", h_close, false},
    {"logOut", h_logout, false},
    {"getMe", h_get_me, true},
    {"getUser", h_get_user, true},
};

static bool is_stalled(const char *type)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(fake__script, "stall_methods"), i, m)
    {
        if (!strcmp(json_string_value(m) ? json_string_value(m) : "", type))
            return true;
    }
    return false;
}

/* True when the flood_wait rule refuses this call (the error is sent). */
static bool flood_refuses(fake_client_t *c, const char *type, json_t *extra)
{
    json_t *fw = json_object_get(fake__script, "flood_wait");
    if (!fw || strcmp(fake__str_of(fw, "method"), type) != 0)
        return false;
    uint64_t now = fake__now_ms();
    if (c->flood_until_ms > now) {
        fake__answer_error(c, extra, 429, "Too Many Requests: retry after %llu",
                           (unsigned long long)((c->flood_until_ms - now + 999) / 1000));
        return true;
    }
    if (c->flood_fired)
        return false;
    if (++c->calls != json_integer_value(json_object_get(fw, "after_calls")) + 1)
        return false;
    json_int_t secs = json_integer_value(json_object_get(fw, "seconds"));
    c->flood_fired = true;
    c->flood_until_ms = now + (uint64_t)(secs > 0 ? secs : 0) * 1000;
    fake__answer_error(c, extra, 429, "Too Many Requests: retry after %lld", (long long)secs);
    return true;
}

static void process_request(fake_req_t *r)
{
    fake_client_t *c = fake__client_find(r->client_id);
    if (!c || c->state == ST_CLOSED)
        return;
    if (!c->started) {
        c->started = true;
        fake__update(c, json_pack("{s:s,s:s,s:o}", "@type", "updateOption", "name", "version",
                                  "value", option_version()));
        auth_update(c, state_plain("authorizationStateWaitTdlibParameters"));
        const char *conn = fake__str_of(fake__script, "connection_state");
        if (*conn)
            fake__update(c, json_pack("{s:s,s:{s:s}}", "@type", "updateConnectionState", "state",
                                      "@type", conn));
    }
    json_t *req = json_loads(r->text, 0, NULL);
    json_t *extra = json_object_get(req, "@extra");
    const char *type = json_string_value(json_object_get(req, "@type"));
    const fake_method_t *m = NULL;
    if (!type) {
        fake__answer_error(c, extra, 400, "Failed to parse JSON object as TDLib request");
    } else if (!fake__script) {
        fake__answer_error(c, extra, 500, "fake_tdjson: no script");
    } else if (!is_stalled(type)) {
        for (size_t i = 0; i < sizeof k_methods / sizeof k_methods[0]; i++)
            if (!strcmp(k_methods[i].name, type))
                m = &k_methods[i];
        for (size_t i = 0; i < fake__chat_methods_len; i++)
            if (!strcmp(fake__chat_methods[i].name, type))
                m = &fake__chat_methods[i];
        for (size_t i = 0; i < fake__admin_methods_len; i++)
            if (!strcmp(fake__admin_methods[i].name, type))
                m = &fake__admin_methods[i];
        for (size_t i = 0; i < fake__file_methods_len; i++)
            if (!strcmp(fake__file_methods[i].name, type))
                m = &fake__file_methods[i];
        if (!m)
            fake__answer_error(c, extra, 400, "Unknown method \"%s\"", type);
        else if (m->needs_ready && c->state != ST_READY)
            fake__answer_error(c, extra, 401, "Unauthorized");
        else if (!flood_refuses(c, type, extra))
            m->fn(c, req, extra);
    }
    json_decref(req);
}

/* ---- the interface ---- */

int td_create_client_id(void)
{
    pthread_once(&g_once, init_once);
    pthread_mutex_lock(&g_mu);
    if (!g_script_read) {
        g_script_read = true;
        const char *path = getenv("FAKE_TDJSON_SCRIPT");
        json_t *s = path ? json_load_file(path, 0, NULL) : NULL;
        if (json_is_object(s))
            fake__script = s;
        else
            json_decref(s);
    }
    fake_client_t **grown = realloc(fake__clients, (fake__nclients + 1) * sizeof *grown);
    fake_client_t *c = calloc(1, sizeof *c);
    if (!grown || !c)
        abort();
    fake__clients = grown;
    c->id = (int)fake__nclients + 1;
    c->lock_fd = -1;
    c->chats = fake__script ? fake__chats_build() : json_array();
    fake__clients[fake__nclients++] = c;
    pthread_mutex_unlock(&g_mu);
    return c->id;
}

void td_send(int client_id, const char *request)
{
    pthread_once(&g_once, init_once);
    fake_req_t *r = calloc(1, sizeof *r);
    if (!r || !(r->text = strdup(request ? request : "")))
        abort();
    r->client_id = client_id;
    pthread_mutex_lock(&g_mu);
    *g_req_tail = r;
    g_req_tail = &r->next;
    pthread_cond_signal(&g_cv);
    pthread_mutex_unlock(&g_mu);
}

const char *td_receive(double timeout)
{
    pthread_once(&g_once, init_once);
    pthread_mutex_lock(&g_mu);
    free(g_received);
    g_received = NULL;
    if (!(timeout > 0))
        timeout = 0;
    if (timeout > 86400)
        timeout = 86400;
    uint64_t deadline = fake__now_ms() + (uint64_t)(timeout * 1000);
    bool inbox = json_is_string(json_object_get(fake__script, "inbox"));
    for (;;) {
        while (g_req_head) {
            fake_req_t *r = g_req_head;
            g_req_head = r->next;
            if (!g_req_head)
                g_req_tail = &g_req_head;
            process_request(r);
            free(r->text);
            free(r);
        }
        uint64_t now = fake__now_ms();
        if (inbox && now >= g_next_poll_ms) {
            fake__poll_inbox();
            g_next_poll_ms = now + FAKE_INBOX_POLL_MS;
        }
        while (g_out && g_out->due_ms <= now) {
            fake_out_t *o = g_out;
            g_out = o->next;
            fake_client_t *c = fake__client_find(o->client_id);
            if (c && !(o->drop_if_closed && c->state == ST_CLOSED)) {
                if (o->apply)
                    fake__apply_update(c, o->obj);
                json_object_set_new(o->obj, "@client_id", json_integer(o->client_id));
                g_received = json_dumps(o->obj, JSON_COMPACT);
            }
            json_decref(o->obj);
            free(o);
            if (g_received)
                break;
        }
        if (g_received || now >= deadline)
            break;
        if (g_req_head)
            continue;
        uint64_t wake = deadline;
        if (g_out && g_out->due_ms < wake)
            wake = g_out->due_ms;
        if (inbox && g_next_poll_ms < wake)
            wake = g_next_poll_ms;
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000),
                              .tv_nsec = (long)(wake % 1000) * 1000000};
        pthread_cond_timedwait(&g_cv, &g_mu, &ts);
    }
    const char *out = g_received;
    pthread_mutex_unlock(&g_mu);
    return out;
}

const char *td_execute(const char *request)
{
    pthread_once(&g_once, init_once);
    free(pthread_getspecific(g_exec_key));
    pthread_setspecific(g_exec_key, NULL);
    json_t *req = request ? json_loads(request, 0, NULL) : NULL;
    const char *type = json_string_value(json_object_get(req, "@type"));
    json_t *res;
    if (!type)
        res = json_pack("{s:s,s:i,s:s}", "@type", "error", "code", 400, "message",
                        "Failed to parse JSON object as TDLib request");
    else if (!strcmp(type, "getTextEntities"))
        res = fake__text_entities(fake__str_of(req, "text"));
    else if (!strcmp(type, "setLogVerbosityLevel"))
        res = json_pack("{s:s}", "@type", "ok");
    else if (!strcmp(type, "getOption") && !strcmp(fake__str_of(req, "name"), "version"))
        res = option_version();
    else
        res = json_pack("{s:s,s:i,s:s}", "@type", "error", "code", 400, "message",
                        "The method can't be executed synchronously");
    json_t *extra = json_object_get(req, "@extra");
    if (extra)
        json_object_set(res, "@extra", extra);
    char *s = json_dumps(res, JSON_COMPACT);
    json_decref(res);
    json_decref(req);
    pthread_setspecific(g_exec_key, s);
    return s;
}

/* Everything goes when the library is unloaded (dlclose or exit), so a
 * sanitized test sees no leak. */
__attribute__((destructor)) static void fake_unload(void)
{
    pthread_mutex_lock(&g_mu);
    for (size_t i = 0; i < fake__nclients; i++)
        client_free(fake__clients[i]);
    free(fake__clients);
    fake__clients = NULL;
    fake__nclients = 0;
    while (g_req_head) {
        fake_req_t *r = g_req_head;
        g_req_head = r->next;
        free(r->text);
        free(r);
    }
    g_req_tail = &g_req_head;
    while (g_out) {
        fake_out_t *o = g_out;
        g_out = o->next;
        json_decref(o->obj);
        free(o);
    }
    json_decref(fake__script);
    fake__script = NULL;
    free(g_received);
    g_received = NULL;
    pthread_mutex_unlock(&g_mu);
    if (g_inited) {
        free(pthread_getspecific(g_exec_key));
        pthread_setspecific(g_exec_key, NULL);
    }
}
