/* media: mediaDownload: copies a message's stored file under the export
 * root (on the thread pool: the destination is resolved there too, walked
 * from the root without following a symbolic link, and written to a new
 * file renamed into place). A file not stored yet is downloaded first by
 * a connector that can (with progress), then copied. */
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

#include "archive/media_store.h"
#include "toolsets/telegram/tg_toolset.h"
#include "util/beneath.h"

typedef struct {
    uv_work_t work;
    mcp_call_t *call;
    char root[PATH_MAX];        /* the media store */
    char export_root[PATH_MAX]; /* where the copy may go */
    char out[PATH_MAX];         /* outputPath as given, or "" */
    char name[256];             /* the file's own name, one component */
    char sha256[65];
    char dst[PATH_MAX * 2]; /* where the copy went, for the answer */
    char mime[128];
    int64_t bytes;
    int status;
    char error[PATH_MAX * 2 + 256];
} download_t;

/* On the thread pool: the directory the copy goes into, under the export
 * root (created if missing), walked from the root without following a
 * symbolic link (util/beneath.h); relative paths are taken from the root,
 * absolute ones must be inside it; ".." is refused; a path naming a
 * directory (or ending in '/') gets the file's own name. Returns the
 * directory's descriptor with the name in last, or -1 with d->error. */
static int output_dir(download_t *d, char *last, size_t cap)
{
    if (mkdir(d->export_root, 0755) != 0 && errno != EEXIST) {
        snprintf(d->error, sizeof d->error, "export root %s: %s", d->export_root, strerror(errno));
        return -1;
    }
    const char *out = d->out[0] ? d->out : d->name;
    size_t n = strlen(out);
    bool want_dir = n > 0 && out[n - 1] == '/';
    int dir = beneath_parent(d->export_root, out, last, cap);
    if (dir == -EISDIR) {
        /* The root itself. */
        dir = open(d->export_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
            dir = -errno;
        else
            snprintf(last, cap, "%s", d->name);
        want_dir = false;
    }
    if (dir < 0) {
        if (dir == -EPERM)
            snprintf(d->error, sizeof d->error,
                     "outputPath: \"..\" is not allowed; give a path inside %s", d->export_root);
        else if (dir == -EXDEV || dir == -ELOOP || dir == -ENOTDIR)
            snprintf(d->error, sizeof d->error,
                     "outputPath: %s is outside the export root %s (give a path inside it; "
                     "symbolic links are not followed)",
                     out, d->export_root);
        else if (dir == -ENOENT)
            snprintf(d->error, sizeof d->error,
                     "outputPath: a directory of %s does not exist in the export root %s; create "
                     "it first or give another path",
                     out, d->export_root);
        else
            snprintf(d->error, sizeof d->error, "outputPath: %s: %s", out, strerror(-dir));
        return -1;
    }
    struct stat st;
    bool is_dir = fstatat(dir, last, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    if (want_dir && !is_dir) {
        snprintf(d->error, sizeof d->error,
                 "outputPath: directory %s does not exist in the export root %s", out,
                 d->export_root);
        close(dir);
        return -1;
    }
    if (is_dir) {
        int sub = openat(dir, last, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int err = errno;
        close(dir);
        if (sub < 0) {
            snprintf(d->error, sizeof d->error, "outputPath: %s: %s", out, strerror(err));
            return -1;
        }
        dir = sub;
        snprintf(last, cap, "%s", d->name);
    }
    return dir;
}

/* On the thread pool: the copy is written to a new file beside the
 * destination (O_CREAT | O_EXCL | O_NOFOLLOW: never through a link, never
 * into a FIFO), verified, then renamed over the destination name, which
 * replaces a name and never writes into what it named (a hard link to a
 * file elsewhere stays untouched). */
static void download_work(uv_work_t *w)
{
    download_t *d = w->data;
    char last[NAME_MAX + 1];
    d->status = -1;
    int dir = output_dir(d, last, sizeof last);
    if (dir < 0)
        return;
    char where[PATH_MAX];
    char fdpath[64];
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", dir);
    ssize_t wl = readlink(fdpath, where, sizeof where - 1);
    where[wl > 0 ? wl : 0] = '\0';
    snprintf(d->dst, sizeof d->dst, "%s/%s", wl > 0 ? where : d->export_root, last);
    struct stat st;
    if (fstatat(dir, last, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(d->error, sizeof d->error,
                 S_ISLNK(st.st_mode) ? "outputPath: %s is a symbolic link; choose another name"
                                     : "outputPath: %s exists and is not a regular file; choose "
                                       "another name",
                 d->dst);
        close(dir);
        return;
    }
    char tmp[96];
    snprintf(tmp, sizeof tmp, ".parley-download-%d-%lx", (int)getpid(),
             (unsigned long)(uintptr_t)d);
    int out = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (out < 0) {
        snprintf(d->error, sizeof d->error, "outputPath: %s: %s", d->dst, strerror(errno));
        close(dir);
        return;
    }
    uint64_t bytes = 0;
    d->status =
        media_store_get_fd(d->root, d->sha256, out, d->dst, &bytes, d->error, sizeof d->error);
    close(out);
    if (d->status == 0 && renameat(dir, tmp, dir, last) != 0) {
        d->status = -errno;
        snprintf(d->error, sizeof d->error, "outputPath: %s: %s", d->dst, strerror(errno));
    }
    if (d->status != 0)
        unlinkat(dir, tmp, 0);
    close(dir);
    d->bytes = (int64_t)bytes;
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

/* The archive's media record m (borrowed); arg is non-NULL when a file
 * not stored yet may be downloaded first. */
static void media_answer(mcp_call_t *c, json_t *m, void *arg)
{
    bool may_fetch = arg != NULL;
    tg_toolset_t *ts = tg_ts(c);
    const char *state = json_string_value(json_object_get(m, "state"));
    const char *local = json_string_value(json_object_get(m, "localPath"));
    if (may_fetch && state && strcmp(state, "done") != 0 &&
        connector_can(tg_ts_conn(ts, CONNECTOR_CAN_DOWNLOAD), CONNECTOR_CAN_DOWNLOAD) &&
        json_string_value(json_object_get(m, "exportPath")) == NULL) {
        int64_t chat = json_integer_value(json_object_get(m, "channelId"));
        int64_t msg = json_integer_value(json_object_get(m, "messageId"));
        media_fetch(c, chat, msg);
        return;
    }
    const char *sha = json_string_value(json_object_get(m, "sha256"));
    if (state && strcmp(state, "done") == 0 && local && !media_store_rel_ok(sha, local)) {
        /* The record names no file of the store: it is never followed. */
        mcp_call_finish_error(c,
                              "The media record of message %lld does not name a file of the media "
                              "store; it is not served. Download the file again (the sync or "
                              "import stores it).",
                              (long long)json_integer_value(json_object_get(m, "messageId")));
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
        return;
    }
    download_t *d = calloc(1, sizeof *d);
    if (d == NULL) {
        mcp_call_finish_error(c, "out of memory");
        return;
    }
    d->call = c;
    snprintf(d->root, sizeof d->root, "%s", ts->media_root);
    snprintf(d->sha256, sizeof d->sha256, "%s", sha);
    snprintf(d->mime, sizeof d->mime, "%s",
             json_string_value(json_object_get(m, "mimeType"))
                 ? json_string_value(json_object_get(m, "mimeType"))
                 : "");
    const char *fname = json_string_value(json_object_get(m, "fileName"));
    if (fname == NULL || fname[0] == '\0' || strchr(fname, '/') || strcmp(fname, ".") == 0 ||
        strcmp(fname, "..") == 0)
        fname = strrchr(local, '/') ? strrchr(local, '/') + 1 : local;
    snprintf(d->name, sizeof d->name, "%s", fname);
    snprintf(d->export_root, sizeof d->export_root, "%s", ts->export_root);
    const char *out = json_string_value(json_object_get(c->args, "outputPath"));
    if (out != NULL && strlen(out) >= sizeof d->out) {
        free(d);
        mcp_call_finish_error(c, "outputPath: longer than %zu bytes; give a shorter path",
                              sizeof d->out - 1);
        return;
    }
    snprintf(d->out, sizeof d->out, "%s", out ? out : "");
    d->work.data = d;
    int rc = uv_queue_work(mcp_call_loop(c), &d->work, download_work, download_after);
    if (rc != 0) {
        free(d);
        mcp_call_finish_error(c, "mediaDownload failed: %s", uv_strerror(rc));
    }
}

/* A marker for media_answer: a file not stored yet may be fetched. */
static char may_fetch_first;

/* The file is not stored yet: the connector downloads it now, with
 * progress, then the call answers from the store. */
typedef struct media_wait_s {
    mcp_call_t *call;
    void *handle;
} media_wait_t;

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
    tg_ts_then(c, c->tool->def->sql_function, NULL, media_answer, NULL);
}

static void media_fetch_cancel(mcp_call_t *c)
{
    media_wait_t *mw = c->data;
    connector_t *conn = tg_ts_conn(tg_ts(c), CONNECTOR_CAN_DOWNLOAD);
    c->data = NULL;
    c->on_cancel = NULL;
    connector_fetch_cancel(conn, mw->handle);
    free(mw);
    mcp_call_finish_error(c, "cancelled");
}

static void media_fetch(mcp_call_t *c, int64_t chat, int64_t msg)
{
    connector_t *conn = tg_ts_conn(tg_ts(c), CONNECTOR_CAN_DOWNLOAD);
    media_wait_t *mw = calloc(1, sizeof *mw);
    if (mw == NULL) {
        mcp_call_finish_error(c, "mediaDownload failed: %s", uv_strerror(UV_ENOMEM));
        return;
    }
    mw->call = c;
    int rc = connector_fetch_media(conn, chat, msg, media_progress, media_fetched, mw, &mw->handle);
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

void tg_ts_media_download(mcp_call_t *c)
{
    tg_ts_then(c, c->tool->def->sql_function, NULL, media_answer, &may_fetch_first);
}
