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
 *                      history: [message objects]}]
 *   load_chats_per_call  chats per loadChats (default 100)
 *   history_page_max     most messages per getChatHistory (default 100)
 *   flood_wait       {method, after_calls, seconds}: the (after_calls+1)-th
 *                    call of method answers 429 "Too Many Requests: retry
 *                    after <seconds>", later calls within those seconds
 *                    answer the same error with the seconds left (rounded
 *                    up), then the method answers normally again (once per
 *                    client)
 *   stall_methods    [method names]: never answered
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
 *   login: the same database_encryption_key goes straight to Ready, another
 *   answers 401 "Wrong database encryption key" (state unchanged).
 * - Before Ready everything but the auth methods, getAuthorizationState,
 *   getOption, close and logOut answers 401 "Unauthorized"; an unknown
 *   @type answers 400 "Unknown method \"name\"".
 * - getChatHistory: newest first; from_message_id 0 means the newest
 *   message, otherwise the page starts AT from_message_id (inclusive with
 *   offset 0, as TDLib documents: "Specify 0 to get results from exactly the
 *   message from_message_id"), so paging with the oldest id seen returns
 *   that message again: at the chat's start a page has no new id. A
 *   negative offset adds newer messages. The first call from the newest
 *   message of each chat returns one message; later ones
 *   min(limit, history_page_max). total_count is the page's length.
 * - searchChatMessages pages the same way; its next_from_message_id is the
 *   next match not returned (pass it back: no duplicate), 0 at the end.
 *   searchMessages: next_offset is "" at the end, else an opaque string to
 *   pass back.
 * - sendMessage answers a pending message with a temporary id
 *   ((final server id - 1) << 20) + 1, sends updateNewMessage with it, and
 *   50 ms later updateMessageSendSucceeded {message (final id), old_message_id}
 *   which appends the message to the chat's history. A pending message is
 *   not part of the history.
 * - Updates sent from `live`, the inbox or by the fake itself are applied
 *   first: updateNewMessage, updateMessageSendSucceeded,
 *   updateMessageContent, updateMessageEdited, updateDeleteMessages (only
 *   with is_permanent), updateChatTitle.
 * - close: ok, Closing, Closed (lock released); logOut: ok, LoggingOut,
 *   Closing, Closed, fake_td.json deleted. A closed client answers nothing.
 * - td_execute: getTextEntities (@mentions, http(s) URLs; offsets in UTF-16
 *   units), setLogVerbosityLevel, getOption "version"; else error 400. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FAKE_VERSION "1.8.99-fake"
/* How often td_receive looks into the inbox directory. */
#define FAKE_INBOX_POLL_MS 100
/* Delay between sendMessage's answer and updateMessageSendSucceeded. */
#define FAKE_SEND_SUCCEEDED_MS 50
/* TDLib's bound on getChatHistory / search limits. */
#define FAKE_LIMIT_MAX 100
/* Defaults of load_chats_per_call and history_page_max. */
#define FAKE_DEFAULT_PER_CALL   100
#define FAKE_DEFAULT_START_DATE 1700000000
#define FAKE_SUPERGROUP_BASE    1000000000000LL
#define FAKE_ID_SHIFT           20

__attribute__((visibility("default"))) int td_create_client_id(void);
__attribute__((visibility("default"))) void td_send(int client_id, const char *request);
__attribute__((visibility("default"))) const char *td_receive(double timeout);
__attribute__((visibility("default"))) const char *td_execute(const char *request);

typedef enum {
    ST_WAIT_PARAMS,
    ST_WAIT_PHONE,
    ST_WAIT_CODE,
    ST_WAIT_PASSWORD,
    ST_READY,
    ST_CLOSED,
} fake_state_t;

typedef struct fake_out_s {
    struct fake_out_s *next;
    uint64_t due_ms;
    int client_id;
    bool apply;          /* apply to the client's state at delivery */
    bool drop_if_closed; /* scheduled updates die with the client */
    json_t *obj;
} fake_out_t;

typedef struct fake_req_s {
    struct fake_req_s *next;
    int client_id;
    char *text;
} fake_req_t;

typedef struct {
    int id;
    bool started;
    fake_state_t state;
    int lock_fd;
    char *db_dir;
    char *key;
    json_t *chats; /* records: the script's chat plus "msgs" (ascending) */
    size_t chats_sent;
    json_int_t calls; /* calls of the flood_wait method */
    bool flood_fired;
    uint64_t flood_until_ms;
} fake_client_t;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_inited;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv;
static pthread_key_t g_exec_key;
static bool g_script_read;
static json_t *g_script;
static fake_client_t **g_clients;
static size_t g_nclients;
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

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static json_int_t script_int(const char *name, json_int_t dflt)
{
    json_t *v = json_object_get(g_script, name);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static const char *str_of(json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));
    return s ? s : "";
}

/* ---- output queue ---- */

/* Queues obj (stolen) for client cid after delay_ms. With apply, the
 * update changes the client's state first: now when it is due now, else
 * at delivery. */
static void apply_update(fake_client_t *c, json_t *u);
static fake_client_t *client_find(int id);

static void out_push(int cid, json_t *obj, uint64_t delay_ms, bool apply, bool drop_if_closed)
{
    if (apply && delay_ms == 0) {
        fake_client_t *c = client_find(cid);
        if (c)
            apply_update(c, obj);
        apply = false;
    }
    fake_out_t *o = calloc(1, sizeof *o);
    if (!o)
        abort();
    o->due_ms = now_ms() + delay_ms;
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

static void answer(fake_client_t *c, json_t *extra, json_t *obj)
{
    if (extra)
        json_object_set(obj, "@extra", extra);
    out_push(c->id, obj, 0, false, false);
}

static void answer_ok(fake_client_t *c, json_t *extra)
{
    answer(c, extra, json_pack("{s:s}", "@type", "ok"));
}

__attribute__((format(printf, 4, 5))) static void answer_error(fake_client_t *c, json_t *extra,
                                                               int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    answer(c, extra, json_pack("{s:s,s:i,s:s}", "@type", "error", "code", code, "message", msg));
}

static void update(fake_client_t *c, json_t *obj)
{
    out_push(c->id, obj, 0, false, false);
}

/* ---- objects ---- */

static json_t *user_object(json_t *u)
{
    json_t *o = json_pack(
        "{s:s,s:I,s:s,s:s,s:s,s:{s:s},s:b,s:b}", "@type", "user", "id",
        json_integer_value(json_object_get(u, "id")), "first_name", str_of(u, "first_name"),
        "last_name", str_of(u, "last_name"), "phone_number", str_of(u, "phone_number"), "type",
        "@type", json_is_true(json_object_get(u, "bot")) ? "userTypeBot" : "userTypeRegular",
        "is_contact", json_is_true(json_object_get(u, "is_contact")), "is_mutual_contact", 0);
    const char *un = json_string_value(json_object_get(u, "username"));
    if (un && *un)
        json_object_set_new(o, "usernames",
                            json_pack("{s:s,s:[s],s:[],s:s}", "@type", "usernames",
                                      "active_usernames", un, "disabled_usernames",
                                      "editable_username", un));
    return o;
}

static json_int_t me_id(void)
{
    return json_integer_value(json_object_get(json_object_get(g_script, "user"), "id"));
}

static json_t *user_find(json_int_t id)
{
    json_t *me = json_object_get(g_script, "user");
    if (me && json_integer_value(json_object_get(me, "id")) == id)
        return me;
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(g_script, "users"), i, u)
    {
        if (json_integer_value(json_object_get(u, "id")) == id)
            return u;
    }
    return NULL;
}

static json_t *sender_user(json_int_t uid)
{
    return json_pack("{s:s,s:I}", "@type", "messageSenderUser", "user_id", uid);
}

static json_t *sender_chat(json_int_t cid)
{
    return json_pack("{s:s,s:I}", "@type", "messageSenderChat", "chat_id", cid);
}

/* A messageText message; sender stolen. */
static json_t *message_object(json_int_t chat_id, json_int_t id, json_t *sender, bool outgoing,
                              json_int_t date, const char *text)
{
    return json_pack("{s:s,s:I,s:I,s:o,s:b,s:I,s:i,s:n,s:i,s:{s:s,s:{s:s,s:s,s:[]}}}", "@type",
                     "message", "id", id, "chat_id", chat_id, "sender_id", sender, "is_outgoing",
                     outgoing, "date", date, "edit_date", 0, "reply_to", "message_thread_id", 0,
                     "content", "@type", "messageText", "text", "@type", "formattedText", "text",
                     text, "entities");
}

static json_int_t msg_id(json_t *m)
{
    return json_integer_value(json_object_get(m, "id"));
}

/* Inserts m (stolen) into the ascending msgs array, replacing an equal id. */
static void msgs_insert(json_t *msgs, json_t *m)
{
    json_int_t id = msg_id(m);
    size_t i = json_array_size(msgs);
    while (i > 0 && msg_id(json_array_get(msgs, i - 1)) > id)
        i--;
    if (i > 0 && msg_id(json_array_get(msgs, i - 1)) == id)
        json_array_set_new(msgs, i - 1, m);
    else
        json_array_insert_new(msgs, i, m);
}

static long msgs_index(json_t *msgs, json_int_t id)
{
    size_t lo = 0, hi = json_array_size(msgs);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        json_int_t v = msg_id(json_array_get(msgs, mid));
        if (v == id)
            return (long)mid;
        if (v < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static const char *chat_kind(json_t *rec)
{
    return str_of(rec, "type");
}

static json_t *chats_build(void)
{
    json_t *out = json_array();
    json_int_t start = script_int("start_date", FAKE_DEFAULT_START_DATE);
    size_t i;
    json_t *ch;
    json_array_foreach(json_object_get(g_script, "chats"), i, ch)
    {
        json_t *rec = json_deep_copy(ch);
        json_t *msgs = json_array();
        json_int_t id = json_integer_value(json_object_get(ch, "id"));
        const char *kind = chat_kind(ch);
        json_t *senders = json_object_get(ch, "senders");
        json_int_t n = json_integer_value(json_object_get(ch, "messages"));
        char text[512];
        for (json_int_t k = 1; k <= n; k++) {
            json_t *sender;
            json_int_t uid = 0;
            if (json_array_size(senders) > 0)
                uid = json_integer_value(
                    json_array_get(senders, (size_t)(k - 1) % json_array_size(senders)));
            else if (!strcmp(kind, "private"))
                uid = json_integer_value(json_object_get(ch, "user_id"));
            else if (strcmp(kind, "channel"))
                uid = me_id();
            sender = uid ? sender_user(uid) : sender_chat(id);
            snprintf(text, sizeof text, "%s message %lld", str_of(ch, "title"), (long long)k);
            json_array_append_new(msgs,
                                  message_object(id, k << FAKE_ID_SHIFT, sender,
                                                 uid && uid == me_id(), start + k * 60, text));
        }
        size_t j;
        json_t *m;
        json_array_foreach(json_object_get(ch, "history"), j, m)
        {
            json_t *c = json_deep_copy(m);
            if (!json_object_get(c, "chat_id"))
                json_object_set_new(c, "chat_id", json_integer(id));
            msgs_insert(msgs, c);
        }
        json_object_set_new(rec, "msgs", msgs);
        json_object_del(rec, "history");
        json_object_set_new(rec, "reserved", json_integer(0));
        json_object_set_new(rec, "newest_served", json_false());
        json_array_append_new(out, rec);
    }
    return out;
}

static json_t *chat_find(fake_client_t *c, json_int_t id)
{
    size_t i;
    json_t *rec;
    json_array_foreach(c->chats, i, rec)
    {
        if (json_integer_value(json_object_get(rec, "id")) == id)
            return rec;
    }
    return NULL;
}

static json_int_t supergroup_id(json_t *rec)
{
    return -(json_integer_value(json_object_get(rec, "id")) + FAKE_SUPERGROUP_BASE);
}

static json_t *chat_object(fake_client_t *c, json_t *rec)
{
    json_int_t id = json_integer_value(json_object_get(rec, "id"));
    const char *kind = chat_kind(rec);
    json_t *type;
    if (!strcmp(kind, "private"))
        type = json_pack("{s:s,s:I}", "@type", "chatTypePrivate", "user_id",
                         json_integer_value(json_object_get(rec, "user_id")));
    else if (!strcmp(kind, "basic_group"))
        type = json_pack("{s:s,s:I}", "@type", "chatTypeBasicGroup", "basic_group_id", -id);
    else
        type = json_pack("{s:s,s:I,s:b}", "@type", "chatTypeSupergroup", "supergroup_id",
                         supergroup_id(rec), "is_channel", !strcmp(kind, "channel"));
    size_t pos = 0, n = json_array_size(c->chats);
    while (pos < n && json_array_get(c->chats, pos) != rec)
        pos++;
    char order[32];
    snprintf(order, sizeof order, "%zu", (n - pos) * 1000);
    json_t *o = json_pack("{s:s,s:I,s:o,s:s,s:[{s:s,s:{s:s},s:s,s:b}],s:i,s:i,s:i}", "@type",
                          "chat", "id", id, "type", type, "title", str_of(rec, "title"),
                          "positions", "@type", "chatPosition", "list", "@type", "chatListMain",
                          "order", order, "is_pinned", 0, "unread_count", 0,
                          "last_read_inbox_message_id", 0, "last_read_outbox_message_id", 0);
    json_t *msgs = json_object_get(rec, "msgs");
    if (json_array_size(msgs) > 0)
        json_object_set_new(o, "last_message",
                            json_deep_copy(json_array_get(msgs, json_array_size(msgs) - 1)));
    return o;
}

static json_int_t member_count(json_t *rec)
{
    json_t *v = json_object_get(rec, "member_count");
    if (json_is_integer(v))
        return json_integer_value(v);
    size_t n = json_array_size(json_object_get(rec, "senders"));
    return n > 0 ? (json_int_t)n : 1;
}

/* ---- applying updates ---- */

static void apply_update(fake_client_t *c, json_t *u)
{
    const char *t = str_of(u, "@type");
    json_t *rec;
    if (!strcmp(t, "updateNewMessage") || !strcmp(t, "updateMessageSendSucceeded")) {
        json_t *m = json_object_get(u, "message");
        json_t *ss = json_object_get(m, "sending_state");
        if (ss && !json_is_null(ss))
            return;
        rec = chat_find(c, json_integer_value(json_object_get(m, "chat_id")));
        if (!rec)
            return;
        json_t *msgs = json_object_get(rec, "msgs");
        long old = msgs_index(msgs, json_integer_value(json_object_get(u, "old_message_id")));
        if (old >= 0)
            json_array_remove(msgs, (size_t)old);
        msgs_insert(msgs, json_deep_copy(m));
        return;
    }
    rec = chat_find(c, json_integer_value(json_object_get(u, "chat_id")));
    if (!rec)
        return;
    json_t *msgs = json_object_get(rec, "msgs");
    if (!strcmp(t, "updateMessageContent") || !strcmp(t, "updateMessageEdited")) {
        long i = msgs_index(msgs, json_integer_value(json_object_get(u, "message_id")));
        if (i < 0)
            return;
        json_t *m = json_array_get(msgs, (size_t)i);
        if (t[13] == 'C')
            json_object_set_new(m, "content", json_deep_copy(json_object_get(u, "new_content")));
        else
            json_object_set_new(m, "edit_date",
                                json_integer(json_integer_value(json_object_get(u, "edit_date"))));
    } else if (!strcmp(t, "updateDeleteMessages")) {
        if (!json_is_true(json_object_get(u, "is_permanent")))
            return;
        size_t k;
        json_t *id;
        json_array_foreach(json_object_get(u, "message_ids"), k, id)
        {
            long i = msgs_index(msgs, json_integer_value(id));
            if (i >= 0)
                json_array_remove(msgs, (size_t)i);
        }
    } else if (!strcmp(t, "updateChatTitle")) {
        json_object_set_new(rec, "title", json_string(str_of(u, "title")));
    }
}

/* ---- clients ---- */

static fake_client_t *client_find(int id)
{
    return id >= 1 && (size_t)id <= g_nclients ? g_clients[id - 1] : NULL;
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
    update(c, json_pack("{s:s,s:o}", "@type", "updateAuthorizationState", "authorization_state",
                        state));
}

static json_t *state_plain(const char *type)
{
    return json_pack("{s:s}", "@type", type);
}

static json_t *state_wait_code(void)
{
    return json_pack("{s:s,s:{s:s,s:s,s:{s:s,s:i},s:i}}", "@type", "authorizationStateWaitCode",
                     "code_info", "@type", "authenticationCodeInfo", "phone_number",
                     str_of(g_script, "phone"), "type", "@type", "authenticationCodeTypeSms",
                     "length", (int)strlen(str_of(g_script, "code")), "timeout", 0);
}

static json_t *state_wait_password(void)
{
    return json_pack("{s:s,s:s,s:b,s:s}", "@type", "authorizationStateWaitPassword",
                     "password_hint", str_of(g_script, "password_hint"),
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

static char *path_in(const char *dir, const char *name)
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
    char *p = path_in(c->db_dir, "fake_td.json");
    json_t *st = json_pack("{s:b,s:s,s:I}", "authorized", 1, "key", c->key, "user_id", me_id());
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        json_dumpfd(st, fd, JSON_COMPACT);
        close(fd);
    }
    json_decref(st);
    free(p);
    c->state = ST_READY;
    update(c, json_pack("{s:s,s:o}", "@type", "updateUser", "user",
                        user_object(json_object_get(g_script, "user"))));
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(g_script, "users"), i, u)
    {
        update(c, json_pack("{s:s,s:o}", "@type", "updateUser", "user", user_object(u)));
    }
    auth_update(c, state_plain("authorizationStateReady"));
    json_t *e;
    json_array_foreach(json_object_get(g_script, "live"), i, e)
    {
        json_int_t after = json_integer_value(json_object_get(e, "after_ms"));
        out_push(c->id, json_deep_copy(json_object_get(e, "update")),
                 after > 0 ? (uint64_t)after : 0, true, true);
    }
}

/* ---- requests ---- */

typedef void (*fake_handler_t)(fake_client_t *c, json_t *req, json_t *extra);

static void unexpected(fake_client_t *c, json_t *req, json_t *extra)
{
    answer_error(c, extra, 400, "Call to %s unexpected", str_of(req, "@type"));
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
    if (json_integer_value(json_object_get(req, "api_id")) <= 0 || !*str_of(req, "api_hash")) {
        answer_error(c, extra, 400,
                     "Valid api_id must be provided. Can be obtained at https://my.telegram.org");
        return;
    }
    const char *dir = str_of(req, "database_directory");
    struct stat st;
    if (!*dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        answer_error(c, extra, 400, "Can't open database directory \"%s\": %s", dir,
                     *dir ? strerror(errno ? errno : ENOTDIR) : "not given");
        return;
    }
    char *bin = path_in(dir, "td.binlog");
    int fd = open(bin, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        answer_error(c, extra, 400, "Can't open file \"%s\": %s", bin, strerror(errno));
        free(bin);
        return;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        answer_error(c, extra, 400,
                     "Can't lock file \"%s\", because it is already in use; check that the "
                     "database_directory is not used by another client",
                     bin);
        close(fd);
        free(bin);
        return;
    }
    free(bin);
    const char *key = str_of(req, "database_encryption_key");
    char *sp = path_in(dir, "fake_td.json");
    json_t *saved = json_load_file(sp, 0, NULL);
    free(sp);
    bool authorized = json_is_true(json_object_get(saved, "authorized"));
    if (authorized && strcmp(str_of(saved, "key"), key) != 0) {
        json_decref(saved);
        close(fd);
        answer_error(c, extra, 401, "Wrong database encryption key");
        return;
    }
    json_decref(saved);
    c->lock_fd = fd;
    c->db_dir = strdup(dir);
    c->key = strdup(key);
    if (!c->db_dir || !c->key)
        abort();
    answer_ok(c, extra);
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
    if (!digits_equal(str_of(req, "phone_number"), str_of(g_script, "phone")) ||
        !*str_of(req, "phone_number")) {
        answer_error(c, extra, 400, "PHONE_NUMBER_INVALID");
        return;
    }
    answer_ok(c, extra);
    c->state = ST_WAIT_CODE;
    auth_update(c, state_wait_code());
}

static void h_code(fake_client_t *c, json_t *req, json_t *extra)
{
    if (c->state != ST_WAIT_CODE) {
        unexpected(c, req, extra);
        return;
    }
    if (strcmp(str_of(req, "code"), str_of(g_script, "code")) != 0) {
        answer_error(c, extra, 400, "PHONE_CODE_INVALID");
        return;
    }
    answer_ok(c, extra);
    if (json_is_string(json_object_get(g_script, "password"))) {
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
    if (strcmp(str_of(req, "password"), str_of(g_script, "password")) != 0) {
        answer_error(c, extra, 400, "PASSWORD_HASH_INVALID");
        return;
    }
    answer_ok(c, extra);
    go_ready(c);
}

static void h_get_auth_state(fake_client_t *c, json_t *req, json_t *extra)
{
    (void)req;
    answer(c, extra, state_object(c));
}

static json_t *option_version(void)
{
    return json_pack("{s:s,s:s}", "@type", "optionValueString", "value", FAKE_VERSION);
}

static void h_get_option(fake_client_t *c, json_t *req, json_t *extra)
{
    const char *name = str_of(req, "name");
    if (!strcmp(name, "version")) {
        answer(c, extra, option_version());
    } else if (!strcmp(name, "my_id") && c->state == ST_READY) {
        char v[32];
        snprintf(v, sizeof v, "%lld", (long long)me_id());
        answer(c, extra, json_pack("{s:s,s:s}", "@type", "optionValueInteger", "value", v));
    } else {
        answer(c, extra, json_pack("{s:s}", "@type", "optionValueEmpty"));
    }
}

static void finish(fake_client_t *c, json_t *extra, bool logout)
{
    answer_ok(c, extra);
    if (logout) {
        auth_update(c, state_plain("authorizationStateLoggingOut"));
        if (c->db_dir) {
            char *p = path_in(c->db_dir, "fake_td.json");
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
    answer(c, extra, user_object(json_object_get(g_script, "user")));
}

static void h_get_user(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *u = user_find(json_integer_value(json_object_get(req, "user_id")));
    if (u)
        answer(c, extra, user_object(u));
    else
        answer_error(c, extra, 404, "User not found");
}

static void h_load_chats(fake_client_t *c, json_t *req, json_t *extra)
{
    json_int_t limit = json_integer_value(json_object_get(req, "limit"));
    const char *list = str_of(json_object_get(req, "chat_list"), "@type");
    if (limit <= 0) {
        answer_error(c, extra, 400, "Parameter limit must be positive");
        return;
    }
    size_t n = json_array_size(c->chats);
    if ((*list && strcmp(list, "chatListMain") != 0) || c->chats_sent >= n) {
        answer_error(c, extra, 404, "Not Found");
        return;
    }
    json_int_t k = script_int("load_chats_per_call", FAKE_DEFAULT_PER_CALL);
    if (k > limit)
        k = limit;
    if (k < 1)
        k = 1;
    for (; k > 0 && c->chats_sent < n; k--)
        update(c, json_pack("{s:s,s:o}", "@type", "updateNewChat", "chat",
                            chat_object(c, json_array_get(c->chats, c->chats_sent++))));
    answer_ok(c, extra);
}

static json_t *chats_answer(json_t *ids, json_int_t total)
{
    return json_pack("{s:s,s:I,s:o}", "@type", "chats", "total_count", total, "chat_ids", ids);
}

static void h_get_chats(fake_client_t *c, json_t *req, json_t *extra)
{
    json_int_t limit = json_integer_value(json_object_get(req, "limit"));
    json_t *ids = json_array();
    size_t i;
    json_t *rec;
    json_array_foreach(c->chats, i, rec)
    {
        if ((json_int_t)i < limit)
            json_array_append(ids, json_object_get(rec, "id"));
    }
    answer(c, extra, chats_answer(ids, (json_int_t)json_array_size(c->chats)));
}

static json_t *chat_or_error(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_find(c, json_integer_value(json_object_get(req, "chat_id")));
    if (!rec)
        answer_error(c, extra, 400, "Chat not found");
    return rec;
}

static void h_get_chat(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_or_error(c, req, extra);
    if (rec)
        answer(c, extra, chat_object(c, rec));
}

static void h_get_supergroup(fake_client_t *c, json_t *req, json_t *extra)
{
    json_int_t sg = json_integer_value(json_object_get(req, "supergroup_id"));
    size_t i;
    json_t *rec;
    json_array_foreach(c->chats, i, rec)
    {
        const char *kind = chat_kind(rec);
        if ((strcmp(kind, "supergroup") && strcmp(kind, "channel")) || supergroup_id(rec) != sg)
            continue;
        json_t *o =
            json_pack("{s:s,s:I,s:i,s:{s:s},s:I,s:b}", "@type", "supergroup", "id", sg, "date", 0,
                      "status", "@type", "chatMemberStatusMember", "member_count",
                      member_count(rec), "is_channel", !strcmp(kind, "channel"));
        const char *un = json_string_value(json_object_get(rec, "username"));
        if (un && *un)
            json_object_set_new(o, "usernames",
                                json_pack("{s:s,s:[s],s:[],s:s}", "@type", "usernames",
                                          "active_usernames", un, "disabled_usernames",
                                          "editable_username", un));
        answer(c, extra, o);
        return;
    }
    answer_error(c, extra, 400, "Supergroup not found");
}

static void h_get_basic_group(fake_client_t *c, json_t *req, json_t *extra)
{
    json_int_t bg = json_integer_value(json_object_get(req, "basic_group_id"));
    size_t i;
    json_t *rec;
    json_array_foreach(c->chats, i, rec)
    {
        if (strcmp(chat_kind(rec), "basic_group") ||
            -json_integer_value(json_object_get(rec, "id")) != bg)
            continue;
        answer(c, extra,
               json_pack("{s:s,s:I,s:I,s:{s:s},s:b,s:i}", "@type", "basicGroup", "id", bg,
                         "member_count", member_count(rec), "status", "@type",
                         "chatMemberStatusMember", "is_active", 1, "upgraded_to_supergroup_id", 0));
        return;
    }
    answer_error(c, extra, 400, "Basic group not found");
}

static bool limit_ok(fake_client_t *c, json_t *extra, json_int_t limit)
{
    if (limit > 0 && limit <= FAKE_LIMIT_MAX)
        return true;
    answer_error(c, extra, 400, "Parameter limit must be positive and not greater than %d",
                 FAKE_LIMIT_MAX);
    return false;
}

static void h_history(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_or_error(c, req, extra);
    if (!rec)
        return;
    json_int_t limit = json_integer_value(json_object_get(req, "limit"));
    json_int_t offset = json_integer_value(json_object_get(req, "offset"));
    json_int_t from = json_integer_value(json_object_get(req, "from_message_id"));
    if (!limit_ok(c, extra, limit))
        return;
    if (offset > 0 || offset <= -limit) {
        answer_error(c, extra, 400,
                     "Parameter offset must be non-positive and greater than -limit");
        return;
    }
    json_t *msgs = json_object_get(rec, "msgs");
    long n = (long)json_array_size(msgs);
    long p = 0; /* index, newest first, of the first message with id <= from */
    if (from != 0)
        while (p < n && msg_id(json_array_get(msgs, (size_t)(n - 1 - p))) > from)
            p++;
    long start = p + (long)offset;
    if (start < 0)
        start = 0;
    json_int_t cap = script_int("history_page_max", FAKE_DEFAULT_PER_CALL);
    if (cap > limit)
        cap = limit;
    if (from == 0 && !json_is_true(json_object_get(rec, "newest_served"))) {
        cap = 1;
        json_object_set_new(rec, "newest_served", json_true());
    }
    json_t *page = json_array();
    for (long i = start; i < n && (json_int_t)json_array_size(page) < cap; i++)
        json_array_append_new(page, json_deep_copy(json_array_get(msgs, (size_t)(n - 1 - i))));
    answer(c, extra,
           json_pack("{s:s,s:I,s:o}", "@type", "messages", "total_count",
                     (json_int_t)json_array_size(page), "messages", page));
}

static void h_get_message(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_find(c, json_integer_value(json_object_get(req, "chat_id")));
    json_t *msgs = json_object_get(rec, "msgs");
    long i = rec ? msgs_index(msgs, json_integer_value(json_object_get(req, "message_id"))) : -1;
    if (i < 0)
        answer_error(c, extra, 404, "Not Found");
    else
        answer(c, extra, json_deep_copy(json_array_get(msgs, (size_t)i)));
}

static void h_send_message(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_or_error(c, req, extra);
    if (!rec)
        return;
    json_t *imc = json_object_get(req, "input_message_content");
    if (strcmp(str_of(imc, "@type"), "inputMessageText") != 0) {
        answer_error(c, extra, 400, "fake_tdjson: only inputMessageText can be sent");
        return;
    }
    const char *text = str_of(json_object_get(imc, "text"), "text");
    if (!*text) {
        answer_error(c, extra, 400, "Message must be non-empty");
        return;
    }
    json_int_t chat_id = json_integer_value(json_object_get(rec, "id"));
    json_t *msgs = json_object_get(rec, "msgs");
    json_int_t last = json_array_size(msgs) > 0
                          ? msg_id(json_array_get(msgs, json_array_size(msgs) - 1)) >> FAKE_ID_SHIFT
                          : 0;
    json_int_t reserved = json_integer_value(json_object_get(rec, "reserved"));
    json_int_t server = (last > reserved ? last : reserved) + 1;
    json_object_set_new(rec, "reserved", json_integer(server));
    json_int_t temp = ((server - 1) << FAKE_ID_SHIFT) + 1;
    bool channel = !strcmp(chat_kind(rec), "channel");
    json_t *m = message_object(chat_id, temp, channel ? sender_chat(chat_id) : sender_user(me_id()),
                               true, (json_int_t)time(NULL), text);
    json_object_set_new(
        m, "message_thread_id",
        json_integer(json_integer_value(json_object_get(req, "message_thread_id"))));
    json_int_t reply =
        json_integer_value(json_object_get(json_object_get(req, "reply_to"), "message_id"));
    if (reply)
        json_object_set_new(m, "reply_to",
                            json_pack("{s:s,s:I,s:I}", "@type", "messageReplyToMessage", "chat_id",
                                      chat_id, "message_id", reply));
    json_t *final = json_deep_copy(m);
    json_object_set_new(m, "sending_state",
                        json_pack("{s:s}", "@type", "messageSendingStatePending"));
    json_object_set_new(final, "id", json_integer(server << FAKE_ID_SHIFT));
    answer(c, extra, json_deep_copy(m));
    update(c, json_pack("{s:s,s:o}", "@type", "updateNewMessage", "message", m));
    out_push(c->id,
             json_pack("{s:s,s:o,s:I}", "@type", "updateMessageSendSucceeded", "message", final,
                       "old_message_id", temp),
             FAKE_SEND_SUCCEEDED_MS, true, true);
}

static bool ci_contains(const char *hay, const char *needle)
{
    return !*needle || (hay && strcasestr(hay, needle));
}

static void search_chats(fake_client_t *c, json_t *req, json_t *extra, json_int_t limit)
{
    const char *q = str_of(req, "query");
    json_t *ids = json_array();
    json_int_t total = 0;
    size_t i;
    json_t *rec;
    json_array_foreach(c->chats, i, rec)
    {
        if (!ci_contains(str_of(rec, "title"), q) && !ci_contains(str_of(rec, "username"), q))
            continue;
        total++;
        if (total <= limit)
            json_array_append(ids, json_object_get(rec, "id"));
    }
    answer(c, extra, chats_answer(ids, total));
}

static void h_search_chats_on_server(fake_client_t *c, json_t *req, json_t *extra)
{
    json_int_t limit = json_integer_value(json_object_get(req, "limit"));
    if (limit_ok(c, extra, limit))
        search_chats(c, req, extra, limit);
}

static void h_search_public_chats(fake_client_t *c, json_t *req, json_t *extra)
{
    search_chats(c, req, extra, FAKE_LIMIT_MAX);
}

static bool text_matches(json_t *m, const char *q)
{
    json_t *content = json_object_get(m, "content");
    if (strcmp(str_of(content, "@type"), "messageText") != 0)
        return !*q;
    return ci_contains(str_of(json_object_get(content, "text"), "text"), q);
}

static int newest_first(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t kx[3] = {json_integer_value(json_object_get(x, "date")),
                        json_integer_value(json_object_get(x, "chat_id")), msg_id(x)};
    json_int_t ky[3] = {json_integer_value(json_object_get(y, "date")),
                        json_integer_value(json_object_get(y, "chat_id")), msg_id(y)};
    for (int i = 0; i < 3; i++)
        if (kx[i] != ky[i])
            return kx[i] > ky[i] ? -1 : 1;
    return 0;
}

static void h_search_messages(fake_client_t *c, json_t *req, json_t *extra)
{
    json_int_t limit = json_integer_value(json_object_get(req, "limit"));
    if (!limit_ok(c, extra, limit))
        return;
    const char *q = str_of(req, "query");
    size_t cap = 16, n = 0;
    json_t **all = malloc(cap * sizeof *all);
    if (!all)
        abort();
    size_t i, j;
    json_t *rec, *m;
    json_array_foreach(c->chats, i, rec)
    {
        json_array_foreach(json_object_get(rec, "msgs"), j, m)
        {
            if (!text_matches(m, q))
                continue;
            if (n == cap) {
                cap *= 2;
                json_t **grown = realloc(all, cap * sizeof *all);
                if (!grown)
                    abort();
                all = grown;
            }
            all[n++] = m;
        }
    }
    qsort(all, n, sizeof *all, newest_first);
    size_t skip = (size_t)strtoul(str_of(req, "offset"), NULL, 10);
    json_t *page = json_array();
    size_t k = skip;
    for (; k < n && (json_int_t)json_array_size(page) < limit; k++)
        json_array_append_new(page, json_deep_copy(all[k]));
    char next[32] = "";
    if (k < n)
        snprintf(next, sizeof next, "%zu", k);
    free(all);
    answer(c, extra,
           json_pack("{s:s,s:I,s:o,s:s}", "@type", "foundMessages", "total_count", (json_int_t)n,
                     "messages", page, "next_offset", next));
}

static void h_search_chat_messages(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_or_error(c, req, extra);
    if (!rec)
        return;
    json_int_t limit = json_integer_value(json_object_get(req, "limit"));
    if (!limit_ok(c, extra, limit))
        return;
    const char *q = str_of(req, "query");
    json_int_t from = json_integer_value(json_object_get(req, "from_message_id"));
    json_t *msgs = json_object_get(rec, "msgs");
    json_t *page = json_array();
    json_int_t total = 0, next = 0;
    for (size_t i = json_array_size(msgs); i > 0; i--) {
        json_t *m = json_array_get(msgs, i - 1);
        if (!text_matches(m, q))
            continue;
        total++;
        if (from != 0 && msg_id(m) > from)
            continue;
        if ((json_int_t)json_array_size(page) < limit)
            json_array_append_new(page, json_deep_copy(m));
        else if (!next)
            next = msg_id(m);
    }
    answer(c, extra,
           json_pack("{s:s,s:I,s:o,s:I}", "@type", "foundChatMessages", "total_count", total,
                     "messages", page, "next_from_message_id", next));
}

typedef struct {
    const char *name;
    fake_handler_t fn;
    bool needs_ready;
} fake_method_t;

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
    {"loadChats", h_load_chats, true},
    {"getChats", h_get_chats, true},
    {"getChat", h_get_chat, true},
    {"getSupergroup", h_get_supergroup, true},
    {"getBasicGroup", h_get_basic_group, true},
    {"getChatHistory", h_history, true},
    {"getMessage", h_get_message, true},
    {"sendMessage", h_send_message, true},
    {"searchChatsOnServer", h_search_chats_on_server, true},
    {"searchPublicChats", h_search_public_chats, true},
    {"searchMessages", h_search_messages, true},
    {"searchChatMessages", h_search_chat_messages, true},
};

static bool is_stalled(const char *type)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(g_script, "stall_methods"), i, m)
    {
        if (!strcmp(json_string_value(m) ? json_string_value(m) : "", type))
            return true;
    }
    return false;
}

/* True when the flood_wait rule refuses this call (the error is sent). */
static bool flood_refuses(fake_client_t *c, const char *type, json_t *extra)
{
    json_t *fw = json_object_get(g_script, "flood_wait");
    if (!fw || strcmp(str_of(fw, "method"), type) != 0)
        return false;
    uint64_t now = now_ms();
    if (c->flood_until_ms > now) {
        answer_error(c, extra, 429, "Too Many Requests: retry after %llu",
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
    answer_error(c, extra, 429, "Too Many Requests: retry after %lld", (long long)secs);
    return true;
}

static void process_request(fake_req_t *r)
{
    fake_client_t *c = client_find(r->client_id);
    if (!c || c->state == ST_CLOSED)
        return;
    if (!c->started) {
        c->started = true;
        update(c, json_pack("{s:s,s:s,s:o}", "@type", "updateOption", "name", "version", "value",
                            option_version()));
        auth_update(c, state_plain("authorizationStateWaitTdlibParameters"));
    }
    json_t *req = json_loads(r->text, 0, NULL);
    json_t *extra = json_object_get(req, "@extra");
    const char *type = json_string_value(json_object_get(req, "@type"));
    const fake_method_t *m = NULL;
    if (!type) {
        answer_error(c, extra, 400, "Failed to parse JSON object as TDLib request");
    } else if (!g_script) {
        answer_error(c, extra, 500, "fake_tdjson: no script");
    } else if (!is_stalled(type)) {
        for (size_t i = 0; i < sizeof k_methods / sizeof k_methods[0]; i++)
            if (!strcmp(k_methods[i].name, type))
                m = &k_methods[i];
        if (!m)
            answer_error(c, extra, 400, "Unknown method \"%s\"", type);
        else if (m->needs_ready && c->state != ST_READY)
            answer_error(c, extra, 401, "Unauthorized");
        else if (!flood_refuses(c, type, extra))
            m->fn(c, req, extra);
    }
    json_decref(req);
}

/* ---- inbox ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void poll_inbox(void)
{
    const char *dir = json_string_value(json_object_get(g_script, "inbox"));
    if (!dir)
        return;
    bool ready = false;
    for (size_t i = 0; i < g_nclients; i++)
        ready = ready || g_clients[i]->state == ST_READY;
    if (!ready)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        char **grown = realloc(names, (n + 1) * sizeof *names);
        if (!grown)
            abort();
        names = grown;
        names[n++] = path_in(dir, e->d_name);
    }
    closedir(d);
    if (n > 0)
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_load_file(names[i], 0, NULL);
        if (v) {
            unlink(names[i]);
            json_t *list = json_is_array(v) ? v : json_pack("[O]", v);
            size_t k;
            json_t *u;
            json_array_foreach(list, k, u)
            {
                for (size_t ci = 0; ci < g_nclients; ci++)
                    if (g_clients[ci]->state == ST_READY)
                        out_push(g_clients[ci]->id, json_deep_copy(u), 0, true, true);
            }
            if (list != v)
                json_decref(list);
            json_decref(v);
        }
        free(names[i]);
    }
    free(names);
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
            g_script = s;
        else
            json_decref(s);
    }
    fake_client_t **grown = realloc(g_clients, (g_nclients + 1) * sizeof *grown);
    fake_client_t *c = calloc(1, sizeof *c);
    if (!grown || !c)
        abort();
    g_clients = grown;
    c->id = (int)g_nclients + 1;
    c->lock_fd = -1;
    c->chats = g_script ? chats_build() : json_array();
    g_clients[g_nclients++] = c;
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
    uint64_t deadline = now_ms() + (uint64_t)(timeout * 1000);
    bool inbox = json_is_string(json_object_get(g_script, "inbox"));
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
        uint64_t now = now_ms();
        if (inbox && now >= g_next_poll_ms) {
            poll_inbox();
            g_next_poll_ms = now + FAKE_INBOX_POLL_MS;
        }
        while (g_out && g_out->due_ms <= now) {
            fake_out_t *o = g_out;
            g_out = o->next;
            fake_client_t *c = client_find(o->client_id);
            if (c && !(o->drop_if_closed && c->state == ST_CLOSED)) {
                if (o->apply)
                    apply_update(c, o->obj);
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

static bool word_char(unsigned char ch)
{
    return isalnum(ch) || ch == '_';
}

static json_t *text_entities(const char *text)
{
    size_t n = strlen(text);
    size_t *u16 = malloc((n + 1) * sizeof *u16); /* UTF-16 units before byte i */
    if (!u16)
        abort();
    u16[0] = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)text[i];
        u16[i + 1] = u16[i] + ((b & 0xC0) == 0x80 ? 0 : b >= 0xF0 ? 2 : 1);
    }
    json_t *list = json_array();
    size_t i = 0;
    while (i < n) {
        bool start = i == 0 || !word_char((unsigned char)text[i - 1]);
        size_t j = i, skip = 0;
        const char *type = NULL;
        if (start && text[i] == '@') {
            j = i + 1;
            while (j < n && word_char((unsigned char)text[j]))
                j++;
            type = j > i + 1 ? "textEntityTypeMention" : NULL;
        } else if (start && (!strncasecmp(text + i, "http://", skip = 7) ||
                             !strncasecmp(text + i, "https://", skip = 8))) {
            j = i + skip;
            while (j < n && !isspace((unsigned char)text[j]))
                j++;
            while (j > i + skip && strchr(".,;:!?)'\"", text[j - 1]))
                j--;
            type = j > i + skip ? "textEntityTypeUrl" : NULL;
        }
        if (type) {
            json_array_append_new(list,
                                  json_pack("{s:s,s:I,s:I,s:{s:s}}", "@type", "textEntity",
                                            "offset", (json_int_t)u16[i], "length",
                                            (json_int_t)(u16[j] - u16[i]), "type", "@type", type));
            i = j;
        } else {
            i++;
        }
    }
    free(u16);
    return json_pack("{s:s,s:o}", "@type", "textEntities", "entities", list);
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
        res = text_entities(str_of(req, "text"));
    else if (!strcmp(type, "setLogVerbosityLevel"))
        res = json_pack("{s:s}", "@type", "ok");
    else if (!strcmp(type, "getOption") && !strcmp(str_of(req, "name"), "version"))
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
    for (size_t i = 0; i < g_nclients; i++)
        client_free(g_clients[i]);
    free(g_clients);
    g_clients = NULL;
    g_nclients = 0;
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
    json_decref(g_script);
    g_script = NULL;
    free(g_received);
    g_received = NULL;
    pthread_mutex_unlock(&g_mu);
    if (g_inited) {
        free(pthread_getspecific(g_exec_key));
        pthread_setspecific(g_exec_key, NULL);
    }
}
