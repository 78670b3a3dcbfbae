/* join: the telegram tools that need what a bot account lacks (see
 * tg_toolset.h): groupsJoin (CONNECTOR_CAN_JOIN_CHATS: joins by invite
 * link or username) and groupsMembersAdd (CONNECTOR_CAN_ADD_MEMBERS: adds
 * the users the archive resolved). live.c's tg_ts_group_admin has checked
 * the capability before either runs. */
#include <stdlib.h>
#include <string.h>

#include "toolsets/telegram/tg_toolset.h"

/* ---- groupsJoin ---------------------------------------------------------------------- */

static void joined(void *data, int status, const char *json, const char *error)
{
    mcp_call_t *c = data;
    if (status != 0) {
        tg_ts_connector_failed(c, status, error);
        return;
    }
    json_error_t je;
    json_t *r = json_loads(json, 0, &je);
    json_t *chat = json_object_get(r, "chat");
    json_t *out;
    if (chat == NULL) /* an admin has to approve the request */
        out = json_pack("{s:b, s:b, s:O}", "joined", 0, "requested", 1, "invite",
                        json_object_get(c->args, "invite"));
    else
        out = json_pack("{s:O, s:O, s:s, s:b}", "channelId", json_object_get(chat, "id"), "type",
                        json_object_get(chat, "type"), "title",
                        json_string_value(json_object_get(chat, "title"))
                            ?: json_string_value(json_object_get(chat, "first_name")) ?: "",
                        "joined", 1);
    if (out && json_string_value(json_object_get(chat, "username")))
        json_object_set(out, "username", json_object_get(chat, "username"));
    json_decref(r);
    tg_ts_finish_obj(c, out);
}

void tg_ts_join(mcp_call_t *c)
{
    connector_t *conn = tg_ts_conn(tg_ts(c), CONNECTOR_CAN_JOIN_CHATS);
    int rc = connector_join(conn, json_string_value(json_object_get(c->args, "invite")), joined, c);
    if (rc == UV_EINVAL)
        mcp_call_finish_error(c, "invite: give an invite link (https://t.me/+HASH or "
                                 "t.me/joinchat/HASH) or a public chat's username (@name or "
                                 "t.me/name)");
    else if (rc != 0)
        tg_ts_connector_failed(c, rc, NULL);
}

/* ---- groupsMembersAdd ------------------------------------------------------------------- */

static void added(void *data, int status, const char *json, const char *error)
{
    mcp_call_t *c;
    json_int_t chat;
    if (!tg_ts_chat_verb_end(data, status, error, &c, &chat))
        return;
    json_error_t je;
    json_t *r = json_loads(json, 0, &je);
    json_t *ok = json_object_get(r, "added"), *failed = json_object_get(r, "failed");
    tg_ts_finish_obj(c, json_pack("{s:I, s:o, s:o}", "channelId", chat, "added",
                                  ok ? json_incref(ok) : json_array(), "failed",
                                  failed ? json_incref(failed) : json_array()));
    json_decref(r);
}

void tg_ts_members_add(mcp_call_t *c, json_t *answer, void *arg)
{
    (void)arg;
    json_t *ids = json_object_get(answer, "userIds");
    size_t n = json_array_size(ids);
    int64_t *users = n ? calloc(n, sizeof *users) : NULL;
    tg_chat_verb_t *ad =
        tg_ts_chat_verb_new(c, json_integer_value(json_object_get(answer, "channelId")));
    if (users == NULL || ad == NULL) {
        free(users);
        free(ad);
        tg_ts_connector_failed(c, n ? UV_ENOMEM : UV_EINVAL, "userIds: give at least one user");
        return;
    }
    for (size_t i = 0; i < n; i++)
        users[i] = json_integer_value(json_array_get(ids, i));
    int rc = connector_add_members(tg_ts_conn_for(tg_ts(c), CONNECTOR_CAN_ADD_MEMBERS, answer),
                                   ad->chat, users, n, added, ad);
    free(users);
    if (rc != 0) {
        free(ad);
        tg_ts_connector_failed(c, rc,
                               rc == UV_EINVAL ? "userIds: give between 1 and 200 users" : NULL);
    }
}
