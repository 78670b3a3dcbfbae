/* telegram: the telegram toolset over the archive (see telegram.h). */
#include "toolsets/telegram.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "archive/archive.h"
#include "mcp/call.h"

/* ---- the generic handler -------------------------------------------------- */

static void tool_cancel(mcp_call_t *c)
{
    if (c->data)
        archive_tool_cancel(c->data);
}

static void tool_done(void *data, int status, const char *json, archive_err_t err,
                      const char *message)
{
    mcp_call_t *c = data;
    c->data = NULL;
    if (status == 0) {
        mcp_call_finish_json(c, json, strlen(json));
        return;
    }
    archive_t *ar = mcp_call_app(c);
    switch (err) {
    case ARCHIVE_ERR_CONNECTOR:
        if (ar->upstream != NULL && ar->upstream->cannot(ar->upstream->ctx, c->tool->def->name)) {
            mcp_call_finish_error(c, "%s",
                                  ar->upstream->cannot(ar->upstream->ctx, c->tool->def->name));
            return;
        }
        if (ar->upstream != NULL) {
            mcp_call_finish_error(c,
                                  "%s is not available through the Telegram Bot API connector "
                                  "yet; the archive tools (channelsList, messagesSearch, "
                                  "groupsInfo, ...) answer from what is stored.",
                                  c->tool->def->name);
            return;
        }
        mcp_call_finish_error(c, "%s", message);
        return;
    case ARCHIVE_ERR_ARGUMENT:
        mcp_call_finish_error(c, "%s", message);
        return;
    case ARCHIVE_ERR_BUSY:
        mcp_call_finish_error(c, "The archive is busy or unreachable (%s); retry in a moment.",
                              message);
        return;
    default:
        mcp_call_finish_error(c, "The archive could not answer: %s", message);
    }
}

/* Runs tool with args (JSON text; NULL: the call's own arguments); cb gets
 * data. Returns false when it could not start (the call is finished then). */
static bool run_tool_args(mcp_call_t *c, const char *tool, const char *args_json,
                          archive_tool_cb cb, void *data)
{
    archive_t *ar = mcp_call_app(c);
    char *args = args_json ? strdup(args_json) : json_dumps(c->args, JSON_COMPACT);
    char *daemon = ar->status_json ? ar->status_json(ar->status_data) : NULL;
    char ctx[4096];
    const archive_upstream_t *up = ar->upstream;
    snprintf(ctx, sizeof ctx, "{\"daemon\":%s,\"realtimeActive\":%s,\"upstream\":\"%s\"}",
             daemon ? daemon : "null", up && up->realtime(up->ctx) ? "true" : "false",
             up ? up->state(up->ctx) : "none");
    free(daemon);
    bool write =
        !(c->tool->def->annotations & MCP_TOOL_READ_ONLY) && strcmp(tool, "resolveChannel") != 0;
    archive_tool_op_t *op = NULL;
    int rc = args ? archive_tool(ar, write, tool, args, ctx, cb, data, &op) : UV_ENOMEM;
    free(args);
    if (rc != 0) {
        mcp_call_finish_error(c, "The archive is busy (%s); retry in a moment.", uv_strerror(rc));
        return false;
    }
    c->data = op;
    c->on_cancel = tool_cancel;
    return true;
}

static void run_tool(mcp_call_t *c, const char *tool, archive_tool_cb cb)
{
    (void)run_tool_args(c, tool, NULL, cb, c);
}

static void generic(mcp_call_t *c)
{
    run_tool(c, c->tool->def->name, tool_done);
}

/* Tools the connector changes: without one, the archive's own answer (an
 * isError saying what is possible, or the stored record); with one, tool
 * first, then cb goes on to the connector. */
static void with_connector(mcp_call_t *c, const char *tool, archive_tool_cb cb)
{
    archive_t *ar = mcp_call_app(c);
    if (ar->upstream == NULL)
        generic(c);
    else
        run_tool(c, tool, cb);
}

/* ---- tools the connector runs ---------------------------------------------- */

static void sent(void *data, int status, const char *json, const char *error)
{
    mcp_call_t *c = data;
    if (status != 0) {
        mcp_call_finish_error(c, "%s failed: %s", c->tool->def->name,
                              error ? error : uv_strerror(status));
        return;
    }
    json_error_t je;
    json_t *m = json_loads(json, 0, &je);
    json_t *r = json_pack("{s:I, s:I, s:I}", "messageId",
                          json_integer_value(json_object_get(m, "message_id")), "channelId",
                          json_integer_value(json_object_get(json_object_get(m, "chat"), "id")),
                          "date", json_integer_value(json_object_get(m, "date")));
    char *text = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    json_decref(m);
    mcp_call_finish_json(c, text, strlen(text));
    free(text);
}

static void send_resolved(void *data, int status, const char *json, archive_err_t err,
                          const char *message)
{
    mcp_call_t *c = data;
    c->data = NULL;
    if (status != 0) {
        tool_done(data, status, json, err, message);
        return;
    }
    archive_t *ar = mcp_call_app(c);
    json_error_t je;
    json_t *r = json_loads(json, 0, &je);
    int64_t chat = json_integer_value(json_object_get(r, "channelId"));
    json_decref(r);
    int rc = ar->upstream->send_message(
        ar->upstream->ctx, chat, json_string_value(json_object_get(c->args, "text")),
        json_integer_value(json_object_get(c->args, "topicId")),
        json_integer_value(json_object_get(c->args, "replyToMessageId")), sent, c);
    if (rc == UV_EBUSY)
        mcp_call_finish_error(c, "Too many messages are waiting to be sent; retry in a moment.");
    else if (rc != 0)
        mcp_call_finish_error(c, "messagesSend failed: %s", uv_strerror(rc));
}

static void messages_send(mcp_call_t *c)
{
    archive_t *ar = mcp_call_app(c);
    if (ar->upstream == NULL) {
        generic(c); /* isError: no connector */
        return;
    }
    run_tool(c, "resolveChannel", send_resolved);
}

/* The file to upload: inside the upload root (relative paths are taken
 * from it), a regular file after symlinks are resolved, at most 50 MB (the
 * Bot API's upload limit). */
static int resolve_upload(const char *root, const char *path, char *out, size_t cap, char *err,
                          size_t errcap)
{
    char rroot[PATH_MAX], want[PATH_MAX * 2], real[PATH_MAX];
    if (realpath(root, rroot) == NULL) {
        snprintf(err, errcap, "the upload root %s does not exist; put files to send there", root);
        return -1;
    }
    if (path[0] == '/')
        snprintf(want, sizeof want, "%s", path);
    else
        snprintf(want, sizeof want, "%s/%s", rroot, path);
    if (realpath(want, real) == NULL) {
        snprintf(err, errcap, "filePath: %s: %s", want, strerror(errno));
        return -1;
    }
    size_t rl = strlen(rroot);
    if (strncmp(real, rroot, rl) != 0 || real[rl] != '/') {
        snprintf(err, errcap, "filePath: %s is outside the upload root %s", path, rroot);
        return -1;
    }
    struct stat st;
    if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errcap, "filePath: %s is not a regular file", path);
        return -1;
    }
    if (st.st_size > 50LL * 1024 * 1024) {
        snprintf(err, errcap, "filePath: %s has %lld bytes; the Bot API takes at most 50 MB", path,
                 (long long)st.st_size);
        return -1;
    }
    snprintf(out, cap, "%s", real);
    return 0;
}

static void file_resolved(void *data, int status, const char *json, archive_err_t err,
                          const char *message)
{
    mcp_call_t *c = data;
    c->data = NULL;
    if (status != 0) {
        tool_done(data, status, json, err, message);
        return;
    }
    archive_t *ar = mcp_call_app(c);
    char path[PATH_MAX], why[PATH_MAX * 2 + 200];
    if (resolve_upload(ar->upload_root, json_string_value(json_object_get(c->args, "filePath")),
                       path, sizeof path, why, sizeof why) != 0) {
        mcp_call_finish_error(c, "%s", why);
        return;
    }
    json_error_t je;
    json_t *r = json_loads(json, 0, &je);
    int64_t chat = json_integer_value(json_object_get(r, "channelId"));
    json_decref(r);
    int rc = ar->upstream->send_file(
        ar->upstream->ctx, chat, path, json_string_value(json_object_get(c->args, "caption")),
        json_string_value(json_object_get(c->args, "filename")),
        json_integer_value(json_object_get(c->args, "topicId")), sent, c);
    if (rc == UV_EBUSY)
        mcp_call_finish_error(c, "Too many messages are waiting to be sent; retry in a moment.");
    else if (rc != 0)
        mcp_call_finish_error(c, "messagesSendFile failed: %s", uv_strerror(rc));
}

static void messages_send_file(mcp_call_t *c)
{
    with_connector(c, "resolveChannel", file_resolved);
}

static void sync_realtime_set(mcp_call_t *c)
{
    archive_t *ar = mcp_call_app(c);
    if (ar->upstream == NULL) {
        generic(c);
        return;
    }
    bool on = json_is_true(json_object_get(c->args, "enabled"));
    ar->upstream->set_realtime(ar->upstream->ctx, on);
    char text[64];
    snprintf(text, sizeof text, "{\"realtimeActive\":%s}",
             ar->upstream->realtime(ar->upstream->ctx) ? "true" : "false");
    mcp_call_finish_json(c, text, strlen(text));
}

/* ---- group administration through the connector ------------------------------- */

typedef struct admin_s {
    mcp_call_t *call;
    int64_t chat;
    json_t *users; /* groupsMembersRemove: ids still to remove */
    size_t next;
    bool unban; /* the second half of a removal */
    json_t *removed, *failed;
} admin_t;

static void admin_free(admin_t *ad)
{
    json_decref(ad->users);
    json_decref(ad->removed);
    json_decref(ad->failed);
    free(ad);
}

static void finish_obj(mcp_call_t *c, json_t *o)
{
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    mcp_call_finish_json(c, text ? text : "{}", text ? strlen(text) : 2);
    free(text);
}

static void removal_step(admin_t *ad);

static void removal_done(void *data, int status, const char *json, const char *error)
{
    admin_t *ad = data;
    (void)json;
    json_t *uid = json_array_get(ad->users, ad->next);
    if (status != 0) {
        json_array_append_new(ad->failed, json_pack("{s:O, s:s}", "userId", uid, "error", error));
        ad->next++;
        ad->unban = false;
    } else if (!ad->unban) {
        ad->unban = true; /* banned: now unban, so the user may come back */
    } else {
        json_array_append(ad->removed, uid);
        ad->next++;
        ad->unban = false;
    }
    removal_step(ad);
}

static void removal_step(admin_t *ad)
{
    mcp_call_t *c = ad->call;
    archive_t *ar = mcp_call_app(c);
    if (ad->next >= json_array_size(ad->users)) {
        finish_obj(c, json_pack("{s:I, s:O, s:O}", "channelId", (json_int_t)ad->chat, "removed",
                                ad->removed, "failed", ad->failed));
        admin_free(ad);
        return;
    }
    char body[128];
    snprintf(body, sizeof body, "{\"chat_id\":%lld,\"user_id\":%lld%s}", (long long)ad->chat,
             (long long)json_integer_value(json_array_get(ad->users, ad->next)),
             ad->unban ? ",\"only_if_banned\":true" : "");
    int rc = ar->upstream->call(ar->upstream->ctx, ad->unban ? "unbanChatMember" : "banChatMember",
                                body, removal_done, ad);
    if (rc != 0)
        removal_done(ad, rc, NULL, uv_strerror(rc));
}

static void admin_done(void *data, int status, const char *json, const char *error)
{
    admin_t *ad = data;
    mcp_call_t *c = ad->call;
    const char *tool = c->tool->def->name;
    if (status != 0) {
        mcp_call_finish_error(c, "%s failed: %s", tool, error ? error : uv_strerror(status));
        admin_free(ad);
        return;
    }
    json_error_t je;
    json_t *res = json_loads(json, JSON_DECODE_ANY, &je);
    json_t *out;
    if (strcmp(tool, "groupsRename") == 0)
        out = json_pack("{s:I, s:O}", "channelId", (json_int_t)ad->chat, "name",
                        json_object_get(c->args, "name"));
    else if (strcmp(tool, "groupsLeave") == 0)
        out = json_pack("{s:I, s:b}", "channelId", (json_int_t)ad->chat, "left", 1);
    else
        out = json_pack("{s:I, s:O, s:b}", "channelId", (json_int_t)ad->chat, "inviteLink",
                        res ? res : json_null(), "previousRevoked",
                        strcmp(tool, "groupsInviteLinkRevoke") == 0);
    json_decref(res);
    finish_obj(c, out);
    admin_free(ad);
}

static void admin_resolved(void *data, int status, const char *json, archive_err_t err,
                           const char *message)
{
    mcp_call_t *c = data;
    c->data = NULL;
    if (status != 0) {
        tool_done(data, status, json, err, message);
        return;
    }
    archive_t *ar = mcp_call_app(c);
    json_error_t je;
    json_t *r = json_loads(json, 0, &je);
    admin_t *ad = calloc(1, sizeof *ad);
    ad->call = c;
    ad->chat = json_integer_value(json_object_get(r, "channelId"));
    const char *tool = c->tool->def->name;
    if (strcmp(tool, "groupsMembersRemove") == 0) {
        ad->users = json_incref(json_object_get(r, "userIds"));
        ad->removed = json_array();
        ad->failed = json_array();
        json_decref(r);
        removal_step(ad);
        return;
    }
    json_decref(r);
    char body[1024];
    const char *method;
    if (strcmp(tool, "groupsRename") == 0) {
        json_t *b = json_pack("{s:I, s:O}", "chat_id", (json_int_t)ad->chat, "title",
                              json_object_get(c->args, "name"));
        char *t = json_dumps(b, JSON_COMPACT);
        snprintf(body, sizeof body, "%s", t ? t : "{}");
        free(t);
        json_decref(b);
        method = "setChatTitle";
    } else {
        snprintf(body, sizeof body, "{\"chat_id\":%lld}", (long long)ad->chat);
        method = strcmp(tool, "groupsLeave") == 0 ? "leaveChat" : "exportChatInviteLink";
    }
    int rc = ar->upstream->call(ar->upstream->ctx, method, body, admin_done, ad);
    if (rc != 0)
        admin_done(ad, rc, NULL, uv_strerror(rc));
}

/* Group administration: through the connector when there is one. */
static void group_admin(mcp_call_t *c)
{
    archive_t *ar = mcp_call_app(c);
    if (ar->upstream == NULL) {
        generic(c);
        return;
    }
    const char *why = ar->upstream->cannot(ar->upstream->ctx, c->tool->def->name);
    if (why != NULL) {
        mcp_call_finish_error(c, "%s", why);
        return;
    }
    run_tool(c, "resolveChannel", admin_resolved);
}

/* ---- channelsMetadataRefresh through the connector ------------------------------ */

/* Per chat: getChat, getChatMemberCount (groups and channels), then the
 * store; a chat that fails is reported in "failed" and the rest go on. */
typedef struct refresh_s {
    mcp_call_t *call;
    json_t *page; /* metadataTargets' answer: channelIds, skipped, limit, limitCapped */
    json_t *ids;
    size_t next;
    json_t *chat; /* getChat's result for the current chat */
    json_t *refreshed, *failed;
} refresh_t;

static void refresh_step(refresh_t *rf);

static void refresh_free(refresh_t *rf)
{
    json_decref(rf->page);
    json_decref(rf->chat);
    json_decref(rf->refreshed);
    json_decref(rf->failed);
    free(rf);
}

static int64_t refresh_current(const refresh_t *rf)
{
    return json_integer_value(json_array_get(rf->ids, rf->next));
}

static void refresh_fail(refresh_t *rf, const char *error)
{
    json_array_append_new(rf->failed, json_pack("{s:I, s:s}", "channelId",
                                                (json_int_t)refresh_current(rf), "error", error));
    json_decref(rf->chat);
    rf->chat = NULL;
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
    json_decref(rf->chat);
    rf->chat = NULL;
    rf->next++;
    refresh_step(rf);
}

static void refresh_counted(void *data, int status, const char *json, const char *error)
{
    refresh_t *rf = data;
    (void)error; /* a private chat has no member count: store without one */
    json_t *args =
        json_pack("{s:I, s:O}", "channelId", (json_int_t)refresh_current(rf), "chat", rf->chat);
    if (status == 0 && json)
        json_object_set_new(args, "memberCount", json_integer(strtoll(json, NULL, 10)));
    char *text = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    bool started = run_tool_args(rf->call, "metadataStore", text ? text : "{}", refresh_stored, rf);
    free(text);
    if (!started)
        refresh_free(rf);
}

static void refresh_got_chat(void *data, int status, const char *json, const char *error)
{
    refresh_t *rf = data;
    archive_t *ar = mcp_call_app(rf->call);
    if (status != 0) {
        refresh_fail(rf, error ? error : uv_strerror(status));
        return;
    }
    json_error_t je;
    rf->chat = json_loads(json, 0, &je);
    if (rf->chat == NULL) {
        refresh_fail(rf, "getChat answered no chat");
        return;
    }
    char body[64];
    snprintf(body, sizeof body, "{\"chat_id\":%lld}", (long long)refresh_current(rf));
    int rc = refresh_current(rf) < 0 ? ar->upstream->call(ar->upstream->ctx, "getChatMemberCount",
                                                          body, refresh_counted, rf)
                                     : UV_ENOTSUP;
    if (rc != 0)
        refresh_counted(rf, rc, NULL, NULL);
}

static void refresh_step(refresh_t *rf)
{
    mcp_call_t *c = rf->call;
    archive_t *ar = mcp_call_app(c);
    size_t n = json_array_size(rf->ids);
    if (c->cancelled) {
        mcp_call_finish_error(c, "cancelled");
        refresh_free(rf);
        return;
    }
    if (rf->next >= n) {
        json_t *out = json_pack("{s:O, s:O, s:O, s:O, s:O}", "channels", rf->refreshed, "failed",
                                rf->failed, "skipped", json_object_get(rf->page, "skipped"),
                                "limit", json_object_get(rf->page, "limit"), "limitCapped",
                                json_object_get(rf->page, "limitCapped"));
        finish_obj(c, out);
        refresh_free(rf);
        return;
    }
    char msg[64];
    snprintf(msg, sizeof msg, "chat %zu of %zu", rf->next + 1, n);
    mcp_call_progress(c, (double)rf->next, (double)n, msg);
    char body[64];
    snprintf(body, sizeof body, "{\"chat_id\":%lld}", (long long)refresh_current(rf));
    int rc = ar->upstream->call(ar->upstream->ctx, "getChat", body, refresh_got_chat, rf);
    if (rc != 0)
        refresh_fail(rf, uv_strerror(rc));
}

static void refresh_targets(void *data, int status, const char *json, archive_err_t err,
                            const char *message)
{
    mcp_call_t *c = data;
    c->data = NULL;
    if (status != 0) {
        tool_done(data, status, json, err, message);
        return;
    }
    refresh_t *rf = calloc(1, sizeof *rf);
    json_error_t je;
    json_t *page = json_loads(json, 0, &je);
    if (rf == NULL || page == NULL) {
        free(rf);
        json_decref(page);
        mcp_call_finish_error(c, "channelsMetadataRefresh failed: %s", uv_strerror(UV_ENOMEM));
        return;
    }
    rf->call = c;
    rf->page = page;
    rf->ids = json_object_get(page, "channelIds");
    rf->refreshed = json_array();
    rf->failed = json_array();
    refresh_step(rf);
}

static void metadata_refresh(mcp_call_t *c)
{
    with_connector(c, "metadataTargets", refresh_targets);
}

/* ---- groupsInfo: the archive's record plus what the Bot API says now ---------- */

/* The live calls, in order; each result lands under its key in "live". */
static const char *const info_methods[] = {"getChat", "getChatMemberCount",
                                           "getChatAdministrators"};
static const char *const info_keys[] = {"chat", "memberCount", "administrators"};
#define INFO_STEPS 3

typedef struct info_s {
    mcp_call_t *call;
    json_t *out;  /* the archive's answer */
    json_t *live; /* {chat, memberCount, administrators} */
    int step;
} info_t;

static void info_step(info_t *in);

static void info_done(void *data, int status, const char *json, const char *error)
{
    info_t *in = data;
    json_error_t je;
    json_t *v = status == 0 ? json_loads(json, JSON_DECODE_ANY, &je) : NULL;
    if (v == NULL) {
        /* The archive's record still answers; say what the live part lacks. */
        json_object_set_new(in->out, "liveError",
                            json_pack("{s:s, s:s}", "method", info_methods[in->step], "error",
                                      error ? error : uv_strerror(status ? status : UV_EPROTO)));
        in->step = INFO_STEPS;
    } else {
        json_object_set_new(in->live, info_keys[in->step], v);
        in->step++;
    }
    info_step(in);
}

static void info_step(info_t *in)
{
    mcp_call_t *c = in->call;
    archive_t *ar = mcp_call_app(c);
    if (in->step >= INFO_STEPS) {
        json_object_set(in->out, "live", in->live);
        json_decref(in->live);
        finish_obj(c, in->out);
        free(in);
        return;
    }
    char body[64];
    snprintf(body, sizeof body, "{\"chat_id\":%lld}",
             (long long)json_integer_value(json_object_get(in->out, "channelId")));
    int rc = ar->upstream->call(ar->upstream->ctx, info_methods[in->step], body, info_done, in);
    if (rc != 0)
        info_done(in, rc, NULL, uv_strerror(rc));
}

static void info_archived(void *data, int status, const char *json, archive_err_t err,
                          const char *message)
{
    mcp_call_t *c = data;
    c->data = NULL;
    if (status != 0) {
        tool_done(data, status, json, err, message);
        return;
    }
    json_error_t je;
    json_t *out = json_loads(json, 0, &je);
    info_t *in = calloc(1, sizeof *in);
    if (out == NULL || in == NULL) {
        json_decref(out);
        free(in);
        mcp_call_finish_error(c, "groupsInfo failed: %s", uv_strerror(UV_ENOMEM));
        return;
    }
    in->call = c;
    in->out = out;
    in->live = json_object();
    info_step(in);
}

/* groupsInfo: from the archive; with a connector, augmented live (getChat,
 * getChatMemberCount, getChatAdministrators). */
static void groups_info(mcp_call_t *c)
{
    with_connector(c, "groupsInfo", info_archived);
}

/* ---- mediaDownload ---------------------------------------------------------- */

typedef struct {
    uv_work_t work;
    mcp_call_t *call;
    char src[PATH_MAX];
    char dst[PATH_MAX];
    char mime[128];
    int64_t bytes;
    int status;
    char error[PATH_MAX + 256];
} download_t;

/* Resolves the destination inside the export root: relative paths are
 * taken from the root; ".." and paths (or symlinks) that lead elsewhere
 * are refused. */
static int resolve_output(const char *root, const char *out, const char *name, char *dst,
                          size_t cap, char *err, size_t errcap)
{
    char rroot[PATH_MAX];
    if (mkdir(root, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errcap, "export root %s: %s", root, strerror(errno));
        return -1;
    }
    if (realpath(root, rroot) == NULL) {
        snprintf(err, errcap, "export root %s: %s", root, strerror(errno));
        return -1;
    }
    char want[PATH_MAX * 2];
    if (out == NULL || out[0] == '\0')
        snprintf(want, sizeof want, "%s/%s", rroot, name);
    else if (out[0] == '/')
        snprintf(want, sizeof want, "%s", out);
    else
        snprintf(want, sizeof want, "%s/%s", rroot, out);
    for (const char *p = want; (p = strstr(p, "..")) != NULL; p += 2) {
        bool start = p == want || p[-1] == '/';
        bool end = p[2] == '\0' || p[2] == '/';
        if (start && end) {
            snprintf(err, errcap, "outputPath: \"..\" is not allowed; give a path inside %s",
                     rroot);
            return -1;
        }
    }
    struct stat st;
    if (stat(want, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t n = strlen(want);
        snprintf(want + n, sizeof want - n, "/%s", name);
    }
    /* The parent must exist and resolve inside the root. */
    char parent[PATH_MAX * 2];
    snprintf(parent, sizeof parent, "%s", want);
    char *slash = strrchr(parent, '/');
    if (slash == NULL || slash[1] == '\0') {
        snprintf(err, errcap, "outputPath: give a file name or a directory");
        return -1;
    }
    *slash = '\0';
    char rparent[PATH_MAX];
    if (realpath(parent[0] ? parent : "/", rparent) == NULL) {
        snprintf(err, errcap, "outputPath: directory %s: %s", parent, strerror(errno));
        return -1;
    }
    size_t rl = strlen(rroot);
    if (strncmp(rparent, rroot, rl) != 0 || (rparent[rl] != '\0' && rparent[rl] != '/')) {
        snprintf(err, errcap, "outputPath: %s is outside the export root %s", want, rroot);
        return -1;
    }
    if (lstat(want, &st) == 0 && S_ISLNK(st.st_mode)) {
        snprintf(err, errcap, "outputPath: %s is a symbolic link; choose another name", want);
        return -1;
    }
    if ((size_t)snprintf(dst, cap, "%s/%s", rparent, slash + 1) >= cap) {
        snprintf(err, errcap, "outputPath: too long");
        return -1;
    }
    return 0;
}

static void download_work(uv_work_t *w)
{
    download_t *d = w->data;
    int in = open(d->src, O_RDONLY | O_CLOEXEC);
    int out = -1;
    char *buf = malloc(256 * 1024);
    d->bytes = 0;
    d->status = -1;
    if (in < 0) {
        snprintf(d->error, sizeof d->error, "stored file %s: %s", d->src, strerror(errno));
        goto done;
    }
    out = open(d->dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (out < 0 || buf == NULL) {
        snprintf(d->error, sizeof d->error, "outputPath %s: %s", d->dst, strerror(errno));
        goto done;
    }
    for (;;) {
        ssize_t n = read(in, buf, 256 * 1024);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(d->error, sizeof d->error, "reading %s: %s", d->src, strerror(errno));
            goto done;
        }
        if (n == 0)
            break;
        for (ssize_t off = 0; off < n;) {
            ssize_t k = write(out, buf + off, (size_t)(n - off));
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0) {
                snprintf(d->error, sizeof d->error, "writing %s: %s", d->dst, strerror(errno));
                goto done;
            }
            off += k;
        }
        d->bytes += n;
    }
    d->status = 0;
done:
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    free(buf);
}

static void download_after(uv_work_t *w, int status)
{
    download_t *d = w->data;
    mcp_call_t *c = d->call;
    if (status != 0 || d->status != 0) {
        mcp_call_finish_error(c, "mediaDownload failed: %s",
                              status != 0 ? uv_strerror(status) : d->error);
    } else {
        char when[32];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        json_t *r = json_pack("{s:s, s:I, s:s, s:s}", "path", d->dst, "bytes", (json_int_t)d->bytes,
                              "mimeType", d->mime[0] ? d->mime : "application/octet-stream",
                              "downloadedAt", when);
        char *text = json_dumps(r, JSON_COMPACT);
        json_decref(r);
        mcp_call_finish_json(c, text, strlen(text));
        free(text);
    }
    free(d);
}

static void media_fetch(mcp_call_t *c, int64_t chat, int64_t msg);

static void media_answer(void *data, int status, const char *json, archive_err_t err,
                         const char *message, bool may_fetch)
{
    mcp_call_t *c = data;
    c->data = NULL;
    if (status != 0) {
        tool_done(data, status, json, err, message);
        return;
    }
    if (c->cancelled) {
        mcp_call_finish_error(c, "cancelled");
        return;
    }
    archive_t *ar = mcp_call_app(c);
    json_error_t je;
    json_t *m = json_loads(json, 0, &je);
    const char *state = json_string_value(json_object_get(m, "state"));
    const char *local = json_string_value(json_object_get(m, "localPath"));
    if (may_fetch && state && strcmp(state, "done") != 0 && ar->upstream &&
        ar->upstream->fetch_media && json_string_value(json_object_get(m, "exportPath")) == NULL) {
        int64_t chat = json_integer_value(json_object_get(m, "channelId"));
        int64_t msg = json_integer_value(json_object_get(m, "messageId"));
        json_decref(m);
        media_fetch(c, chat, msg);
        return;
    }
    if (state == NULL || strcmp(state, "done") != 0 || local == NULL) {
        mcp_call_finish_error(
            c,
            "The file of message %lld is not in the media store (state %s%s%s%s%s); "
            "only files stored by an import or a sync can be downloaded.",
            (long long)json_integer_value(json_object_get(m, "messageId")),
            state ? state : "unknown", json_string_value(json_object_get(m, "error")) ? ": " : "",
            json_string_value(json_object_get(m, "error"))
                ? json_string_value(json_object_get(m, "error"))
                : "",
            json_string_value(json_object_get(m, "exportPath")) ? ", export path " : "",
            json_string_value(json_object_get(m, "exportPath"))
                ? json_string_value(json_object_get(m, "exportPath"))
                : "");
        json_decref(m);
        return;
    }
    download_t *d = calloc(1, sizeof *d);
    if (d == NULL) {
        json_decref(m);
        mcp_call_finish_error(c, "out of memory");
        return;
    }
    d->call = c;
    snprintf(d->src, sizeof d->src, "%s/%s", ar->media_root, local);
    snprintf(d->mime, sizeof d->mime, "%s",
             json_string_value(json_object_get(m, "mimeType"))
                 ? json_string_value(json_object_get(m, "mimeType"))
                 : "");
    const char *fname = json_string_value(json_object_get(m, "fileName"));
    char name[256];
    snprintf(name, sizeof name, "%s",
             fname && !strchr(fname, '/') ? fname : strrchr(local, '/') + 1);
    char why[PATH_MAX * 2 + 256];
    const char *out = json_string_value(json_object_get(c->args, "outputPath"));
    json_decref(m);
    if (resolve_output(ar->export_root, out, name, d->dst, sizeof d->dst, why, sizeof why) != 0) {
        free(d);
        mcp_call_finish_error(c, "%s", why);
        return;
    }
    d->work.data = d;
    int rc = uv_queue_work(mcp_call_loop(c), &d->work, download_work, download_after);
    if (rc != 0) {
        free(d);
        mcp_call_finish_error(c, "mediaDownload failed: %s", uv_strerror(rc));
    }
}

static void media_done(void *data, int status, const char *json, archive_err_t err,
                       const char *message)
{
    media_answer(data, status, json, err, message, true);
}

/* The file is not stored yet: the connector downloads it now, with
 * progress, then the call answers from the store. */
typedef struct media_wait_s {
    mcp_call_t *call;
    void *handle;
} media_wait_t;

static void media_stored(void *data, int status, const char *json, archive_err_t err,
                         const char *message)
{
    media_answer(data, status, json, err, message, false);
}

static void media_progress(void *data, uint64_t bytes, uint64_t total)
{
    media_wait_t *mw = data;
    char msg[96];
    snprintf(msg, sizeof msg, "downloaded %.1f of %.1f MB", (double)bytes / 1048576.0,
             (double)total / 1048576.0);
    mcp_call_progress(mw->call, (double)bytes, (double)total, total ? msg : NULL);
}

static void media_fetched(void *data, int status, const char *json, const char *error)
{
    media_wait_t *mw = data;
    mcp_call_t *c = mw->call;
    free(mw);
    c->data = NULL;
    c->on_cancel = NULL;
    if (status != 0) {
        mcp_call_finish_error(c, "mediaDownload failed: %s", error ? error : uv_strerror(status));
        return;
    }
    json_error_t je;
    json_t *row = json_loads(json, 0, &je);
    const char *state = json_string_value(json_object_get(row, "state"));
    if (state == NULL || strcmp(state, "done") != 0) {
        const char *why = json_string_value(json_object_get(row, "error"));
        mcp_call_finish_error(c, "The file could not be downloaded (state %s): %s",
                              state ? state : "unknown", why ? why : "no reason given");
        json_decref(row);
        return;
    }
    json_decref(row);
    run_tool(c, "mediaDownload", media_stored);
}

static void media_fetch_cancel(mcp_call_t *c)
{
    media_wait_t *mw = c->data;
    archive_t *ar = mcp_call_app(c);
    c->data = NULL;
    c->on_cancel = NULL;
    ar->upstream->fetch_cancel(ar->upstream->ctx, mw->handle);
    free(mw);
    mcp_call_finish_error(c, "cancelled");
}

static void media_fetch(mcp_call_t *c, int64_t chat, int64_t msg)
{
    archive_t *ar = mcp_call_app(c);
    media_wait_t *mw = calloc(1, sizeof *mw);
    if (mw == NULL) {
        mcp_call_finish_error(c, "mediaDownload failed: %s", uv_strerror(UV_ENOMEM));
        return;
    }
    mw->call = c;
    int rc = ar->upstream->fetch_media(ar->upstream->ctx, chat, msg, media_progress, media_fetched,
                                       mw, &mw->handle);
    if (rc != 0) {
        free(mw);
        mcp_call_finish_error(c, "%s",
                              rc == UV_EBUSY ? "Too many downloads are waiting; retry in a moment."
                              : rc == UV_ENOTSUP
                                  ? "The file is not in the media store and downloads are off."
                                  : uv_strerror(rc));
        return;
    }
    c->data = mw;
    c->on_cancel = media_fetch_cancel;
}

static void media_download(mcp_call_t *c)
{
    run_tool(c, "mediaDownload", media_done);
}

/* ---- definitions ------------------------------------------------------------------ */

#define RO       (MCP_TOOL_READ_ONLY | MCP_TOOL_IDEMPOTENT)
#define WRITE    (MCP_TOOL_IDEMPOTENT)
#define DESTRUCT (MCP_TOOL_DESTRUCTIVE | MCP_TOOL_OPEN_WORLD)
#define SEND     (MCP_TOOL_OPEN_WORLD)

#define OBJ(props, req)                                                                            \
    "{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req                           \
    "],\"additionalProperties\":false}"
#define NOARGS "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}"
#define CHAN(desc)                                                                                 \
    "\"channelId\":{\"type\":[\"string\",\"integer\"],\"description\":\"" desc                     \
    " (numeric id or @username)\"}"
#define USER                                                                                       \
    "\"userId\":{\"type\":[\"string\",\"integer\"],\"description\":\"User (numeric id or "         \
    "@username)\"}"
#define LIMIT(d)                                                                                   \
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Default " #d                  \
    "; larger values are capped (the answer says so)\"}"
#define SOURCE                                                                                     \
    "\"source\":{\"type\":\"string\",\"enum\":[\"archive\",\"live\",\"both\"],\"description\":"    \
    "\"archive (default) reads the store; live and both need a connected account\"}"
#define DATE(n, d) "\"" n "\":{\"type\":\"string\",\"description\":\"" d " (ISO-8601)\"}"
#define TAGS       "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":1}}"
#define TAGSRC     "\"source\":{\"type\":\"string\",\"enum\":[\"manual\",\"auto\"]}"
#define MSGID      "\"messageId\":{\"type\":\"integer\"}"
#define TOPIC      "\"topicId\":{\"type\":\"integer\",\"description\":\"Forum topic id\"}"

#define OUT_OBJ "{\"type\":\"object\"}"
#define OUT_LIST(key)                                                                              \
    "{\"type\":\"object\",\"properties\":{\"" key "\":{\"type\":\"array\"},\"limit\":{\"type\":"   \
    "\"integer\"},\"limitCapped\":{\"type\":\"boolean\"}},\"required\":[\"" key "\"]}"
#define OUT_KEYS(k1)                                                                               \
    "{\"type\":\"object\",\"properties\":{\"" k1 "\":{}},\"required\":[\"" k1 "\"]}"

static const mcp_tool_def_t tools[] = {
    /* auth / health */
    {"authStatus", "Auth status", "Whether a Telegram account is connected, and which.", NOARGS,
     "{\"type\":\"object\",\"properties\":{\"authenticated\":{\"type\":\"boolean\"}},"
     "\"required\":[\"authenticated\"]}",
     RO, generic},
    {"serverStatus", "Server status",
     "Diagnostics: realtime sync state, sync queue size, jobs in progress, full-text search, last "
     "sync time, and the daemon's own figures.",
     NOARGS,
     "{\"type\":\"object\",\"properties\":{\"realtimeActive\":{\"type\":\"boolean\"},"
     "\"queueSize\":{\"type\":\"integer\"},\"jobsInProgress\":{\"type\":\"integer\"},"
     "\"ftsEnabled\":{\"type\":\"boolean\"}},\"required\":[\"realtimeActive\",\"queueSize\","
     "\"jobsInProgress\",\"ftsEnabled\"]}",
     RO, generic},
    /* sync */
    {"syncJobsList", "List sync jobs", "Sync jobs, optionally by status or chat.",
     OBJ("\"status\":{\"type\":\"string\",\"enum\":[\"pending\",\"in_progress\",\"idle\","
         "\"error\"]}," CHAN("Chat") "," LIMIT(50),
         ""),
     OUT_LIST("jobs"), RO, generic},
    {"syncJobsAdd", "Add a sync job",
     "Schedules the sync of a chat (run by the live sync when a connector is configured).",
     OBJ(CHAN("Chat to sync") ",\"depth\":{\"type\":\"integer\",\"minimum\":1,\"description\":"
                              "\"Messages to fetch back (default 1000)\"}," DATE(
                                  "minDate", "Oldest date to fetch") ",\"enableRealtime\":{"
                                                                     "\"type\":\"boolean\"}",
         "\"channelId\""),
     OUT_KEYS("job"), WRITE, generic},
    {"syncJobsRetry", "Retry sync jobs", "Sets failed or idle jobs back to pending.",
     OBJ("\"jobId\":{\"type\":\"integer\"}," CHAN("Chat") ",\"allErrors\":{\"type\":\"boolean\"}",
         ""),
     OUT_KEYS("updated"), WRITE, generic},
    {"syncJobsCancel", "Cancel sync jobs", "Stops jobs (status idle, realtime off).",
     OBJ("\"jobId\":{\"type\":\"integer\"}," CHAN("Chat"), ""), OUT_KEYS("canceled"),
     MCP_TOOL_DESTRUCTIVE, generic},
    {"syncRealtimeSet", "Realtime updates", "Turns realtime updates on or off (needs a connector).",
     OBJ("\"enabled\":{\"type\":\"boolean\"}", "\"enabled\""), OUT_KEYS("realtimeActive"),
     WRITE | MCP_TOOL_OPEN_WORLD, sync_realtime_set},
    /* channels */
    {"channelsList", "List chats", "Chats in the archive, most recently active first.",
     OBJ(LIMIT(50) ",\"includeInactive\":{\"type\":\"boolean\",\"description\":\"Also chats left "
                   "or deleted\"}",
         ""),
     OUT_LIST("channels"), RO, generic},
    {"channelsSearch", "Search dialogs",
     "Live search of the account's dialogs (needs a connector).",
     OBJ("\"query\":{\"type\":\"string\",\"minLength\":1}," LIMIT(100), "\"query\""),
     OUT_LIST("channels"), RO | MCP_TOOL_OPEN_WORLD, generic},
    {"channelsGet", "Get a chat", "A chat's record, message count and sync jobs.",
     OBJ(CHAN("Chat"), "\"channelId\""), OUT_KEYS("channelId"), RO, generic},
    {"channelsSetSync", "Enable sync", "Marks a chat for sync (or not).",
     OBJ(CHAN("Chat") ",\"enabled\":{\"type\":\"boolean\"}", "\"channelId\",\"enabled\""),
     OUT_KEYS("syncEnabled"), WRITE, generic},
    {"channelsMetadataGet", "Chat metadata", "Title, username and description of a chat.",
     OBJ(CHAN("Chat"), "\"channelId\""), OUT_KEYS("channelId"), RO, generic},
    {"channelsMetadataRefresh", "Refresh metadata",
     "Fetches chat metadata (title, username, description, member count) from Telegram and "
     "stores it (needs a connector): the chats named in channelIds, else the connector's chats "
     "least recently refreshed first. Chats refreshed within the hour are skipped unless force; "
     "onlyMissing keeps chats never refreshed. Answers the refreshed records, the chats that "
     "failed and why, and how many were skipped.",
     OBJ("\"channelIds\":{\"type\":\"array\",\"items\":{\"type\":[\"string\",\"integer\"]}}," LIMIT(
             20) ",\"force\":{\"type\":\"boolean\"},\"onlyMissing\":{\"type\":\"boolean\"}",
         ""),
     OUT_LIST("channels"), WRITE | MCP_TOOL_OPEN_WORLD, metadata_refresh},
    {"channelsTagsSet", "Set chat tags", "Replaces a chat's tags of one source (default manual).",
     OBJ(CHAN("Chat") "," TAGS "," TAGSRC, "\"channelId\",\"tags\""), OUT_KEYS("tags"), WRITE,
     generic},
    {"channelsTagsList", "List chat tags", "A chat's tags with source and confidence.",
     OBJ(CHAN("Chat") "," TAGSRC, "\"channelId\""), OUT_KEYS("tags"), RO, generic},
    {"channelsTagsSearch", "Chats by tag", "Chats carrying a tag.",
     OBJ("\"tag\":{\"type\":\"string\",\"minLength\":1}," TAGSRC "," LIMIT(100), "\"tag\""),
     OUT_LIST("channels"), RO, generic},
    {"channelsTagsAuto", "Auto-tag chats",
     "Derives tags from each chat's most distinctive words against the whole archive (ts_stat "
     "document frequencies), stored with source auto and a confidence.",
     OBJ("\"channelIds\":{\"type\":\"array\",\"items\":{\"type\":[\"string\",\"integer\"]}}," LIMIT(
             50) ",\"source\":{\"type\":\"string\",\"enum\":[\"auto\"]},\"refreshMetadata\":{"
                 "\"type\":"
                 "\"boolean\"}",
         ""),
     OUT_LIST("channels"), WRITE, generic},
    /* topics */
    {"topicsList", "List topics", "Forum topics of a chat, most recently active first.",
     OBJ(CHAN("Forum chat") "," LIMIT(100), "\"channelId\""), OUT_LIST("topics"), RO, generic},
    {"topicsSearch", "Search topics", "Forum topics whose title matches.",
     OBJ(CHAN("Forum chat") ",\"query\":{\"type\":\"string\",\"minLength\":1}," LIMIT(100),
         "\"channelId\",\"query\""),
     OUT_LIST("topics"), RO, generic},
    /* messages */
    {"messagesList", "List messages", "Messages, newest first, by chat, topic and dates.",
     OBJ(CHAN("Chat") "," TOPIC "," SOURCE
                      "," DATE("fromDate", "From") "," DATE("toDate", "To") "," LIMIT(50),
         ""),
     OUT_LIST("messages"), RO, generic},
    {"messagesGet", "Get a message", "One message.",
     OBJ(CHAN("Chat") "," MSGID "," SOURCE, "\"channelId\",\"messageId\""), OUT_KEYS("message"), RO,
     generic},
    {"messagesContext", "Message context", "Messages before and after one message, in time order.",
     OBJ(CHAN("Chat") "," MSGID ",\"before\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":200},"
                      "\"after\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":200}," SOURCE,
         "\"channelId\",\"messageId\""),
     "{\"type\":\"object\",\"properties\":{\"before\":{\"type\":\"array\"},\"target\":{\"type\":"
     "\"object\"},\"after\":{\"type\":\"array\"}},\"required\":[\"before\",\"target\",\"after\"]}",
     RO, generic},
    {"messagesSearch", "Search messages",
     "Full-text search (web syntax: words, \\\"phrases\\\", OR, -word; CJK by substring), regex "
     "filter, chats, tags, topic and dates; hits carry a snippet with matches in **.",
     OBJ("\"query\":{\"type\":\"string\"},\"regex\":{\"type\":\"string\"}," SOURCE
         ",\"channelIds\":{\"type\":\"array\",\"items\":{\"type\":[\"string\",\"integer\"]}},"
         "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}," TOPIC
         "," DATE("fromDate", "From") "," DATE("toDate", "To") "," LIMIT(
             100) ",\"caseInsensitive\":{\"type\":\"boolean\"},"
                  "\"fuzzy\":{\"type\":\"boolean\"},\"kind\":{\"type\":\"string\","
                  "\"enum\":[\"links\",\"media\",\"photos\",\"videos\",\"documents\","
                  "\"files\"]},\"orderBy\":{\"type\":\"string\",\"enum\":[\"time\","
                  "\"rank\"]}",
         ""),
     OUT_LIST("messages"), RO, generic},
    {"messagesSend", "Send a message", "Sends a text message (needs a connector).",
     OBJ(CHAN("Chat") ",\"text\":{\"type\":\"string\",\"minLength\":1}," TOPIC
                      ",\"replyToMessageId\":{\"type\":\"integer\"}",
         "\"channelId\",\"text\""),
     OUT_KEYS("messageId"), SEND, messages_send},
    {"messagesSendFile", "Send a file", "Sends a file (needs a connector).",
     OBJ(CHAN("Chat") ",\"filePath\":{\"type\":\"string\",\"minLength\":1},\"caption\":{\"type\":"
                      "\"string\"},\"filename\":{\"type\":\"string\"}," TOPIC,
         "\"channelId\",\"filePath\""),
     OUT_KEYS("messageId"), SEND, messages_send_file},
    /* media */
    {"mediaDownload", "Download media",
     "Copies a message's stored file under the export root (outputPath: a file or directory "
     "inside it).",
     OBJ(CHAN("Chat") "," MSGID ",\"outputPath\":{\"type\":\"string\"}",
         "\"channelId\",\"messageId\""),
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":"
     "\"integer\"},\"mimeType\":{\"type\":\"string\"},\"downloadedAt\":{\"type\":\"string\"}},"
     "\"required\":[\"path\",\"bytes\",\"mimeType\",\"downloadedAt\"]}",
     MCP_TOOL_IDEMPOTENT, media_download},
    /* contacts */
    {"contactsSearch", "Search contacts", "People by name, username, alias or phone (fuzzy).",
     OBJ("\"query\":{\"type\":\"string\",\"minLength\":1}," LIMIT(50), "\"query\""),
     OUT_LIST("contacts"), RO, generic},
    {"contactsGet", "Get a contact", "A person's record and activity.", OBJ(USER, "\"userId\""),
     OUT_KEYS("userId"), RO, generic},
    {"contactsAliasSet", "Set alias", "A local alias for a person.",
     OBJ(USER ",\"alias\":{\"type\":\"string\",\"minLength\":1}", "\"userId\",\"alias\""),
     OUT_KEYS("alias"), WRITE, generic},
    {"contactsAliasRemove", "Remove alias", "Removes a person's alias.", OBJ(USER, "\"userId\""),
     OUT_KEYS("removed"), WRITE, generic},
    {"contactsTagsAdd", "Tag a contact", "Adds tags to a person.",
     OBJ(USER "," TAGS, "\"userId\",\"tags\""), OUT_KEYS("tags"), WRITE, generic},
    {"contactsTagsRemove", "Untag a contact", "Removes tags from a person.",
     OBJ(USER "," TAGS, "\"userId\",\"tags\""), OUT_KEYS("tags"), WRITE, generic},
    {"contactsNotesSet", "Set notes", "Local notes about a person (empty clears them).",
     OBJ(USER ",\"notes\":{\"type\":\"string\"}", "\"userId\",\"notes\""), OUT_KEYS("userId"),
     WRITE, generic},
    /* groups */
    {"groupsList", "List groups", "Groups, supergroups, forums and channels, optionally by title.",
     OBJ("\"query\":{\"type\":\"string\"}," LIMIT(100), ""), OUT_LIST("groups"), RO, generic},
    {"groupsInfo", "Group info",
     "A group's record, counts, members and most active senders from the archive; with a "
     "connector also \"live\": the chat, its member count and administrators as Telegram has "
     "them now (\"liveError\" says when that part failed).",
     OBJ(CHAN("Group"), "\"channelId\""), OUT_KEYS("channelId"), RO | MCP_TOOL_OPEN_WORLD,
     groups_info},
    {"groupsRename", "Rename a group", "Renames a group (needs a connector).",
     OBJ(CHAN("Group") ",\"name\":{\"type\":\"string\",\"minLength\":1}", "\"channelId\",\"name\""),
     OUT_KEYS("name"), DESTRUCT, group_admin},
    {"groupsMembersAdd", "Add members", "Adds members (needs a connector).",
     OBJ(CHAN("Group") ",\"userIds\":{\"type\":\"array\",\"minItems\":1,\"items\":{\"type\":["
                       "\"string\",\"integer\"]}}",
         "\"channelId\",\"userIds\""),
     OUT_KEYS("failed"), DESTRUCT, group_admin},
    {"groupsMembersRemove", "Remove members", "Removes members (needs a connector).",
     OBJ(CHAN("Group") ",\"userIds\":{\"type\":\"array\",\"minItems\":1,\"items\":{\"type\":["
                       "\"string\",\"integer\"]}}",
         "\"channelId\",\"userIds\""),
     OUT_KEYS("removed"), DESTRUCT, group_admin},
    {"groupsInviteLinkGet", "Invite link", "A group's invite link (needs a connector).",
     OBJ(CHAN("Group"), "\"channelId\""), OUT_OBJ, RO | MCP_TOOL_OPEN_WORLD, group_admin},
    {"groupsInviteLinkRevoke", "Revoke invite link", "Revokes the invite link (needs a connector).",
     OBJ(CHAN("Group"), "\"channelId\""), OUT_OBJ, DESTRUCT, group_admin},
    {"groupsJoin", "Join a group", "Joins by invite link or username (needs a connector).",
     OBJ("\"invite\":{\"type\":\"string\",\"minLength\":1}", "\"invite\""), OUT_OBJ, SEND,
     group_admin},
    {"groupsLeave", "Leave a group", "Leaves a group (needs a connector).",
     OBJ(CHAN("Group"), "\"channelId\""), OUT_KEYS("left"), DESTRUCT, group_admin},
};

const mcp_toolset_t toolset_telegram = {
    .name = "telegram",
    .description = "Telegram chats, messages, topics, contacts and groups (vNext schema)",
    .tools = tools,
    .ntools = (int)(sizeof tools / sizeof tools[0]),
};
