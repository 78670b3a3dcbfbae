/* tg_connector: the Bot API account behind the connector interface (see
 * tg_connector.h). */
#include "upstream/telegram/bot/tg_connector.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync/jobs.h"
#include "upstream/connectors.h"
#include "util/log.h"
#include "upstream/telegram/bot/tg_jobs.h"

#define TG_CAPS                                                                                    \
    (CONNECTOR_CAN_SEND | CONNECTOR_CAN_ADMINISTER | CONNECTOR_CAN_CHAT_INFO |                     \
     CONNECTOR_CAN_DOWNLOAD | CONNECTOR_CAN_REALTIME)

struct tg_connector_s {
    connector_t conn;
    tg_bot_t *bot;
    /* Started by the definition below (tg_connector_def): the Bot API's
     * HTTP client, which it owns with the bot; NULL when the bot is
     * borrowed (tg_connector_new). */
    net_client_t *net;
    void (*closed_cb)(void *data);
    void *closed_data;
    tg_jobs_ctx_t jobs_ctx;
    sync_class_t classes[2];
};

/* Once the bot is closed (tc->bot NULL: a call that outlived the drain)
 * the connector can do nothing, and every verb answers UV_ENOTSUP. */
static unsigned tc_caps(void *impl)
{
    tg_connector_t *tc = impl;
    if (tc->bot == NULL)
        return 0;
    return tg_bot_media(tc->bot) ? TG_CAPS : TG_CAPS & ~(unsigned)CONNECTOR_CAN_DOWNLOAD;
}

static const char *tc_why_not(void *impl, connector_cap_t cap)
{
    switch (((tg_connector_t *)impl)->bot ? cap : 0) {
    case CONNECTOR_CAN_READ_HISTORY:
        return "A bot account cannot read chat history through the Bot API; messages the bot "
               "received are stored as they arrive.";
    case CONNECTOR_CAN_SEARCH_DIALOGS:
        return "A bot account cannot list or search its dialogs.";
    case CONNECTOR_CAN_JOIN_CHATS:
        return "A bot account cannot join a group by invite; a member or an admin has to add "
               "the bot to the group.";
    case CONNECTOR_CAN_ADD_MEMBERS:
        return "A bot account cannot add members to a group.";
    case CONNECTOR_CAN_CREATE_CHATS:
        return "A bot account cannot create chats.";
    case CONNECTOR_CAN_DOWNLOAD:
        return "Media downloads are off for this bot.";
    default:
        return ((tg_connector_t *)impl)->bot ? "The Telegram bot account cannot do that."
                                             : "parley is stopping; the Telegram bot is closed.";
    }
}

static const char *tc_state(void *impl)
{
    tg_connector_t *tc = impl;
    return tc->bot ? tg_bot_state(tc->bot) : "closed";
}

static bool tc_realtime(void *impl)
{
    tg_connector_t *tc = impl;
    return tc->bot && tg_bot_realtime(tc->bot);
}

static void tc_set_realtime(void *impl, bool on)
{
    tg_bot_set_realtime(((tg_connector_t *)impl)->bot, on);
}

static int tc_send_text(void *impl, int64_t chat, const char *text, int64_t topic, int64_t reply_to,
                        connector_cb cb, void *data)
{
    return tg_bot_send_message(((tg_connector_t *)impl)->bot, chat, text, topic, reply_to, cb,
                               data);
}

static int tc_send_file(void *impl, int64_t chat, int fd, const char *caption, const char *filename,
                        int64_t topic, int64_t reply_to, connector_cb cb, void *data)
{
    return tg_bot_send_file(((tg_connector_t *)impl)->bot, chat, fd, caption, filename, topic,
                            reply_to, cb, data);
}

/* Calls method with {"chat_id": chat} plus the members of extra (may be
 * NULL; stolen). */
static int tc_call(tg_connector_t *tc, const char *method, int64_t chat, json_t *extra,
                   connector_cb cb, void *data)
{
    json_t *body = json_pack("{s:I}", "chat_id", (json_int_t)chat);
    if (body && extra)
        json_object_update(body, extra);
    json_decref(extra);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (text == NULL)
        return UV_ENOMEM;
    int rc = tg_bot_call(tc->bot, method, text, cb, data);
    free(text);
    return rc;
}

/* ---- chat_info: getChat, getChatMemberCount, getChatAdministrators ------ */

static const struct {
    unsigned part;
    const char *key, *method;
} info_steps[] = {
    {CONNECTOR_INFO_CHAT, "chat", "getChat"},
    {CONNECTOR_INFO_MEMBER_COUNT, "memberCount", "getChatMemberCount"},
    {CONNECTOR_INFO_ADMINS, "administrators", "getChatAdministrators"},
};
#define INFO_STEPS 3

typedef struct info_s {
    tg_connector_t *tc;
    int64_t chat;
    unsigned parts;
    int step;
    json_t *out;
    connector_cb cb;
    void *data;
} info_t;

static void info_next(info_t *in);

static void info_end(info_t *in)
{
    char *text = json_dumps(in->out, JSON_COMPACT);
    json_decref(in->out);
    if (text == NULL)
        in->cb(in->data, UV_ENOMEM, NULL, "out of memory");
    else
        in->cb(in->data, 0, text, NULL);
    free(text);
    free(in);
}

static void info_got(void *data, int status, const char *json, const char *error)
{
    info_t *in = data;
    json_error_t je;
    json_t *v = status == 0 && json ? json_loads(json, JSON_DECODE_ANY, &je) : NULL;
    if (v == NULL) {
        json_object_set_new(in->out, "failed",
                            json_pack("{s:s, s:s}", "part", info_steps[in->step].key, "error",
                                      error ? error : uv_strerror(status ? status : UV_EPROTO)));
        info_end(in);
        return;
    }
    json_object_set_new(in->out, info_steps[in->step].key, v);
    in->step++;
    info_next(in);
}

static void info_next(info_t *in)
{
    while (in->step < INFO_STEPS && !(in->parts & info_steps[in->step].part))
        in->step++;
    if (in->step >= INFO_STEPS) {
        info_end(in);
        return;
    }
    int rc = tc_call(in->tc, info_steps[in->step].method, in->chat, NULL, info_got, in);
    if (rc != 0)
        info_got(in, rc, NULL, uv_strerror(rc));
}

static int tc_chat_info(void *impl, int64_t chat, unsigned parts, connector_cb cb, void *data)
{
    info_t *in = calloc(1, sizeof *in);
    json_t *out = json_object();
    if (in == NULL || out == NULL) {
        free(in);
        json_decref(out);
        return UV_ENOMEM;
    }
    *in = (info_t){.tc = impl, .chat = chat, .parts = parts, .out = out, .cb = cb, .data = data};
    info_next(in);
    return 0;
}

/* ---- administration ------------------------------------------------------- */

static int tc_rename(void *impl, int64_t chat, const char *title, connector_cb cb, void *data)
{
    return tc_call(impl, "setChatTitle", chat, json_pack("{s:s}", "title", title), cb, data);
}

static int tc_invite_link(void *impl, int64_t chat, bool revoke, connector_cb cb, void *data)
{
    /* exportChatInviteLink makes a new primary link, revoking the old. */
    (void)revoke;
    return tc_call(impl, "exportChatInviteLink", chat, NULL, cb, data);
}

static int tc_leave(void *impl, int64_t chat, connector_cb cb, void *data)
{
    return tc_call(impl, "leaveChat", chat, NULL, cb, data);
}

/* Removal is a ban followed by an unban, so the user may come back. */
typedef struct removal_s {
    tg_connector_t *tc;
    int64_t chat, user;
    connector_cb cb;
    void *data;
} removal_t;

static void removal_unbanned(void *data, int status, const char *json, const char *error)
{
    removal_t *rm = data;
    rm->cb(rm->data, status, json, error);
    free(rm);
}

static void removal_banned(void *data, int status, const char *json, const char *error)
{
    removal_t *rm = data;
    if (status != 0) {
        removal_unbanned(rm, status, json, error);
        return;
    }
    int rc = tc_call(rm->tc, "unbanChatMember", rm->chat,
                     json_pack("{s:I, s:b}", "user_id", (json_int_t)rm->user, "only_if_banned", 1),
                     removal_unbanned, rm);
    if (rc != 0)
        removal_unbanned(rm, rc, NULL, uv_strerror(rc));
}

static int tc_remove_member(void *impl, int64_t chat, int64_t user, connector_cb cb, void *data)
{
    removal_t *rm = malloc(sizeof *rm);
    if (rm == NULL)
        return UV_ENOMEM;
    *rm = (removal_t){.tc = impl, .chat = chat, .user = user, .cb = cb, .data = data};
    int rc = tc_call(impl, "banChatMember", chat, json_pack("{s:I}", "user_id", (json_int_t)user),
                     removal_banned, rm);
    if (rc != 0)
        free(rm);
    return rc;
}

/* ---- media and jobs ----------------------------------------------------------- */

static int tc_fetch_media(void *impl, int64_t chat, int64_t message, connector_progress_cb progress,
                          connector_cb done, void *data, void **handle)
{
    tg_media_t *m = tg_bot_media(((tg_connector_t *)impl)->bot);
    if (m == NULL)
        return UV_ENOTSUP;
    tg_media_wait_t *w = NULL;
    int rc = tg_media_fetch(m, chat, message, progress, done, data, &w);
    *handle = w;
    return rc;
}

static void tc_fetch_cancel(void *impl, void *handle)
{
    (void)impl;
    tg_media_fetch_cancel(handle);
}

static bool tc_serves_account(void *impl, int64_t account_id)
{
    tg_connector_t *tc = impl;
    return tc->bot && tg_bot_account(tc->bot) == account_id;
}

static int tc_job_classes(void *impl, const sync_class_t **classes)
{
    tg_connector_t *tc = impl;
    *classes = tc->classes;
    return 2;
}

static void tc_metrics(void *impl, struct buf_s *out)
{
    tg_bot_metrics(((tg_connector_t *)impl)->bot, out);
}

static const connector_chat_ops_t tg_chat_ops = {
    .realtime = tc_realtime,
    .set_realtime = tc_set_realtime,
    .send_text = tc_send_text,
    .send_file = tc_send_file,
    .chat_info = tc_chat_info,
    .rename = tc_rename,
    .invite_link = tc_invite_link,
    .remove_member = tc_remove_member,
    .leave = tc_leave,
    .fetch_media = tc_fetch_media,
    .fetch_cancel = tc_fetch_cancel,
};

static const connector_ops_t tg_ops = {
    .caps = tc_caps,
    .why_not = tc_why_not,
    .state = tc_state,
    .job_classes = tc_job_classes,
    .serves_account = tc_serves_account,
    .metrics = tc_metrics,
    .chat = &tg_chat_ops,
};

int tg_connector_new(tg_bot_t *bot, pg_pool_t *rw, tg_connector_t **out)
{
    tg_connector_t *tc = calloc(1, sizeof *tc);
    if (tc == NULL)
        return UV_ENOMEM;
    tc->bot = bot;
    tc->conn = (connector_t){.name = "telegram", .ops = &tg_ops, .impl = tc};
    tc->jobs_ctx = (tg_jobs_ctx_t){.bot = bot, .rw = rw};
    tc->classes[0] = (sync_class_t){
        .name = "telegram.sync", .concurrency = 2, .exec = tg_jobs_sync, .ctx = &tc->jobs_ctx};
    tc->classes[1] = (sync_class_t){.name = "telegram.metadata",
                                    .concurrency = 2,
                                    .exec = tg_jobs_metadata,
                                    .ctx = &tc->jobs_ctx};
    *out = tc;
    return 0;
}

void tg_connector_free(tg_connector_t *tc)
{
    free(tc);
}

/* ---- the definition (connectors.h) ---------------------------------------- */

/* Runs when a bot token is configured (whatever the toolsets: the bot
 * keeps the store in sync). */
static bool def_wanted(const connector_env_t *env)
{
    char token[8];
    return connector_env_text(env, "telegram_bot_token", token, sizeof token)[0] != '\0';
}

static int def_open(const connector_env_t *env, void **obj, connector_t **conn, char *err,
                    size_t errcap)
{
    char token[256], api[2048], media_root[4096];
    connector_env_text(env, "telegram_bot_token", token, sizeof token);
    connector_env_text(env, "telegram_api_url", api, sizeof api);
    snprintf(media_root, sizeof media_root, "%s/media", env->data_dir);
    int poll_s = (int)connector_env_int(env, "telegram_poll_timeout_s");
    net_config_t nc = {.timeout_ms = (uint32_t)(poll_s + 30) * 1000};
    net_client_t *net = NULL;
    int rc = net_client_new(env->loop, &nc, NULL, &net, err, errcap);
    if (rc != 0)
        return rc;
    tg_bot_config_t bc = {
        .token = token,
        .api_url = api,
        .poll_timeout_s = poll_s,
        .realtime = true,
        .media_root = media_root,
        .file_limit = (uint64_t)connector_env_int(env, "telegram_file_limit_mb") << 20,
        .media_stall_ms = (uint32_t)connector_env_int(env, "telegram_media_stall_s") * 1000,
        .media_retry_max_ms = (uint32_t)connector_env_int(env, "telegram_media_retry_max_s") * 1000,
        .conninfo = env->conninfo,
        .owner = env->owner,
        .connect_timeout_ms = (uint32_t)connector_env_int(env, "db_connect_timeout_ms")};
    tg_connector_t *tc = NULL;
    if ((rc = tg_connector_new(NULL, env->rw, &tc)) != 0) {
        snprintf(err, errcap, "out of memory");
    } else if ((rc = tg_bot_start(env->loop, net, env->rw, &bc, &tc->bot, err, errcap)) != 0) {
        free(tc);
    }
    memset(token, 0, sizeof token);
    if (rc != 0) {
        net_client_close(net, NULL, NULL); /* nothing else uses it */
        return rc;
    }
    tc->jobs_ctx.bot = tc->bot;
    tc->net = net;
    *obj = tc;
    *conn = &tc->conn;
    log_info("telegram", "Bot API connector started (realtime sync)");
    return 0;
}

static void def_net_closed(void *data)
{
    tg_connector_t *tc = data;
    tc->net = NULL;
    tc->closed_cb(tc->closed_data);
}

/* The bot is closed: then its HTTP client. */
static void def_bot_closed(tg_bot_t *b, void *data)
{
    (void)b;
    tg_connector_t *tc = data;
    tc->bot = NULL;
    net_client_close(tc->net, def_net_closed, tc);
}

static void def_close(void *obj, void (*cb)(void *data), void *data)
{
    tg_connector_t *tc = obj;
    tc->closed_cb = cb;
    tc->closed_data = data;
    tg_bot_close(tc->bot, def_bot_closed, tc);
}

static void def_free(void *obj)
{
    if (obj)
        tg_connector_free(obj);
}

const connector_def_t tg_connector_def = {
    .name = "telegram",
    .closes_after_jobs = true,
    .wanted = def_wanted,
    .open = def_open,
    .close = def_close,
    .free = def_free,
};

connector_t *tg_connector_get(tg_connector_t *tc)
{
    return &tc->conn;
}
