/* tg_user_internal: what the files of the Telegram user-account connector
 * share (internal; the interface is tg_user.h).
 *
 *   tg_user.c          the connector: its definition, capabilities, verbs,
 *                      the accounts it runs, `parleyd login telegram`
 *   tg_user_session.c  an account's files: DATA_DIR/telegram/NAME/ (0700),
 *                      its TDLib database td/ and the database key db.key
 *                      (sealed with the credentials key)
 *   tg_user_auth.c     sign-in driven by updateAuthorizationState
 *   tg_user_account.c  one account's life: its advisory lock, its TDLib
 *                      client, the chats loaded, updates stored in order
 *   tg_user_history.c  the job class telegram.history (backfill)
 *   tg_user_admin.c    chat info, administration, joining, adding members
 *   tg_user_live.c     live reads: dialogs and messages searched, history,
 *                      one message
 *   tg_user_login.c    signing an account in while serving (the accounts
 *                      verbs signin, signin_answer, signin_cancel)
 *   tg_user_files.c    files: send_file, fetch_media (downloadFile into
 *                      the media store)
 *
 * Ownership: the connector (tgu_t) owns its tdjson_t and its accounts; an
 * account owns its lock, its client and its store queue. An account is
 * freed only after its lock and its client reported closed (their close
 * callbacks), and the connector after every account. */
#ifndef PARLEY_UPSTREAM_TELEGRAM_USER_TG_USER_INTERNAL_H
#define PARLEY_UPSTREAM_TELEGRAM_USER_TG_USER_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "db/lock.h"
#include "db/pool.h"
#include "sync/jobs.h"
#include "upstream/connector.h"
#include "upstream/connectors.h"
#include "upstream/telegram/user/tdjson.h"
#include "util/queue.h"
#include "util/sealed.h"

#define TGU_NAME_MAX 64
#define TGU_PATH_MAX 4096
/* Accounts one daemon runs. */
#define TGU_ACCOUNTS_MAX 16
/* Store operations an account keeps while the store is slow; past it an
 * update is dropped with a warning (TDLib's own database keeps it). */
#define TGU_STORE_QUEUE_MAX 20000
/* Operations written in one statement. */
#define TGU_STORE_BATCH 500
/* Chats asked per loadChats. */
#define TGU_LOAD_CHATS 100
/* Messages asked per getChatHistory (TDLib's limit). */
#define TGU_HISTORY_PAGE 100
/* The database key's bytes (TDLib's database_encryption_key). */
#define TGU_DB_KEY_BYTES 32
/* A job of an account this daemon does not run waits this long. */
#define TGU_HISTORY_ELSEWHERE_S 3
/* Backfill jobs run at once (per daemon): the default of the setting
 * telegram_history_jobs. */
#define TGU_HISTORY_JOBS 2

typedef struct tgu_s tgu_t;
typedef struct tgu_account_s tgu_account_t;

/* ---- session files (tg_user_session.c) ------------------------------------ */

typedef struct tgu_session_s {
    char name[TGU_NAME_MAX];
    char dir[TGU_PATH_MAX];    /* DATA_DIR/telegram/NAME */
    char td_dir[TGU_PATH_MAX]; /* its td/: TDLib's database_directory */
    char key_b64[64];          /* database_encryption_key, base64 */
    bool pending;              /* its key is db.key.pending: not signed in yet */
} tgu_session_t;

/* The account's name: name when given (a letter or digit, then letters,
 * digits, _ and -: never an option's leading '-'), else the digits of
 * phone. 0, or UV_EINVAL with err. */
int tgu__session_name(const char *name, const char *phone, char *out, size_t cap, char *err,
                      size_t errcap);
/* Opens (create: or makes) the account NAME's directory and key: every
 * directory 0700, db.key 0600 sealed under "telegram_user:NAME" with the
 * credentials key (create, before the sign-in succeeded: db.key.pending). UV_ENOENT when there is
 * none and !create. Small and bounded: at start. */
int tgu__session_open(const char *data_dir, const sealed_key_t *cred, const char *name, bool create,
                      tgu_session_t *out, char *err, size_t errcap);
/* The names of the accounts signed in under data_dir (those with a
 * db.key), at most max; their count. */
int tgu__session_list(const char *data_dir, char names[][TGU_NAME_MAX], int max);
/* The sign-in succeeded: db.key.pending becomes db.key (the directory is
 * an account from now on). 0, or a negative errno with err. */
int tgu__session_commit(tgu_session_t *s, char *err, size_t errcap);
/* A sign-in that did not succeed (still pending) leaves nothing: removes
 * its directory (db.key.pending, td/), never following a symbolic link;
 * a signed-in account's (not pending) is left alone. Call once TDLib's
 * client on it is closed; file work: off the loop while serving. 0, or a
 * negative errno. */
int tgu__session_discard(tgu_session_t *s);
void tgu__session_wipe(tgu_session_t *s);

/* ---- sign-in (tg_user_auth.c) --------------------------------------------------- */

typedef enum { TGU_ASK_PHONE = 0, TGU_ASK_CODE, TGU_ASK_PASSWORD } tgu_ask_t;

typedef struct tgu_auth_s tgu_auth_t;
struct tgu_auth_s {
    tdjson_client_t *client;
    const tgu_session_t *session;
    long api_id;
    const char *api_hash;
    /* What the sign-in needs next (hint: the phone the code went to, the
     * password's hint); NULL: nobody can answer (serve), which fails. */
    void (*ask)(tgu_auth_t *a, tgu_ask_t what, const char *hint);
    void (*ready)(tgu_auth_t *a);
    /* status: UV_EACCES signed out or refused (why says how), UV_EINVAL a
     * bad setting, else a TDLib or transport failure. */
    void (*failed)(tgu_auth_t *a, int status, const char *why);
    void *data;
    bool ended; /* ready or failed was called */
};

/* Feeds an update; true when it was the authorization state's. */
bool tgu__auth_update(tgu_auth_t *a, json_t *update);
/* Answers what ask asked. 0 or a negative code. */
int tgu__auth_answer(tgu_auth_t *a, tgu_ask_t what, const char *text);

/* ---- one account (tg_user_account.c) ------------------------------------------- */

typedef enum {
    TGU_ACC_STANDBY = 0, /* waiting for its advisory lock */
    TGU_ACC_STARTING,    /* TDLib client starting, signing in from its database */
    TGU_ACC_LOADING,     /* signed in; loading its chats */
    TGU_ACC_READY,       /* its chats loaded; live */
    TGU_ACC_SIGNED_OUT,  /* its session ended: sign in again */
    TGU_ACC_FAILED,      /* TDLib failed; retried later */
    TGU_ACC_CLOSING,
    TGU_ACC_CLOSED,
} tgu_acc_state_t;

/* A message sent and not yet confirmed (updateMessageSendSucceeded). */
typedef struct tgu_send_s {
    queue_node_t node;
    tgu_account_t *acc;
    int64_t chat;
    json_int_t temp_id;
    connector_cb cb;
    void *data;
} tgu_send_t;

struct tgu_account_s {
    tgu_t *u;
    tgu_session_t session;
    tgu_acc_state_t state;
    char error[256];    /* why SIGNED_OUT or FAILED */
    int64_t account_id; /* accounts.id, once stored */
    bool is_default;    /* the default telegram_user account (accounts.is_default) */
    int64_t user_id;
    pg_lock_t *lock;
    tdjson_client_t *client;
    tgu_auth_t auth;
    uv_timer_t timer; /* store flushes, restarts */
    bool timer_started, timer_closed, client_closed, lock_closing, lock_done;
    json_t *ops;  /* store operations waiting, in order */
    bool writing; /* the first inflight of ops are being written */
    size_t inflight;
    int tries; /* failed writes of that batch */
    unsigned long dropped;
    unsigned long long stored; /* operations written */
    queue_node_t sends;        /* tgu_send_t */
    void (*closed_cb)(void *data);
    void *closed_data;
};

int tgu__account_start(tgu_t *u, const char *name, tgu_account_t **out, char *err, size_t errcap);
/* The same for an account whose session is open already (a sign-in while
 * serving: tg_user_login.c); session is copied. */
int tgu__account_run(tgu_t *u, const tgu_session_t *session, tgu_account_t **out, char *err,
                     size_t errcap);
/* A SIGNED_OUT account this daemon holds the lock of (its client closed)
 * starts its client again, signing in from its database (after a sign-in
 * while serving, tg_user_login.c). false: it is not such an account. */
__attribute__((warn_unused_result)) bool tgu__account_restart(tgu_account_t *acc);
void tgu__account_close(tgu_account_t *acc, void (*cb)(void *data), void *data);
const char *tgu__account_state_word(const tgu_account_t *acc);
/* Queues a store operation {"op": ..., ...} (stolen). */
void tgu__account_store(tgu_account_t *acc, json_t *op);
/* A request on the account's client (request stolen); UV_ENOTCONN when it
 * is not signed in. */
int tgu__account_send(tgu_account_t *acc, json_t *request, tdjson_reply_cb cb, void *data);

/* ---- the connector (tg_user.c) ----------------------------------------------------- */

struct tgu_s {
    connector_t conn;
    uv_loop_t *loop;
    pg_pool_t *rw;
    const pg_conninfo_t *conninfo;
    char owner[160];
    uint32_t connect_timeout_ms;
    char data_dir[TGU_PATH_MAX];
    sealed_key_t cred;
    long api_id;
    char api_hash[64];
    uint32_t td_timeout_ms;
    bool realtime; /* updates stored as they come (syncRealtimeSet) */
    tdjson_t *td;
    bool td_closed;
    tgu_account_t *accounts[TGU_ACCOUNTS_MAX];
    int naccounts, nclosing;
    sync_class_t classes[1];
    void (*closed_cb)(void *data);
    void *closed_data;
    char state_buf[128];
    char account_buf[512];
    /* parleyd login telegram: one client signing one account in. */
    bool login;
    /* The login was refused as a second account of one Telegram user: its
     * client logs out instead of closing (no session left on Telegram). */
    bool login_log_out;
    tdjson_client_t *login_client;
    tgu_session_t login_session;
    tgu_auth_t login_auth;
    tgu_ask_t login_asked;
    char login_phone[32]; /* digits */
    connector_prompt_t login_prompt;
    connector_login_cb login_done;
    void *login_data;
    char login_line[512];
    /* While the login waits on Telegram (not on its user): what for ("the
     * phone number"), since when, the connection TDLib last reported (in
     * words; NULL: none yet) and the timer of the progress lines and the
     * deadline (tg_user.c, TGU_LOGIN_*). */
    const char *login_waiting;
    uint64_t login_wait_since;
    const char *login_connection;
    bool login_connected;
    uv_timer_t login_timer;
    bool login_timer_init;
    /* What the wait does when Telegram is out of reach (tgu__reach_wait). */
    void (*login_unreachable)(struct tgu_s *u, const char *why);
    /* A sign-in while serving (tg_user_login.c), or NULL. */
    struct tgu_signin_s *signin;
    /* Downloads callers wait for (tg_user_files.c); while closing, the
     * callback that runs once the last one ended. */
    queue_node_t fetches;
    int files_links; /* sends preparing their file's link */
    bool files_stopping;
    void (*files_closed)(void *data);
};

/* The account the tools use when they name none: the default account
 * (the first signed in) when it serves here, else the first serving (in
 * name order); NULL when none serves. */
tgu_account_t *tgu__default(tgu_t *u);
/* The account stored as accounts.id id, or NULL. */
tgu_account_t *tgu__by_id(tgu_t *u, int64_t id);

/* ---- chat info and administration (tg_user_admin.c) ---------------------------------- */

/* connector_chat_ops_t's verbs of those names (impl: the tgu_t), on the
 * default account (UV_ENOTCONN: none). */
int tgu__chat_info(void *impl, int64_t chat, unsigned parts, connector_cb cb, void *data);
int tgu__rename(void *impl, int64_t chat, const char *title, connector_cb cb, void *data);
int tgu__invite_link(void *impl, int64_t chat, bool revoke, connector_cb cb, void *data);
int tgu__remove_member(void *impl, int64_t chat, int64_t user, connector_cb cb, void *data);
int tgu__leave(void *impl, int64_t chat, connector_cb cb, void *data);
int tgu__join(void *impl, const char *invite, connector_cb cb, void *data);
int tgu__add_members(void *impl, int64_t chat, const int64_t *users, size_t n, connector_cb cb,
                     void *data);
/* ---- live reads (tg_user_live.c): connector.h's verbs of the same names ---------------- */

int tgu__live_search_dialogs(void *impl, const char *query, int limit, connector_cb cb, void *data);
int tgu__live_search_messages(void *impl, int64_t chat, const char *query, int64_t min_date,
                              int64_t max_date, int limit, connector_cb cb, void *data);
int tgu__live_history(void *impl, int64_t chat, int64_t from, int newer, int limit, connector_cb cb,
                      void *data);
int tgu__live_get_message(void *impl, int64_t chat, int64_t message, connector_cb cb, void *data);
/* ---- signing in while serving (tg_user_login.c) ------------------------------------ */

/* The wait on Telegram of a login or a sign-in (tg_user.c; one at a time:
 * the connector runs either `parleyd login` or serve's sign-ins, one by
 * one). tgu__reach_wait: a request (what: "the phone number") is out: a
 * progress line every TGU_LOGIN_PROGRESS_MS with the connection TDLib
 * reports, and after TGU_LOGIN_REACH_MS without an answer and without a
 * connection, unreachable(u, why) once (connected, the request's own
 * timeout holds). tgu__reach_over: the answer came. tgu__reach_update:
 * true when update was TDLib's updateConnectionState (noted).
 * tgu__reach_reset: stopped, and no connection known (a new client). */
void tgu__reach_wait(tgu_t *u, const char *what, void (*unreachable)(tgu_t *u, const char *why));
void tgu__reach_over(tgu_t *u);
__attribute__((warn_unused_result)) bool tgu__reach_update(tgu_t *u, const json_t *update);
void tgu__reach_reset(tgu_t *u);

extern const connector_accounts_ops_t tgu__accounts_ops;
/* The daemon stops: ends a sign-in in progress (its last step says
 * UV_ECANCELED); cb(data) once its TDLib client is closed. false (cb not
 * called) when none runs. */
bool tgu__signin_close(tgu_t *u, void (*cb)(void *data), void *data);
/* The answer to a sendMessage (tg_user.c): the message final at once,
 * or pending until updateMessageSendSucceeded/Failed; data: a tgu_send_t
 * whose cb runs exactly once. */
void tgu__sent_pending(void *data, int status, json_t *reply);

/* ---- files (tg_user_files.c) ------------------------------------------------------------ */

/* The verbs send_file, fetch_media and fetch_cancel (connector.h). */
int tgu__send_file(void *impl, int64_t chat, int fd, const char *caption, const char *filename,
                   int64_t topic, int64_t reply_to, connector_cb cb, void *data);
int tgu__fetch_media(void *impl, int64_t chat, int64_t message, connector_progress_cb progress,
                     connector_cb done, void *data, void **handle);
void tgu__fetch_cancel(void *impl, void *handle);
/* An updateFile's file (borrowed): progress of a download. */
void tgu__files_update(tgu_account_t *acc, json_t *file);
/* cb(u) once no download and no send preparing is left (at once when
 * none is); nothing new starts from then on. */
void tgu__files_close(tgu_t *u, void (*cb)(void *data));

/* ---- backfill (tg_user_history.c) --------------------------------------------------- */

void tgu__history_exec(sync_job_t *job, void *ctx);

#endif
