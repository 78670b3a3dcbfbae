/* tg_user_admin: the Telegram user account's chat verbs beyond sending
 * (connector.h's chat table; tg_user.c lists them): chat_info, rename,
 * invite_link, remove_member, leave, and what a bot cannot do: join by
 * invite link or username, add members. Each runs on the default account
 * as a short chain of TDLib requests (one tgu_call_t per verb) and answers
 * in the Bot API's shapes, so the telegram toolset and its SQL read one
 * connector's answer like the other's:
 *
 *   chat_info      getChat, then by the chat's type getUser (private),
 *                  getBasicGroupFullInfo (basic group), getSupergroup and
 *                  getSupergroupFullInfo (supergroup, channel), then
 *                  getChatAdministrators and getUser of each admin:
 *                  {"chat": Chat, "memberCount", "administrators":
 *                  [ChatMember]} as the Bot API's getChat,
 *                  getChatMemberCount and getChatAdministrators
 *   rename         setChatTitle
 *   invite_link    the primary link of the chat's full info; revoke (or
 *                  none yet): replacePrimaryChatInviteLink
 *   remove_member  banChatMember, then in a supergroup or channel
 *                  setChatMemberStatus chatMemberStatusLeft (the unban:
 *                  the user may join again; a basic group keeps no bans)
 *   leave          leaveChat
 *   join           joinChatByInviteLink, or searchPublicChat + joinChat;
 *                  then getChat
 *   add_members    addChatMember per user (each user's own failure)
 *
 * TDLib's refusals are answered in words (tgu_reason): its error message
 * ("CHAT_ADMIN_REQUIRED") and what it means for the account. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "upstream/telegram/user/tg_user_internal.h"

/* Administrators whose user record chat_info looks up (getUser, from
 * TDLib's cache); past it an administrator's user is {"id"} only. */
#define TGU_ADMIN_USERS_MAX 50
/* Users one add_members call takes. */
#define TGU_ADD_MEMBERS_MAX 200
/* addChatMember's forward_limit: the old messages a new member of a basic
 * group sees (TDLib's maximum). */
#define TGU_ADD_FORWARD_LIMIT 100
/* Bytes of an invite hash or username taken from a join's argument. */
#define TGU_INVITE_MAX 256

typedef struct tgu_call_s tgu_call_t;
typedef void (*tgu_step_fn)(tgu_call_t *a, json_t *reply);

/* One verb in flight: its account, its caller, the step the next answer
 * goes to and what it gathered. */
struct tgu_call_s {
    tgu_account_t *acc;
    int64_t chat;
    connector_cb cb;
    void *data;
    tgu_step_fn next;   /* the answer's step */
    tgu_step_fn failed; /* an error answer's step; NULL: the verb ends with it */
    int status;         /* the failed answer's status (for failed) */
    bool revoke;        /* invite_link; remove_member: unban after the ban */
    int64_t user;       /* remove_member */
    unsigned parts;     /* chat_info */
    const char *part;   /* chat_info: the part the request in flight serves */
    json_t *out;        /* the answer being built */
    json_t *bchat;      /* chat_info, join: the chat in the Bot API's shape */
    json_t *ttype;      /* chat_info: TDLib's chat type */
    json_t *tadmins;    /* TDLib's chatAdministrator list */
    json_t *admins;     /* ... in the Bot API's shape */
    size_t i;           /* the admin or user at hand */
    int64_t *users;     /* add_members */
    size_t n;
    char username[TGU_INVITE_MAX]; /* join by username */
};

/* ---- TDLib's refusals in words ----------------------------------------------------- */

static const struct {
    const char *code, *words;
} k_reasons[] = {
    {"CHAT_ADMIN_REQUIRED",
     "the account is not an administrator of this chat, or lacks the admin right this needs"},
    {"Not enough rights", "the account lacks the admin right this needs in this chat"},
    {"CHAT_NOT_MODIFIED", "nothing changed: the chat already is that way"},
    {"USER_PRIVACY_RESTRICTED",
     "the user's privacy settings do not allow adding them to groups; send them an invite link "
     "instead"},
    {"USER_NOT_MUTUAL_CONTACT", "only a mutual contact of the user can add them"},
    {"USER_ALREADY_PARTICIPANT", "already a member of this chat"},
    {"USER_NOT_PARTICIPANT", "the user is not a member of this chat"},
    {"INVITE_HASH_EXPIRED", "the invite link expired or was revoked; ask for a new one"},
    {"INVITE_HASH_INVALID", "the invite link is not valid; check it"},
    {"Wrong invite link", "the invite link is not valid; check it"},
    {"INVITE_REQUEST_SENT", "a request to join was sent; an admin of the chat has to approve it"},
    {"USERNAME_NOT_OCCUPIED", "no public chat has this username"},
    {"USERNAME_INVALID", "the username is not valid"},
    {"CHANNELS_TOO_MUCH", "the account is in too many groups and channels; leave some first"},
    {"USER_CHANNELS_TOO_MUCH", "the user is in too many groups and channels"},
    {"USERS_TOO_MUCH", "the chat reached its member limit"},
    {"USER_KICKED", "the user is banned from this chat; unban them first"},
    {"USER_BANNED_IN_CHANNEL", "Telegram limits this account: it cannot do this in groups now"},
    {"PEER_FLOOD", "Telegram limits this account for too many requests to strangers; try later"},
    {"CHAT_WRITE_FORBIDDEN", "the account cannot write in this chat"},
    {"Chat not found", "the account does not know this chat (not a member, or a wrong id)"},
    {"User not found", "the account does not know this user (it has not met them in a chat)"},
};

/* Why a request failed, for the model: TDLib's message and code and what
 * they mean, how long a FloodWait lasts, or what the transport said. */
static void tgu_reason(int status, const json_t *reply, char *out, size_t cap)
{
    const char *msg = tdjson_error_message(reply, NULL);
    if (msg == NULL) {
        snprintf(out, cap, "%s",
                 status == UV_ETIMEDOUT   ? "TDLib did not answer in time; try again"
                 : status == UV_ECANCELED ? "the account's TDLib client closed (parley is stopping)"
                 : status == UV_ENOTCONN  ? "the Telegram user account is not signed in and ready"
                                          : uv_strerror(status));
        return;
    }
    long wait = tdjson_retry_after(reply);
    if (wait > 0) {
        snprintf(out, cap, "Telegram asks to wait %ld seconds before trying again (FloodWait: %s)",
                 wait, msg);
        return;
    }
    long code = (long)json_integer_value(json_object_get(reply, "code"));
    for (size_t i = 0; i < sizeof k_reasons / sizeof k_reasons[0]; i++)
        if (strstr(msg, k_reasons[i].code)) {
            snprintf(out, cap, "Telegram refused (error %ld %s): %s", code, msg,
                     k_reasons[i].words);
            return;
        }
    snprintf(out, cap, "Telegram refused (error %ld): %s", code, msg);
}

/* ---- a verb's chain of requests ------------------------------------------------------ */

static json_int_t int_of(const json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

static const char *str_of(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static const char *type_of(const json_t *o)
{
    return str_of(o, "@type");
}

static void call_free(tgu_call_t *a)
{
    json_decref(a->out);
    json_decref(a->bchat);
    json_decref(a->ttype);
    json_decref(a->tadmins);
    json_decref(a->admins);
    free(a->users);
    free(a);
}

/* Ends the verb with o (stolen) as its JSON answer. */
static void end_json(tgu_call_t *a, json_t *o)
{
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(o);
    if (text)
        a->cb(a->data, 0, text, NULL);
    else
        a->cb(a->data, UV_ENOMEM, NULL, "out of memory");
    free(text);
    call_free(a);
}

static void end_error(tgu_call_t *a, int status, const json_t *reply)
{
    char why[512];
    tgu_reason(status, reply, why, sizeof why);
    a->cb(a->data, status, NULL, why);
    call_free(a);
}

static void replied(void *data, int status, json_t *reply)
{
    tgu_call_t *a = data;
    if (status == 0) {
        a->next(a, reply);
    } else if (a->failed) {
        a->status = status;
        a->failed(a, reply);
    } else {
        end_error(a, status, reply);
    }
}

/* The next request (stolen) of a verb under way; its answer goes to next
 * (a request TDLib did not take fails as an answer would). */
static void ask(tgu_call_t *a, json_t *rq, tgu_step_fn next)
{
    a->next = next;
    int rc = rq ? tgu__account_send(a->acc, rq, replied, a) : UV_ENOMEM;
    if (rc != 0)
        replied(a, rc, NULL);
}

/* A verb on the default account; NULL with *rc when there is none. */
static tgu_call_t *call_new(void *impl, int64_t chat, connector_cb cb, void *data, int *rc)
{
    tgu_account_t *acc = tgu__default(impl);
    tgu_call_t *a = acc ? calloc(1, sizeof *a) : NULL;
    *rc = acc == NULL ? UV_ENOTCONN : a == NULL ? UV_ENOMEM : 0;
    if (a)
        *a = (tgu_call_t){.acc = acc, .chat = chat, .cb = cb, .data = data};
    return a;
}

/* The verb's first request (stolen): 0, or the code (a freed, no call
 * back). */
static int start(tgu_call_t *a, json_t *rq, tgu_step_fn next)
{
    a->next = next;
    int rc = rq ? tgu__account_send(a->acc, rq, replied, a) : UV_ENOMEM;
    if (rc != 0)
        call_free(a);
    return rc;
}

static json_t *rq_chat(const char *method, int64_t chat)
{
    return json_pack("{s:s, s:I}", "@type", method, "chat_id", (json_int_t)chat);
}

/* ---- TDLib's objects in the Bot API's shapes ----------------------------------------- */

/* "private", "group", "supergroup" or "channel" of TDLib's chat type. */
static const char *bot_type(const json_t *type)
{
    const char *t = type_of(type);
    if (strcmp(t, "chatTypeBasicGroup") == 0)
        return "group";
    if (strcmp(t, "chatTypeSupergroup") == 0)
        return json_is_true(json_object_get(type, "is_channel")) ? "channel" : "supergroup";
    return "private";
}

static const char *first_username(const json_t *o)
{
    return json_string_value(
        json_array_get(json_object_get(json_object_get(o, "usernames"), "active_usernames"), 0));
}

/* A Bot API Chat {"id", "type", "title"} of TDLib's chat (a private
 * chat's names come from its user). */
static json_t *bot_chat(const json_t *chat)
{
    const char *type = bot_type(json_object_get(chat, "type"));
    json_t *o = json_pack("{s:I, s:s}", "id", int_of(chat, "id"), "type", type);
    if (o && strcmp(type, "private") != 0)
        json_object_set_new(o, "title", json_string(str_of(chat, "title")));
    return o;
}

/* A Bot API User of TDLib's user (NULL: only the id is known). */
static json_t *bot_user(json_int_t id, const json_t *user)
{
    json_t *o = json_pack("{s:I, s:b}", "id", id, "is_bot",
                          strcmp(type_of(json_object_get(user, "type")), "userTypeBot") == 0);
    if (o == NULL || user == NULL)
        return o;
    json_object_set_new(o, "first_name", json_string(str_of(user, "first_name")));
    if (str_of(user, "last_name")[0])
        json_object_set_new(o, "last_name", json_string(str_of(user, "last_name")));
    if (first_username(user))
        json_object_set_new(o, "username", json_string(first_username(user)));
    return o;
}

/* A Bot API ChatMember of TDLib's chatAdministrator and its user. */
static json_t *bot_admin(const json_t *ta, const json_t *user)
{
    json_t *o =
        json_pack("{s:s, s:o, s:b}", "status",
                  json_is_true(json_object_get(ta, "is_owner")) ? "creator" : "administrator",
                  "user", bot_user(int_of(ta, "user_id"), user), "can_be_edited",
                  json_is_true(json_object_get(ta, "can_be_edited")));
    if (o && str_of(ta, "custom_title")[0])
        json_object_set_new(o, "custom_title", json_string(str_of(ta, "custom_title")));
    return o;
}

/* ---- chat_info ------------------------------------------------------------------------ */

static void info_end(tgu_call_t *a)
{
    json_t *out = a->out;
    a->out = NULL;
    if (a->bchat && (a->parts & CONNECTOR_INFO_CHAT))
        json_object_set(out, "chat", a->bchat);
    end_json(a, out);
}

/* A part failed: what was gathered, and which part failed and why. */
static void info_failed(tgu_call_t *a, json_t *reply)
{
    char why[512];
    tgu_reason(a->status, reply, why, sizeof why);
    json_object_set_new(a->out, "failed", json_pack("{s:s, s:s}", "part", a->part, "error", why));
    info_end(a);
}

static void admins_next(tgu_call_t *a);

static void admin_user(tgu_call_t *a, json_t *user)
{
    json_array_append_new(a->admins, bot_admin(json_array_get(a->tadmins, a->i), user));
    a->i++;
    admins_next(a);
}

/* An administrator's user TDLib does not give: the id alone. */
static void admin_user_failed(tgu_call_t *a, json_t *reply)
{
    (void)reply;
    admin_user(a, NULL);
}

static void admins_next(tgu_call_t *a)
{
    while (a->i < json_array_size(a->tadmins) && a->i >= TGU_ADMIN_USERS_MAX) {
        json_array_append_new(a->admins, bot_admin(json_array_get(a->tadmins, a->i), NULL));
        a->i++;
    }
    if (a->i >= json_array_size(a->tadmins)) {
        json_object_set(a->out, "administrators", a->admins);
        info_end(a);
        return;
    }
    a->failed = admin_user_failed;
    ask(a,
        json_pack("{s:s, s:I}", "@type", "getUser", "user_id",
                  int_of(json_array_get(a->tadmins, a->i), "user_id")),
        admin_user);
}

static void info_admins_got(tgu_call_t *a, json_t *reply)
{
    a->tadmins = json_incref(json_object_get(reply, "administrators"));
    a->admins = json_array();
    a->i = 0;
    admins_next(a);
}

static void info_admins(tgu_call_t *a)
{
    if (!(a->parts & CONNECTOR_INFO_ADMINS)) {
        info_end(a);
        return;
    }
    a->part = "administrators";
    ask(a, rq_chat("getChatAdministrators", a->chat), info_admins_got);
}

static void set_description(tgu_call_t *a, const json_t *full)
{
    if (str_of(full, "description")[0])
        json_object_set_new(a->bchat, "description", json_string(str_of(full, "description")));
}

static void info_basic_full(tgu_call_t *a, json_t *full)
{
    set_description(a, full);
    if (a->parts & CONNECTOR_INFO_MEMBER_COUNT)
        json_object_set_new(
            a->out, "memberCount",
            json_integer((json_int_t)json_array_size(json_object_get(full, "members"))));
    info_admins(a);
}

static void info_super_full(tgu_call_t *a, json_t *full)
{
    set_description(a, full);
    if ((a->parts & CONNECTOR_INFO_MEMBER_COUNT) && int_of(full, "member_count") > 0)
        json_object_set_new(a->out, "memberCount", json_integer(int_of(full, "member_count")));
    info_admins(a);
}

static void info_supergroup(tgu_call_t *a, json_t *sg)
{
    if (first_username(sg))
        json_object_set_new(a->bchat, "username", json_string(first_username(sg)));
    if (json_is_true(json_object_get(sg, "is_forum")))
        json_object_set_new(a->bchat, "is_forum", json_true());
    /* The full info's count is the exact one; this one stands in if only
     * the full info fails. */
    if (a->parts & CONNECTOR_INFO_MEMBER_COUNT)
        json_object_set_new(a->out, "memberCount", json_integer(int_of(sg, "member_count")));
    a->part = a->parts & CONNECTOR_INFO_MEMBER_COUNT ? "memberCount" : "chat";
    ask(a,
        json_pack("{s:s, s:I}", "@type", "getSupergroupFullInfo", "supergroup_id",
                  int_of(a->ttype, "supergroup_id")),
        info_super_full);
}

static void info_user(tgu_call_t *a, json_t *user)
{
    json_t *u = bot_user(int_of(user, "id"), user);
    json_object_del(u, "id");
    json_object_del(u, "is_bot");
    json_object_update(a->bchat, u);
    json_decref(u);
    info_admins(a);
}

static void info_chat(tgu_call_t *a, json_t *chat)
{
    a->bchat = bot_chat(chat);
    json_t *type = json_object_get(chat, "type");
    const char *t = type_of(type);
    bool want_full = (a->parts & (CONNECTOR_INFO_CHAT | CONNECTOR_INFO_MEMBER_COUNT)) != 0;
    if (strcmp(t, "chatTypeBasicGroup") == 0 && want_full) {
        a->part = a->parts & CONNECTOR_INFO_MEMBER_COUNT ? "memberCount" : "chat";
        ask(a,
            json_pack("{s:s, s:I}", "@type", "getBasicGroupFullInfo", "basic_group_id",
                      int_of(type, "basic_group_id")),
            info_basic_full);
    } else if (strcmp(t, "chatTypeSupergroup") == 0 && want_full) {
        a->ttype = json_incref(type); /* for the full info's supergroup_id */
        ask(a,
            json_pack("{s:s, s:I}", "@type", "getSupergroup", "supergroup_id",
                      int_of(type, "supergroup_id")),
            info_supergroup);
    } else if ((strcmp(t, "chatTypePrivate") == 0 || strcmp(t, "chatTypeSecret") == 0) &&
               (a->parts & CONNECTOR_INFO_CHAT)) {
        ask(a, json_pack("{s:s, s:I}", "@type", "getUser", "user_id", int_of(type, "user_id")),
            info_user);
    } else {
        info_admins(a);
    }
}

int tgu__chat_info(void *impl, int64_t chat, unsigned parts, connector_cb cb, void *data)
{
    int rc;
    tgu_call_t *a = call_new(impl, chat, cb, data, &rc);
    if (a == NULL)
        return rc;
    a->parts = parts;
    a->part = "chat";
    a->failed = info_failed;
    a->out = json_object();
    return start(a, rq_chat("getChat", chat), info_chat);
}

/* ---- rename, leave, invite links ----------------------------------------------------- */

static void answered_out(tgu_call_t *a, json_t *reply)
{
    (void)reply;
    json_t *out = a->out;
    a->out = NULL;
    end_json(a, out);
}

int tgu__rename(void *impl, int64_t chat, const char *title, connector_cb cb, void *data)
{
    int rc;
    tgu_call_t *a = call_new(impl, chat, cb, data, &rc);
    if (a == NULL)
        return rc;
    a->out = json_pack("{s:s}", "title", title ? title : "");
    json_t *rq = rq_chat("setChatTitle", chat);
    json_object_set_new(rq, "title", json_string(title ? title : ""));
    return start(a, rq, answered_out);
}

int tgu__leave(void *impl, int64_t chat, connector_cb cb, void *data)
{
    int rc;
    tgu_call_t *a = call_new(impl, chat, cb, data, &rc);
    if (a == NULL)
        return rc;
    a->out = json_true();
    return start(a, rq_chat("leaveChat", chat), answered_out);
}

static void link_got(tgu_call_t *a, json_t *link)
{
    end_json(a, json_string(str_of(link, "invite_link")));
}

static void link_replace(tgu_call_t *a)
{
    ask(a, rq_chat("replacePrimaryChatInviteLink", a->chat), link_got);
}

/* The chat's full info: its primary link, if it has one. */
static void link_full(tgu_call_t *a, json_t *full)
{
    const char *link = str_of(json_object_get(full, "invite_link"), "invite_link");
    if (link[0])
        end_json(a, json_string(link));
    else
        link_replace(a);
}

static void link_chat(tgu_call_t *a, json_t *chat)
{
    json_t *type = json_object_get(chat, "type");
    const char *t = type_of(type);
    if (strcmp(t, "chatTypeBasicGroup") == 0)
        ask(a,
            json_pack("{s:s, s:I}", "@type", "getBasicGroupFullInfo", "basic_group_id",
                      int_of(type, "basic_group_id")),
            link_full);
    else if (strcmp(t, "chatTypeSupergroup") == 0)
        ask(a,
            json_pack("{s:s, s:I}", "@type", "getSupergroupFullInfo", "supergroup_id",
                      int_of(type, "supergroup_id")),
            link_full);
    else {
        a->cb(a->data, UV_EINVAL, NULL, "a private chat has no invite link");
        call_free(a);
    }
}

/* The chat's primary link as it is (a user account can read it, the Bot
 * API cannot); revoke, or a chat without one: a new primary link. */
int tgu__invite_link(void *impl, int64_t chat, bool revoke, connector_cb cb, void *data)
{
    int rc;
    tgu_call_t *a = call_new(impl, chat, cb, data, &rc);
    if (a == NULL)
        return rc;
    if (revoke)
        return start(a, rq_chat("replacePrimaryChatInviteLink", chat), link_got);
    return start(a, rq_chat("getChat", chat), link_chat);
}

/* ---- remove_member: a ban, then (supergroups, channels) the unban ------------------- */

static json_t *member_of(int64_t user)
{
    return json_pack("{s:s, s:I}", "@type", "messageSenderUser", "user_id", (json_int_t)user);
}

static void removed(tgu_call_t *a, json_t *reply)
{
    (void)reply;
    end_json(a, json_true());
}

/* The ban held and the unban failed: the user is out, and banned. */
static void unban_failed(tgu_call_t *a, json_t *reply)
{
    char why[512], text[700];
    tgu_reason(a->status, reply, why, sizeof why);
    snprintf(text, sizeof text,
             "the user was removed but stays banned (cannot join again until unbanned), as the "
             "unban failed: %s",
             why);
    a->cb(a->data, a->status, NULL, text);
    call_free(a);
}

static void remove_banned(tgu_call_t *a, json_t *reply)
{
    (void)reply;
    if (!a->revoke) { /* a basic group: the ban removed the user, and keeps no list */
        removed(a, NULL);
        return;
    }
    json_t *rq = rq_chat("setChatMemberStatus", a->chat);
    json_object_set_new(rq, "member_id", member_of(a->user));
    json_object_set_new(rq, "status", json_pack("{s:s}", "@type", "chatMemberStatusLeft"));
    a->failed = unban_failed;
    ask(a, rq, removed);
}

static void remove_chat(tgu_call_t *a, json_t *chat)
{
    const char *t = type_of(json_object_get(chat, "type"));
    if (strcmp(t, "chatTypeBasicGroup") != 0 && strcmp(t, "chatTypeSupergroup") != 0) {
        a->cb(a->data, UV_EINVAL, NULL, "members can be removed only from groups and channels");
        call_free(a);
        return;
    }
    a->revoke = strcmp(t, "chatTypeSupergroup") == 0; /* unban after the ban */
    json_t *rq = rq_chat("banChatMember", a->chat);
    json_object_set_new(rq, "member_id", member_of(a->user));
    json_object_set_new(rq, "banned_until_date", json_integer(0));
    json_object_set_new(rq, "revoke_messages", json_false());
    ask(a, rq, remove_banned);
}

int tgu__remove_member(void *impl, int64_t chat, int64_t user, connector_cb cb, void *data)
{
    int rc;
    tgu_call_t *a = call_new(impl, chat, cb, data, &rc);
    if (a == NULL)
        return rc;
    a->user = user;
    return start(a, rq_chat("getChat", chat), remove_chat);
}

/* ---- join: by invite link or by username --------------------------------------------- */

/* s without a leading prefix (any case) when it has it, else NULL. */
static const char *after(const char *s, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncasecmp(s, prefix, n) == 0 ? s + n : NULL;
}

/* The invite's kind: 1 an invite link (link: https://t.me/+HASH), 2 a
 * username (name), 0 neither. */
static int parse_invite(const char *in, char *link, size_t lcap, char *name, size_t ncap)
{
    while (isspace((unsigned char)*in))
        in++;
    const char *p, *hash = NULL;
    if ((p = after(in, "tg://join?invite=")) != NULL) {
        hash = p;
    } else {
        p = in;
        const char *q;
        if ((q = after(p, "https://")) || (q = after(p, "http://")))
            p = q;
        if ((q = after(p, "www.")))
            p = q;
        if ((q = after(p, "t.me/")) || (q = after(p, "telegram.me/")) ||
            (q = after(p, "telegram.dog/")))
            p = q;
        else if (p != in)
            return 0; /* a URL elsewhere */
        if (p[0] == '+')
            hash = p + 1;
        else if ((q = after(p, "joinchat/")))
            hash = q;
    }
    size_t n = 0;
    if (hash) {
        while (hash[n] && (isalnum((unsigned char)hash[n]) || hash[n] == '_' || hash[n] == '-'))
            n++;
        if (n == 0 || n + 16 > lcap)
            return 0;
        snprintf(link, lcap, "https://t.me/+%.*s", (int)n, hash);
        return 1;
    }
    if (p[0] == '@')
        p++;
    while (p[n] && (isalnum((unsigned char)p[n]) || p[n] == '_'))
        n++;
    if (n < 4 || n > 32 || n >= ncap ||
        (p[n] && p[n] != '/' && p[n] != '?' && !isspace((unsigned char)p[n])))
        return 0;
    snprintf(name, ncap, "%.*s", (int)n, p);
    return 2;
}

static void joined_chat(tgu_call_t *a, json_t *chat)
{
    json_t *c = bot_chat(chat);
    if (c && a->username[0])
        json_object_set_new(c, "username", json_string(a->username));
    end_json(a, json_pack("{s:s, s:o}", "status", "joined", "chat", c));
}

/* joinChat's or joinChatByInviteLink's answer: a ChatJoinResult (TDLib
 * 1.8.67), or ok / the chat (earlier versions). */
static void join_result(tgu_call_t *a, json_t *reply)
{
    const char *t = type_of(reply);
    if (strcmp(t, "chat") == 0) {
        joined_chat(a, reply);
    } else if (strcmp(t, "chatJoinResultSuccess") == 0 || strcmp(t, "ok") == 0) {
        if (strcmp(t, "ok") != 0)
            a->chat = int_of(reply, "chat_id");
        ask(a, rq_chat("getChat", a->chat), joined_chat);
    } else if (strcmp(t, "chatJoinResultRequestSent") == 0) {
        end_json(a, json_pack("{s:s}", "status", "requested"));
    } else {
        a->cb(a->data, UV_EACCES, NULL,
              strcmp(t, "chatJoinResultDeclined") == 0
                  ? "the chat's guard bot declined the account's request to join"
                  : "the chat's guard bot must approve joining: open the invite in a Telegram "
                    "app");
        call_free(a);
    }
}

static void join_found(tgu_call_t *a, json_t *chat)
{
    a->chat = int_of(chat, "id");
    ask(a, rq_chat("joinChat", a->chat), join_result);
}

/* UV_EINVAL (no call back) when invite is neither an invite link nor a
 * username. */
int tgu__join(void *impl, const char *invite, connector_cb cb, void *data)
{
    char link[TGU_INVITE_MAX + 32], name[TGU_INVITE_MAX];
    int kind = invite ? parse_invite(invite, link, sizeof link, name, sizeof name) : 0;
    if (kind == 0)
        return UV_EINVAL;
    int rc;
    tgu_call_t *a = call_new(impl, 0, cb, data, &rc);
    if (a == NULL)
        return rc;
    if (kind == 1)
        return start(a,
                     json_pack("{s:s, s:s}", "@type", "joinChatByInviteLink", "invite_link", link),
                     join_result);
    snprintf(a->username, sizeof a->username, "%s", name);
    return start(a, json_pack("{s:s, s:s}", "@type", "searchPublicChat", "username", name),
                 join_found);
}

/* ---- add_members: one addChatMember per user ------------------------------------------ */

static void add_next(tgu_call_t *a);

static void add_fail(tgu_call_t *a, const char *why)
{
    json_array_append_new(
        json_object_get(a->out, "failed"),
        json_pack("{s:I, s:s}", "userId", (json_int_t)a->users[a->i], "error", why));
    a->i++;
    add_next(a);
}

static void add_failed(tgu_call_t *a, json_t *reply)
{
    char why[512];
    tgu_reason(a->status, reply, why, sizeof why);
    add_fail(a, why);
}

/* ok (TDLib before 1.8.4x) or failedToAddMembers: empty when added. */
static void add_done(tgu_call_t *a, json_t *reply)
{
    json_t *f = json_array_get(json_object_get(reply, "failed_to_add_members"), 0);
    if (f != NULL) {
        add_fail(a, json_is_true(json_object_get(f, "premium_would_allow_invite"))
                        ? "the user's privacy settings allow only Telegram Premium users to add "
                          "them; send them an invite link instead"
                        : "the user's privacy settings do not allow adding them to groups; send "
                          "them an invite link instead");
        return;
    }
    json_array_append_new(json_object_get(a->out, "added"),
                          json_integer((json_int_t)a->users[a->i]));
    a->i++;
    add_next(a);
}

static json_t *rq_add(tgu_call_t *a)
{
    json_t *rq = rq_chat("addChatMember", a->chat);
    json_object_set_new(rq, "user_id", json_integer((json_int_t)a->users[a->i]));
    json_object_set_new(rq, "forward_limit", json_integer(TGU_ADD_FORWARD_LIMIT));
    return rq;
}

static void add_next(tgu_call_t *a)
{
    if (a->i >= a->n) {
        json_t *out = a->out;
        a->out = NULL;
        end_json(a, out);
        return;
    }
    ask(a, rq_add(a), add_done);
}

int tgu__add_members(void *impl, int64_t chat, const int64_t *users, size_t n, connector_cb cb,
                     void *data)
{
    if (n == 0 || n > TGU_ADD_MEMBERS_MAX)
        return UV_EINVAL;
    int rc;
    tgu_call_t *a = call_new(impl, chat, cb, data, &rc);
    if (a == NULL)
        return rc;
    a->users = malloc(n * sizeof *users);
    a->out = json_pack("{s:[], s:[]}", "added", "failed");
    if (a->users == NULL || a->out == NULL) {
        call_free(a);
        return UV_ENOMEM;
    }
    memcpy(a->users, users, n * sizeof *users);
    a->n = n;
    a->failed = add_failed;
    return start(a, rq_add(a), add_done);
}
