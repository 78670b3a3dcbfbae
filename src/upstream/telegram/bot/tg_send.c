/* tg_send: the Bot API connector's sending (see tg_bot_internal.h): the
 * bounded send queue paced per chat and overall (sendMessage, and
 * sendDocument as a multipart upload read through the thread pool), a sent
 * message stored once Telegram confirms it, and the other methods
 * (administration, chat info) called as they are. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "upstream/telegram/bot/tg_bot_internal.h"
#include "upstream/telegram/bot/tg_media.h"
#include "util/buf.h"
#include "util/log.h"

static void send_next(tg_bot_t *b);

/* ---- sending -------------------------------------------------------------------- */

void tg_bot__send_end(send_t *s, int status, const char *json, const char *error)
{
    s->cb(s->data, status, json, error);
    free(s->body);
    if (s->fd >= 0)
        close(s->fd);
    free(s->caption);
    free(s->filename);
    free(s);
}

static void send_finish(tg_bot_t *b, int status, const char *json, const char *error)
{
    send_t *s = b->sending;
    b->sending = NULL;
    tg_bot__send_end(s, status, json, error);
    send_next(b);
    tg_bot__maybe_closed(b);
}

static void stored_done(void *data, int status, const char *value, const char *sqlstate,
                        const char *error)
{
    tg_bot_t *b = data;
    (void)value;
    (void)sqlstate;
    char *json = b->sjson;
    b->sjson = NULL;
    if (status != 0)
        log_warn(BOT_TAG, "a sent message could not be stored: %s", error);
    send_finish(b, 0, json, NULL);
    free(json);
}

static void sent_done(net_req_t *r, int status)
{
    tg_bot_t *b = r->data;
    char why[320];
    if (status != 0) {
        snprintf(why, sizeof why, "sending: %s", r->error[0] ? r->error : uv_strerror(status));
        net_req_release(r);
        send_finish(b, status, NULL, why);
        return;
    }
    json_error_t je;
    json_t *doc = json_loadb(r->body_buf.data ? r->body_buf.data : "", r->body_buf.len, 0, &je);
    net_req_release(r);
    if (doc == NULL || !json_is_true(json_object_get(doc, "ok"))) {
        const char *desc = json_string_value(json_object_get(doc, "description"));
        snprintf(why, sizeof why, "Telegram refused the message: %s",
                 desc ? desc : "no description (a body that is not JSON)");
        json_decref(doc);
        send_finish(b, UV_EIO, NULL, why);
        return;
    }
    b->sjson = json_dumps(json_object_get(doc, "result"), JSON_COMPACT);
    json_decref(doc);
    char account[32];
    snprintf(account, sizeof account, "%lld", (long long)b->account);
    const char *params[2] = {account, b->sjson ? b->sjson : "{}"};
    if (pg_pool_call(b->rw, "parley_bot_store_message",
                     "SELECT parley_bot_store_message($1::bigint, $2::jsonb, true)", 2, params,
                     stored_done, b, NULL) != 0) {
        char *json = b->sjson;
        b->sjson = NULL;
        send_finish(b, 0, json, NULL);
        free(json);
    }
}

static void send_timer_cb(uv_timer_t *t)
{
    send_next(t->data);
}

/* Sends the first queued message that its chat's and the global pace
 * allow; otherwise waits. */
static void send_next(tg_bot_t *b)
{
    if (b->sending != NULL || queue_empty(&b->sends) || b->state == BOT_CLOSING)
        return;
    uint64_t now = uv_now(b->loop);
    uint64_t wait = 0;
    if (now < b->last_send_ms + TG_BOT_SEND_GLOBAL_MS)
        wait = b->last_send_ms + TG_BOT_SEND_GLOBAL_MS - now;
    send_t *pick = NULL;
    uint64_t chat_wait = UINT64_MAX;
    for (queue_node_t *n = b->sends.next; n != &b->sends; n = n->next) {
        send_t *s = queue_entry(n, send_t, node);
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)s->chat);
        uint64_t last = (uint64_t)json_integer_value(json_object_get(b->last_by_chat, key));
        uint64_t ready = last ? last + TG_BOT_SEND_PER_CHAT_MS : 0;
        if (ready <= now) {
            pick = s;
            break;
        }
        if (ready - now < chat_wait)
            chat_wait = ready - now;
    }
    if (pick == NULL || wait > 0) {
        uint64_t w = pick ? wait : (chat_wait > wait ? chat_wait : wait);
        uv_timer_start(&b->send_timer, send_timer_cb, w ? w : 1, 0);
        return;
    }
    queue_remove(&pick->node);
    b->nsends--;
    b->sending = pick;
    b->last_send_ms = now;
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)pick->chat);
    json_object_set_new(b->last_by_chat, key, json_integer((json_int_t)now));
    memset(&b->sreq, 0, sizeof b->sreq);
    tg_bot__set_url(b, b->surl, sizeof b->surl, pick->file ? "sendDocument" : "sendMessage");
    b->sreq.url = b->surl;
    if (pick->file) {
        int k = 0;
        snprintf(pick->chat_buf, sizeof pick->chat_buf, "%lld", (long long)pick->chat);
        pick->form[k++] = "chat_id";
        pick->form[k++] = pick->chat_buf;
        if (pick->caption) {
            pick->form[k++] = "caption";
            pick->form[k++] = pick->caption;
        }
        if (pick->topic_buf[0]) {
            pick->form[k++] = "message_thread_id";
            pick->form[k++] = pick->topic_buf;
        }
        if (pick->reply_buf[0]) {
            pick->form[k++] = "reply_parameters";
            pick->form[k++] = pick->reply_buf;
        }
        pick->form[k] = NULL;
        b->sreq.form = pick->form;
        b->sreq.upload_field = "document";
        b->sreq.upload = true;
        b->sreq.upload_fd = pick->fd;
        pick->fd = -1; /* the request's now */
        b->sreq.upload_name = pick->filename;
    } else {
        b->sreq.body = pick->body;
        b->sreq.body_len = strlen(pick->body);
        b->sreq.content_type = "application/json";
    }
    b->sreq.cb = sent_done;
    b->sreq.data = b;
    int rc = net_request(b->net, &b->sreq);
    if (rc != 0) {
        net_req_release(&b->sreq);
        send_finish(b, rc, NULL, "cannot start the request");
    }
}

/* Queues s (ours from here on) to be sent with its callback; 0. */
static int send_enqueue(tg_bot_t *b, send_t *s, tg_bot_send_cb cb, void *data)
{
    s->cb = cb;
    s->data = data;
    queue_push_tail(&b->sends, &s->node);
    b->nsends++;
    send_next(b);
    return 0;
}

int tg_bot_send_message(tg_bot_t *b, int64_t chat, const char *text, int64_t topic,
                        int64_t reply_to, tg_bot_send_cb cb, void *data)
{
    if (b->state == BOT_CLOSING)
        return UV_ECANCELED;
    if (b->nsends >= TG_BOT_SEND_QUEUE_MAX)
        return UV_EBUSY;
    json_t *body = json_pack("{s:I, s:s}", "chat_id", (json_int_t)chat, "text", text);
    if (topic)
        json_object_set_new(body, "message_thread_id", json_integer((json_int_t)topic));
    if (reply_to)
        json_object_set_new(body, "reply_parameters",
                            json_pack("{s:I}", "message_id", (json_int_t)reply_to));
    send_t *s = calloc(1, sizeof *s);
    if (s == NULL || body == NULL) {
        free(s);
        json_decref(body);
        return UV_ENOMEM;
    }
    s->chat = chat;
    s->fd = -1;
    s->body = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return send_enqueue(b, s, cb, data);
}

int tg_bot_send_file(tg_bot_t *b, int64_t chat, int fd, const char *caption, const char *filename,
                     int64_t topic, int64_t reply_to, tg_bot_send_cb cb, void *data)
{
    send_t *s = NULL;
    if (b->state == BOT_CLOSING || b->nsends >= TG_BOT_SEND_QUEUE_MAX ||
        (s = calloc(1, sizeof *s)) == NULL) {
        close(fd); /* ours from the call on */
        return b->state == BOT_CLOSING              ? UV_ECANCELED
               : b->nsends >= TG_BOT_SEND_QUEUE_MAX ? UV_EBUSY
                                                    : UV_ENOMEM;
    }
    s->chat = chat;
    s->file = true;
    s->fd = fd;
    s->caption = caption ? strdup(caption) : NULL;
    s->filename = filename ? strdup(filename) : NULL;
    if (topic)
        snprintf(s->topic_buf, sizeof s->topic_buf, "%lld", (long long)topic);
    if (reply_to)
        snprintf(s->reply_buf, sizeof s->reply_buf, "{\"message_id\":%lld}", (long long)reply_to);
    return send_enqueue(b, s, cb, data);
}

/* ---- other methods ------------------------------------------------------------------ */

static void call_done(net_req_t *r, int status)
{
    call_t *c = r->data;
    tg_bot_t *b = c->b;
    char why[320];
    json_t *doc = NULL;
    if (status == 0) {
        json_error_t je;
        doc = json_loadb(r->body_buf.data ? r->body_buf.data : "", r->body_buf.len, 0, &je);
    }
    net_req_release(r);
    queue_remove(&c->node);
    if (doc != NULL && json_is_true(json_object_get(doc, "ok"))) {
        char *res = json_dumps(json_object_get(doc, "result"), JSON_COMPACT | JSON_ENCODE_ANY);
        c->cb(c->data, 0, res ? res : "null", NULL);
        free(res);
    } else {
        const char *desc = json_string_value(json_object_get(doc, "description"));
        snprintf(why, sizeof why, "Telegram refused it: %s",
                 desc     ? desc
                 : status ? uv_strerror(status)
                          : "a body that is not JSON");
        c->cb(c->data, status ? status : UV_EIO, NULL, why);
    }
    json_decref(doc);
    free(c->body);
    free(c);
    tg_bot__maybe_closed(b);
}

int tg_bot_call(tg_bot_t *b, const char *method, const char *body, tg_bot_send_cb cb, void *data)
{
    if (b->state == BOT_CLOSING)
        return UV_ECANCELED;
    call_t *c = calloc(1, sizeof *c);
    if (c == NULL || (c->body = strdup(body ? body : "{}")) == NULL) {
        free(c);
        return UV_ENOMEM;
    }
    c->b = b;
    c->cb = cb;
    c->data = data;
    tg_bot__set_url(b, c->url, sizeof c->url, method);
    c->req.url = c->url;
    c->req.body = c->body;
    c->req.body_len = strlen(c->body);
    c->req.content_type = "application/json";
    c->req.cb = call_done;
    c->req.data = c;
    queue_push_tail(&b->calls, &c->node);
    int rc = net_request(b->net, &c->req);
    if (rc != 0) {
        queue_remove(&c->node);
        net_req_release(&c->req);
        free(c->body);
        free(c);
        return rc;
    }
    return 0;
}
