/* follow_dir: a folder of transcripts followed while serving (see
 * follow_dir.h). States: LOCKING (asking for the folder's lock) ->
 * FOLLOWING (watching; a scan, then an import of what changed, one at a
 * time) -> back to LOCKING when the lock is lost; STOPPING at the end. A
 * finished import is freed at the next scan or at free, never inside its
 * own callback. */
#include "import/follow_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/lock.h"
#include "util/log.h"

typedef enum {
    FD_LOCKING = 0, /* asking for the lock; nothing watched */
    FD_FOLLOWING,   /* the lock is held: watching and scanning */
    FD_STOPPING,    /* import_follow_dir_stop: closing */
} fd_state_t;

typedef struct watch_s {
    uv_fs_event_t ev;
    struct import_follow_dir_s *w;
    char *rel; /* "" for the root */
} watch_t;

struct import_follow_dir_s {
    uv_loop_t *loop;
    const importer_def_t *def;
    importer_env_t env;
    const char *tag;
    char path[PATH_MAX];
    fd_state_t state;
    pg_lock_t *lock;
    bool lock_closed;
    uv_timer_t rescan, debounce;
    int timers_open;
    uint64_t rescan_ms;
    watch_t *watches[FOLLOW_DIR_MAX_WATCHES];
    int nwatches, watches_open;
    bool watch_full_said;
    /* the scan on the thread pool and what it saw */
    bool scanning, dirty;
    uv_work_t work;
    follow_dir_file_t *seen;
    size_t nseen;
    char **dirs;
    size_t ndirs;
    int scan_error;
    /* the files as last imported, and as the import in flight will leave them */
    follow_dir_file_t *known, *pending;
    size_t nknown, npending;
    char **files; /* env.files of the import in flight */
    size_t nfiles;
    importer_t *imp, *finished;
    bool failing;
};

/* ---- files ------------------------------------------------------------------------ */

static void files_free(follow_dir_file_t *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(f[i].rel);
    free(f);
}

static void names_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static int file_cmp(const void *a, const void *b)
{
    return strcmp(((const follow_dir_file_t *)a)->rel, ((const follow_dir_file_t *)b)->rel);
}

size_t follow_dir__changed(const follow_dir_file_t *before, size_t nbefore,
                           const follow_dir_file_t *now, size_t nnow, size_t *changed)
{
    size_t n = 0, j = 0;
    for (size_t i = 0; i < nnow; i++) {
        while (j < nbefore && strcmp(before[j].rel, now[i].rel) < 0)
            j++;
        const follow_dir_file_t *b =
            j < nbefore && strcmp(before[j].rel, now[i].rel) == 0 ? &before[j] : NULL;
        if (b == NULL || b->size != now[i].size || b->mtime_ns != now[i].mtime_ns ||
            b->ino != now[i].ino || b->dev != now[i].dev)
            changed[n++] = i;
    }
    return n;
}

/* ---- the scan (thread pool) ------------------------------------------------------- */

static bool is_jsonl(const char *name)
{
    size_t n = strlen(name);
    return n > 6 && strcmp(name + n - 6, ".jsonl") == 0;
}

typedef struct {
    follow_dir_file_t *files;
    size_t nfiles, cap;
    char **dirs;
    size_t ndirs, dcap;
} scan_t;

static int push_file(scan_t *s, const char *rel, const struct stat *st)
{
    if (s->nfiles == FOLLOW_DIR_MAX_FILES)
        return 0;
    if (s->nfiles == s->cap) {
        size_t n = s->cap ? s->cap * 2 : 64;
        follow_dir_file_t *f = realloc(s->files, n * sizeof *f);
        if (f == NULL)
            return UV_ENOMEM;
        s->files = f;
        s->cap = n;
    }
    follow_dir_file_t *f = &s->files[s->nfiles];
    if ((f->rel = strdup(rel)) == NULL)
        return UV_ENOMEM;
    f->size = (int64_t)st->st_size;
    f->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    f->dev = (uint64_t)st->st_dev;
    f->ino = (uint64_t)st->st_ino;
    s->nfiles++;
    return 0;
}

static int push_dir(scan_t *s, const char *rel)
{
    if (s->ndirs == FOLLOW_DIR_MAX_WATCHES)
        return 0;
    if (s->ndirs == s->dcap) {
        size_t n = s->dcap ? s->dcap * 2 : 16;
        char **d = realloc(s->dirs, n * sizeof *d);
        if (d == NULL)
            return UV_ENOMEM;
        s->dirs = d;
        s->dcap = n;
    }
    if ((s->dirs[s->ndirs] = strdup(rel)) == NULL)
        return UV_ENOMEM;
    s->ndirs++;
    return 0;
}

/* Walks the folder open as fd (rel below the root; depth folders down),
 * without following a symbolic link: lstat's view of every entry under
 * the folder's descriptor. Closes fd. */
static int walk(scan_t *s, int fd, const char *rel, int depth)
{
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        int e = errno;
        close(fd);
        return -e;
    }
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char sub[PATH_MAX];
        int n = snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
        if (n < 0 || (size_t)n >= sizeof sub)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone since the listing */
        if (S_ISREG(st.st_mode) && is_jsonl(de->d_name)) {
            rc = push_file(s, sub, &st);
        } else if (S_ISDIR(st.st_mode) && depth < FOLLOW_DIR_DEPTH) {
            int cfd = openat(dirfd(d), de->d_name,
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
            if (cfd < 0)
                continue;
            if ((rc = push_dir(s, sub)) == 0)
                rc = walk(s, cfd, sub, depth + 1);
            else
                close(cfd);
        }
    }
    closedir(d);
    return rc;
}

static void scan_work(uv_work_t *req)
{
    import_follow_dir_t *w = req->data;
    scan_t s = {0};
    /* The root itself may be a symbolic link (the user's setting). */
    int fd = open(w->path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    int rc = fd < 0 ? -errno : walk(&s, fd, "", 1);
    if (rc == 0 && s.nfiles > 1)
        qsort(s.files, s.nfiles, sizeof *s.files, file_cmp);
    if (rc != 0) {
        files_free(s.files, s.nfiles);
        names_free(s.dirs, s.ndirs);
        s = (scan_t){0};
    }
    w->scan_error = rc;
    w->seen = s.files;
    w->nseen = s.nfiles;
    w->dirs = s.dirs;
    w->ndirs = s.ndirs;
}

/* ---- watches ------------------------------------------------------------------------ */

static void scan_soon(import_follow_dir_t *w);

static void watch_closed(uv_handle_t *h)
{
    watch_t *wt = h->data;
    wt->w->watches_open--;
    free(wt->rel);
    free(wt);
}

static void on_event(uv_fs_event_t *ev, const char *filename, int events, int status)
{
    (void)filename;
    (void)events;
    watch_t *wt = ev->data;
    if (status != 0)
        return; /* the folder went away: the rescan sees it */
    scan_soon(wt->w);
}

static bool watched(const import_follow_dir_t *w, const char *rel)
{
    for (int i = 0; i < w->nwatches; i++)
        if (strcmp(w->watches[i]->rel, rel) == 0)
            return true;
    return false;
}

/* Watches the folder rel below the root (at most FOLLOW_DIR_MAX_WATCHES;
 * past that the rescan alone finds what changes there). */
static void watch_add(import_follow_dir_t *w, const char *rel)
{
    if (watched(w, rel))
        return;
    if (w->nwatches == FOLLOW_DIR_MAX_WATCHES) {
        if (!w->watch_full_said)
            log_warn(w->tag, "%s: more than %d folders; the others are checked every %llu s",
                     w->path, FOLLOW_DIR_MAX_WATCHES, (unsigned long long)(w->rescan_ms / 1000));
        w->watch_full_said = true;
        return;
    }
    char full[PATH_MAX * 2];
    snprintf(full, sizeof full, "%s%s%s", w->path, rel[0] ? "/" : "", rel);
    watch_t *wt = calloc(1, sizeof *wt);
    if (wt == NULL || (wt->rel = strdup(rel)) == NULL) {
        free(wt);
        return;
    }
    wt->w = w;
    if (uv_fs_event_init(w->loop, &wt->ev) != 0) {
        free(wt->rel);
        free(wt);
        return;
    }
    wt->ev.data = wt;
    w->watches_open++;
    w->watches[w->nwatches++] = wt;
    int rc = uv_fs_event_start(&wt->ev, on_event, full, 0);
    if (rc != 0)
        log_debug(w->tag, "%s: not watched (%s); checked every %llu s", full, uv_strerror(rc),
                  (unsigned long long)(w->rescan_ms / 1000));
}

static void watches_close(import_follow_dir_t *w)
{
    for (int i = 0; i < w->nwatches; i++)
        uv_close((uv_handle_t *)&w->watches[i]->ev, watch_closed);
    w->nwatches = 0;
    w->watch_full_said = false;
}

/* ---- imports ------------------------------------------------------------------------ */

static void scan_start(import_follow_dir_t *w);

static void imported(importer_t *imp, int status)
{
    import_follow_dir_t *w = importer_data(imp);
    if (status == 0) {
        files_free(w->known, w->nknown);
        w->known = w->pending;
        w->nknown = w->npending;
        importer_log_changes(imp, w->tag, w->path);
        w->failing = false;
    } else {
        /* known stays: the next scan tries those files again. */
        files_free(w->pending, w->npending);
        if (status != UV_ECANCELED) {
            if (!w->failing)
                log_warn(w->tag, "import of %s failed (tried again at every change): %s", w->path,
                         importer_error(imp));
            w->failing = true;
        }
    }
    w->pending = NULL;
    w->npending = 0;
    w->finished = imp; /* freed at the next scan or at free */
    w->imp = NULL;
    if (w->dirty && w->state == FD_FOLLOWING)
        scan_soon(w);
}

/* Imports the files of w->seen at the indexes given (w->seen becomes
 * pending: known once the import succeeds). */
static void import_changed(import_follow_dir_t *w, const size_t *idx, size_t n)
{
    names_free(w->files, w->nfiles);
    w->files = calloc(n, sizeof *w->files);
    w->nfiles = 0;
    for (size_t i = 0; w->files && i < n; i++)
        if ((w->files[w->nfiles] = strdup(w->seen[idx[i]].rel)) != NULL)
            w->nfiles++;
    w->pending = w->seen;
    w->npending = w->nseen;
    w->seen = NULL;
    w->nseen = 0;
    importer_env_t env = w->env;
    env.files = (const char *const *)w->files;
    env.nfiles = w->nfiles;
    char err[PATH_MAX + 64];
    int rc =
        w->files ? importer_start(w->def, &env, imported, w, &w->imp, err, sizeof err) : UV_ENOMEM;
    if (rc != 0) {
        w->imp = NULL;
        files_free(w->pending, w->npending);
        w->pending = NULL;
        w->npending = 0;
        log_warn(w->tag, "import of %s not started: %s", w->path,
                 rc == UV_ENOMEM ? "out of memory" : err);
    }
}

static void scan_after(uv_work_t *req, int status)
{
    import_follow_dir_t *w = req->data;
    w->scanning = false;
    if (status != 0 || w->state != FD_FOLLOWING) {
        files_free(w->seen, w->nseen);
        names_free(w->dirs, w->ndirs);
        w->seen = NULL;
        w->dirs = NULL;
        w->nseen = w->ndirs = 0;
        return;
    }
    if (w->scan_error != 0) {
        if (!w->failing)
            log_warn(w->tag, "%s: %s (looked at again every %llu s)", w->path,
                     uv_strerror(w->scan_error), (unsigned long long)(w->rescan_ms / 1000));
        w->failing = true;
        return;
    }
    for (size_t i = 0; i < w->ndirs; i++)
        watch_add(w, w->dirs[i]);
    names_free(w->dirs, w->ndirs);
    w->dirs = NULL;
    w->ndirs = 0;
    size_t *idx = w->nseen ? malloc(w->nseen * sizeof *idx) : NULL;
    size_t n = idx ? follow_dir__changed(w->known, w->nknown, w->seen, w->nseen, idx) : 0;
    if (n > 0) {
        import_changed(w, idx, n);
    } else if (idx != NULL || w->nseen == 0) {
        files_free(w->known, w->nknown);
        w->known = w->seen;
        w->nknown = w->nseen;
        w->seen = NULL;
        w->nseen = 0;
    } else { /* out of memory: the next scan tries again */
        files_free(w->seen, w->nseen);
        w->seen = NULL;
        w->nseen = 0;
    }
    free(idx);
    if (w->dirty && w->imp == NULL)
        scan_soon(w);
}

static void scan_start(import_follow_dir_t *w)
{
    if (w->finished) {
        importer_free(w->finished);
        w->finished = NULL;
    }
    if (w->state != FD_FOLLOWING || w->scanning || w->imp != NULL) {
        w->dirty = true; /* scanned again once the one in flight ends */
        return;
    }
    w->dirty = false;
    w->scanning = true;
    w->work.data = w;
    if (uv_queue_work(w->loop, &w->work, scan_work, scan_after) != 0)
        w->scanning = false;
}

static void on_debounce(uv_timer_t *t)
{
    scan_start(t->data);
}

static void on_rescan(uv_timer_t *t)
{
    scan_start(t->data);
}

/* An event: a scan FOLLOW_DIR_DEBOUNCE_MS from now (events of one write
 * come together), or after the scan or import in flight. */
static void scan_soon(import_follow_dir_t *w)
{
    w->dirty = true;
    if (w->state != FD_FOLLOWING || w->scanning || w->imp != NULL)
        return;
    if (!uv_is_active((uv_handle_t *)&w->debounce))
        uv_timer_start(&w->debounce, on_debounce, FOLLOW_DIR_DEBOUNCE_MS, 0);
}

/* ---- the lock ----------------------------------------------------------------------- */

static void lock_changed(pg_lock_t *l, bool held)
{
    import_follow_dir_t *w = pg_lock_data(l);
    if (w->state == FD_STOPPING)
        return;
    if (held && w->state == FD_LOCKING) {
        w->state = FD_FOLLOWING;
        log_info(w->tag, "following %s (changes within %d ms; every file checked every %llu s)",
                 w->path, FOLLOW_DIR_DEBOUNCE_MS, (unsigned long long)(w->rescan_ms / 1000));
        watch_add(w, "");
        uv_timer_start(&w->rescan, on_rescan, 0, w->rescan_ms);
    } else if (!held && w->state == FD_FOLLOWING) {
        /* Another daemon follows it now (or will, once this one's session
         * is back): stop watching; what was read is in the store. */
        w->state = FD_LOCKING;
        log_info(w->tag, "%s: another daemon follows it; this one waits", w->path);
        uv_timer_stop(&w->rescan);
        uv_timer_stop(&w->debounce);
        watches_close(w);
        files_free(w->known, w->nknown);
        w->known = NULL;
        w->nknown = 0;
        if (w->imp != NULL)
            importer_stop(w->imp);
    } else if (!held) {
        log_info(w->tag, "%s: another daemon follows it; this one takes over if it stops", w->path);
    }
}

static void lock_closed(void *data)
{
    import_follow_dir_t *w = data;
    w->lock = NULL;
    w->lock_closed = true;
}

/* ---- life --------------------------------------------------------------------------- */

static void timer_closed(uv_handle_t *h)
{
    import_follow_dir_t *w = h->data;
    w->timers_open--;
}

int import_follow_dir_start(const importer_def_t *def, const importer_env_t *env,
                            const pg_conninfo_t *conninfo, uint32_t connect_timeout_ms,
                            uint64_t rescan_ms, import_follow_dir_t **out, char *err, size_t errcap)
{
    if (!def->follow_dir || rescan_ms == 0) {
        snprintf(err, errcap, "%s cannot be followed", def->name);
        return UV_EINVAL;
    }
    if (strlen(env->path) >= PATH_MAX - 8) {
        snprintf(err, errcap, "%s: path too long", env->path);
        return UV_ENAMETOOLONG;
    }
    /* The lock names the folder as it is, whatever path leads to it. */
    char real[PATH_MAX];
    if (realpath(env->path, real) == NULL) {
        int e = errno;
        snprintf(err, errcap, "%s: %s", env->path, strerror(e));
        return -e;
    }
    import_follow_dir_t *w = calloc(1, sizeof *w);
    if (w == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    w->loop = env->loop;
    w->def = def;
    w->tag = def->name;
    snprintf(w->path, sizeof w->path, "%s", env->path);
    w->env = *env;
    w->env.path = w->path;
    w->env.progress = false;
    w->rescan_ms = rescan_ms;
    char key[PATH_MAX + 64];
    snprintf(key, sizeof key, "follow:%s:%s", def->name, real);
    /* The lock's first answer comes from the loop, never from here. */
    int rc = pg_lock_start(w->loop, conninfo, key, connect_timeout_ms, lock_changed, w, &w->lock,
                           err, errcap);
    if (rc != 0) {
        free(w);
        return rc;
    }
    uv_timer_init(w->loop, &w->rescan);
    uv_timer_init(w->loop, &w->debounce);
    w->rescan.data = w->debounce.data = w;
    w->timers_open = 2;
    *out = w;
    return 0;
}

void import_follow_dir_stop(import_follow_dir_t *w)
{
    if (w->state == FD_STOPPING)
        return;
    w->state = FD_STOPPING;
    uv_close((uv_handle_t *)&w->rescan, timer_closed);
    uv_close((uv_handle_t *)&w->debounce, timer_closed);
    watches_close(w);
    if (w->imp != NULL)
        importer_stop(w->imp);
    if (w->lock != NULL)
        pg_lock_close(w->lock, lock_closed, w);
}

bool import_follow_dir_idle(const import_follow_dir_t *w)
{
    return w->state == FD_STOPPING && w->timers_open == 0 && w->watches_open == 0 && !w->scanning &&
           w->imp == NULL && w->lock_closed;
}

void import_follow_dir_free(import_follow_dir_t *w)
{
    if (w == NULL)
        return;
    importer_free(w->finished);
    files_free(w->known, w->nknown);
    files_free(w->pending, w->npending);
    files_free(w->seen, w->nseen);
    names_free(w->dirs, w->ndirs);
    names_free(w->files, w->nfiles);
    free(w);
}
