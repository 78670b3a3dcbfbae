/* chatwise_watch: re-imports ChatWise's app.db when it changes (see
 * chatwise_watch.h). States: waiting (timer armed) -> stating (db, then
 * -wal) -> importing -> waiting. A finished import is freed at the next
 * tick or at free, never inside its own callback. */
#include "sync/chatwise_watch.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive/chatwise_import.h"
#include "config.h"
#include "util/log.h"

#define CW_WATCH_TAG "chatwise"

typedef struct {
    int64_t size, mtime_sec, mtime_nsec;
    bool exists, regular;
} file_sig_t;

struct chatwise_watch_s {
    uv_loop_t *loop;
    pg_pool_t *pool;
    char path[PATH_MAX];     /* as configured */
    char db_path[PATH_MAX];  /* the file stated: path, or path/app.db for a folder */
    char wal_path[PATH_MAX]; /* db_path-wal */
    uint64_t interval_ms;
    uv_timer_t timer;
    uv_fs_t req;
    bool stat_busy, timer_closed, stopping;
    int stat_step; /* 0: the path, 1: the db file, 2: the -wal */
    file_sig_t now[2], last[2];
    bool imported_once;
    bool failing; /* the last import failed (logged once) */
    bool refused; /* not a regular file (logged once) */
    chatwise_import_t *imp, *finished;
};

static void check(uv_timer_t *t);

static void timer_closed(uv_handle_t *h)
{
    chatwise_watch_t *w = h->data;
    w->timer_closed = true;
}

static void imported(chatwise_import_t *imp, int status)
{
    chatwise_watch_t *w = chatwise_import_data(imp);
    chatwise_import_stats_t st;
    chatwise_import_get_stats(imp, &st);
    if (status == 0) {
        memcpy(w->last, w->now, sizeof w->last);
        w->imported_once = true;
        if (st.chats_written || st.written)
            log_info(CW_WATCH_TAG, "%s: %llu chat(s) and %llu message(s) new or changed",
                     w->db_path, (unsigned long long)st.chats_written,
                     (unsigned long long)st.written);
        w->failing = false;
    } else if (status != UV_ECANCELED) {
        /* last stays: the next check tries again; said once per failure. */
        if (!w->failing)
            log_warn(CW_WATCH_TAG, "import of %s failed (tried again at every check): %s", w->path,
                     chatwise_import_error(imp));
        else
            log_debug(CW_WATCH_TAG, "import of %s failed again: %s", w->path,
                      chatwise_import_error(imp));
        w->failing = true;
    }
    w->finished = imp; /* freed at the next tick or at free */
    w->imp = NULL;
}

static void start_import(chatwise_watch_t *w)
{
    char err[PATH_MAX + 64];
    int rc = chatwise_import_start(w->loop, w->pool, w->path, false, imported, w, &w->imp, err,
                                   sizeof err);
    if (rc != 0) {
        w->imp = NULL;
        log_warn(CW_WATCH_TAG, "import of %s not started: %s", w->path, err);
    }
}

static void stat_done(uv_fs_t *req)
{
    chatwise_watch_t *w = req->data;
    bool ok = req->result == 0;
    uv_stat_t s = req->statbuf;
    uv_fs_req_cleanup(req);
    w->stat_busy = false;
    if (w->stopping)
        return;
    if (w->stat_step == 0) {
        /* A folder holds app.db. */
        if (ok && (s.st_mode & S_IFMT) == S_IFDIR)
            snprintf(w->db_path, sizeof w->db_path, "%.*s/app.db", PATH_MAX - 16, w->path);
        else
            snprintf(w->db_path, sizeof w->db_path, "%s", w->path);
        snprintf(w->wal_path, sizeof w->wal_path, "%.*s-wal", PATH_MAX - 8, w->db_path);
        w->stat_step = 1;
    } else {
        file_sig_t *sig = &w->now[w->stat_step - 1];
        sig->exists = ok;
        sig->regular = ok && (s.st_mode & S_IFMT) == S_IFREG;
        sig->size = ok ? (int64_t)s.st_size : 0;
        sig->mtime_sec = ok ? (int64_t)s.st_mtim.tv_sec : 0;
        sig->mtime_nsec = ok ? (int64_t)s.st_mtim.tv_nsec : 0;
        w->stat_step++;
    }
    if (w->stat_step <= 2) {
        w->stat_busy = true;
        w->req.data = w;
        int rc =
            uv_fs_stat(w->loop, &w->req, w->stat_step == 1 ? w->db_path : w->wal_path, stat_done);
        if (rc != 0)
            w->stat_busy = false;
        return;
    }
    if (!w->now[0].exists) {
        if (!w->imported_once || w->last[0].exists)
            log_warn(CW_WATCH_TAG, "%s: no such file (checked again in %llu s)", w->db_path,
                     (unsigned long long)(w->interval_ms / 1000));
        memcpy(w->last, w->now, sizeof w->last);
        w->imported_once = true;
        return;
    }
    /* A FIFO or a device is never opened (SQLite would block on a FIFO). */
    for (int i = 0; i < 2; i++) {
        if (w->now[i].exists && !w->now[i].regular) {
            if (!w->refused)
                log_warn(CW_WATCH_TAG,
                         "%s: not a regular file; not imported (checked again every %llu s)",
                         i == 0 ? w->db_path : w->wal_path,
                         (unsigned long long)(w->interval_ms / 1000));
            w->refused = true;
            return;
        }
    }
    w->refused = false;
    if (!w->imported_once || w->failing || memcmp(w->now, w->last, sizeof w->now) != 0)
        start_import(w);
}

static void check(uv_timer_t *t)
{
    chatwise_watch_t *w = t->data;
    if (w->finished) {
        chatwise_import_free(w->finished);
        w->finished = NULL;
    }
    if (w->stopping || w->stat_busy || w->imp != NULL)
        return;
    memset(w->now, 0, sizeof w->now);
    w->stat_step = 0;
    w->stat_busy = true;
    w->req.data = w;
    if (uv_fs_stat(w->loop, &w->req, w->path, stat_done) != 0)
        w->stat_busy = false;
}

int chatwise_watch_start(uv_loop_t *loop, pg_pool_t *pool, const char *path, int interval_s,
                         chatwise_watch_t **out)
{
    if (strlen(path) >= PATH_MAX - 16)
        return UV_ENAMETOOLONG;
    chatwise_watch_t *w = calloc(1, sizeof *w);
    if (w == NULL)
        return UV_ENOMEM;
    w->loop = loop;
    w->pool = pool;
    snprintf(w->path, sizeof w->path, "%s", path);
    w->interval_ms =
        (uint64_t)(interval_s > 0 ? interval_s : CONFIG_DEFAULT_CHATWISE_INTERVAL_S) * 1000;
    int rc = uv_timer_init(loop, &w->timer);
    if (rc != 0) {
        free(w);
        return rc;
    }
    w->timer.data = w;
    uv_timer_start(&w->timer, check, 0, w->interval_ms);
    log_info(CW_WATCH_TAG, "following %s (checked every %d s)", path, (int)(w->interval_ms / 1000));
    *out = w;
    return 0;
}

void chatwise_watch_stop(chatwise_watch_t *w)
{
    if (w->stopping)
        return;
    w->stopping = true;
    uv_close((uv_handle_t *)&w->timer, timer_closed);
    if (w->imp != NULL)
        chatwise_import_stop(w->imp);
}

bool chatwise_watch_idle(const chatwise_watch_t *w)
{
    return w->timer_closed && !w->stat_busy && w->imp == NULL;
}

void chatwise_watch_free(chatwise_watch_t *w)
{
    if (w == NULL)
        return;
    chatwise_import_free(w->finished);
    free(w);
}
