/* fake_tdjson_admin: the fake libtdjson's chat administration (see
 * fake_tdjson.c for the library and its script, fake_tdjson_chats.c for
 * the chats): full info, administrators, renaming, invite links, banning
 * and unbanning, adding members, leaving and joining, with TDLib 1.8.67's
 * object shapes (supergroupFullInfo, basicGroupFullInfo,
 * chatAdministrators, chatInviteLink, failedToAddMembers, ChatJoinResult).
 * Everything here runs under the library's mutex.
 *
 * The script's chats may say, besides fake_tdjson.c's fields:
 *
 *   admin        false: the account is no administrator there: renaming,
 *                invite links, banning, unbanning and adding answer 400
 *                "CHAT_ADMIN_REQUIRED" (default true)
 *   admins       [{user_id, custom_title, is_owner}] (default: the
 *                account, owner, when admin is not false)
 *   members      [user ids] (default: the senders and the account)
 *   description  the full info's description
 *   invite_link  the primary invite link (shown to administrators)
 *
 * and the script itself:
 *
 *   joinable     [chat records as in chats, plus invite_link and
 *                join_request: true (an admin must approve)]: chats the
 *                account is not in, found by joinChatByInviteLink (by
 *                invite_link) and searchPublicChat (by username)
 *   users[].privacy_restricted  true: addChatMember leaves the user out
 *                (failedToAddMembers)
 *
 * A chat joined (or found by username) becomes one of the client's chats
 * (updateNewChat first); leaveChat marks it "left"; joinChat takes it back.
 * Members added, banned and unbanned change the member list the full info
 * counts. setChatTitle sends updateChatTitle. */
#include "fake_tdjson_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static json_int_t int_of(json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

static json_t *chat_of(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = fake__chat_find(c, int_of(req, "chat_id"));
    if (!rec)
        fake__answer_error(c, extra, 400, "Chat not found");
    return rec;
}

static bool is_group(json_t *rec)
{
    return strcmp(fake__str_of(rec, "type"), "private") != 0;
}

/* True when the account may administer rec; else the error is sent. */
static bool admin_ok(fake_client_t *c, json_t *rec, json_t *extra)
{
    if (!json_is_false(json_object_get(rec, "admin")) && is_group(rec) &&
        !json_is_true(json_object_get(rec, "left")))
        return true;
    fake__answer_error(c, extra, 400, "CHAT_ADMIN_REQUIRED");
    return false;
}

static bool ids_has(json_t *ids, json_int_t id)
{
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v)
    {
        if (json_integer_value(v) == id)
            return true;
    }
    return false;
}

static void ids_remove(json_t *ids, json_int_t id)
{
    for (size_t i = json_array_size(ids); i > 0; i--)
        if (json_integer_value(json_array_get(ids, i - 1)) == id)
            json_array_remove(ids, i - 1);
}

/* rec's member ids, made on first use from the script. */
static json_t *members(json_t *rec)
{
    json_t *m = json_object_get(rec, "member_ids");
    if (m)
        return m;
    json_t *given = json_object_get(rec, "members");
    m = given ? json_deep_copy(given) : json_array();
    if (!given) {
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(rec, "senders"), i, v)
        {
            if (!ids_has(m, json_integer_value(v)))
                json_array_append(m, v);
        }
        if (!ids_has(m, fake__me_id()))
            json_array_append_new(m, json_integer(fake__me_id()));
    }
    json_object_set_new(rec, "member_ids", m);
    return m;
}

static json_t *banned(json_t *rec)
{
    json_t *b = json_object_get(rec, "banned_ids");
    if (!b) {
        b = json_array();
        json_object_set_new(rec, "banned_ids", b);
    }
    return b;
}

static json_t *invite_link_object(json_t *rec)
{
    return json_pack("{s:s,s:s,s:s,s:I,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:b,s:b,s:b}", "@type",
                     "chatInviteLink", "invite_link", fake__str_of(rec, "invite_link"), "name", "",
                     "creator_user_id", fake__me_id(), "date", 1700000000, "edit_date", 0,
                     "expiration_date", 0, "member_limit", 0, "member_count", 0,
                     "expired_member_count", 0, "pending_join_request_count", 0,
                     "creates_join_request", 0, "is_primary", 1, "is_revoked", 0);
}

/* The primary link, for administrators; JSON null otherwise. */
static json_t *full_link(json_t *rec)
{
    return fake__str_of(rec, "invite_link")[0] && !json_is_false(json_object_get(rec, "admin"))
               ? invite_link_object(rec)
               : json_null();
}

static json_t *rec_by_group_id(fake_client_t *c, json_int_t chat_id)
{
    json_t *rec = fake__chat_find(c, chat_id);
    return rec && is_group(rec) ? rec : NULL;
}

static void h_supergroup_full(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = rec_by_group_id(c, -(int_of(req, "supergroup_id") + FAKE_SUPERGROUP_BASE));
    if (!rec) {
        fake__answer_error(c, extra, 400, "Supergroup not found");
        return;
    }
    fake__answer(c, extra,
                 json_pack("{s:s,s:s,s:I,s:I,s:i,s:i,s:o,s:b}", "@type", "supergroupFullInfo",
                           "description", fake__str_of(rec, "description"), "member_count",
                           (json_int_t)json_array_size(members(rec)), "administrator_count",
                           (json_int_t)json_array_size(json_object_get(rec, "admins")),
                           "restricted_count", 0, "banned_count", (int)json_array_size(banned(rec)),
                           "invite_link", full_link(rec), "can_get_members", 1));
}

static void h_basic_group_full(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = rec_by_group_id(c, -int_of(req, "basic_group_id"));
    if (!rec) {
        fake__answer_error(c, extra, 400, "Basic group not found");
        return;
    }
    json_t *list = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(members(rec), i, v)
    {
        json_array_append_new(
            list, json_pack("{s:s,s:{s:s,s:O},s:s,s:I,s:i,s:{s:s}}", "@type", "chatMember",
                            "member_id", "@type", "messageSenderUser", "user_id", v, "tag", "",
                            "inviter_user_id", fake__me_id(), "joined_chat_date", 1700000000,
                            "status", "@type", "chatMemberStatusMember"));
    }
    fake__answer(c, extra,
                 json_pack("{s:s,s:s,s:I,s:o,s:o}", "@type", "basicGroupFullInfo", "description",
                           fake__str_of(rec, "description"), "creator_user_id", fake__me_id(),
                           "members", list, "invite_link", full_link(rec)));
}

static void h_administrators(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_of(c, req, extra);
    if (!rec)
        return;
    json_t *list = json_array();
    json_t *admins = json_object_get(rec, "admins");
    size_t i;
    json_t *a;
    if (!admins && is_group(rec) && !json_is_false(json_object_get(rec, "admin")))
        json_array_append_new(list, json_pack("{s:s,s:I,s:s,s:b,s:b}", "@type", "chatAdministrator",
                                              "user_id", fake__me_id(), "custom_title", "",
                                              "is_owner", 1, "can_be_edited", 0));
    json_array_foreach(admins, i, a)
    {
        json_array_append_new(list, json_pack("{s:s,s:I,s:s,s:b,s:b}", "@type", "chatAdministrator",
                                              "user_id", int_of(a, "user_id"), "custom_title",
                                              fake__str_of(a, "custom_title"), "is_owner",
                                              json_is_true(json_object_get(a, "is_owner")),
                                              "can_be_edited", 0));
    }
    fake__answer(c, extra,
                 json_pack("{s:s,s:o}", "@type", "chatAdministrators", "administrators", list));
}

static void h_set_title(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_of(c, req, extra);
    if (!rec || !admin_ok(c, rec, extra))
        return;
    const char *title = fake__str_of(req, "title");
    if (!*title) {
        fake__answer_error(c, extra, 400, "Title must be non-empty");
        return;
    }
    json_object_set_new(rec, "title", json_string(title));
    fake__answer_ok(c, extra);
    fake__update(c, json_pack("{s:s,s:O,s:s}", "@type", "updateChatTitle", "chat_id",
                              json_object_get(rec, "id"), "title", title));
}

static void h_replace_link(fake_client_t *c, json_t *req, json_t *extra)
{
    static unsigned serial;
    json_t *rec = chat_of(c, req, extra);
    if (!rec || !admin_ok(c, rec, extra))
        return;
    char link[96];
    snprintf(link, sizeof link, "https://t.me/+fake%lldx%u",
             (long long)-json_integer_value(json_object_get(rec, "id")), ++serial);
    json_object_set_new(rec, "invite_link", json_string(link));
    fake__answer(c, extra, invite_link_object(rec));
}

static json_int_t member_user(json_t *req)
{
    json_t *m = json_object_get(req, "member_id");
    return strcmp(fake__str_of(m, "@type"), "messageSenderUser") == 0 ? int_of(m, "user_id") : 0;
}

static void h_ban(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_of(c, req, extra);
    if (!rec || !admin_ok(c, rec, extra))
        return;
    json_int_t uid = member_user(req);
    if (!ids_has(members(rec), uid)) {
        fake__answer_error(c, extra, 400, "USER_NOT_PARTICIPANT");
        return;
    }
    ids_remove(members(rec), uid);
    if (strcmp(fake__str_of(rec, "type"), "basic_group") != 0 && !ids_has(banned(rec), uid))
        json_array_append_new(banned(rec), json_integer(uid));
    fake__answer_ok(c, extra);
}

static void h_set_status(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_of(c, req, extra);
    if (!rec || !admin_ok(c, rec, extra))
        return;
    json_int_t uid = member_user(req);
    const char *st = fake__str_of(json_object_get(req, "status"), "@type");
    if (!strcmp(st, "chatMemberStatusLeft")) {
        ids_remove(banned(rec), uid);
        ids_remove(members(rec), uid);
    } else if (!strcmp(st, "chatMemberStatusBanned")) {
        ids_remove(members(rec), uid);
        if (!ids_has(banned(rec), uid))
            json_array_append_new(banned(rec), json_integer(uid));
    } else if (!strcmp(st, "chatMemberStatusMember")) {
        ids_remove(banned(rec), uid);
        if (!ids_has(members(rec), uid))
            json_array_append_new(members(rec), json_integer(uid));
    } else {
        fake__answer_error(c, extra, 400, "fake_tdjson: status %s is not supported", st);
        return;
    }
    fake__answer_ok(c, extra);
}

static json_t *script_user(json_int_t id)
{
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(fake__script, "users"), i, u)
    {
        if (int_of(u, "id") == id)
            return u;
    }
    return NULL;
}

/* Adds uid to rec: 0 added, 1 left out by privacy, else the error sent. */
static int add_one(fake_client_t *c, json_t *rec, json_int_t uid, json_t *extra)
{
    json_t *u = script_user(uid);
    if (!u) {
        fake__answer_error(c, extra, 400, "User not found");
        return -1;
    }
    if (ids_has(members(rec), uid)) {
        fake__answer_error(c, extra, 400, "USER_ALREADY_PARTICIPANT");
        return -1;
    }
    if (json_is_true(json_object_get(u, "privacy_restricted")))
        return 1;
    ids_remove(banned(rec), uid);
    json_array_append_new(members(rec), json_integer(uid));
    return 0;
}

static json_t *failed_one(json_int_t uid)
{
    return json_pack("{s:s,s:I,s:b,s:b}", "@type", "failedToAddMember", "user_id", uid,
                     "premium_would_allow_invite", 0, "premium_required_to_send_messages", 0);
}

static void h_add_member(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_of(c, req, extra);
    if (!rec || !admin_ok(c, rec, extra))
        return;
    json_int_t uid = int_of(req, "user_id");
    int r = add_one(c, rec, uid, extra);
    if (r < 0)
        return;
    json_t *failed = json_array();
    if (r == 1)
        json_array_append_new(failed, failed_one(uid));
    fake__answer(
        c, extra,
        json_pack("{s:s,s:o}", "@type", "failedToAddMembers", "failed_to_add_members", failed));
}

static void h_add_members(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_of(c, req, extra);
    if (!rec || !admin_ok(c, rec, extra))
        return;
    json_t *failed = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(req, "user_ids"), i, v)
    {
        int r = add_one(c, rec, json_integer_value(v), extra);
        if (r < 0) {
            json_decref(failed);
            return;
        }
        if (r == 1)
            json_array_append_new(failed, failed_one(json_integer_value(v)));
    }
    fake__answer(
        c, extra,
        json_pack("{s:s,s:o}", "@type", "failedToAddMembers", "failed_to_add_members", failed));
}

static void h_leave(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_of(c, req, extra);
    if (!rec)
        return;
    if (!is_group(rec)) {
        fake__answer_error(c, extra, 400, "Can't leave private chats");
        return;
    }
    json_object_set_new(rec, "left", json_true());
    fake__answer_ok(c, extra);
}

/* A joinable chat by key (invite_link, username) or NULL. */
static json_t *joinable(const char *key, const char *value)
{
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(fake__script, "joinable"), i, j)
    {
        if (*value && strcasecmp(fake__str_of(j, key), value) == 0)
            return j;
    }
    return NULL;
}

/* The client's record of joinable chat j, made (and sent as
 * updateNewChat) on first use; left until joined. */
static json_t *known(fake_client_t *c, json_t *j)
{
    json_t *rec = fake__chat_find(c, int_of(j, "id"));
    if (rec)
        return rec;
    rec = json_deep_copy(j);
    json_object_set_new(rec, "msgs", json_array());
    json_object_set_new(rec, "reserved", json_integer(0));
    json_object_set_new(rec, "newest_served", json_false());
    json_object_set_new(rec, "left", json_true());
    json_array_append_new(c->chats, rec);
    fake__update(
        c, json_pack("{s:s,s:o}", "@type", "updateNewChat", "chat", fake__chat_object(c, rec)));
    return rec;
}

static void join_rec(fake_client_t *c, json_t *rec, json_t *extra)
{
    if (json_is_true(json_object_get(rec, "join_request"))) {
        fake__answer(c, extra, json_pack("{s:s}", "@type", "chatJoinResultRequestSent"));
        return;
    }
    json_object_del(rec, "left");
    if (!ids_has(members(rec), fake__me_id()))
        json_array_append_new(members(rec), json_integer(fake__me_id()));
    fake__answer(c, extra,
                 json_pack("{s:s,s:O}", "@type", "chatJoinResultSuccess", "chat_id",
                           json_object_get(rec, "id")));
}

static void h_join_link(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *j = joinable("invite_link", fake__str_of(req, "invite_link"));
    if (!j) {
        fake__answer_error(c, extra, 400, "INVITE_HASH_INVALID");
        return;
    }
    json_t *rec = known(c, j);
    if (!json_is_true(json_object_get(rec, "left"))) {
        fake__answer_error(c, extra, 400, "USER_ALREADY_PARTICIPANT");
        return;
    }
    join_rec(c, rec, extra);
}

static void h_search_public(fake_client_t *c, json_t *req, json_t *extra)
{
    const char *name = fake__str_of(req, "username");
    size_t i;
    json_t *rec;
    json_array_foreach(c->chats, i, rec)
    {
        if (*name && strcasecmp(fake__str_of(rec, "username"), name) == 0) {
            fake__answer(c, extra, fake__chat_object(c, rec));
            return;
        }
    }
    json_t *j = joinable("username", name);
    if (!j) {
        fake__answer_error(c, extra, 400, "USERNAME_NOT_OCCUPIED");
        return;
    }
    fake__answer(c, extra, fake__chat_object(c, known(c, j)));
}

static void h_join(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_of(c, req, extra);
    if (rec)
        join_rec(c, rec, extra);
}

const fake_method_t fake__admin_methods[] = {
    {"getSupergroupFullInfo", h_supergroup_full, true},
    {"getBasicGroupFullInfo", h_basic_group_full, true},
    {"getChatAdministrators", h_administrators, true},
    {"setChatTitle", h_set_title, true},
    {"replacePrimaryChatInviteLink", h_replace_link, true},
    {"banChatMember", h_ban, true},
    {"setChatMemberStatus", h_set_status, true},
    {"addChatMember", h_add_member, true},
    {"addChatMembers", h_add_members, true},
    {"leaveChat", h_leave, true},
    {"joinChatByInviteLink", h_join_link, true},
    {"searchPublicChat", h_search_public, true},
    {"joinChat", h_join, true},
};
const size_t fake__admin_methods_len = sizeof fake__admin_methods / sizeof fake__admin_methods[0];
