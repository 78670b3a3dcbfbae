/* live: the telegram tools the connector runs once the archive answered
 * (see tg_toolset.h): sending, realtime, group administration, metadata
 * refresh and groupsInfo's live part. Each asks the connector's
 * capabilities first; without a connector the tool's SQL function answers
 * (an isError saying what the archive offers instead). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "toolsets/telegram/tg_toolset.h"
#include "util/beneath.h"

/* The Bot API takes uploads of at most 50 MB. */
#define TG_UPLOAD_MAX (50LL * 1024 * 1024)

/* True when the tool may go on to the connector: there is one and it has
 * cap. Otherwise the call is answered: by the SQL function (no connector)
 * or with the connector's refusal. */
static bool connector_ready(mcp_call_t *c, connector_cap_t cap, const char *instead)
{
    connector_t *conn = tg_ts_conn(tg_ts(c), cap);
    if (conn == NULL) {
        tg_ts_generic(c);
        return false;
    }
    const char *why = connector_why_not(conn, cap);
    if (why != NULL) {
        mcp_call_finish_error(c, "%s%s%s", why, instead ? " " : "", instead ? instead : "");
        return false;
    }
    return true;
}

static int64_t channel_of(const json_t *answer)
{
    return json_integer_value(json_object_get(answer, "channelId"));
}

static const char *arg_str(const mcp_call_t *c, const char *key)
{
    return json_string_value(json_object_get(c->args, key));
}

static int64_t arg_int(const mcp_call_t *c, const char *key)
{
    return json_integer_value(json_object_get(c->args, key));
}

/* ---- sending --------------------------------------------------------------- */

static void sent(void *data, int status, const char *json, const char *error)
{
    mcp_call_t *c = data;
    if (status != 0) {
        tg_ts_connector_failed(c, status, error);
        return;
    }
    json_error_t je;
    json_t *m = json_loads(json, 0, &je);
    tg_ts_finish_obj(
        c, json_pack("{s:I, s:I, s:I}", "messageId",
                     json_integer_value(json_object_get(m, "message_id")), "channelId",
                     json_integer_value(json_object_get(json_object_get(m, "chat"), "id")), "date",
                     json_integer_value(json_object_get(m, "date"))));
    json_decref(m);
}

static void send_text(mcp_call_t *c, json_t *answer, void *arg)
{
    (void)arg;
    connector_t *conn = tg_ts_conn_for(tg_ts(c), CONNECTOR_CAN_SEND, answer);
    int rc = connector_send_text(conn, channel_of(answer), arg_str(c, "text"),
                                 arg_int(c, "topicId"), arg_int(c, "replyToMessageId"), sent, c);
    if (rc != 0)
        tg_ts_connector_failed(c, rc, NULL);
}

void tg_ts_messages_send(mcp_call_t *c)
{
    if (connector_ready(c, CONNECTOR_CAN_SEND, NULL))
        tg_ts_then(c, TG_RESOLVE_FN, NULL, send_text, NULL);
}

/* The file to upload is opened once, on the thread pool, under the upload
 * root (util/beneath.h: relative paths from the root, absolute ones inside
 * it; no symbolic link followed, ".." refused), fstat-checked to be a
 * regular file of at most TG_UPLOAD_MAX bytes; the descriptor, not the
 * path, goes to the connector. A file swapped after this check is never
 * read, and a FIFO never waited on. */
typedef struct upload_open_s {
    mcp_call_t *call;
    int64_t chat;
    connector_t *conn; /* the one that sends to chat */
} upload_open_t;

static void upload_opened(void *data, int status, uint64_t size)
{
    upload_open_t *uo = data;
    mcp_call_t *c = uo->call;
    int64_t chat = uo->chat;
    connector_t *conn = uo->conn;
    free(uo);
    (void)size;
    tg_toolset_t *ts = tg_ts(c);
    const char *path = arg_str(c, "filePath");
    if (status < 0) {
        /* A missing file and one outside the root get the same answer: the
         * answer must not tell which files exist elsewhere. */
        if (status == UV_ENXIO)
            mcp_call_finish_error(c, "the upload root %s does not exist; put files to send there",
                                  ts->upload_root);
        else if (status == UV_EINVAL)
            mcp_call_finish_error(c, "filePath: %s is not a regular file", path);
        else if (status == UV_EFBIG)
            mcp_call_finish_error(c,
                                  "filePath: %s is larger than 50 MB; the Bot API takes at "
                                  "most 50 MB",
                                  path);
        else if (status == UV_ENOMEM || status == UV_EMFILE || status == UV_ENFILE ||
                 status == UV_EIO)
            mcp_call_finish_error(c, "filePath: %s: %s", path, uv_strerror(status));
        else
            mcp_call_finish_error(c,
                                  "filePath: %s is not a file in the upload root %s (give a path "
                                  "inside it; symbolic links are not followed)",
                                  path, ts->upload_root);
        return;
    }
    const char *name = arg_str(c, "filename");
    if (name == NULL || name[0] == '\0') {
        name = strrchr(path, '/');
        name = name ? name + 1 : path;
    }
    /* The connector owns the descriptor from here on. */
    int rc = connector_send_file(conn, chat, status, arg_str(c, "caption"), name,
                                 arg_int(c, "topicId"), 0, sent, c);
    if (rc != 0)
        tg_ts_connector_failed(c, rc, NULL);
}

static void send_file(mcp_call_t *c, json_t *answer, void *arg)
{
    (void)arg;
    tg_toolset_t *ts = tg_ts(c);
    upload_open_t *uo = calloc(1, sizeof *uo);
    if (uo == NULL) {
        mcp_call_finish_error(c, "out of memory");
        return;
    }
    uo->call = c;
    uo->chat = channel_of(answer);
    uo->conn = tg_ts_conn_for(ts, CONNECTOR_CAN_SEND, answer);
    const char *path = arg_str(c, "filePath");
    int rc = path ? beneath_open_read_async(mcp_call_loop(c), ts->upload_root, path, TG_UPLOAD_MAX,
                                            upload_opened, uo)
                  : UV_EINVAL;
    if (rc != 0) {
        free(uo);
        mcp_call_finish_error(c, "filePath: %s", uv_strerror(rc));
    }
}

void tg_ts_messages_send_file(mcp_call_t *c)
{
    if (connector_ready(c, CONNECTOR_CAN_SEND, NULL))
        tg_ts_then(c, TG_RESOLVE_FN, NULL, send_file, NULL);
}

void tg_ts_realtime_set(mcp_call_t *c)
{
    if (!connector_ready(c, CONNECTOR_CAN_REALTIME, NULL))
        return;
    /* Every connector that receives in real time: the bot and the accounts. */
    tg_toolset_t *ts = tg_ts(c);
    bool on = json_is_true(json_object_get(c->args, "enabled")), active = false;
    for (int i = 0; i < ts->nconns; i++)
        if (connector_can(ts->conns[i], CONNECTOR_CAN_REALTIME)) {
            connector_set_realtime(ts->conns[i], on);
            active = active || connector_realtime(ts->conns[i]);
        }
    tg_ts_finish_obj(c, json_pack("{s:b}", "realtimeActive", active));
}

/* ---- group administration ----------------------------------------------------- */

typedef struct removal_s {
    mcp_call_t *call;
    connector_t *conn;
    int64_t chat;
    json_t *users; /* ids to remove */
    size_t next;
    json_t *removed, *failed;
} removal_t;

static void removal_step(removal_t *rm);

static void removal_done(void *data, int status, const char *json, const char *error)
{
    removal_t *rm = data;
    (void)json;
    json_t *uid = json_array_get(rm->users, rm->next);
    if (status != 0)
        json_array_append_new(rm->failed, json_pack("{s:O, s:s}", "userId", uid, "error",
                                                    error ? error : uv_strerror(status)));
    else
        json_array_append(rm->removed, uid);
    rm->next++;
    removal_step(rm);
}

static void removal_step(removal_t *rm)
{
    mcp_call_t *c = rm->call;
    if (rm->next >= json_array_size(rm->users)) {
        tg_ts_finish_obj(c, json_pack("{s:I, s:O, s:O}", "channelId", (json_int_t)rm->chat,
                                      "removed", rm->removed, "failed", rm->failed));
        json_decref(rm->users);
        json_decref(rm->removed);
        json_decref(rm->failed);
        free(rm);
        return;
    }
    connector_t *conn = rm->conn;
    int rc = connector_remove_member(
        conn, rm->chat, json_integer_value(json_array_get(rm->users, rm->next)), removal_done, rm);
    if (rc != 0)
        removal_done(rm, rc, NULL, uv_strerror(rc));
}

/* An administration verb's answer, shaped by the tool. */
static void admin_done(void *data, int status, const char *json, const char *error)
{
    mcp_call_t *c;
    json_int_t chat;
    if (!tg_ts_chat_verb_end(data, status, error, &c, &chat))
        return;
    const char *tool = c->tool->def->name;
    if (strcmp(tool, "groupsRename") == 0) {
        tg_ts_finish_obj(c, json_pack("{s:I, s:O}", "channelId", chat, "name",
                                      json_object_get(c->args, "name")));
    } else if (strcmp(tool, "groupsLeave") == 0) {
        tg_ts_finish_obj(c, json_pack("{s:I, s:b}", "channelId", chat, "left", 1));
    } else {
        json_error_t je;
        json_t *link = json ? json_loads(json, JSON_DECODE_ANY, &je) : NULL;
        tg_ts_finish_obj(c, json_pack("{s:I, s:o, s:b}", "channelId", chat, "inviteLink",
                                      link ? link : json_null(), "previousRevoked",
                                      strcmp(tool, "groupsInviteLinkRevoke") == 0));
    }
}

static void administer(mcp_call_t *c, json_t *answer, void *arg)
{
    (void)arg;
    connector_t *conn = tg_ts_conn_for(tg_ts(c), CONNECTOR_CAN_ADMINISTER, answer);
    const char *tool = c->tool->def->name;
    int64_t chat = channel_of(answer);
    if (strcmp(tool, "groupsMembersRemove") == 0) {
        removal_t *rm = calloc(1, sizeof *rm);
        if (rm == NULL) {
            tg_ts_connector_failed(c, UV_ENOMEM, NULL);
            return;
        }
        *rm = (removal_t){.call = c,
                          .conn = conn,
                          .chat = chat,
                          .users = json_incref(json_object_get(answer, "userIds")),
                          .removed = json_array(),
                          .failed = json_array()};
        removal_step(rm);
        return;
    }
    tg_chat_verb_t *ad = tg_ts_chat_verb_new(c, (json_int_t)chat);
    if (ad == NULL) {
        tg_ts_connector_failed(c, UV_ENOMEM, NULL);
        return;
    }
    int rc;
    if (strcmp(tool, "groupsRename") == 0)
        rc = connector_rename(conn, chat, arg_str(c, "name"), admin_done, ad);
    else if (strcmp(tool, "groupsLeave") == 0)
        rc = connector_leave(conn, chat, admin_done, ad);
    else
        rc = connector_invite_link(conn, chat, strcmp(tool, "groupsInviteLinkRevoke") == 0,
                                   admin_done, ad);
    if (rc != 0) {
        free(ad);
        tg_ts_connector_failed(c, rc, NULL);
    }
}

/* Group administration: rename, invite links, removing members, leaving
 * (CONNECTOR_CAN_ADMINISTER); adding members and joining need their own
 * capabilities (join.c). */
void tg_ts_group_admin(mcp_call_t *c)
{
    const char *tool = c->tool->def->name;
    bool ok;
    if (strcmp(tool, "groupsMembersAdd") == 0)
        ok = connector_ready(c, CONNECTOR_CAN_ADD_MEMBERS,
                             "Share an invite link instead (groupsInviteLinkGet).");
    else if (strcmp(tool, "groupsJoin") == 0)
        ok = connector_ready(c, CONNECTOR_CAN_JOIN_CHATS, NULL);
    else
        ok = connector_ready(c, CONNECTOR_CAN_ADMINISTER, NULL);
    if (!ok)
        return;
    if (strcmp(tool, "groupsJoin") == 0)
        tg_ts_join(c); /* no chat to resolve: the invite names it */
    else
        tg_ts_then(c, TG_RESOLVE_FN, NULL,
                   strcmp(tool, "groupsMembersAdd") == 0 ? tg_ts_members_add : administer, NULL);
}

/* ---- channelsMetadataRefresh ----------------------------------------------------- */

/* Per chat: the chat (and its member count for groups and channels) from
 * the connector, then the store; a chat that fails is reported in "failed"
 * and the rest go on. */
typedef struct refresh_s {
    mcp_call_t *call;
    json_t *page; /* metadataTargets' answer: channelIds, skipped, limit, limitCapped */
    json_t *ids;
    size_t next;
    json_t *refreshed, *failed;
} refresh_t;

static void refresh_step(refresh_t *rf);

static int64_t refresh_current(const refresh_t *rf)
{
    return json_integer_value(json_array_get(rf->ids, rf->next));
}

static void refresh_fail(refresh_t *rf, const char *error)
{
    json_array_append_new(rf->failed, json_pack("{s:I, s:s}", "channelId",
                                                (json_int_t)refresh_current(rf), "error", error));
    rf->next++;
    refresh_step(rf);
}

static void refresh_stored(void *data, int status, const char *json, archive_err_t err,
                           const char *message)
{
    refresh_t *rf = data;
    (void)err;
    rf->call->data = NULL;
    if (status != 0) {
        refresh_fail(rf, message ? message : uv_strerror(status));
        return;
    }
    json_error_t je;
    json_t *rec = json_loads(json, JSON_DECODE_ANY, &je);
    if (json_is_object(rec))
        json_array_append(rf->refreshed, rec);
    json_decref(rec);
    rf->next++;
    refresh_step(rf);
}

static void refresh_got(void *data, int status, const char *json, const char *error)
{
    refresh_t *rf = data;
    json_error_t je;
    json_t *info = status == 0 ? json_loads(json, 0, &je) : NULL;
    json_t *chat = json_object_get(info, "chat");
    if (chat == NULL) {
        const char *why =
            json_string_value(json_object_get(json_object_get(info, "failed"), "error"));
        refresh_fail(rf, why ? why : error ? error : uv_strerror(status ? status : UV_EPROTO));
        json_decref(info);
        return;
    }
    /* A member count that failed leaves the stored one. */
    json_t *args =
        json_pack("{s:I, s:O}", "channelId", (json_int_t)refresh_current(rf), "chat", chat);
    json_t *count = json_object_get(info, "memberCount");
    if (json_is_integer(count))
        json_object_set(args, "memberCount", count);
    json_decref(info);
    char *text = args ? json_dumps(args, JSON_COMPACT) : NULL;
    json_decref(args);
    bool started =
        tg_ts_run(rf->call, "parley_tg_metadata_store", text ? text : "{}", refresh_stored, rf);
    free(text);
    if (!started) {
        json_decref(rf->page);
        json_decref(rf->refreshed);
        json_decref(rf->failed);
        free(rf);
    }
}

static void refresh_step(refresh_t *rf)
{
    mcp_call_t *c = rf->call;
    size_t n = json_array_size(rf->ids);
    if (c->cancelled || rf->next >= n) {
        if (c->cancelled)
            mcp_call_finish_error(c, "cancelled");
        else
            tg_ts_finish_obj(c, json_pack("{s:O, s:O, s:O, s:O, s:O}", "channels", rf->refreshed,
                                          "failed", rf->failed, "skipped",
                                          json_object_get(rf->page, "skipped"), "limit",
                                          json_object_get(rf->page, "limit"), "limitCapped",
                                          json_object_get(rf->page, "limitCapped")));
        json_decref(rf->page);
        json_decref(rf->refreshed);
        json_decref(rf->failed);
        free(rf);
        return;
    }
    char msg[64];
    snprintf(msg, sizeof msg, "chat %zu of %zu", rf->next + 1, n);
    mcp_call_progress(c, (double)rf->next, (double)n, msg);
    connector_t *conn = tg_ts_conn(tg_ts(c), CONNECTOR_CAN_CHAT_INFO);
    /* Private chats (positive ids) have no member count. */
    unsigned parts =
        CONNECTOR_INFO_CHAT | (refresh_current(rf) < 0 ? CONNECTOR_INFO_MEMBER_COUNT : 0u);
    int rc = connector_chat_info(conn, refresh_current(rf), parts, refresh_got, rf);
    if (rc != 0)
        refresh_fail(rf, uv_strerror(rc));
}

static void refresh_targets(mcp_call_t *c, json_t *answer, void *arg)
{
    (void)arg;
    refresh_t *rf = calloc(1, sizeof *rf);
    if (rf == NULL) {
        tg_ts_connector_failed(c, UV_ENOMEM, NULL);
        return;
    }
    *rf = (refresh_t){.call = c,
                      .page = json_incref(answer),
                      .ids = json_object_get(answer, "channelIds"),
                      .refreshed = json_array(),
                      .failed = json_array()};
    refresh_step(rf);
}

void tg_ts_metadata_refresh(mcp_call_t *c)
{
    if (connector_ready(c, CONNECTOR_CAN_CHAT_INFO, NULL))
        tg_ts_then(c, "parley_tg_metadata_targets", NULL, refresh_targets, NULL);
}

/* ---- groupsInfo: the archive's record plus the chat as it is now ---------------- */

typedef struct info_s {
    mcp_call_t *call;
    json_t *out; /* the archive's answer */
} info_t;

static void info_live(void *data, int status, const char *json, const char *error)
{
    info_t *in = data;
    json_error_t je;
    json_t *live = status == 0 ? json_loads(json, 0, &je) : NULL;
    json_t *failed = json_object_get(live, "failed");
    if (live == NULL || failed != NULL) {
        /* The archive's record still answers; say what the live part lacks. */
        json_object_set_new(
            in->out, "liveError",
            failed ? json_incref(failed)
                   : json_pack("{s:s}", "error",
                               error ? error : uv_strerror(status ? status : UV_EPROTO)));
        json_object_del(live, "failed");
    }
    json_object_set_new(in->out, "live", live ? live : json_object());
    tg_ts_finish_obj(in->call, in->out);
    free(in);
}

static void info_archived(mcp_call_t *c, json_t *answer, void *arg)
{
    (void)arg;
    info_t *in = malloc(sizeof *in);
    if (in == NULL) {
        tg_ts_connector_failed(c, UV_ENOMEM, NULL);
        return;
    }
    *in = (info_t){.call = c, .out = json_incref(answer)};
    connector_t *conn = tg_ts_conn(tg_ts(c), CONNECTOR_CAN_CHAT_INFO);
    int rc = connector_chat_info(
        conn, channel_of(answer),
        CONNECTOR_INFO_CHAT | CONNECTOR_INFO_MEMBER_COUNT | CONNECTOR_INFO_ADMINS, info_live, in);
    if (rc != 0)
        info_live(in, rc, NULL, uv_strerror(rc));
}

/* groupsInfo: from the archive; with a connector that reads chat info,
 * augmented with "live" (the chat, its member count and administrators as
 * they are now; "liveError" says which part failed). */
void tg_ts_groups_info(mcp_call_t *c)
{
    if (!connector_can(tg_ts_conn(tg_ts(c), CONNECTOR_CAN_CHAT_INFO), CONNECTOR_CAN_CHAT_INFO))
        tg_ts_generic(c);
    else
        tg_ts_then(c, c->tool->def->sql_function, NULL, info_archived, NULL);
}
