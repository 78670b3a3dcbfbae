/* fake_tdjson_chats: the chats and messages of fake_tdjson (see
 * fake_tdjson.c for the library, its script and its login): the chat
 * records built from the script, the chat and message objects, the
 * updates applied to them, the chat, history, search and sending methods,
 * the `live` and `inbox` updates, and the text entities td_execute
 * finds. Everything here runs under the library's mutex.
 *
 * Behaviour worth knowing (see also tests/unit/test_fake_tdjson.c):
 * - getChatHistory: newest first; from_message_id 0 means the newest
 *   message, otherwise the page starts AT from_message_id (inclusive with
 *   offset 0, as TDLib documents: "Specify 0 to get results from exactly the
 *   message from_message_id"), so paging with the oldest id seen returns
 *   that message again: at the chat's start a page has no new id. A
 *   negative offset adds newer messages. The first call from the newest
 *   message of each chat returns one message; later ones
 *   min(limit, history_page_max). total_count is the page's length.
 * - searchChatMessages pages the same way; its next_from_message_id is the
 *   next match not returned (pass it back: no duplicate), 0 at the end.
 *   searchMessages: next_offset is "" at the end, else an opaque string to
 *   pass back; min_date and max_date (not 0) bound the messages' dates.
 * - sendMessage answers a pending message with a temporary id
 *   ((final server id - 1) << 20) + 1, sends updateNewMessage with it, and
 *   50 ms later updateMessageSendSucceeded {message (final id), old_message_id}
 *   which appends the message to the chat's history. A pending message is
 *   not part of the history.
 * - sendMessage also sends inputMessageDocument (fake_tdjson_files.c).
 * - Updates sent from `live`, the inbox or by the fake itself are applied
 *   first: updateNewMessage, updateMessageSendSucceeded,
 *   updateMessageContent, updateMessageEdited, updateDeleteMessages (only
 *   with is_permanent), updateChatTitle.
 */
#include "fake_tdjson_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static json_t *sender_user(json_int_t uid)
{
    return json_pack("{s:s,s:I}", "@type", "messageSenderUser", "user_id", uid);
}

static json_t *sender_chat(json_int_t cid)
{
    return json_pack("{s:s,s:I}", "@type", "messageSenderChat", "chat_id", cid);
}

/* A messageText message; sender stolen. */
static json_t *message_object(json_int_t chat_id, json_int_t id, json_t *sender, bool outgoing,
                              json_int_t date, const char *text)
{
    return json_pack("{s:s,s:I,s:I,s:o,s:b,s:I,s:i,s:n,s:i,s:{s:s,s:{s:s,s:s,s:[]}}}", "@type",
                     "message", "id", id, "chat_id", chat_id, "sender_id", sender, "is_outgoing",
                     outgoing, "date", date, "edit_date", 0, "reply_to", "message_thread_id", 0,
                     "content", "@type", "messageText", "text", "@type", "formattedText", "text",
                     text, "entities");
}

static json_int_t msg_id(json_t *m)
{
    return json_integer_value(json_object_get(m, "id"));
}

/* Inserts m (stolen) into the ascending msgs array, replacing an equal id. */
static void msgs_insert(json_t *msgs, json_t *m)
{
    json_int_t id = msg_id(m);
    size_t i = json_array_size(msgs);
    while (i > 0 && msg_id(json_array_get(msgs, i - 1)) > id)
        i--;
    if (i > 0 && msg_id(json_array_get(msgs, i - 1)) == id)
        json_array_set_new(msgs, i - 1, m);
    else
        json_array_insert_new(msgs, i, m);
}

static long msgs_index(json_t *msgs, json_int_t id)
{
    size_t lo = 0, hi = json_array_size(msgs);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        json_int_t v = msg_id(json_array_get(msgs, mid));
        if (v == id)
            return (long)mid;
        if (v < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static const char *chat_kind(json_t *rec)
{
    return fake__str_of(rec, "type");
}

json_t *fake__chats_build(void)
{
    json_t *out = json_array();
    json_int_t start = fake__script_int("start_date", FAKE_DEFAULT_START_DATE);
    size_t i;
    json_t *ch;
    json_array_foreach(json_object_get(fake__script, "chats"), i, ch)
    {
        json_t *rec = json_deep_copy(ch);
        json_t *msgs = json_array();
        json_int_t id = json_integer_value(json_object_get(ch, "id"));
        const char *kind = chat_kind(ch);
        json_t *senders = json_object_get(ch, "senders");
        json_int_t n = json_integer_value(json_object_get(ch, "messages"));
        char text[512];
        for (json_int_t k = 1; k <= n; k++) {
            json_t *sender;
            json_int_t uid = 0;
            if (json_array_size(senders) > 0)
                uid = json_integer_value(
                    json_array_get(senders, (size_t)(k - 1) % json_array_size(senders)));
            else if (!strcmp(kind, "private"))
                uid = json_integer_value(json_object_get(ch, "user_id"));
            else if (strcmp(kind, "channel"))
                uid = fake__me_id();
            sender = uid ? sender_user(uid) : sender_chat(id);
            snprintf(text, sizeof text, "%s message %lld", fake__str_of(ch, "title"), (long long)k);
            json_array_append_new(msgs, message_object(id, k << FAKE_ID_SHIFT, sender,
                                                       uid && uid == fake__me_id(), start + k * 60,
                                                       text));
        }
        size_t j;
        json_t *m;
        json_array_foreach(json_object_get(ch, "history"), j, m)
        {
            json_t *c = json_deep_copy(m);
            if (!json_object_get(c, "chat_id"))
                json_object_set_new(c, "chat_id", json_integer(id));
            msgs_insert(msgs, c);
        }
        json_object_set_new(rec, "msgs", msgs);
        json_object_del(rec, "history");
        json_object_set_new(rec, "reserved", json_integer(0));
        json_object_set_new(rec, "newest_served", json_false());
        json_array_append_new(out, rec);
    }
    return out;
}

static json_t *chat_find(fake_client_t *c, json_int_t id)
{
    size_t i;
    json_t *rec;
    json_array_foreach(c->chats, i, rec)
    {
        if (json_integer_value(json_object_get(rec, "id")) == id)
            return rec;
    }
    return NULL;
}

static json_int_t supergroup_id(json_t *rec)
{
    return -(json_integer_value(json_object_get(rec, "id")) + FAKE_SUPERGROUP_BASE);
}

static json_t *chat_object(fake_client_t *c, json_t *rec)
{
    json_int_t id = json_integer_value(json_object_get(rec, "id"));
    const char *kind = chat_kind(rec);
    json_t *type;
    if (!strcmp(kind, "private"))
        type = json_pack("{s:s,s:I}", "@type", "chatTypePrivate", "user_id",
                         json_integer_value(json_object_get(rec, "user_id")));
    else if (!strcmp(kind, "basic_group"))
        type = json_pack("{s:s,s:I}", "@type", "chatTypeBasicGroup", "basic_group_id", -id);
    else
        type = json_pack("{s:s,s:I,s:b}", "@type", "chatTypeSupergroup", "supergroup_id",
                         supergroup_id(rec), "is_channel", !strcmp(kind, "channel"));
    size_t pos = 0, n = json_array_size(c->chats);
    while (pos < n && json_array_get(c->chats, pos) != rec)
        pos++;
    char order[32];
    snprintf(order, sizeof order, "%zu", (n - pos) * 1000);
    json_t *o = json_pack("{s:s,s:I,s:o,s:s,s:[{s:s,s:{s:s},s:s,s:b}],s:i,s:i,s:i}", "@type",
                          "chat", "id", id, "type", type, "title", fake__str_of(rec, "title"),
                          "positions", "@type", "chatPosition", "list", "@type", "chatListMain",
                          "order", order, "is_pinned", 0, "unread_count", 0,
                          "last_read_inbox_message_id", 0, "last_read_outbox_message_id", 0);
    json_t *msgs = json_object_get(rec, "msgs");
    if (json_array_size(msgs) > 0)
        json_object_set_new(o, "last_message",
                            json_deep_copy(json_array_get(msgs, json_array_size(msgs) - 1)));
    return o;
}

static json_int_t member_count(json_t *rec)
{
    json_t *v = json_object_get(rec, "member_count");
    if (json_is_integer(v))
        return json_integer_value(v);
    size_t n = json_array_size(json_object_get(rec, "senders"));
    return n > 0 ? (json_int_t)n : 1;
}

/* ---- applying updates ---- */

void fake__apply_update(fake_client_t *c, json_t *u)
{
    const char *t = fake__str_of(u, "@type");
    json_t *rec;
    if (!strcmp(t, "updateNewMessage") || !strcmp(t, "updateMessageSendSucceeded")) {
        json_t *m = json_object_get(u, "message");
        json_t *ss = json_object_get(m, "sending_state");
        if (ss && !json_is_null(ss))
            return;
        rec = chat_find(c, json_integer_value(json_object_get(m, "chat_id")));
        if (!rec)
            return;
        json_t *msgs = json_object_get(rec, "msgs");
        long old = msgs_index(msgs, json_integer_value(json_object_get(u, "old_message_id")));
        if (old >= 0)
            json_array_remove(msgs, (size_t)old);
        msgs_insert(msgs, json_deep_copy(m));
        return;
    }
    rec = chat_find(c, json_integer_value(json_object_get(u, "chat_id")));
    if (!rec)
        return;
    json_t *msgs = json_object_get(rec, "msgs");
    if (!strcmp(t, "updateMessageContent") || !strcmp(t, "updateMessageEdited")) {
        long i = msgs_index(msgs, json_integer_value(json_object_get(u, "message_id")));
        if (i < 0)
            return;
        json_t *m = json_array_get(msgs, (size_t)i);
        if (t[13] == 'C')
            json_object_set_new(m, "content", json_deep_copy(json_object_get(u, "new_content")));
        else
            json_object_set_new(m, "edit_date",
                                json_integer(json_integer_value(json_object_get(u, "edit_date"))));
    } else if (!strcmp(t, "updateDeleteMessages")) {
        if (!json_is_true(json_object_get(u, "is_permanent")))
            return;
        size_t k;
        json_t *id;
        json_array_foreach(json_object_get(u, "message_ids"), k, id)
        {
            long i = msgs_index(msgs, json_integer_value(id));
            if (i >= 0)
                json_array_remove(msgs, (size_t)i);
        }
    } else if (!strcmp(t, "updateChatTitle")) {
        json_object_set_new(rec, "title", json_string(fake__str_of(u, "title")));
    }
}

/* A chat with "public": true in the script is one the account has not
 * joined: not in its chat list (loadChats, getChats, searchChatsOnServer,
 * searchMessages), found by searchPublicChats (which finds chats with a
 * username). */
static bool is_public_only(json_t *rec)
{
    return json_is_true(json_object_get(rec, "public"));
}

static void h_load_chats(fake_client_t *c, json_t *req, json_t *extra)
{
    json_int_t limit = json_integer_value(json_object_get(req, "limit"));
    const char *list = fake__str_of(json_object_get(req, "chat_list"), "@type");
    if (limit <= 0) {
        fake__answer_error(c, extra, 400, "Parameter limit must be positive");
        return;
    }
    size_t n = json_array_size(c->chats);
    if ((*list && strcmp(list, "chatListMain") != 0) || c->chats_sent >= n) {
        fake__answer_error(c, extra, 404, "Not Found");
        return;
    }
    json_int_t k = fake__script_int("load_chats_per_call", FAKE_DEFAULT_PER_CALL);
    if (k > limit)
        k = limit;
    if (k < 1)
        k = 1;
    while (k > 0 && c->chats_sent < n) {
        json_t *rec = json_array_get(c->chats, c->chats_sent++);
        if (is_public_only(rec))
            continue;
        fake__update(c,
                     json_pack("{s:s,s:o}", "@type", "updateNewChat", "chat", chat_object(c, rec)));
        k--;
    }
    fake__answer_ok(c, extra);
}

static json_t *chats_answer(json_t *ids, json_int_t total)
{
    return json_pack("{s:s,s:I,s:o}", "@type", "chats", "total_count", total, "chat_ids", ids);
}

static void h_get_chats(fake_client_t *c, json_t *req, json_t *extra)
{
    json_int_t limit = json_integer_value(json_object_get(req, "limit"));
    json_t *ids = json_array();
    size_t i;
    json_t *rec;
    json_array_foreach(c->chats, i, rec)
    {
        if ((json_int_t)i < limit && !is_public_only(rec))
            json_array_append(ids, json_object_get(rec, "id"));
    }
    fake__answer(c, extra, chats_answer(ids, (json_int_t)json_array_size(c->chats)));
}

static json_t *chat_or_error(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_find(c, json_integer_value(json_object_get(req, "chat_id")));
    if (!rec)
        fake__answer_error(c, extra, 400, "Chat not found");
    return rec;
}

static void h_get_chat(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_or_error(c, req, extra);
    if (rec)
        fake__answer(c, extra, chat_object(c, rec));
}

static void h_get_supergroup(fake_client_t *c, json_t *req, json_t *extra)
{
    json_int_t sg = json_integer_value(json_object_get(req, "supergroup_id"));
    size_t i;
    json_t *rec;
    json_array_foreach(c->chats, i, rec)
    {
        const char *kind = chat_kind(rec);
        if ((strcmp(kind, "supergroup") && strcmp(kind, "channel")) || supergroup_id(rec) != sg)
            continue;
        json_t *o =
            json_pack("{s:s,s:I,s:i,s:{s:s},s:I,s:b}", "@type", "supergroup", "id", sg, "date", 0,
                      "status", "@type", "chatMemberStatusMember", "member_count",
                      member_count(rec), "is_channel", !strcmp(kind, "channel"));
        const char *un = json_string_value(json_object_get(rec, "username"));
        if (un && *un)
            json_object_set_new(o, "usernames",
                                json_pack("{s:s,s:[s],s:[],s:s}", "@type", "usernames",
                                          "active_usernames", un, "disabled_usernames",
                                          "editable_username", un));
        fake__answer(c, extra, o);
        return;
    }
    fake__answer_error(c, extra, 400, "Supergroup not found");
}

static void h_get_basic_group(fake_client_t *c, json_t *req, json_t *extra)
{
    json_int_t bg = json_integer_value(json_object_get(req, "basic_group_id"));
    size_t i;
    json_t *rec;
    json_array_foreach(c->chats, i, rec)
    {
        if (strcmp(chat_kind(rec), "basic_group") ||
            -json_integer_value(json_object_get(rec, "id")) != bg)
            continue;
        fake__answer(c, extra,
                     json_pack("{s:s,s:I,s:I,s:{s:s},s:b,s:i}", "@type", "basicGroup", "id", bg,
                               "member_count", member_count(rec), "status", "@type",
                               "chatMemberStatusMember", "is_active", 1,
                               "upgraded_to_supergroup_id", 0));
        return;
    }
    fake__answer_error(c, extra, 400, "Basic group not found");
}

static bool limit_ok(fake_client_t *c, json_t *extra, json_int_t limit)
{
    if (limit > 0 && limit <= FAKE_LIMIT_MAX)
        return true;
    fake__answer_error(c, extra, 400, "Parameter limit must be positive and not greater than %d",
                       FAKE_LIMIT_MAX);
    return false;
}

static void h_history(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_or_error(c, req, extra);
    if (!rec)
        return;
    json_int_t limit = json_integer_value(json_object_get(req, "limit"));
    json_int_t offset = json_integer_value(json_object_get(req, "offset"));
    json_int_t from = json_integer_value(json_object_get(req, "from_message_id"));
    if (!limit_ok(c, extra, limit))
        return;
    if (offset > 0 || offset <= -limit) {
        fake__answer_error(c, extra, 400,
                           "Parameter offset must be non-positive and greater than -limit");
        return;
    }
    json_t *msgs = json_object_get(rec, "msgs");
    long n = (long)json_array_size(msgs);
    long p = 0; /* index, newest first, of the first message with id <= from */
    if (from != 0)
        while (p < n && msg_id(json_array_get(msgs, (size_t)(n - 1 - p))) > from)
            p++;
    long start = p + (long)offset;
    if (start < 0)
        start = 0;
    json_int_t cap = fake__script_int("history_page_max", FAKE_DEFAULT_PER_CALL);
    if (cap > limit)
        cap = limit;
    if (from == 0 && !json_is_true(json_object_get(rec, "newest_served"))) {
        cap = 1;
        json_object_set_new(rec, "newest_served", json_true());
    }
    json_t *page = json_array();
    for (long i = start; i < n && (json_int_t)json_array_size(page) < cap; i++)
        json_array_append_new(page, json_deep_copy(json_array_get(msgs, (size_t)(n - 1 - i))));
    fake__answer(c, extra,
                 json_pack("{s:s,s:I,s:o}", "@type", "messages", "total_count",
                           (json_int_t)json_array_size(page), "messages", page));
}

static void h_get_message(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_find(c, json_integer_value(json_object_get(req, "chat_id")));
    json_t *msgs = json_object_get(rec, "msgs");
    long i = rec ? msgs_index(msgs, json_integer_value(json_object_get(req, "message_id"))) : -1;
    if (i < 0)
        fake__answer_error(c, extra, 404, "Not Found");
    else
        fake__answer(c, extra, json_deep_copy(json_array_get(msgs, (size_t)i)));
}

static void h_send_message(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_or_error(c, req, extra);
    if (!rec)
        return;
    json_t *imc = json_object_get(req, "input_message_content");
    json_t *content = NULL; /* a document's (fake_tdjson_files.c) */
    if (strcmp(fake__str_of(imc, "@type"), "inputMessageDocument") == 0) {
        content = fake__document_content(c, imc, extra);
        if (!content)
            return;
    } else if (strcmp(fake__str_of(imc, "@type"), "inputMessageText") != 0) {
        fake__answer_error(c, extra, 400,
                           "fake_tdjson: only inputMessageText and inputMessageDocument can be "
                           "sent");
        return;
    }
    const char *text = fake__str_of(json_object_get(imc, "text"), "text");
    if (!*text && !content) {
        fake__answer_error(c, extra, 400, "Message must be non-empty");
        return;
    }
    json_int_t chat_id = json_integer_value(json_object_get(rec, "id"));
    json_t *msgs = json_object_get(rec, "msgs");
    json_int_t last = json_array_size(msgs) > 0
                          ? msg_id(json_array_get(msgs, json_array_size(msgs) - 1)) >> FAKE_ID_SHIFT
                          : 0;
    json_int_t reserved = json_integer_value(json_object_get(rec, "reserved"));
    json_int_t server = (last > reserved ? last : reserved) + 1;
    json_object_set_new(rec, "reserved", json_integer(server));
    json_int_t temp = ((server - 1) << FAKE_ID_SHIFT) + 1;
    bool channel = !strcmp(chat_kind(rec), "channel");
    json_t *m =
        message_object(chat_id, temp, channel ? sender_chat(chat_id) : sender_user(fake__me_id()),
                       true, (json_int_t)time(NULL), text);
    if (content)
        json_object_set_new(m, "content", content);
    json_object_set_new(
        m, "message_thread_id",
        json_integer(json_integer_value(json_object_get(req, "message_thread_id"))));
    json_int_t reply =
        json_integer_value(json_object_get(json_object_get(req, "reply_to"), "message_id"));
    if (reply)
        json_object_set_new(m, "reply_to",
                            json_pack("{s:s,s:I,s:I}", "@type", "messageReplyToMessage", "chat_id",
                                      chat_id, "message_id", reply));
    json_t *final = json_deep_copy(m);
    json_object_set_new(m, "sending_state",
                        json_pack("{s:s}", "@type", "messageSendingStatePending"));
    json_object_set_new(final, "id", json_integer(server << FAKE_ID_SHIFT));
    fake__answer(c, extra, json_deep_copy(m));
    fake__update(c, json_pack("{s:s,s:o}", "@type", "updateNewMessage", "message", m));
    fake__out_push(c->id,
                   json_pack("{s:s,s:o,s:I}", "@type", "updateMessageSendSucceeded", "message",
                             final, "old_message_id", temp),
                   FAKE_SEND_SUCCEEDED_MS, true, true);
}

static bool ci_contains(const char *hay, const char *needle)
{
    return !*needle || (hay && strcasestr(hay, needle));
}

static void search_chats(fake_client_t *c, json_t *req, json_t *extra, json_int_t limit,
                         bool public)
{
    const char *q = fake__str_of(req, "query");
    json_t *ids = json_array();
    json_int_t total = 0;
    size_t i;
    json_t *rec;
    json_array_foreach(c->chats, i, rec)
    {
        if (!ci_contains(fake__str_of(rec, "title"), q) &&
            !ci_contains(fake__str_of(rec, "username"), q))
            continue;
        if (public ? !*fake__str_of(rec, "username") : is_public_only(rec))
            continue;
        total++;
        if (total <= limit)
            json_array_append(ids, json_object_get(rec, "id"));
    }
    fake__answer(c, extra, chats_answer(ids, total));
}

static void h_search_chats_on_server(fake_client_t *c, json_t *req, json_t *extra)
{
    json_int_t limit = json_integer_value(json_object_get(req, "limit"));
    if (limit_ok(c, extra, limit))
        search_chats(c, req, extra, limit, false);
}

static void h_search_public_chats(fake_client_t *c, json_t *req, json_t *extra)
{
    search_chats(c, req, extra, FAKE_LIMIT_MAX, true);
}

static bool text_matches(json_t *m, const char *q)
{
    json_t *content = json_object_get(m, "content");
    if (strcmp(fake__str_of(content, "@type"), "messageText") != 0)
        return !*q;
    return ci_contains(fake__str_of(json_object_get(content, "text"), "text"), q);
}

static int newest_first(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t kx[3] = {json_integer_value(json_object_get(x, "date")),
                        json_integer_value(json_object_get(x, "chat_id")), msg_id(x)};
    json_int_t ky[3] = {json_integer_value(json_object_get(y, "date")),
                        json_integer_value(json_object_get(y, "chat_id")), msg_id(y)};
    for (int i = 0; i < 3; i++)
        if (kx[i] != ky[i])
            return kx[i] > ky[i] ? -1 : 1;
    return 0;
}

static void h_search_messages(fake_client_t *c, json_t *req, json_t *extra)
{
    json_int_t limit = json_integer_value(json_object_get(req, "limit"));
    if (!limit_ok(c, extra, limit))
        return;
    const char *q = fake__str_of(req, "query");
    json_int_t min_date = json_integer_value(json_object_get(req, "min_date"));
    json_int_t max_date = json_integer_value(json_object_get(req, "max_date"));
    size_t cap = 16, n = 0;
    json_t **all = malloc(cap * sizeof *all);
    if (!all)
        abort();
    size_t i, j;
    json_t *rec, *m;
    json_array_foreach(c->chats, i, rec)
    {
        if (is_public_only(rec))
            continue;
        json_array_foreach(json_object_get(rec, "msgs"), j, m)
        {
            json_int_t date = json_integer_value(json_object_get(m, "date"));
            if (!text_matches(m, q) || (min_date && date < min_date) ||
                (max_date && date > max_date))
                continue;
            if (n == cap) {
                cap *= 2;
                json_t **grown = realloc(all, cap * sizeof *all);
                if (!grown)
                    abort();
                all = grown;
            }
            all[n++] = m;
        }
    }
    qsort(all, n, sizeof *all, newest_first);
    size_t skip = (size_t)strtoul(fake__str_of(req, "offset"), NULL, 10);
    json_t *page = json_array();
    size_t k = skip;
    for (; k < n && (json_int_t)json_array_size(page) < limit; k++)
        json_array_append_new(page, json_deep_copy(all[k]));
    char next[32] = "";
    if (k < n)
        snprintf(next, sizeof next, "%zu", k);
    free(all);
    fake__answer(c, extra,
                 json_pack("{s:s,s:I,s:o,s:s}", "@type", "foundMessages", "total_count",
                           (json_int_t)n, "messages", page, "next_offset", next));
}

static void h_search_chat_messages(fake_client_t *c, json_t *req, json_t *extra)
{
    json_t *rec = chat_or_error(c, req, extra);
    if (!rec)
        return;
    json_int_t limit = json_integer_value(json_object_get(req, "limit"));
    if (!limit_ok(c, extra, limit))
        return;
    const char *q = fake__str_of(req, "query");
    json_int_t from = json_integer_value(json_object_get(req, "from_message_id"));
    json_t *msgs = json_object_get(rec, "msgs");
    json_t *page = json_array();
    json_int_t total = 0, next = 0;
    for (size_t i = json_array_size(msgs); i > 0; i--) {
        json_t *m = json_array_get(msgs, i - 1);
        if (!text_matches(m, q))
            continue;
        total++;
        if (from != 0 && msg_id(m) > from)
            continue;
        if ((json_int_t)json_array_size(page) < limit)
            json_array_append_new(page, json_deep_copy(m));
        else if (!next)
            next = msg_id(m);
    }
    fake__answer(c, extra,
                 json_pack("{s:s,s:I,s:o,s:I}", "@type", "foundChatMessages", "total_count", total,
                           "messages", page, "next_from_message_id", next));
}

json_t *fake__chat_find(fake_client_t *c, json_int_t id)
{
    return chat_find(c, id);
}

json_t *fake__chat_object(fake_client_t *c, json_t *rec)
{
    return chat_object(c, rec);
}

const fake_method_t fake__chat_methods[] = {
    {"loadChats", h_load_chats, true},
    {"getChats", h_get_chats, true},
    {"getChat", h_get_chat, true},
    {"getSupergroup", h_get_supergroup, true},
    {"getBasicGroup", h_get_basic_group, true},
    {"getChatHistory", h_history, true},
    {"getMessage", h_get_message, true},
    {"sendMessage", h_send_message, true},
    {"searchChatsOnServer", h_search_chats_on_server, true},
    {"searchPublicChats", h_search_public_chats, true},
    {"searchMessages", h_search_messages, true},
    {"searchChatMessages", h_search_chat_messages, true},
};
const size_t fake__chat_methods_len = sizeof fake__chat_methods / sizeof fake__chat_methods[0];

/* ---- live and inbox ---- */

void fake__schedule_live(fake_client_t *c)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(fake__script, "live"), i, e)
    {
        json_int_t after = json_integer_value(json_object_get(e, "after_ms"));
        fake__out_push(c->id, json_deep_copy(json_object_get(e, "update")),
                       after > 0 ? (uint64_t)after : 0, true, true);
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void fake__poll_inbox(void)
{
    const char *dir = json_string_value(json_object_get(fake__script, "inbox"));
    if (!dir)
        return;
    bool ready = false;
    for (size_t i = 0; i < fake__nclients; i++)
        ready = ready || fake__clients[i]->state == ST_READY;
    if (!ready)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        char **grown = realloc(names, (n + 1) * sizeof *names);
        if (!grown)
            abort();
        names = grown;
        names[n++] = fake__path_in(dir, e->d_name);
    }
    closedir(d);
    if (n > 0)
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_load_file(names[i], 0, NULL);
        if (v) {
            unlink(names[i]);
            json_t *list = json_is_array(v) ? v : json_pack("[O]", v);
            size_t k;
            json_t *u;
            json_array_foreach(list, k, u)
            {
                for (size_t ci = 0; ci < fake__nclients; ci++)
                    if (fake__clients[ci]->state == ST_READY)
                        fake__out_push(fake__clients[ci]->id, json_deep_copy(u), 0, true, true);
            }
            if (list != v)
                json_decref(list);
            json_decref(v);
        }
        free(names[i]);
    }
    free(names);
}

/* ---- text entities (td_execute getTextEntities) ---- */

static bool word_char(unsigned char ch)
{
    return isalnum(ch) || ch == '_';
}

json_t *fake__text_entities(const char *text)
{
    size_t n = strlen(text);
    size_t *u16 = malloc((n + 1) * sizeof *u16); /* UTF-16 units before byte i */
    if (!u16)
        abort();
    u16[0] = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)text[i];
        u16[i + 1] = u16[i] + ((b & 0xC0) == 0x80 ? 0 : b >= 0xF0 ? 2 : 1);
    }
    json_t *list = json_array();
    size_t i = 0;
    while (i < n) {
        bool start = i == 0 || !word_char((unsigned char)text[i - 1]);
        size_t j = i, skip = 0;
        const char *type = NULL;
        if (start && text[i] == '@') {
            j = i + 1;
            while (j < n && word_char((unsigned char)text[j]))
                j++;
            type = j > i + 1 ? "textEntityTypeMention" : NULL;
        } else if (start && (!strncasecmp(text + i, "http://", skip = 7) ||
                             !strncasecmp(text + i, "https://", skip = 8))) {
            j = i + skip;
            while (j < n && !isspace((unsigned char)text[j]))
                j++;
            while (j > i + skip && strchr(".,;:!?)'\"", text[j - 1]))
                j--;
            type = j > i + skip ? "textEntityTypeUrl" : NULL;
        }
        if (type) {
            json_array_append_new(list,
                                  json_pack("{s:s,s:I,s:I,s:{s:s}}", "@type", "textEntity",
                                            "offset", (json_int_t)u16[i], "length",
                                            (json_int_t)(u16[j] - u16[i]), "type", "@type", type));
            i = j;
        } else {
            i++;
        }
    }
    free(u16);
    return json_pack("{s:s,s:o}", "@type", "textEntities", "entities", list);
}
