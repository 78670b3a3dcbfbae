/* tg_user_files: files through a Telegram user account (see
 * tg_user_internal.h): the verbs send_file and fetch_media/fetch_cancel of
 * the user connector.
 *
 * Sending: the toolset opened and checked the file; TDLib takes a path, so
 * the document is inputFileLocal "/proc/self/fd/N" of that descriptor
 * (what was checked is what is read, whatever the path names now). The
 * descriptor stays open until TDLib reports the send succeeded or failed
 * (updateMessageSendSucceeded/Failed, matched as tg_user.c's sends are),
 * then it is closed.
 *
 * Downloading, for a caller that waits (mediaDownload): the media row is
 * claimed as the Bot API connector claims one (parley_bot_media_claim_one:
 * src/db/sql/telegram/bot.sql); a file whose content is stored already is
 * recorded at once; else getMessage gives the message's file (its TDLib
 * id: the store keeps the remote id, parley_tdu_file in user.sql), and
 * downloadFile {synchronous: true} fetches it into TDLib's own files
 * directory, with updateFile as progress. A download longer than the
 * client's answer timeout is asked for again (TDLib joins the running
 * one) as long as it progressed since the last ask. The finished file is
 * copied into the media store on the thread pool (media_store_put), TDLib's
 * copy is deleted (deleteFile), and the row is recorded
 * (parley_bot_media_done) as the bot records its downloads; the caller
 * gets that row. A caller that cancels stops waiting; the download goes on
 * and is recorded. The connector's close waits for every download to end
 * (tgu__files_close). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive/media_store.h"
#include "upstream/tg_user_internal.h"
#include "util/log.h"

#define TGU_FILES_TAG "telegram"
/* downloadFile's priority (1..32): a caller waits for it. */
#define TGU_FETCH_PRIORITY 32
/* Downloads waiting for callers at once (per daemon); more: UV_EBUSY. */
#define TGU_FETCH_MAX 16
/* A failed download that may pass is claimable again after this. */
#define TGU_FETCH_RETRY_MS 60000

/* ---- sending a file -------------------------------------------------------------------- */

typedef struct {
    int fd;
    connector_cb cb;
    void *data;
} file_send_t;

/* The send ended (TDLib read the file or gave up): the descriptor goes. */
static void file_sent(void *data, int status, const char *json, const char *error)
{
    file_send_t *fs = data;
    close(fs->fd);
    fs->cb(fs->data, status, json, error);
    free(fs);
}

int tgu__send_file(void *impl, int64_t chat, int fd, const char *caption, const char *filename,
                   int64_t topic, int64_t reply_to, connector_cb cb, void *data)
{
    (void)filename; /* TDLib names a local file after its path */
    tgu_t *u = impl;
    tgu_account_t *acc = tgu__default(u);
    file_send_t *fs = acc ? calloc(1, sizeof *fs) : NULL;
    tgu_send_t *s = fs ? calloc(1, sizeof *s) : NULL;
    if (s == NULL) {
        free(fs);
        close(fd);
        return acc ? UV_ENOMEM : UV_ENOTCONN;
    }
    *fs = (file_send_t){.fd = fd, .cb = cb, .data = data};
    *s = (tgu_send_t){.acc = acc, .chat = chat, .cb = file_sent, .data = fs};
    queue_init(&s->node);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    json_t *rq = json_pack(
        "{s:s, s:I, s:I, s:{s:s, s:{s:s, s:s}, s:{s:s, s:s}}}", "@type", "sendMessage", "chat_id",
        (json_int_t)chat, "message_thread_id", (json_int_t)(topic << 20), "input_message_content",
        "@type", "inputMessageDocument", "document", "@type", "inputFileLocal", "path", path,
        "caption", "@type", "formattedText", "text", caption ? caption : "");
    if (rq && reply_to)
        json_object_set_new(rq, "reply_to",
                            json_pack("{s:s, s:I}", "@type", "inputMessageReplyToMessage",
                                      "message_id", (json_int_t)(reply_to << 20)));
    int rc = tgu__account_send(acc, rq, tgu__sent_pending, s);
    if (rc != 0) {
        free(s);
        free(fs);
        close(fd);
    }
    return rc;
}

/* ---- downloading a message's file -------------------------------------------------------- */

typedef struct tgu_fetch_s {
    queue_node_t node; /* in u->fetches */
    tgu_t *u;
    tgu_account_t *acc;
    int64_t chat, message;
    connector_progress_cb progress;
    connector_cb done;
    void *data;
    bool cancelled; /* the caller stopped waiting */
    json_t *row;    /* the claimed media row; results are added to it */
    json_int_t file_id;
    uint64_t bytes, total, bytes_at_ask;
    char src[TGU_PATH_MAX]; /* TDLib's finished file */
    char root[TGU_PATH_MAX + 16];
    char error[600];
    uv_work_t work;
} tgu_fetch_t;

static void fetch_end(tgu_fetch_t *f)
{
    tgu_t *u = f->u;
    queue_remove(&f->node);
    json_decref(f->row);
    free(f);
    if (u->files_closed && queue_empty(&u->fetches)) {
        void (*cb)(void *) = u->files_closed;
        u->files_closed = NULL;
        cb(u);
    }
}

static void fetch_answer(tgu_fetch_t *f, int status, const char *error)
{
    if (f->cancelled)
        return;
    f->cancelled = true; /* answered once */
    const char *state = json_string_value(json_object_get(f->row, "state"));
    if (status == 0 && state && strcmp(state, "remote") == 0) {
        f->done(f->data, UV_ECANCELED, NULL, "the daemon is stopping");
        return;
    }
    char *json = status == 0 && f->row ? json_dumps(f->row, JSON_COMPACT) : NULL;
    if (status == 0 && json == NULL)
        status = UV_ENOMEM, error = "out of memory";
    f->done(f->data, status, json, error);
    free(json);
}

static void fetch_recorded(void *data, int status, const char *value, const char *sqlstate,
                           const char *error)
{
    (void)value;
    (void)sqlstate;
    tgu_fetch_t *f = data;
    if (status != 0)
        log_warn(TGU_FILES_TAG, "recording a download failed: %s",
                 error ? error : uv_strerror(status));
    fetch_answer(f, 0, NULL);
    fetch_end(f);
}

/* Records how the download ended (state "done", "error" or "remote":
 * stopped, claimable again); retry: an error that may pass. */
static void fetch_finish(tgu_fetch_t *f, const char *state, const char *error, bool retry)
{
    json_object_set_new(f->row, "state", json_string(state));
    if (error)
        json_object_set_new(f->row, "error", json_string(error));
    if (retry)
        json_object_set_new(f->row, "retry_ms", json_integer(TGU_FETCH_RETRY_MS));
    if (strcmp(state, "error") == 0)
        log_warn(TGU_FILES_TAG, "message %lld of chat %lld: %s", (long long)f->message,
                 (long long)f->chat, error ? error : "download failed");
    char *p = json_dumps(f->row, JSON_COMPACT);
    const char *params[1] = {p ? p : "{}"};
    int rc =
        pg_pool_call(f->u->rw, "parley_bot_media_done", "SELECT parley_bot_media_done($1::jsonb)",
                     1, params, fetch_recorded, f, NULL);
    free(p);
    if (rc != 0)
        fetch_recorded(f, rc, NULL, NULL, "the database is busy");
}

/* A TDLib failure: a refusal (400: the file is not there to download) is
 * final, anything else may pass. */
static void fetch_failed(tgu_fetch_t *f, const char *what, int status, json_t *reply)
{
    if (status == UV_ECANCELED || f->u->files_closed) {
        fetch_finish(f, "remote", NULL, false);
        return;
    }
    char msg[600];
    snprintf(msg, sizeof msg, "%s failed: %s", what,
             tdjson_error_message(reply, uv_strerror(status)));
    fetch_finish(f, "error", msg, status != UV_EINVAL && status != UV_ENOENT);
}

static void store_work(uv_work_t *w)
{
    tgu_fetch_t *f = w->data;
    char sha[65], rel[MEDIA_STORE_REL_MAX];
    uint64_t size = 0;
    if (media_store_put(f->root, f->src, sha, rel, &size, f->error, sizeof f->error) != 0)
        return;
    if (f->total > 0 && size != f->total) {
        snprintf(f->error, sizeof f->error, "TDLib's file has %llu bytes of the %llu the file has",
                 (unsigned long long)size, (unsigned long long)f->total);
        return;
    }
    json_object_set_new(f->row, "sha256", json_string(sha));
    json_object_set_new(f->row, "local_path", json_string(rel));
    json_object_set_new(f->row, "size", json_integer((json_int_t)size));
}

static void store_after(uv_work_t *w, int status)
{
    tgu_fetch_t *f = w->data;
    if (status != 0 || f->error[0]) {
        char msg[700];
        snprintf(msg, sizeof msg, "storing the download: %s",
                 f->error[0] ? f->error : uv_strerror(status));
        fetch_finish(f, "error", msg, true);
        return;
    }
    /* The media store keeps it now: TDLib's copy would be a second one. */
    (void)tgu__account_send(
        f->acc, json_pack("{s:s, s:I}", "@type", "deleteFile", "file_id", f->file_id), NULL, NULL);
    fetch_finish(f, "done", NULL, false);
}

static int fetch_ask(tgu_fetch_t *f);

static void downloaded(void *data, int status, json_t *file)
{
    tgu_fetch_t *f = data;
    if (status == UV_ETIMEDOUT && f->bytes > f->bytes_at_ask && !f->u->files_closed) {
        /* Still coming: ask again (TDLib answers when the running
         * download ends). */
        int rc = fetch_ask(f);
        if (rc == 0)
            return;
        status = rc;
    }
    if (status != 0) {
        fetch_failed(f, "downloadFile", status, file);
        return;
    }
    json_t *local = json_object_get(file, "local");
    const char *path = json_string_value(json_object_get(local, "path"));
    if (!json_is_true(json_object_get(local, "is_downloading_completed")) || path == NULL ||
        path[0] == '\0') {
        fetch_finish(f, "error", "downloadFile ended without the whole file", true);
        return;
    }
    json_int_t size = json_integer_value(json_object_get(file, "size"));
    f->total = size > 0 ? (uint64_t)size : 0;
    snprintf(f->src, sizeof f->src, "%s", path);
    snprintf(f->root, sizeof f->root, "%s/media", f->u->data_dir);
    f->error[0] = '\0';
    f->work.data = f;
    if (uv_queue_work(f->u->loop, &f->work, store_work, store_after) != 0)
        fetch_finish(f, "error", "cannot queue the store", true);
}

static int fetch_ask(tgu_fetch_t *f)
{
    f->bytes_at_ask = f->bytes;
    json_t *rq =
        json_pack("{s:s, s:I, s:i, s:i, s:i, s:b}", "@type", "downloadFile", "file_id", f->file_id,
                  "priority", TGU_FETCH_PRIORITY, "offset", 0, "limit", 0, "synchronous", 1);
    return tgu__account_send(f->acc, rq, downloaded, f);
}

/* The file object in o (a message's content) that is the row's file: the
 * one with its remote id, else the last one met (a photo's largest size,
 * a document's or a video's file after its thumbnail). */
static json_t *file_in(json_t *o, const char *remote_id, json_t **last)
{
    if (json_is_array(o)) {
        size_t i;
        json_t *v;
        json_array_foreach(o, i, v)
        {
            json_t *hit = file_in(v, remote_id, last);
            if (hit)
                return hit;
        }
        return NULL;
    }
    if (!json_is_object(o))
        return NULL;
    const char *t = json_string_value(json_object_get(o, "@type"));
    if (t && strcmp(t, "file") == 0) {
        const char *rid = json_string_value(json_object_get(json_object_get(o, "remote"), "id"));
        if (remote_id && rid && strcmp(rid, remote_id) == 0)
            return o;
        *last = o;
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        if (strcmp(k, "minithumbnail") == 0)
            continue;
        json_t *hit = file_in(v, remote_id, last);
        if (hit)
            return hit;
    }
    return NULL;
}

static void got_message(void *data, int status, json_t *msg)
{
    tgu_fetch_t *f = data;
    if (status != 0) {
        fetch_failed(f, "getMessage", status, msg);
        return;
    }
    json_t *last = NULL;
    json_t *file = file_in(json_object_get(msg, "content"),
                           json_string_value(json_object_get(f->row, "file_id")), &last);
    if (file == NULL)
        file = last;
    if (file == NULL) {
        fetch_finish(f, "error", "the message has no file in TDLib's copy of it", false);
        return;
    }
    f->file_id = json_integer_value(json_object_get(file, "id"));
    json_int_t size = json_integer_value(json_object_get(file, "size"));
    if (size <= 0)
        size = json_integer_value(json_object_get(file, "expected_size"));
    f->total = size > 0 ? (uint64_t)size : 0;
    int rc = fetch_ask(f);
    if (rc != 0)
        fetch_failed(f, "downloadFile", rc, NULL);
}

static void fetch_claimed(void *data, int status, const char *value, const char *sqlstate,
                          const char *error)
{
    (void)sqlstate;
    tgu_fetch_t *f = data;
    json_error_t je;
    f->row = status == 0 && value ? json_loads(value, 0, &je) : NULL;
    if (f->row == NULL) {
        char why[600];
        snprintf(why, sizeof why, "claiming the file failed: %s",
                 error    ? error
                 : status ? uv_strerror(status)
                          : "no answer");
        fetch_answer(f, status ? status : UV_EIO, why);
        fetch_end(f);
        return;
    }
    if (!json_is_true(json_object_get(f->row, "claimed"))) {
        fetch_answer(f, 0, NULL); /* nothing to download: its state says why */
        fetch_end(f);
        return;
    }
    json_t *stored = json_object_get(f->row, "stored");
    if (json_is_object(stored)) { /* the same content is in the store */
        json_object_set(f->row, "sha256", json_object_get(stored, "sha256"));
        json_object_set(f->row, "local_path", json_object_get(stored, "local_path"));
        json_object_set(f->row, "size", json_object_get(stored, "size"));
        fetch_finish(f, "done", NULL, false);
        return;
    }
    if (f->u->files_closed) {
        fetch_finish(f, "remote", NULL, false);
        return;
    }
    json_t *rq = json_pack("{s:s, s:I, s:I}", "@type", "getMessage", "chat_id", (json_int_t)f->chat,
                           "message_id", (json_int_t)(f->message << 20));
    int rc = tgu__account_send(f->acc, rq, got_message, f);
    if (rc != 0)
        fetch_failed(f, "getMessage", rc, NULL);
}

int tgu__fetch_media(void *impl, int64_t chat, int64_t message, connector_progress_cb progress,
                     connector_cb done, void *data, void **handle)
{
    tgu_t *u = impl;
    tgu_account_t *acc = tgu__default(u);
    if (acc == NULL)
        return UV_ENOTCONN;
    if (u->files_closed)
        return UV_ECANCELED;
    int n = 0;
    for (queue_node_t *q = queue_head(&u->fetches); q != &u->fetches; q = q->next)
        n++;
    if (n >= TGU_FETCH_MAX)
        return UV_EBUSY;
    tgu_fetch_t *f = calloc(1, sizeof *f);
    if (f == NULL)
        return UV_ENOMEM;
    *f = (tgu_fetch_t){.u = u,
                       .acc = acc,
                       .chat = chat,
                       .message = message,
                       .progress = progress,
                       .done = done,
                       .data = data};
    char chat_s[24], message_s[24];
    snprintf(chat_s, sizeof chat_s, "%lld", (long long)chat);
    snprintf(message_s, sizeof message_s, "%lld", (long long)message);
    const char *params[3] = {chat_s, message_s, u->owner[0] ? u->owner : NULL};
    int rc =
        pg_pool_call(u->rw, "parley_bot_media_claim_one",
                     "SELECT parley_bot_media_claim_one($1::bigint, $2::bigint, $3::text)::text", 3,
                     params, fetch_claimed, f, NULL);
    if (rc != 0) {
        free(f);
        return rc;
    }
    queue_push_tail(&u->fetches, &f->node);
    *handle = f;
    return 0;
}

void tgu__fetch_cancel(void *impl, void *handle)
{
    (void)impl;
    tgu_fetch_t *f = handle;
    if (f)
        f->cancelled = true; /* the download goes on and is recorded */
}

void tgu__files_update(tgu_t *u, json_t *file)
{
    json_int_t id = json_integer_value(json_object_get(file, "id"));
    for (queue_node_t *q = queue_head(&u->fetches); q != &u->fetches; q = q->next) {
        tgu_fetch_t *f = queue_entry(q, tgu_fetch_t, node);
        if (f->file_id == 0 || f->file_id != id)
            continue;
        json_int_t got =
            json_integer_value(json_object_get(json_object_get(file, "local"), "downloaded_size"));
        json_int_t size = json_integer_value(json_object_get(file, "size"));
        if (size <= 0)
            size = json_integer_value(json_object_get(file, "expected_size"));
        f->bytes = got > 0 ? (uint64_t)got : 0;
        if (size > 0)
            f->total = (uint64_t)size;
        if (!f->cancelled && f->progress)
            f->progress(f->data, f->bytes, f->total);
    }
}

void tgu__files_close(tgu_t *u, void (*cb)(void *data))
{
    if (queue_empty(&u->fetches)) {
        cb(u);
        return;
    }
    u->files_closed = cb; /* the downloads stop as their clients close */
}
