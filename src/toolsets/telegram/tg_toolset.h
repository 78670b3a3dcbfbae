/* tg_toolset: what the files of the telegram toolset share (internal): its
 * context, the generic handler that runs a tool's SQL function, and the
 * one way a tool goes on from the archive's answer to the connector. */
#ifndef PARLEY_TOOLSETS_TELEGRAM_TG_TOOLSET_H
#define PARLEY_TOOLSETS_TELEGRAM_TG_TOOLSET_H

#include <jansson.h>
#include <limits.h>

#include "archive/archive.h"
#include "mcp/call.h"
#include "toolsets/login_rounds.h"
#include "toolsets/toolset.h"
#include "upstream/connector.h"

/* Sign-ins (authLogin) a toolset keeps at once: running, or finished and
 * kept for the 2026-07-28 round that asks for the outcome. */
#define TG_LOGINS_MAX 8

typedef struct tg_toolset_s {
    archive_t *archive;
    connector_t *conn; /* the first message service; NULL: archive only */
    /* Every message service started, in the table's order (the Bot API,
     * then the user accounts): a verb goes to the first that can do it. */
    connector_t *conns[TOOLSET_MAX_CONNECTORS];
    int nconns;
    char media_root[TOOLSET_PATH_MAX];
    char export_root[TOOLSET_PATH_MAX]; /* where mediaDownload may write */
    char upload_root[TOOLSET_PATH_MAX]; /* where messagesSendFile may read */
    char *(*status_json)(void *data);
    void *status_data;
    char timezone[TOOLSET_PATH_MAX]; /* of date words in arguments (the timezone setting) */
    /* {"timezone":...}: the context of every SQL function but the two
     * that report the daemon's state (tg_ts_run), made once. Owned. */
    char *ctx_plain;
    /* authLogin (auth.c): the one-time local pages, and the sign-ins in
     * progress or whose outcome a later round may ask for (of
     * tg_ts_login_ops). */
    struct secret_page_server_s *pages;
    login_rounds_t logins;
} tg_toolset_t;

/* The call's toolset context. */
static inline tg_toolset_t *tg_ts(const mcp_call_t *c)
{
    return mcp_call_context(c);
}

/* The connector that does cap now: the first of ts->conns that can, else
 * ts->conn (whose why_not says why not; NULL without any). */
static inline connector_t *tg_ts_conn(const tg_toolset_t *ts, connector_cap_t cap)
{
    for (int i = 0; i < ts->nconns; i++)
        if (connector_can(ts->conns[i], cap))
            return ts->conns[i];
    return ts->conn;
}

/* The connector that does cap on the chat the archive resolved (answer:
 * {"channelId", "accountId"}): the one that serves the account the chat
 * was stored under (a user account's private chat goes through that
 * account, a bot's group through the bot), else tg_ts_conn. */
static inline connector_t *tg_ts_conn_for(const tg_toolset_t *ts, connector_cap_t cap,
                                          const json_t *answer)
{
    int64_t account = json_integer_value(json_object_get(answer, "accountId"));
    for (int i = 0; account != 0 && i < ts->nconns; i++)
        if (connector_can(ts->conns[i], cap) && connector_serves_account(ts->conns[i], account))
            return ts->conns[i];
    return tg_ts_conn(ts, cap);
}

/* Runs SQL function fn with args (JSON text; NULL: the call's arguments)
 * and the daemon's context (its figures and connectors' states for
 * serverStatus's and authStatus's functions, the timezone for the rest);
 * cb gets data. Returns false when it could not
 * start (the call is finished then). */
bool tg_ts_run(mcp_call_t *c, const char *fn, const char *args_json, archive_call_cb cb,
               void *data);

/* Finishes c with the archive's failure, in words for the model. */
void tg_ts_fail(mcp_call_t *c, int status, archive_err_t err, const char *message);

/* The SQL function that resolves a call's channelId to its chat (the
 * connector's tools run it first, through tg_ts_then; it only reads). */
#define TG_RESOLVE_FN "parley_tg_resolve_channel"

/* The archive answered, now the connector: runs fn (args as tg_ts_run),
 * then next with its answer (borrowed) and arg. A failure of fn, or an
 * answer that is not a JSON object, ends the call through tg_ts_fail. */
typedef void (*tg_then_fn)(mcp_call_t *c, json_t *answer, void *arg);
void tg_ts_then(mcp_call_t *c, const char *fn, const char *args_json, tg_then_fn next, void *arg);

/* Finishes c with o (stolen) as structuredContent. */
void tg_ts_finish_obj(mcp_call_t *c, json_t *o);

/* Finishes c with the connector's failure of the tool's verb. */
void tg_ts_connector_failed(mcp_call_t *c, int status, const char *error);

/* A connector's verb on one chat in flight: the call and the chat, the
 * data of the verb's callback (tg_ts_chat_verb_new, NULL when out of
 * memory; then tg_ts_chat_verb_end frees it). */
typedef struct tg_chat_verb_s {
    mcp_call_t *call;
    json_int_t chat;
} tg_chat_verb_t;
tg_chat_verb_t *tg_ts_chat_verb_new(mcp_call_t *c, json_int_t chat);
/* The verb's callback data v, freed: true with *c and *chat when the verb
 * succeeded; false when it failed (the call finished with the failure). */
__attribute__((warn_unused_result)) bool tg_ts_chat_verb_end(void *v, int status, const char *error,
                                                             mcp_call_t **c, json_int_t *chat);

/* Handlers. */
void tg_ts_generic(mcp_call_t *c);
void tg_ts_messages_send(mcp_call_t *c);
void tg_ts_messages_send_file(mcp_call_t *c);
void tg_ts_realtime_set(mcp_call_t *c);
void tg_ts_group_admin(mcp_call_t *c);
void tg_ts_metadata_refresh(mcp_call_t *c);
void tg_ts_groups_info(mcp_call_t *c);
void tg_ts_media_download(mcp_call_t *c);
/* groupsJoin's and groupsMembersAdd's connector part (join.c): the call,
 * and for adding the archive's answer (channelId, userIds). */
void tg_ts_join(mcp_call_t *c);
void tg_ts_members_add(mcp_call_t *c, json_t *answer, void *arg);
/* live_read.c */
void tg_ts_channels_search(mcp_call_t *c);
void tg_ts_live_read(mcp_call_t *c);
void tg_ts_auth_login(mcp_call_t *c);
/* authLogin's part of the logins of several rounds (auth.c). */
extern const login_rounds_ops_t tg_ts_login_ops;

/* The toolset's MCP table (tools.c). */
extern const mcp_toolset_t toolset_telegram_mcp;

#endif
