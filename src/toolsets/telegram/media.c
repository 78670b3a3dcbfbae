/* media: mediaDownload: copies a message's stored file under the export
 * root (on the thread pool). A file not stored yet is downloaded first by
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

typedef struct {
    uv_work_t work;
    mcp_call_t *call;
    char root[PATH_MAX]; /* the media store */
    char sha256[65];
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
    uint64_t bytes = 0;
    d->status = media_store_get(d->root, d->sha256, d->dst, &bytes, d->error, sizeof d->error);
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
        connector_can(ts->conn, CONNECTOR_CAN_DOWNLOAD) &&
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
    char name[256];
    snprintf(name, sizeof name, "%s",
             fname && !strchr(fname, '/') ? fname : strrchr(local, '/') + 1);
    char why[PATH_MAX * 2 + 256];
    const char *out = json_string_value(json_object_get(c->args, "outputPath"));
    if (resolve_output(ts->export_root, out, name, d->dst, sizeof d->dst, why, sizeof why) != 0) {
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
    connector_t *conn = tg_ts(c)->conn;
    c->data = NULL;
    c->on_cancel = NULL;
    conn->ops->fetch_cancel(conn->impl, mw->handle);
    free(mw);
    mcp_call_finish_error(c, "cancelled");
}

static void media_fetch(mcp_call_t *c, int64_t chat, int64_t msg)
{
    connector_t *conn = tg_ts(c)->conn;
    media_wait_t *mw = calloc(1, sizeof *mw);
    if (mw == NULL) {
        mcp_call_finish_error(c, "mediaDownload failed: %s", uv_strerror(UV_ENOMEM));
        return;
    }
    mw->call = c;
    int rc = conn->ops->fetch_media(conn->impl, chat, msg, media_progress, media_fetched, mw,
                                    &mw->handle);
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
