/* follow: imports a followable source again when its file changes (see
 * follow.h). States: waiting (timer armed) -> stating (the path, its file,
 * then the companion) -> importing -> waiting. A finished import is freed
 * at the next tick or at free, never inside its own callback. */
#include "import/follow.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

typedef struct {
    int64_t size, mtime_sec, mtime_nsec;
    bool exists, regular;
} file_sig_t;

struct import_follow_s {
    uv_loop_t *loop;
    const importer_def_t *def;
    importer_env_t env;      /* env.path is path */
    const char *tag;         /* the source's name */
    char path[PATH_MAX];     /* as configured */
    char db_path[PATH_MAX];  /* the file stated: path, or path/follow_file for a folder */
    char wal_path[PATH_MAX]; /* db_path + follow_companion, or "" */
    uint64_t interval_ms;
    uv_timer_t timer;
    uv_fs_t req;
    bool stat_busy, timer_closed, stopping;
    int stat_step; /* 0: the path, 1: the db file, 2: the -wal */
    file_sig_t now[2], last[2];
    bool imported_once;
    bool failing; /* the last import failed (logged once) */
    bool refused; /* not a regular file (logged once) */
    importer_t *imp, *finished;
};

static void check(uv_timer_t *t);

static void timer_closed(uv_handle_t *h)
{
    import_follow_t *w = h->data;
    w->timer_closed = true;
}

static void imported(importer_t *imp, int status)
{
    import_follow_t *w = importer_data(imp);
    if (status == 0) {
        memcpy(w->last, w->now, sizeof w->last);
        w->imported_once = true;
        importer_log_changes(imp, w->tag, w->db_path);
        w->failing = false;
    } else if (status != UV_ECANCELED) {
        /* last stays: the next check tries again; said once per failure. */
        if (!w->failing)
            log_warn(w->tag, "import of %s failed (tried again at every check): %s", w->path,
                     importer_error(imp));
        else
            log_debug(w->tag, "import of %s failed again: %s", w->path, importer_error(imp));
        w->failing = true;
    }
    w->finished = imp; /* freed at the next tick or at free */
    w->imp = NULL;
}

static void start_import(import_follow_t *w)
{
    char err[PATH_MAX + 64];
    int rc = importer_start(w->def, &w->env, imported, w, &w->imp, err, sizeof err);
    if (rc != 0) {
        w->imp = NULL;
        log_warn(w->tag, "import of %s not started: %s", w->path, err);
    }
}

static void stat_done(uv_fs_t *req)
{
    import_follow_t *w = req->data;
    bool ok = req->result == 0;
    uv_stat_t s = req->statbuf;
    uv_fs_req_cleanup(req);
    w->stat_busy = false;
    if (w->stopping)
        return;
    if (w->stat_step == 0) {
        /* A folder holds the source's file. */
        if (ok && (s.st_mode & S_IFMT) == S_IFDIR)
            snprintf(w->db_path, sizeof w->db_path, "%.*s/%s", PATH_MAX - 80, w->path,
                     w->def->follow_file);
        else
            snprintf(w->db_path, sizeof w->db_path, "%s", w->path);
        if (w->def->follow_companion)
            snprintf(w->wal_path, sizeof w->wal_path, "%.*s%s",
                     (int)(sizeof w->wal_path - strlen(w->def->follow_companion) - 1), w->db_path,
                     w->def->follow_companion);
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
    if (w->stat_step == 2 && w->wal_path[0] == '\0')
        w->stat_step = 3; /* no companion: it stays "missing" */
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
            log_warn(w->tag, "%s: no such file (checked again in %llu s)", w->db_path,
                     (unsigned long long)(w->interval_ms / 1000));
        memcpy(w->last, w->now, sizeof w->last);
        w->imported_once = true;
        return;
    }
    /* A FIFO or a device is never opened (SQLite would block on a FIFO). */
    for (int i = 0; i < 2; i++) {
        if (w->now[i].exists && !w->now[i].regular) {
            if (!w->refused)
                log_warn(
                    w->tag, "%s: not a regular file; not imported (checked again every %llu s)",
                    i == 0 ? w->db_path : w->wal_path, (unsigned long long)(w->interval_ms / 1000));
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
    import_follow_t *w = t->data;
    if (w->finished) {
        importer_free(w->finished);
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

int import_follow_start(const importer_def_t *def, const importer_env_t *env, int interval_s,
                        import_follow_t **out)
{
    const char *path = env->path;
    if (def->follow_file == NULL || interval_s <= 0)
        return UV_EINVAL;
    if (strlen(path) >= PATH_MAX - 80)
        return UV_ENAMETOOLONG;
    import_follow_t *w = calloc(1, sizeof *w);
    if (w == NULL)
        return UV_ENOMEM;
    uv_loop_t *loop = env->loop;
    w->loop = loop;
    w->def = def;
    w->tag = def->name;
    snprintf(w->path, sizeof w->path, "%s", path);
    w->env = *env;
    w->env.path = w->path;
    w->env.progress = false;
    w->interval_ms = (uint64_t)interval_s * 1000;
    int rc = uv_timer_init(loop, &w->timer);
    if (rc != 0) {
        free(w);
        return rc;
    }
    w->timer.data = w;
    uv_timer_start(&w->timer, check, 0, w->interval_ms);
    log_info(w->tag, "following %s (checked every %d s)", path, (int)(w->interval_ms / 1000));
    *out = w;
    return 0;
}

void import_follow_stop(import_follow_t *w)
{
    if (w->stopping)
        return;
    w->stopping = true;
    uv_close((uv_handle_t *)&w->timer, timer_closed);
    if (w->imp != NULL)
        importer_stop(w->imp);
}

bool import_follow_idle(const import_follow_t *w)
{
    return w->timer_closed && !w->stat_busy && w->imp == NULL;
}

void import_follow_free(import_follow_t *w)
{
    if (w == NULL)
        return;
    importer_free(w->finished);
    free(w);
}
