/* tg_bot_internal: what the files of the Bot API connector share
 * (internal to src/upstream): tg_bot.c polls getUpdates under the poller
 * lease and runs the connector's lifecycle; tg_send.c the paced send queue
 * (sendMessage, sendDocument) and the other Bot API methods. */
#ifndef PARLEY_UPSTREAM_TELEGRAM_BOT_TG_BOT_INTERNAL_H
#define PARLEY_UPSTREAM_TELEGRAM_BOT_TG_BOT_INTERNAL_H

#include "db/lock.h"
#include "upstream/telegram/bot/tg_bot.h"
#include "util/queue.h"

#define BOT_TAG "telegram"

typedef enum {
    BOT_STARTING = 0, /* getMe, account */
    BOT_POLLING,
    BOT_BACKOFF,
    BOT_STOPPED,
    BOT_CLOSING,
    BOT_STANDBY, /* another daemon holds the poller lock */
} bot_state_t;

typedef struct send_s {
    queue_node_t node;
    int64_t chat;
    char *body;               /* the sendMessage JSON, or NULL for a file */
    bool file;                /* sendDocument, else sendMessage */
    int fd;                   /* sendDocument: the file (owned), or -1 */
    char *caption, *filename; /* sendDocument */
    char chat_buf[24], topic_buf[24];
    char reply_buf[48]; /* reply_parameters JSON, or "" */
    const char *form[10];
    tg_bot_send_cb cb;
    void *data;
} send_t;

struct tg_bot_s {
    uv_loop_t *loop;
    net_client_t *net;
    pg_pool_t *rw;
    char token[256];
    char api_url[512];
    int poll_timeout_s;
    bot_state_t state;
    const char *detail; /* "conflict", "unauthorized", or NULL */
    bool want_realtime;
    int64_t account;
    int64_t offset;
    uint64_t applied;
    uint32_t backoff_ms;
    uv_timer_t timer; /* backoff and send pacing */
    uv_timer_t send_timer;
    /* The one poll or setup request in flight. */
    net_req_t req;
    bool req_busy;
    char url[1024];
    char *req_body;
    char owner[96];
    /* The poller's advisory lock (the fence); the lease row records it. */
    pg_conninfo_t conninfo;
    uint32_t connect_timeout_ms;
    pg_lock_t *lock;
    bool lock_open, lock_closing;
    uint64_t lease_until; /* loop time until which our lease row is fresh */
    bool releasing;       /* giving the lease back at close */
    bool released;        /* the lease was given back (or there was none) */
    bool standby;         /* stood by last time the lease was asked for */
    bool q_busy;          /* the one database step of the poller in flight */
    /* Applying staged batches (parley_bot_apply_staged), beside the poller. */
    bool a_busy;            /* an apply in flight */
    uv_timer_t apply_timer; /* the applier's retry after a failure: its own,
                             * so the poller's state (standby, polling, its
                             * backoff) is never the applier's to change */
    uint32_t apply_backoff_ms;
    int64_t pending;   /* staged batches not applied, as last reported */
    bool staged_since; /* a batch was staged while the apply in flight ran */
    /* Sending. */
    queue_node_t sends;
    int nsends;
    queue_node_t calls; /* other methods in flight */
    send_t *sending;
    net_req_t sreq;
    char surl[1024];
    char *sjson; /* the sent message while it is stored */
    uint64_t last_send_ms;
    json_t *last_by_chat; /* chat id -> loop time of its last send */
    int handles;
    tg_media_t *media;
    bool media_open;
    bool in_close;
    void (*close_cb)(tg_bot_t *b, void *data);
    void *close_data;
};

/* A Bot API method in flight other than a send (tg_bot_call), in b->calls. */
typedef struct call_s {
    queue_node_t node;
    tg_bot_t *b;
    net_req_t req;
    char url[1024];
    char *body;
    tg_bot_send_cb cb;
    void *data;
} call_t;

/* tg_bot.c */
void tg_bot__maybe_closed(tg_bot_t *b);
void tg_bot__set_url(tg_bot_t *b, char *url, size_t cap, const char *method);

/* tg_send.c */
/* Answers s's caller (s->cb with status, json and error) and frees s (its
 * body, its file, its caption and file name): a send that ended, sent or
 * not. s is no longer queued nor b->sending. */
void tg_bot__send_end(send_t *s, int status, const char *json, const char *error);

#endif
