/* app_restore: `parleyd restore DIR` makes a data directory (--data-dir)
 * from a backup of `parleyd backup` (backup_manifest.h). No cluster runs
 * during it. Refused before anything is written: a data directory that
 * has a cluster (DATA_DIR/pg/data) or one of the keys already, or that a
 * parleyd uses (its embedded.lock or users.lock held). The steps, each
 * off the loop:
 *   1. the thread pool: the manifest read and checked, the copies in DIR
 *      counted and compared with it (a truncated copy is refused);
 *   2. pg_verifybackup DIR/pg: every file of the cluster's copy against
 *      PostgreSQL's own backup_manifest (checksums) and the WAL it needs;
 *   3. rm -rf DATA_DIR/pg/data.tmp (what an interrupted restore or initdb
 *      left), then cp -a DIR/pg DATA_DIR/pg/data.tmp;
 *   4. cp -a of the media store and the keys into DATA_DIR;
 *   5. as root: chown -R of DATA_DIR/pg to pg_user, who runs the cluster;
 *   6. data.tmp renamed to data (so a cluster is there only once whole);
 *      then the thread pool counts what was restored against the manifest.
 * The next `parleyd serve --data-dir DATA_DIR` starts the cluster, which
 * replays the WAL of the backup first (as after a crash). The locks are
 * held to the end, so no parleyd starts on the directory meanwhile. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/child.h"
#include "app/steps.h"
#include "app/backup_manifest.h"
#include "util/dirs.h"
#include "util/log.h"

typedef enum {
    RS_CHECK = 0, /* the manifest and the copies in DIR (thread pool) */
    RS_VERIFY,    /* pg_verifybackup */
    RS_CLEAN,     /* rm -rf data.tmp */
    RS_COPY_PG,   /* cp -a DIR/pg data.tmp */
    RS_COPY_FILES,
    RS_CHOWN,
    RS_COUNT, /* what was restored (thread pool) */
    RS_DONE,
} rs_step_t;

typedef struct restore_s {
    app_t *a;
    app_child_t child;
    uv_work_t work;
    bool working;
    bool stopped;
    rs_step_t step;
    int lock_fd, users_fd;
    bool as_root;
    long uid, gid;
    char dir[CONFIG_PATH_MAX];
    char data_dir[CONFIG_PATH_MAX];
    char pg_dir[CONFIG_PATH_MAX + 8];
    char tmp[CONFIG_PATH_MAX + 16], final[CONFIG_PATH_MAX + 16];
    char src_pg[CONFIG_PATH_MAX + 8], src_items[BACKUP_ITEMS][CONFIG_PATH_MAX + 32];
    backup_manifest_t m;
    backup_count_t pg, media;
    int work_rc;
    char err[BACKUP_ERR_MAX];
} restore_t;

static void next(restore_t *r);

/* ---- the part ---------------------------------------------------------------- */

static void restore_stop(void *obj)
{
    restore_t *r = obj;
    r->stopped = true;
    app_child_kill(&r->child);
}

static bool restore_idle(const void *obj)
{
    const restore_t *r = obj;
    return !app_child_running(&r->child) && !r->working;
}

static void child_closed(app_child_t *c)
{
    restore_t *r = c->data;
    if (r->lock_fd >= 0)
        close(r->lock_fd);
    if (r->users_fd >= 0)
        close(r->users_fd);
    r->lock_fd = r->users_fd = -1;
    if (r->a != NULL)
        app_stack_next(&r->a->stack);
    else
        free(r); /* never pushed */
}

static void restore_close(void *obj, app_stack_t *s)
{
    (void)s;
    restore_t *r = obj;
    app_child_close(&r->child, child_closed);
}

static void restore_free(void *obj)
{
    free(obj);
}

static const app_part_ops_t restore_part = {.name = "restore",
                                            .stop = restore_stop,
                                            .idle = restore_idle,
                                            .close = restore_close,
                                            .free = restore_free};

static void restore_fail(restore_t *r, const char *what, const char *why)
{
    log_error(APP_TAG, "restore: %s: %s", what, why);
    if (r->step >= RS_CLEAN)
        log_error(APP_TAG,
                  "restore: %s holds no cluster yet (a partial copy at most: %s); run the "
                  "restore again",
                  r->data_dir, r->tmp);
    app_shutdown(r->a, APP_EXIT_FAILURE);
}

/* ---- the checks before anything is written ------------------------------------ */

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Takes a lock of the data directory without waiting: a parleyd holds it
 * while it starts, stops or uses the cluster. */
static int lock_now(const char *path, int *fd, char *err, size_t errcap)
{
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (*fd < 0 || flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        snprintf(err, errcap,
                 e == EWOULDBLOCK
                     ? "a parleyd uses this data directory (%s is held); restore into one no "
                       "parleyd runs on"
                     : "cannot lock %s: %s",
                 path, strerror(e));
        return -e;
    }
    return 0;
}

static int restore_prepare(restore_t *r, char *err, size_t errcap)
{
    const config_t *cfg = r->a->cfg;
    char path[CONFIG_PATH_MAX + 32];
    if (!exists(r->dir)) {
        snprintf(err, errcap, "%s does not exist", r->dir);
        return UV_ENOENT;
    }
    snprintf(path, sizeof path, "%s/" BACKUP_MANIFEST_NAME, r->dir);
    if (!exists(path)) { /* before anything is made; read and checked in RS_CHECK */
        snprintf(err, errcap,
                 "%s has no %s: it is not a backup of parleyd backup, or one that did not "
                 "finish",
                 r->dir, BACKUP_MANIFEST_NAME);
        return UV_ENOENT;
    }
    if (exists(r->final)) {
        snprintf(err, errcap,
                 "%s already holds a cluster; restore into a new data directory (--data-dir), "
                 "or move that one away first",
                 r->final);
        return UV_EEXIST;
    }
    for (int i = 1; i < BACKUP_ITEMS; i++) {
        snprintf(path, sizeof path, "%s/%s", cfg->data_dir, backup_items[i]);
        if (exists(path)) {
            snprintf(err, errcap,
                     "%s exists; a restore would replace it: restore into a new data directory "
                     "(--data-dir)",
                     path);
            return UV_EEXIST;
        }
    }
    char why[CONFIG_ERR_MAX];
    int rc = dirs_make(cfg->data_dir, why, sizeof why);
    if (rc != 0) {
        snprintf(err, errcap, "cannot create the data directory: %s", why);
        return rc;
    }
    snprintf(path, sizeof path, "%s/embedded.lock", cfg->data_dir);
    if ((rc = lock_now(path, &r->lock_fd, err, errcap)) != 0)
        return rc;
    snprintf(path, sizeof path, "%s/users.lock", cfg->data_dir);
    if ((rc = lock_now(path, &r->users_fd, err, errcap)) != 0)
        return rc;
    if (exists(r->final)) { /* made while the locks were free */
        snprintf(err, errcap, "%s already holds a cluster", r->final);
        return UV_EEXIST;
    }
    r->as_root = geteuid() == 0;
    r->uid = r->gid = -1;
    if (r->as_root) {
        /* As root the cluster runs as pg_user, whose files it must be. */
        struct passwd *pw = getpwnam(cfg->pg_user);
        if (pw == NULL || pw->pw_uid == 0) {
            snprintf(err, errcap,
                     "as root the cluster runs as pg_user '%s', %s; create it (useradd "
                     "--system %s) or set --pg-user",
                     cfg->pg_user, pw == NULL ? "which does not exist" : "which is root",
                     cfg->pg_user);
            return UV_EINVAL;
        }
        r->uid = (long)pw->pw_uid;
        r->gid = (long)pw->pw_gid;
    }
    return 0;
}

/* ---- the steps --------------------------------------------------------------- */

static int compare(const char *what, const backup_count_t *found, const backup_count_t *want,
                   bool at_least, char *err, size_t errcap)
{
    bool ok = at_least ? found->files >= want->files
                       : found->files == want->files && found->bytes == want->bytes;
    if (ok)
        return 0;
    snprintf(err, errcap, "%s: %llu files of %llu bytes, where the manifest says %llu of %llu",
             what, (unsigned long long)found->files, (unsigned long long)found->bytes,
             (unsigned long long)want->files, (unsigned long long)want->bytes);
    return UV_EIO;
}

static void work_run(uv_work_t *w)
{
    restore_t *r = w->data;
    char media[CONFIG_PATH_MAX + 32], what[CONFIG_PATH_MAX + 64];
    if (r->step == RS_CHECK) {
        if ((r->work_rc = backup_manifest_read(r->dir, &r->m, r->err, sizeof r->err)) != 0)
            return;
        snprintf(media, sizeof media, "%s/" BACKUP_MEDIA_DIR, r->dir);
        if ((r->work_rc = backup_count_tree(r->src_pg, false, &r->pg, r->err, sizeof r->err)) ||
            (r->work_rc = backup_count_tree(media, false, &r->media, r->err, sizeof r->err)))
            return;
        snprintf(what, sizeof what, "the backup's copy of the cluster %.900s is damaged",
                 r->src_pg);
        if ((r->work_rc = compare(what, &r->pg, &r->m.pg, false, r->err, sizeof r->err)) != 0)
            return;
        snprintf(what, sizeof what, "the backup's media store %.900s is damaged", media);
        r->work_rc = compare(what, &r->media, &r->m.media, false, r->err, sizeof r->err);
        return;
    }
    /* RS_COUNT */
    snprintf(media, sizeof media, "%s/" BACKUP_MEDIA_DIR, r->data_dir);
    if ((r->work_rc = backup_count_tree(r->final, false, &r->pg, r->err, sizeof r->err)) ||
        (r->work_rc = backup_count_tree(media, false, &r->media, r->err, sizeof r->err)))
        return;
    if ((r->work_rc =
             compare("the restored cluster", &r->pg, &r->m.pg, false, r->err, sizeof r->err)) != 0)
        return;
    r->work_rc =
        compare("the restored media store", &r->media, &r->m.media, true, r->err, sizeof r->err);
}

static void work_done(uv_work_t *w, int status)
{
    restore_t *r = w->data;
    r->working = false;
    if (status != 0 || r->work_rc != 0) {
        restore_fail(r, r->step == RS_CHECK ? "the backup" : "the restored copy",
                     status != 0 ? uv_strerror(status) : r->err);
        return;
    }
    if (r->step == RS_CHECK)
        log_info(APP_TAG,
                 "restore: %s is a backup of %s made %s by parleyd %s (PostgreSQL %s): the "
                 "cluster (%llu files), %llu media files",
                 r->dir, r->m.data_dir, r->m.created, r->m.parleyd, r->m.pg_version,
                 (unsigned long long)r->m.pg.files, (unsigned long long)r->m.media.files);
    r->step++;
    next(r);
}

static void child_done(app_child_t *c, int status)
{
    restore_t *r = c->data;
    if (status != 0) {
        restore_fail(r, c->what, c->error);
        return;
    }
    r->step++;
    next(r);
}

static void run(restore_t *r, char **argv, const char *what)
{
    if (app_child_run(&r->child, argv, what, child_done) != 0)
        restore_fail(r, what, r->child.error);
}

static void queue(restore_t *r)
{
    r->work.data = r;
    int rc = uv_queue_work(&r->a->loop, &r->work, work_run, work_done);
    if (rc != 0) {
        restore_fail(r, "the thread pool", uv_strerror(rc));
        return;
    }
    r->working = true;
}

static void next(restore_t *r)
{
    if (r->stopped)
        return;
    const config_t *cfg = r->a->cfg;
    char prog[CONFIG_PATH_MAX + 16], owner[96];
    switch (r->step) {
    case RS_CHECK:
        log_info(APP_TAG, "restore: checking the backup in %s", r->dir);
        queue(r);
        return;
    case RS_VERIFY: {
        snprintf(prog, sizeof prog, "%s/pg_verifybackup", cfg->pg_bindir);
        char *argv[] = {prog, "--quiet", r->src_pg, NULL};
        log_info(APP_TAG, "restore: verifying the cluster's copy (pg_verifybackup)");
        run(r, argv, "pg_verifybackup");
        return;
    }
    case RS_CLEAN: {
        char why[CONFIG_ERR_MAX];
        int rc = dirs_make(r->pg_dir, why, sizeof why);
        if (rc != 0) {
            restore_fail(r, "the cluster's directory", why);
            return;
        }
        char *argv[] = {"/bin/rm", "-rf", "--", r->tmp, NULL};
        run(r, argv, "removing an earlier partial copy");
        return;
    }
    case RS_COPY_PG: {
        char *argv[] = {"/bin/cp", "-a", "--", r->src_pg, r->tmp, NULL};
        log_info(APP_TAG, "restore: copying the cluster into %s (cp -a)", r->pg_dir);
        run(r, argv, "copying the cluster");
        return;
    }
    case RS_COPY_FILES: {
        char *argv[BACKUP_ITEMS + 5] = {"/bin/cp", "-a", "--"};
        int n = 3;
        for (int i = 0; i < BACKUP_ITEMS; i++) {
            snprintf(r->src_items[i], sizeof r->src_items[i], "%s/%s", r->dir, backup_items[i]);
            if (r->m.has[i])
                argv[n++] = r->src_items[i];
        }
        if (n == 3) {
            r->step++;
            next(r);
            return;
        }
        argv[n++] = r->data_dir;
        argv[n] = NULL;
        log_info(APP_TAG, "restore: copying the media store and the keys into %s (cp -a)",
                 r->data_dir);
        run(r, argv, "copying the media store and keys");
        return;
    }
    case RS_CHOWN: {
        if (!r->as_root) {
            r->step++;
            next(r);
            return;
        }
        snprintf(owner, sizeof owner, "%ld:%ld", r->uid, r->gid);
        char *argv[] = {"/bin/chown", "-R", owner, "--", r->pg_dir, NULL};
        run(r, argv, "giving the cluster to pg_user");
        return;
    }
    case RS_COUNT:
        if (rename(r->tmp, r->final) != 0) {
            restore_fail(r, r->final, strerror(errno));
            return;
        }
        queue(r);
        return;
    case RS_DONE:
        log_info(APP_TAG,
                 "restore complete: %s holds the cluster (%llu files) and %llu media files; "
                 "start it with parleyd serve --data-dir %s",
                 r->data_dir, (unsigned long long)r->pg.files, (unsigned long long)r->media.files,
                 r->data_dir);
        app_shutdown(r->a, APP_EXIT_OK);
        return;
    }
}

static void restore_start(app_t *a)
{
    const config_t *cfg = a->cfg;
    restore_t *r = calloc(1, sizeof *r);
    if (r == NULL) {
        app_fatal(a, "restore", "out of memory");
        return;
    }
    r->lock_fd = r->users_fd = -1;
    app_child_init(&r->child, &a->loop);
    r->child.data = r;
    snprintf(r->dir, sizeof r->dir, "%s", cfg->backup_dir);
    snprintf(r->data_dir, sizeof r->data_dir, "%s", cfg->data_dir);
    snprintf(r->pg_dir, sizeof r->pg_dir, "%s/pg", cfg->data_dir);
    snprintf(r->tmp, sizeof r->tmp, "%s/pg/data.tmp", cfg->data_dir);
    snprintf(r->final, sizeof r->final, "%s/pg/data", cfg->data_dir);
    snprintf(r->src_pg, sizeof r->src_pg, "%s/" BACKUP_PG_DIR, cfg->backup_dir);
    if (app_push(a, &restore_part, r) != 0) {
        app_child_close(&r->child, child_closed);
        return;
    }
    r->a = a;
    char err[BACKUP_ERR_MAX];
    if (restore_prepare(r, err, sizeof err) != 0) {
        log_error(APP_TAG, "restore: %s", err);
        app_shutdown(a, APP_EXIT_FAILURE);
        return;
    }
    log_info(APP_TAG, "restoring %s into the data directory %s", r->dir, r->data_dir);
    r->step = RS_CHECK;
    next(r);
}

const app_step_t app_step_restore = {
    .cmd = CLI_CMD_RESTORE, .name = "restore", .after = APP_AFTER_NOTHING, .start = restore_start};
