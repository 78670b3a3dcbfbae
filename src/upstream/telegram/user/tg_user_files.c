/* tg_user_files: files through a Telegram user account (see
 * tg_user_internal.h): the verbs send_file and fetch_media/fetch_cancel of
 * the user connector.
 *
 * Sending: the toolset opened and checked the file; TDLib takes a path
 * (and resolves it), so the open file gets a path of its own in the
 * account's outbox, named as the file is sent (link_work: a hard link to
 * the open file, else a copy of it): what was checked is what is read,
 * whatever the toolset's path names now. The descriptor and that path
 * stay until TDLib reports the send succeeded or failed
 * (updateMessageSendSucceeded/Failed, matched as tg_user.c's sends are);
 * then the descriptor is closed and the path removed.
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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "archive/media_store.h"
#include "upstream/telegram/user/tg_user_internal.h"
#include "util/log.h"

#define TGU_FILES_TAG "telegram"
/* downloadFile's priority (1..32): a caller waits for it. */
#define TGU_FETCH_PRIORITY 32
/* Downloads waiting for callers at once (per daemon); more: UV_EBUSY. */
#define TGU_FETCH_MAX 16
/* Bytes a file copied into the outbox is read by at a time. */
#define TGU_SEND_CHUNK (256u * 1024)
/* A failed download that may pass is claimable again after this. */
#define TGU_FETCH_RETRY_MS 60000

/* ---- sending a file -------------------------------------------------------------------- */

typedef struct {
    tgu_t *u;
    tgu_account_t *acc;
    int fd;
    int64_t chat, topic, reply_to;
    char *caption;
    connector_cb cb;
    void *data;
    char name[NAME_MAX + 1];     /* the name sent, one component */
    char dir[TGU_PATH_MAX + 16]; /* its outbox directory; "" when none */
    char path[TGU_PATH_MAX * 2]; /* what TDLib is given */
    int status;                  /* of link_work */
    uv_work_t work;
} file_send_t;

/* The name sent: filename's last component, control characters as '_';
 * "file" when nothing is left. */
static void send_name(const char *filename, char *out, size_t cap)
{
    const char *base = filename ? strrchr(filename, '/') : NULL;
    base = base ? base + 1 : filename ? filename : "";
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)base; *p && k + 1 < cap; p++)
        out[k++] = *p < 0x20 || *p == 0x7f ? '_' : (char)*p;
    out[k] = '\0';
    if (k == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0)
        snprintf(out, cap, "file");
}

static void files_maybe_closed(tgu_t *u)
{
    if (u->files_closed && queue_empty(&u->fetches) && u->files_links == 0) {
        void (*cb)(void *) = u->files_closed;
        u->files_closed = NULL;
        cb(u);
    }
}

/* On the thread pool: the outbox link is removed. */
static void unlink_work(uv_work_t *w)
{
    file_send_t *fs = w->data;
    if (fs->path[0])
        unlink(fs->path);
    rmdir(fs->dir);
}

static void unlink_after(uv_work_t *w, int status)
{
    (void)status;
    free(w->data);
}

/* The send ended (TDLib read the file or gave up): the descriptor goes,
 * and the outbox link with it. */
static void file_sent(void *data, int status, const char *json, const char *error)
{
    file_send_t *fs = data;
    close(fs->fd);
    free(fs->caption);
    fs->caption = NULL;
    fs->cb(fs->data, status, json, error);
    fs->work.data = fs;
    if (fs->dir[0] == '\0' || uv_queue_work(fs->u->loop, &fs->work, unlink_work, unlink_after) != 0)
        free(fs);
}

/* On the thread pool, once per process: removes what sends of processes
 * that no longer run left in outbox (send-PID-*: a daemon killed while
 * TDLib was sending). */
static void outbox_sweep(const char *outbox)
{
    static atomic_flag swept = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&swept))
        return;
    DIR *d = opendir(outbox);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        long pid = 0;
        if (sscanf(e->d_name, "send-%ld-", &pid) != 1 || pid <= 0 || pid == (long)getpid() ||
            pid > INT_MAX || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        int dir = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *sub = dir >= 0 ? fdopendir(dir) : NULL;
        struct dirent *f;
        while (sub && (f = readdir(sub)) != NULL)
            if (strcmp(f->d_name, ".") != 0 && strcmp(f->d_name, "..") != 0)
                unlinkat(dir, f->d_name, 0);
        if (sub)
            closedir(sub);
        else if (dir >= 0)
            close(dir);
        unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
    }
    if (d)
        closedir(d);
}

/* On the thread pool: TDLib resolves a local path (realpath) and reads the
 * file by the path it found, naming the document after it; /proc/self/fd/N
 * would resolve to the toolset's path, which may name another file by now.
 * So the open file is given a name of its own, OUTBOX/send-PID-XXXXXX/NAME
 * (OUTBOX: the account's outbox/, 0700): a hard link to the open file
 * (linkat of /proc/self/fd/N), else, when the file system or
 * protected_hardlinks refuses one, a copy read from the descriptor. */
static void link_work(uv_work_t *w)
{
    file_send_t *fs = w->data;
    char outbox[TGU_PATH_MAX];
    int n = snprintf(outbox, sizeof outbox, "%s/outbox", fs->acc->session.dir);
    if (n < 0 || (size_t)n + 16 >= sizeof fs->dir) {
        fs->status = UV_ENAMETOOLONG;
        return;
    }
    if (mkdir(outbox, 0700) != 0 && errno != EEXIST) {
        fs->status = -errno;
        return;
    }
    outbox_sweep(outbox);
    snprintf(fs->dir, sizeof fs->dir, "%s/send-%d-XXXXXX", outbox, (int)getpid());
    if (mkdtemp(fs->dir) == NULL) {
        fs->status = -errno;
        fs->dir[0] = '\0';
        return;
    }
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", fs->fd);
    snprintf(fs->path, sizeof fs->path, "%s/%s", fs->dir, fs->name);
    if (linkat(AT_FDCWD, self, AT_FDCWD, fs->path, AT_SYMLINK_FOLLOW) == 0)
        return;
    int out = open(fs->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    char *buf = out >= 0 ? malloc(TGU_SEND_CHUNK) : NULL;
    if (buf == NULL) {
        fs->status = out < 0 ? -errno : UV_ENOMEM;
        if (out >= 0)
            close(out);
        return;
    }
    off_t at = 0;
    for (;;) {
        ssize_t got = pread(fs->fd, buf, TGU_SEND_CHUNK, at);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            fs->status = got < 0 ? -errno : 0;
            break;
        }
        ssize_t k = 0;
        int werr = EIO;
        while (k < got) {
            ssize_t put = write(out, buf + k, (size_t)(got - k));
            if (put < 0 && errno == EINTR)
                continue;
            if (put <= 0) {
                werr = put < 0 ? errno : EIO;
                break;
            }
            k += put;
        }
        if (k < got) {
            fs->status = -werr;
            break;
        }
        at += got;
    }
    free(buf);
    if (close(out) != 0 && fs->status == 0)
        fs->status = -errno;
}

static void link_after(uv_work_t *w, int status)
{
    file_send_t *fs = w->data;
    tgu_t *u = fs->u;
    u->files_links--;
    if (status == 0 && fs->status != 0) {
        char why[TGU_PATH_MAX + 128];
        snprintf(why, sizeof why, "preparing the file in %s/outbox: %s", fs->acc->session.dir,
                 uv_strerror(fs->status));
        file_sent(fs, fs->status, NULL, why);
        files_maybe_closed(u);
        return;
    }
    tgu_send_t *s = status == 0 && !u->files_stopping ? calloc(1, sizeof *s) : NULL;
    if (s == NULL) {
        file_sent(fs,
                  status              ? status
                  : u->files_stopping ? UV_ECANCELED
                                      : UV_ENOMEM,
                  NULL,
                  status              ? uv_strerror(status)
                  : u->files_stopping ? "the daemon is stopping"
                                      : "out of memory");
        files_maybe_closed(u);
        return;
    }
    *s = (tgu_send_t){.acc = fs->acc, .chat = fs->chat, .cb = file_sent, .data = fs};
    queue_init(&s->node);
    json_t *rq =
        json_pack("{s:s, s:I, s:I, s:{s:s, s:{s:s, s:s}, s:{s:s, s:s}}}", "@type", "sendMessage",
                  "chat_id", (json_int_t)fs->chat, "message_thread_id",
                  (json_int_t)(fs->topic << 20), "input_message_content", "@type",
                  "inputMessageDocument", "document", "@type", "inputFileLocal", "path", fs->path,
                  "caption", "@type", "formattedText", "text", fs->caption ? fs->caption : "");
    if (rq && fs->reply_to)
        json_object_set_new(rq, "reply_to",
                            json_pack("{s:s, s:I}", "@type", "inputMessageReplyToMessage",
                                      "message_id", (json_int_t)(fs->reply_to << 20)));
    int rc = tgu__account_send(fs->acc, rq, tgu__sent_pending, s);
    if (rc != 0) {
        free(s);
        file_sent(fs, rc, NULL,
                  rc == UV_ENOTCONN ? "the Telegram account is not signed in" : uv_strerror(rc));
    }
}

int tgu__send_file(void *impl, int64_t chat, int fd, const char *caption, const char *filename,
                   int64_t topic, int64_t reply_to, connector_cb cb, void *data)
{
    tgu_t *u = impl;
    tgu_account_t *acc = tgu__default(u);
    file_send_t *fs = acc && !u->files_stopping ? calloc(1, sizeof *fs) : NULL;
    if (fs == NULL) {
        close(fd);
        return acc == NULL ? UV_ENOTCONN : u->files_stopping ? UV_ECANCELED : UV_ENOMEM;
    }
    *fs = (file_send_t){.u = u,
                        .acc = acc,
                        .fd = fd,
                        .chat = chat,
                        .topic = topic,
                        .reply_to = reply_to,
                        .caption = caption ? strdup(caption) : NULL,
                        .cb = cb,
                        .data = data};
    send_name(filename, fs->name, sizeof fs->name);
    fs->work.data = fs;
    int rc = caption && fs->caption == NULL
                 ? UV_ENOMEM
                 : uv_queue_work(u->loop, &fs->work, link_work, link_after);
    if (rc != 0) {
        free(fs->caption);
        free(fs);
        close(fd);
        return rc;
    }
    u->files_links++;
    return 0;
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
    uint64_t expect;        /* the size store_work checks (its own copy: total moves on the loop) */
    bool storing;           /* on the thread pool: updateFile no longer counts */
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
    files_maybe_closed(u);
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
    if (status == UV_ECANCELED || f->u->files_stopping) {
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
    if (f->expect > 0 && size != f->expect) {
        snprintf(f->error, sizeof f->error, "TDLib's file has %llu bytes of the %llu the file has",
                 (unsigned long long)size, (unsigned long long)f->expect);
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
    if (status == UV_ETIMEDOUT && f->bytes > f->bytes_at_ask && !f->u->files_stopping) {
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
    f->expect = f->total;
    f->storing = true;
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
    if (f->u->files_stopping) {
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
    if (u->files_stopping)
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

void tgu__files_update(tgu_account_t *acc, json_t *file)
{
    tgu_t *u = acc->u;
    json_int_t id = json_integer_value(json_object_get(file, "id"));
    for (queue_node_t *q = queue_head(&u->fetches); q != &u->fetches; q = q->next) {
        tgu_fetch_t *f = queue_entry(q, tgu_fetch_t, node);
        /* File ids are a client's own: only this account's downloads. */
        if (f->acc != acc || f->storing || f->file_id == 0 || f->file_id != id)
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
    u->files_stopping = true; /* the downloads stop as their clients close */
    u->files_closed = cb;
    files_maybe_closed(u);
}
