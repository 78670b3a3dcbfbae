/* connector: the domain's interface to an upstream service (the Telegram
 * Bot API, Bluesky; a Telegram user account later). A connector is a
 * table of typed, asynchronous verbs plus the capabilities it declares.
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

/* Parts of connector_chat_info. */
#define CONNECTOR_INFO_CHAT         0x1u /* "chat": the upstream record */
#define CONNECTOR_INFO_MEMBER_COUNT 0x2u /* "memberCount" */
#define CONNECTOR_INFO_ADMINS       0x4u /* "administrators" */

/* status 0 with json, or a negative code with error (may be NULL). */
typedef void (*connector_cb)(void *data, int status, const char *json, const char *error);
typedef void (*connector_progress_cb)(void *data, uint64_t bytes, uint64_t total);

typedef struct connector_ops_s {
    unsigned (*caps)(void *impl);
    /* Why the account lacks cap, for the model ("A bot account cannot read
     * chat history through the Bot API"); NULL when it has it. */
    const char *(*why_not)(void *impl, connector_cap_t cap);
    /* A word for serverStatus: "polling", "standby", "unauthorized", ... */
    const char *(*state)(void *impl);
    bool (*realtime)(void *impl);
    void (*set_realtime)(void *impl, bool on);
    /* The sent message as the upstream stored it: {"message_id", "chat":
     * {"id"}, "date", ...}. topic, reply_to: 0 for none. */
    int (*send_text)(void *impl, int64_t chat, const char *text, int64_t topic, int64_t reply_to,
                     connector_cb cb, void *data);
    /* fd: an open regular file the caller opened and checked (never a path:
     * what was checked is what is sent), read from offset 0. The connector
     * owns fd from the call on and closes it, also when the verb returns an
     * error. filename: the name sent (NULL: "file"); caption: NULL for
     * none; topic, reply_to: 0 for none. */
    int (*send_file)(void *impl, int64_t chat, int fd, const char *caption, const char *filename,
                     int64_t topic, int64_t reply_to, connector_cb cb, void *data);
    /* {"chat", "memberCount", "administrators"} as asked by parts (a chat
     * without a member count answers without it); a part that failed ends
     * the call with what was gathered and "failed": {"part", "error"}. */
    int (*chat_info)(void *impl, int64_t chat, unsigned parts, connector_cb cb, void *data);
    /* {"title"} */
    int (*rename)(void *impl, int64_t chat, const char *title, connector_cb cb, void *data);
    /* The invite link as a JSON string; revoke: a new primary link. */
    int (*invite_link)(void *impl, int64_t chat, bool revoke, connector_cb cb, void *data);
    /* Removes the user (who may join again later). */
    int (*remove_member)(void *impl, int64_t chat, int64_t user, connector_cb cb, void *data);
    int (*leave)(void *impl, int64_t chat, connector_cb cb, void *data);
    /* Downloads a message's file into the media store now (done gets the
     * media row as JSON, its "state" saying how it ended), with progress.
     * *handle is for fetch_cancel until done runs. */
    int (*fetch_media)(void *impl, int64_t chat, int64_t message, connector_progress_cb progress,
                       connector_cb done, void *data, void **handle);
    void (*fetch_cancel)(void *impl, void *handle);
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
    /* The job classes this connector runs (namespaced: "telegram.sync"):
     * *classes is valid for the connector's life. */
    int (*job_classes)(void *impl, const sync_class_t **classes);
    /* Appends the connector's Prometheus figures to out (util/buf.h). */
    void (*metrics)(void *impl, struct buf_s *out);
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

#endif
