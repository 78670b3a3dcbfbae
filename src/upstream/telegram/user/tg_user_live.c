/* tg_user_live: the user connector's live reads (see tg_user_internal.h
 * and connector.h's search_dialogs, search_messages, history,
 * get_message), through the default account's TDLib client:
 *
 *   search_dialogs   searchChatsOnServer (the account's chats), then
 *                    searchPublicChats (public ones: an error there, such
 *                    as a query too short for a username, means none),
 *                    merged in that order without duplicates, cut at the
 *                    limit, then getChat for each (a chat that fails is
 *                    left out)
 *   search_messages  searchChatMessages in one chat (paged by
 *                    next_from_message_id), else searchMessages across
 *                    all the account's chats (chat_list null: archived
 *                    ones too; paged by next_offset), within the date
 *                    bounds, until the limit or the end
 *   history          getChatHistory, newest first, paged back from the
 *                    oldest message seen (TDLib answers from that message
 *                    on, inclusive, and often fewer than asked) until the
 *                    limit or a page with nothing new
 *   get_message      getMessage
 *
 * Each answers TDLib's own objects, {"account": accounts.id, "chats" |
 * "messages", "total"}: the toolset stores them (parley_tdu_apply) and
 * answers them as the archive does. Server ids go in, TDLib ids (server
 * id << 20) go to TDLib. A FloodWait ends the read with UV_EAGAIN and
 * "retry after N". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "upstream/telegram/user/tg_user_internal.h"

/* TDLib's largest limit for these methods. */
#define TUL_PAGE 100
/* The most a live read gathers (the tools cap their limits below it). */
#define TUL_LIMIT_MAX 500

typedef enum { TUL_DIALOGS, TUL_SEARCH, TUL_HISTORY, TUL_GET } tul_kind_t;

typedef struct tul_read_s {
    tgu_account_t *acc;
    tul_kind_t kind;
    connector_cb cb;
    void *data;
    int64_t chat;
    char *query;
    int64_t min_date, max_date;
    int limit, newer;
    json_int_t from;   /* TDLib id to page from; 0: the newest */
    json_int_t oldest; /* history: the oldest TDLib id gathered */
    bool paged;        /* a page came */
    char offset[128];  /* searchMessages' next_offset */
    int phase;         /* dialogs: 1 the account's asked, 2 public ones asked */
    size_t next;       /* dialogs: the next chat id to getChat */
    json_t *ids;       /* dialogs: chat ids found */
    json_t *items;     /* chats or messages gathered */
    json_int_t total;  /* search: the upstream's count */
    bool first;        /* the first request is being sent (its failure is returned) */
    int first_rc;
} tul_read_t;

static void tul_step(tul_read_t *r);

static void tul_free(tul_read_t *r)
{
    json_decref(r->ids);
    json_decref(r->items);
    free(r->query);
    free(r);
}

static void tul_finish(tul_read_t *r)
{
    json_t *o = json_pack("{s:I, s:O}", "account", (json_int_t)r->acc->account_id,
                          r->kind == TUL_DIALOGS ? "chats" : "messages", r->items);
    if (o && r->kind == TUL_SEARCH)
        json_object_set_new(o, "total", json_integer(r->total));
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (text)
        r->cb(r->data, 0, text, NULL);
    else
        r->cb(r->data, UV_ENOMEM, NULL, "out of memory");
    free(text);
    tul_free(r);
}

static void tul_fail(tul_read_t *r, int status, json_t *reply)
{
    char why[256];
    if (status == UV_EAGAIN)
        snprintf(why, sizeof why, "retry after %ld", tdjson_retry_after(reply));
    else
        snprintf(why, sizeof why, "%s", tdjson_error_message(reply, uv_strerror(status)));
    r->cb(r->data, status, NULL, why);
    tul_free(r);
}

static void tul_send(tul_read_t *r, json_t *rq, tdjson_reply_cb cb)
{
    int rc = rq ? tgu__account_send(r->acc, rq, cb, r) : UV_ENOMEM;
    if (rc != 0 && r->first) {
        r->first_rc = rc; /* returned by tul_begin: a verb that fails at once never calls back */
    } else if (rc != 0) {
        r->cb(r->data, rc, NULL, rc == UV_ENOTCONN ? "the account is not signed in" : NULL);
        tul_free(r);
    }
}

/* Sends the first request: 0 (the callback comes later, exactly once) or
 * its error (r freed, no callback). */
static int tul_begin(tul_read_t *r)
{
    r->first = true;
    tul_step(r);
    int rc = r->first_rc;
    if (rc != 0) {
        tul_free(r);
        return rc;
    }
    r->first = false;
    return 0;
}

static bool has_id(json_t *ids, json_t *id)
{
    size_t i;
    json_t *x;
    json_array_foreach(ids, i, x) if (json_integer_value(x) == json_integer_value(id)) return true;
    return false;
}

/* ---- dialogs ---------------------------------------------------------------------------- */

static void got_chat(void *data, int status, json_t *reply)
{
    tul_read_t *r = data;
    if (status == UV_EAGAIN) {
        tul_fail(r, status, reply);
        return;
    }
    if (status == 0)
        json_array_append(r->items, reply);
    tul_step(r);
}

static void got_chat_ids(void *data, int status, json_t *reply)
{
    tul_read_t *r = data;
    if (status != 0 && (status == UV_EAGAIN || r->phase == 1)) { /* the account's search */
        tul_fail(r, status, reply);
        return;
    }
    size_t i;
    json_t *id;
    json_array_foreach(json_object_get(reply, "chat_ids"), i, id)
    {
        if ((int)json_array_size(r->ids) >= r->limit)
            break;
        if (json_is_integer(id) && !has_id(r->ids, id))
            json_array_append(r->ids, id);
    }
    tul_step(r);
}

/* ---- messages --------------------------------------------------------------------------- */

static void got_messages(void *data, int status, json_t *reply)
{
    tul_read_t *r = data;
    if (status != 0) {
        tul_fail(r, status, reply);
        return;
    }
    if (r->kind == TUL_GET) {
        json_array_append(r->items, reply);
        tul_finish(r);
        return;
    }
    json_t *msgs = json_object_get(reply, "messages");
    size_t before = json_array_size(r->items), i;
    bool first = !r->paged;
    r->paged = true;
    json_t *m;
    json_array_foreach(msgs, i, m)
    {
        if ((int)json_array_size(r->items) >= r->limit)
            break;
        json_int_t id = json_integer_value(json_object_get(m, "id"));
        /* a later history page starts at the oldest message seen */
        if (r->kind == TUL_HISTORY && !first && id >= r->oldest)
            continue;
        json_array_append(r->items, m);
        if (r->oldest == 0 || id < r->oldest)
            r->oldest = id;
    }
    if (r->kind == TUL_HISTORY)
        r->from = r->oldest;
    bool more = json_array_size(r->items) > before && (int)json_array_size(r->items) < r->limit;
    if (r->kind == TUL_SEARCH) {
        r->total = json_integer_value(json_object_get(reply, "total_count"));
        if (r->chat != 0) {
            r->from = json_integer_value(json_object_get(reply, "next_from_message_id"));
            more = more && r->from != 0;
        } else {
            const char *next = json_string_value(json_object_get(reply, "next_offset"));
            snprintf(r->offset, sizeof r->offset, "%s", next ? next : "");
            more = more && r->offset[0] != '\0';
        }
    }
    if (!more) {
        tul_finish(r);
        return;
    }
    r->newer = 0;
    tul_step(r);
}

/* The next request of r, or the end. */
static void tul_step(tul_read_t *r)
{
    int want = r->limit - (int)json_array_size(r->items);
    int page = want < TUL_PAGE ? want : TUL_PAGE;
    json_t *rq = NULL;
    switch (r->kind) {
    case TUL_DIALOGS:
        if (r->phase == 0) {
            r->phase = 1;
            rq = json_pack("{s:s, s:s, s:i}", "@type", "searchChatsOnServer", "query", r->query,
                           "limit", r->limit < TUL_PAGE ? r->limit : TUL_PAGE);
            tul_send(r, rq, got_chat_ids);
            return;
        }
        if (r->phase == 1) {
            r->phase = 2;
            if ((int)json_array_size(r->ids) < r->limit) {
                rq = json_pack("{s:s, s:s}", "@type", "searchPublicChats", "query", r->query);
                tul_send(r, rq, got_chat_ids);
                return;
            }
        }
        if (r->next >= json_array_size(r->ids)) {
            tul_finish(r);
            return;
        }
        rq = json_pack("{s:s, s:O}", "@type", "getChat", "chat_id",
                       json_array_get(r->ids, r->next++));
        tul_send(r, rq, got_chat);
        return;
    case TUL_SEARCH:
        if (r->chat != 0)
            rq = json_pack("{s:s, s:I, s:s, s:I, s:i, s:i}", "@type", "searchChatMessages",
                           "chat_id", (json_int_t)r->chat, "query", r->query, "from_message_id",
                           r->from, "offset", 0, "limit", page);
        else
            rq =
                json_pack("{s:s, s:n, s:s, s:s, s:i, s:I, s:I}", "@type", "searchMessages",
                          "chat_list", "query", r->query, "offset", r->offset, "limit", page,
                          "min_date", (json_int_t)r->min_date, "max_date", (json_int_t)r->max_date);
        break;
    case TUL_HISTORY:
        /* a later page starts at the oldest message seen (one more);
         * TDLib: limit > -offset, the first page reaching `newer` ones */
        if (r->paged && page < TUL_PAGE)
            page++;
        if (page <= r->newer)
            page = r->newer + 1 <= TUL_PAGE ? r->newer + 1 : TUL_PAGE;
        rq = json_pack("{s:s, s:I, s:I, s:i, s:i, s:b}", "@type", "getChatHistory", "chat_id",
                       (json_int_t)r->chat, "from_message_id", r->from, "offset", -r->newer,
                       "limit", page, "only_local", 0);
        break;
    case TUL_GET:
        rq = json_pack("{s:s, s:I, s:I}", "@type", "getMessage", "chat_id", (json_int_t)r->chat,
                       "message_id", r->from);
        break;
    }
    tul_send(r, rq, got_messages);
}

/* ---- the verbs ---------------------------------------------------------------------------- */

static int tul_start(tgu_t *u, tul_kind_t kind, int64_t chat, const char *query, int limit,
                     connector_cb cb, void *data, tul_read_t **out)
{
    tgu_account_t *acc = tgu__default(u);
    if (acc == NULL)
        return UV_ENOTCONN;
    tul_read_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return UV_ENOMEM;
    *r = (tul_read_t){.acc = acc, .kind = kind, .cb = cb, .data = data, .chat = chat};
    r->limit = limit < 1 ? 1 : limit > TUL_LIMIT_MAX ? TUL_LIMIT_MAX : limit;
    r->query = strdup(query ? query : "");
    r->ids = json_array();
    r->items = json_array();
    if (r->query == NULL || r->ids == NULL || r->items == NULL) {
        tul_free(r);
        return UV_ENOMEM;
    }
    *out = r;
    return 0;
}

int tgu__live_search_dialogs(void *impl, const char *query, int limit, connector_cb cb, void *data)
{
    tul_read_t *r;
    int rc = tul_start(impl, TUL_DIALOGS, 0, query, limit, cb, data, &r);
    return rc == 0 ? tul_begin(r) : rc;
}

int tgu__live_search_messages(void *impl, int64_t chat, const char *query, int64_t min_date,
                              int64_t max_date, int limit, connector_cb cb, void *data)
{
    tul_read_t *r;
    int rc = tul_start(impl, TUL_SEARCH, chat, query, limit, cb, data, &r);
    if (rc != 0)
        return rc;
    r->min_date = min_date;
    r->max_date = max_date;
    return tul_begin(r);
}

int tgu__live_history(void *impl, int64_t chat, int64_t from, int newer, int limit, connector_cb cb,
                      void *data)
{
    tul_read_t *r;
    int rc = tul_start(impl, TUL_HISTORY, chat, NULL, limit, cb, data, &r);
    if (rc != 0)
        return rc;
    r->from = (json_int_t)from << 20;
    r->newer = newer < 0 ? 0 : newer >= TUL_PAGE ? TUL_PAGE - 1 : newer;
    return tul_begin(r);
}

int tgu__live_get_message(void *impl, int64_t chat, int64_t message, connector_cb cb, void *data)
{
    tul_read_t *r;
    int rc = tul_start(impl, TUL_GET, chat, NULL, 1, cb, data, &r);
    if (rc != 0)
        return rc;
    r->from = (json_int_t)message << 20;
    return tul_begin(r);
}
