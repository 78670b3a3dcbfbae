/* connector: the domain's interface to an upstream service (the Telegram
 * Bot API, Telegram user accounts through TDLib, Bluesky). A connector is the
 * shared part (name, capabilities, why-not text, state, metrics, job
 * classes) and its verbs grouped by what they serve: a chat table for
 * message services (connector_chat_ops_t) and an accounts table for
 * services logged in at run time (connector_accounts_ops_t); a connector
 * fills the tables it serves. Callers use the connector_VERB wrappers
 * below, which answer UV_ENOTSUP when the capability or the function is
 * missing. How connectors are started: connectors.h.
 * Toolsets ask connector_can() before they promise anything, and when a
 * capability is missing they tell the model why in the connector's own
 * words (connector_why_not) and what to use instead in theirs: no tool
 * names live here. Job executors are registered by each connector under
 * its namespaced classes ("telegram.sync"), see connector_job_classes.
 *
 * Every verb is non-blocking: it returns 0 and calls back exactly once
 * later, or returns a negative code (UV_EBUSY: a queue is full; UV_ENOTSUP:
 * the capability is missing; UV_ENOMEM) without calling back. Results are
 * JSON text valid during the callback; errors never contain secrets. */
#ifndef PARLEY_UPSTREAM_CONNECTOR_H
#define PARLEY_UPSTREAM_CONNECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sync_class_s sync_class_t;
struct buf_s;

/* What an account behind a connector can do. */
typedef enum {
    CONNECTOR_CAN_SEND = 1u << 0,           /* send text and files */
    CONNECTOR_CAN_READ_HISTORY = 1u << 1,   /* fetch past messages on demand */
    CONNECTOR_CAN_SEARCH_DIALOGS = 1u << 2, /* list and search its chats upstream */
    CONNECTOR_CAN_JOIN_CHATS = 1u << 3,     /* join by invite link or username */
    CONNECTOR_CAN_ADD_MEMBERS = 1u << 4,
    CONNECTOR_CAN_ADMINISTER = 1u << 5, /* rename, invite links, remove members, leave */
    CONNECTOR_CAN_CHAT_INFO = 1u << 6,  /* a chat, its member count and admins as they are now */
    CONNECTOR_CAN_DOWNLOAD = 1u << 7,   /* a message's file into the media store */
    CONNECTOR_CAN_REALTIME = 1u << 8,   /* receives new messages as they come */
    CONNECTOR_CAN_CREATE_CHATS = 1u << 9,
    CONNECTOR_CAN_LOGIN = 1u << 10, /* accounts logged in at run time (login, accounts) */
    CONNECTOR_CAN_QUERY = 1u << 11, /* read calls upstream by method name (query) */
} connector_cap_t;

/* The capabilities of a message service and of run-time accounts: what a
 * toolset asks for to find its connector (toolset_env_connector). */
#define CONNECTOR_CAPS_CHAT                                                                        \
    (CONNECTOR_CAN_SEND | CONNECTOR_CAN_READ_HISTORY | CONNECTOR_CAN_SEARCH_DIALOGS |              \
     CONNECTOR_CAN_JOIN_CHATS | CONNECTOR_CAN_ADD_MEMBERS | CONNECTOR_CAN_ADMINISTER |             \
     CONNECTOR_CAN_CHAT_INFO | CONNECTOR_CAN_DOWNLOAD | CONNECTOR_CAN_REALTIME |                   \
     CONNECTOR_CAN_CREATE_CHATS)
#define CONNECTOR_CAPS_ACCOUNTS (CONNECTOR_CAN_LOGIN | CONNECTOR_CAN_QUERY)

/* Parts of connector_chat_info. */
#define CONNECTOR_INFO_CHAT         0x1u /* "chat": the upstream record */
#define CONNECTOR_INFO_MEMBER_COUNT 0x2u /* "memberCount" */
#define CONNECTOR_INFO_ADMINS       0x4u /* "administrators" */

/* status 0 with json, or a negative code with error (may be NULL). */
typedef void (*connector_cb)(void *data, int status, const char *json, const char *error);
typedef void (*connector_progress_cb)(void *data, uint64_t bytes, uint64_t total);

/* The verbs of a message service (Telegram). */
typedef struct connector_chat_ops_s {
    bool (*realtime)(void *impl);
    void (*set_realtime)(void *impl, bool on);
    /* CONNECTOR_CAN_SEND. The sent message as the upstream stored it:
     * {"message_id", "chat": {"id"}, "date", ...}. topic, reply_to: 0 for
     * none. */
    int (*send_text)(void *impl, int64_t chat, const char *text, int64_t topic, int64_t reply_to,
                     connector_cb cb, void *data);
    /* CONNECTOR_CAN_SEND. fd: an open regular file the caller opened and
     * checked (never a path: what was checked is what is sent), read from
     * offset 0. The connector owns fd from the call on and closes it, also
     * when the verb returns an error. filename: the name sent (NULL:
     * "file"); caption: NULL for none; topic, reply_to: 0 for none. */
    int (*send_file)(void *impl, int64_t chat, int fd, const char *caption, const char *filename,
                     int64_t topic, int64_t reply_to, connector_cb cb, void *data);
    /* CONNECTOR_CAN_CHAT_INFO. {"chat", "memberCount", "administrators"}
     * as asked by parts (a chat without a member count answers without
     * it); a part that failed ends the call with what was gathered and
     * "failed": {"part", "error"}. */
    int (*chat_info)(void *impl, int64_t chat, unsigned parts, connector_cb cb, void *data);
    /* CONNECTOR_CAN_ADMINISTER: {"title"}; the invite link as a JSON
     * string (revoke: a new primary link); remove a user (who may join
     * again later); leave. */
    int (*rename)(void *impl, int64_t chat, const char *title, connector_cb cb, void *data);
    int (*invite_link)(void *impl, int64_t chat, bool revoke, connector_cb cb, void *data);
    int (*remove_member)(void *impl, int64_t chat, int64_t user, connector_cb cb, void *data);
    int (*leave)(void *impl, int64_t chat, connector_cb cb, void *data);
    /* CONNECTOR_CAN_JOIN_CHATS. Joins by invite ("https://t.me/+HASH",
     * "t.me/joinchat/HASH", "tg://join?invite=HASH") or username
     * ("@name", "t.me/name"): {"status": "joined", "chat": the chat as the
     * Bot API shapes it ({"id", "type", "title", "username"})}, or
     * {"status": "requested"} when an admin must approve the request. */
    int (*join)(void *impl, const char *invite, connector_cb cb, void *data);
    /* CONNECTOR_CAN_ADD_MEMBERS. Adds the n users (copied) to chat:
     * {"added": [ids], "failed": [{"userId", "error"}]}. */
    int (*add_members)(void *impl, int64_t chat, const int64_t *users, size_t n, connector_cb cb,
                       void *data);
    /* CONNECTOR_CAN_DOWNLOAD. Downloads a message's file into the media
     * store now (done gets the media row as JSON, its "state" saying how
     * it ended), with progress. *handle is for fetch_cancel until done
     * runs. */
    int (*fetch_media)(void *impl, int64_t chat, int64_t message, connector_progress_cb progress,
                       connector_cb done, void *data, void **handle);
    void (*fetch_cancel)(void *impl, void *handle);
    /* Live reads. Each answers {"account": the store's accounts.id of the
     * account that read, ...} with the upstream's own objects (TDLib's
     * chat and message objects: the store maps them), so the caller can
     * store and answer them as the archive does. A FloodWait is UV_EAGAIN
     * with error "retry after N" (N seconds). */
    /* CONNECTOR_CAN_SEARCH_DIALOGS. The account's chats matching query,
     * then public ones, deduplicated, at most limit: "chats": [chat]. */
    int (*search_dialogs)(void *impl, const char *query, int limit, connector_cb cb, void *data);
    /* CONNECTOR_CAN_READ_HISTORY. Messages matching query, newest first, in
     * chat (0: across the account's chats), dated within [min_date,
     * max_date] (unix seconds; 0: open), at most limit: "messages",
     * "total" (the upstream's count of matches). */
    int (*search_messages)(void *impl, int64_t chat, const char *query, int64_t min_date,
                           int64_t max_date, int limit, connector_cb cb, void *data);
    /* CONNECTOR_CAN_READ_HISTORY. A chat's messages, newest first, from
     * message from (a server id; 0: the newest) and older, after up to
     * `newer` messages newer than from, at most limit: "messages". */
    int (*history)(void *impl, int64_t chat, int64_t from, int newer, int limit, connector_cb cb,
                   void *data);
    /* CONNECTOR_CAN_READ_HISTORY. One message (server id): "messages":
     * [it]; UV_ENOENT when there is none. */
    int (*get_message)(void *impl, int64_t chat, int64_t message, connector_cb cb, void *data);
} connector_chat_ops_t;

/* A sign-in in steps (connector_signin): each time the service asks for
 * something (done false: json {"ask": "code" | "password", "hint": text,
 * absent when none}; answer with connector_signin_answer), and exactly
 * once more at its end (done true): status 0 with json the account
 * {"account", "userId", "name", "phone"}, or a negative code with error
 * (UV_EACCES: refused, e.g. a wrong code, error says why; UV_ECANCELED:
 * connector_signin_cancel, or the daemon stops). */
typedef void (*connector_signin_cb)(void *data, bool done, int status, const char *json,
                                    const char *error);

/* The verbs of a service whose accounts log in at run time (Bluesky, a
 * Telegram user account). */
typedef struct connector_accounts_ops_s {
    /* CONNECTOR_CAN_LOGIN. Logs in as identifier with secret (neither is
     * kept in memory afterwards nor logged) at service (NULL: the one the
     * operator configured, trusted; else a URL from a tool, which goes
     * through the address policy) and stores the session for later calls:
     * {"handle", "did", "service", "default"}. Errors: UV_EACCES (refused
     * by the service: error says why), UV_EAGAIN (rate limited: error says
     * until when), UV_EINVAL (the service URL is refused). */
    int (*login)(void *impl, const char *identifier, const char *secret, const char *service,
                 connector_cb cb, void *data);
    /* CONNECTOR_CAN_LOGIN. command "list": [{"handle", "did", "service",
     * "default", "lastLoginAt"}]; "default": makes account the default;
     * "delete": forgets account and its session. UV_ENOENT: no such
     * account. */
    int (*accounts)(void *impl, const char *command, const char *account, connector_cb cb,
                    void *data);
    /* CONNECTOR_CAN_QUERY. A read call upstream (method: "app.bsky.feed.
     * searchPosts"; params: a JSON object of its parameters) as account
     * (NULL: the default one): {"account": {"id", "handle", "did"}, "data":
     * the upstream's answer}. UV_ENOENT: no such account (or none logged
     * in); UV_EACCES: the session is gone, log in again; UV_EAGAIN: rate
     * limited; UV_EPROTO: the upstream's error (error: its name and
     * message). */
    int (*query)(void *impl, const char *account, const char *method, const char *params_json,
                 connector_cb cb, void *data);
    /* CONNECTOR_CAN_LOGIN, for a service whose sign-in asks in turns (a
     * Telegram user account: a login code, then a password): signs
     * identifier (a phone number) in as account (NULL: named after
     * identifier), through step (connector_signin_cb); on success the
     * account serves at once. *handle is for signin_answer and
     * signin_cancel until the last step. Errors (no step runs): UV_EINVAL
     * (error: what is wrong with identifier or account), UV_EEXIST (that
     * account serves already), UV_EBUSY (another sign-in runs). */
    int (*signin)(void *impl, const char *identifier, const char *account, connector_signin_cb step,
                  void *data, void **handle, char *error, size_t errcap);
    /* Answers the step's ask (secret: neither kept nor logged). */
    int (*signin_answer)(void *impl, void *handle, const char *secret);
    /* Ends the sign-in: its last step runs later with UV_ECANCELED (or
     * with its outcome when that was already on its way). */
    void (*signin_cancel)(void *impl, void *handle);
} connector_accounts_ops_t;

typedef struct connector_ops_s {
    unsigned (*caps)(void *impl);
    /* Why the account lacks cap, for the model ("A bot account cannot read
     * chat history through the Bot API"); NULL when it has it. */
    const char *(*why_not)(void *impl, connector_cap_t cap);
    /* A word for serverStatus: "polling", "standby", "unauthorized", ... */
    const char *(*state)(void *impl);
    /* The job classes this connector runs (namespaced: "telegram.sync"):
     * *classes is valid for the connector's life. NULL: none. */
    int (*job_classes)(void *impl, const sync_class_t **classes);
    /* Whether the store's account id (accounts.id) is one of the
     * connector's, serving now: a verb on a chat stored under it goes
     * here first. NULL: none is. */
    bool (*serves_account)(void *impl, int64_t account_id);
    /* Its accounts' state as a JSON object ({"state", "error"}: why the
     * default account cannot serve), valid until the next call; NULL: the
     * connector has no such state. */
    const char *(*account_json)(void *impl);
    /* Appends the connector's Prometheus figures to out (util/buf.h);
     * NULL: none. */
    void (*metrics)(void *impl, struct buf_s *out);
    const connector_chat_ops_t *chat;         /* NULL: not a message service */
    const connector_accounts_ops_t *accounts; /* NULL: no run-time accounts */
} connector_ops_t;

typedef struct connector_s {
    const char *name; /* "telegram" */
    const connector_ops_t *ops;
    void *impl;
} connector_t;

/* True when conn is there and declares cap. */
__attribute__((warn_unused_result)) static inline bool connector_can(const connector_t *conn,
                                                                     connector_cap_t cap)
{
    return conn != NULL && (conn->ops->caps(conn->impl) & cap) != 0;
}

/* The connector's reason for lacking cap, or NULL. */
static inline const char *connector_why_not(const connector_t *conn, connector_cap_t cap)
{
    return conn == NULL || connector_can(conn, cap) ? NULL : conn->ops->why_not(conn->impl, cap);
}

/* The shared part: "none" when conn is NULL; 0 classes when none. */
const char *connector_state(const connector_t *conn);
int connector_job_classes(const connector_t *conn, const sync_class_t **classes);
void connector_metrics(const connector_t *conn, struct buf_s *out);
/* Whether conn serves the store's account account_id now (false for NULL). */
__attribute__((warn_unused_result)) bool connector_serves_account(const connector_t *conn,
                                                                  int64_t account_id);
/* The connector's account_json, or NULL. */
const char *connector_account_json(const connector_t *conn);

/* The verbs, as in the tables above; each returns UV_ENOTSUP (without
 * calling back) when conn is NULL, lacks the table, the function or the
 * capability the verb needs. connector_realtime is false then. */
__attribute__((warn_unused_result)) bool connector_realtime(const connector_t *conn);
int connector_set_realtime(const connector_t *conn, bool on);
int connector_send_text(const connector_t *conn, int64_t chat, const char *text, int64_t topic,
                        int64_t reply_to, connector_cb cb, void *data);
/* fd is owned by the connector from the call on (closed also on error,
 * UV_ENOTSUP included). */
int connector_send_file(const connector_t *conn, int64_t chat, int fd, const char *caption,
                        const char *filename, int64_t topic, int64_t reply_to, connector_cb cb,
                        void *data);
int connector_chat_info(const connector_t *conn, int64_t chat, unsigned parts, connector_cb cb,
                        void *data);
int connector_rename(const connector_t *conn, int64_t chat, const char *title, connector_cb cb,
                     void *data);
int connector_invite_link(const connector_t *conn, int64_t chat, bool revoke, connector_cb cb,
                          void *data);
int connector_remove_member(const connector_t *conn, int64_t chat, int64_t user, connector_cb cb,
                            void *data);
int connector_leave(const connector_t *conn, int64_t chat, connector_cb cb, void *data);
int connector_join(const connector_t *conn, const char *invite, connector_cb cb, void *data);
int connector_add_members(const connector_t *conn, int64_t chat, const int64_t *users, size_t n,
                          connector_cb cb, void *data);
int connector_fetch_media(const connector_t *conn, int64_t chat, int64_t message,
                          connector_progress_cb progress, connector_cb done, void *data,
                          void **handle);
void connector_fetch_cancel(const connector_t *conn, void *handle);
int connector_search_dialogs(const connector_t *conn, const char *query, int limit, connector_cb cb,
                             void *data);
int connector_search_messages(const connector_t *conn, int64_t chat, const char *query,
                              int64_t min_date, int64_t max_date, int limit, connector_cb cb,
                              void *data);
int connector_history(const connector_t *conn, int64_t chat, int64_t from, int newer, int limit,
                      connector_cb cb, void *data);
int connector_get_message(const connector_t *conn, int64_t chat, int64_t message, connector_cb cb,
                          void *data);
int connector_login(const connector_t *conn, const char *identifier, const char *secret,
                    const char *service, connector_cb cb, void *data);
int connector_accounts(const connector_t *conn, const char *command, const char *account,
                       connector_cb cb, void *data);
int connector_query(const connector_t *conn, const char *account, const char *method,
                    const char *params_json, connector_cb cb, void *data);
/* A sign-in in steps (connector_accounts_ops_t.signin); error gets the
 * reason of a UV_EINVAL (may be NULL). */
int connector_signin(const connector_t *conn, const char *identifier, const char *account,
                     connector_signin_cb step, void *data, void **handle, char *error,
                     size_t errcap);
int connector_signin_answer(const connector_t *conn, void *handle, const char *secret);
void connector_signin_cancel(const connector_t *conn, void *handle);

#endif
