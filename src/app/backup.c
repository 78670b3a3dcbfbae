/* app_backup: `parleyd backup DIR` for the embedded cluster. Before the
 * cluster is touched (backup_check): the data directory must hold a
 * cluster, DIR must be new or empty and outside the data directory. Then
 * the entry starts the cluster as every command does (joining it when a
 * daemon serves on the data directory, else starting it and stopping it
 * at the end), and this file runs the steps, each off the loop:
 *   1. pg_basebackup over the cluster's Unix socket into DIR/pg: a
 *      consistent copy while the daemon serves (fast checkpoint, WAL
 *      streamed beside, plain format, --progress on stderr);
 *   2. cp -a of the media store and the keys (backup_items) into DIR, one
 *      child process: the media store is write-once and content-addressed,
 *      so a file copied is whole, and a row of the cluster's copy names
 *      only files stored before the base backup ended;
 *   3. on the thread pool: the counts (files, bytes) of both copies, a
 *      media file still half written at the copy removed, and the
 *      manifest written last (backup_manifest.h).
 * A signal stops the child running (SIGTERM); DIR is then left without a
 * manifest, which restore refuses. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app/child.h"
#include "app/steps.h"
#include "app/backup_manifest.h"
#include "util/dirs.h"
#include "util/log.h"

typedef struct backup_s {
    app_t *a;
    app_child_t child;
    uv_work_t work;
    bool working;
    bool stopped;
    char dir[CONFIG_PATH_MAX];
    char pg[CONFIG_PATH_MAX + 8];
    char items[BACKUP_ITEMS][CONFIG_PATH_MAX + 32]; /* their paths in the data directory */
    backup_manifest_t m;
    int work_rc;
    char err[BACKUP_ERR_MAX];
} backup_t;

static int backup_check(const config_t *cfg, char *err, size_t errcap)
{
    char path[CONFIG_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/pg/data/PG_VERSION", cfg->data_dir);
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errcap,
                 "no embedded cluster in %s/pg/data: nothing to back up (is --data-dir the "
                 "daemon's?)",
                 cfg->data_dir);
        return UV_ENOENT;
    }
    const char *dir = cfg->backup_dir;
    bool made = false;
    if (lstat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            snprintf(err, errcap, "%s exists and is not a directory; name a new or empty one", dir);
            return UV_EEXIST;
        }
        DIR *d = opendir(dir);
        if (d == NULL) {
            int e = errno;
            snprintf(err, errcap, "cannot read %s: %s", dir, strerror(e));
            return -e;
        }
        struct dirent *de;
        bool empty = true;
        while (empty && (de = readdir(d)) != NULL)
            empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
        closedir(d);
        if (!empty) {
            snprintf(err, errcap,
                     "%s is not empty; a backup goes into a new or empty directory (it never "
                     "replaces or mixes with files there)",
                     dir);
            return UV_EEXIST;
        }
    } else {
        char why[CONFIG_ERR_MAX];
        int rc = dirs_make(dir, why, sizeof why);
        if (rc != 0) {
            snprintf(err, errcap, "cannot create %s: %s", dir, why);
            return rc;
        }
        made = true;
    }
    char real_dir[PATH_MAX], real_data[PATH_MAX];
    if (realpath(dir, real_dir) != NULL && realpath(cfg->data_dir, real_data) != NULL) {
        size_t n = strlen(real_data);
        if (strncmp(real_dir, real_data, n) == 0 && (real_dir[n] == '/' || real_dir[n] == '\0')) {
            if (made)
                rmdir(dir);
            snprintf(err, errcap,
                     "%s is inside the data directory %s; put the backup elsewhere (another "
                     "disk, at best)",
                     dir, cfg->data_dir);
            return UV_EINVAL;
        }
    }
    return 0;
}

/* ---- the part ---------------------------------------------------------------- */

static void backup_stop(void *obj)
{
    backup_t *b = obj;
    b->stopped = true;
    app_child_kill(&b->child);
}

static bool backup_idle(const void *obj)
{
    const backup_t *b = obj;
    return !app_child_running(&b->child) && !b->working;
}

static void child_closed(app_child_t *c)
{
    backup_t *b = c->data;
    app_stack_next(&b->a->stack);
}

static void backup_close(void *obj, app_stack_t *s)
{
    (void)s;
    backup_t *b = obj;
    app_child_close(&b->child, child_closed);
}

static void backup_free(void *obj)
{
    free(obj);
}

static const app_part_ops_t backup_part = {.name = "backup",
                                           .stop = backup_stop,
                                           .idle = backup_idle,
                                           .close = backup_close,
                                           .free = backup_free};

/* ---- the steps --------------------------------------------------------------- */

static void backup_fail(backup_t *b, const char *what, const char *why)
{
    log_error(APP_TAG, "backup: %s: %s", what, why);
    log_error(APP_TAG, "backup: %s has no manifest and is no backup; remove it and run again",
              b->dir);
    app_shutdown(b->a, APP_EXIT_FAILURE);
}

/* The thread pool: the counts, the PostgreSQL version, the manifest. */
static void finish_work(uv_work_t *w)
{
    backup_t *b = w->data;
    char path[CONFIG_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/" BACKUP_MEDIA_DIR, b->dir);
    if ((b->work_rc = backup_count_tree(b->pg, false, &b->m.pg, b->err, sizeof b->err)) != 0 ||
        (b->work_rc = backup_count_tree(path, true, &b->m.media, b->err, sizeof b->err)) != 0)
        return;
    snprintf(path, sizeof path, "%s/PG_VERSION", b->pg);
    FILE *f = fopen(path, "re");
    if (f == NULL || fgets(b->m.pg_version, sizeof b->m.pg_version, f) == NULL) {
        b->work_rc = UV_EIO;
        snprintf(b->err, sizeof b->err, "cannot read %.400s", path);
        if (f)
            fclose(f);
        return;
    }
    fclose(f);
    b->m.pg_version[strcspn(b->m.pg_version, "\r\n")] = '\0';
    b->work_rc = backup_manifest_write(b->dir, &b->m, b->err, sizeof b->err);
}

static void finish_done(uv_work_t *w, int status)
{
    backup_t *b = w->data;
    b->working = false;
    if (status != 0 || b->work_rc != 0) {
        backup_fail(b, "the manifest", status != 0 ? uv_strerror(status) : b->err);
        return;
    }
    char keys[128] = "";
    for (int i = 1; i < BACKUP_ITEMS; i++)
        if (b->m.has[i])
            snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s%s", keys[0] ? ", " : "",
                     backup_items[i]);
    log_info(APP_TAG,
             "backup complete in %s: the cluster (PostgreSQL %s, %llu files, %llu MiB), %llu "
             "media files (%llu MiB), %s",
             b->dir, b->m.pg_version, (unsigned long long)b->m.pg.files,
             (unsigned long long)(b->m.pg.bytes >> 20), (unsigned long long)b->m.media.files,
             (unsigned long long)(b->m.media.bytes >> 20), keys[0] ? keys : "no keys yet");
    app_shutdown(b->a, APP_EXIT_OK);
}

static void finish(backup_t *b)
{
    if (b->stopped)
        return;
    log_info(APP_TAG, "backup: counting the copies and writing %s/%s", b->dir,
             BACKUP_MANIFEST_NAME);
    b->work.data = b;
    int rc = uv_queue_work(&b->a->loop, &b->work, finish_work, finish_done);
    if (rc != 0) {
        backup_fail(b, "the manifest", uv_strerror(rc));
        return;
    }
    b->working = true;
}

static void copied(app_child_t *c, int status)
{
    backup_t *b = c->data;
    if (status != 0) {
        backup_fail(b, "copying the media store and keys", c->error);
        return;
    }
    finish(b);
}

/* cp -a of what the data directory has of backup_items into DIR; -H: an
 * item that is a symbolic link (a media store on other storage) is copied
 * as what it points to, not as a link that would dangle elsewhere. */
static void copy_files(backup_t *b)
{
    if (b->stopped)
        return;
    const config_t *cfg = b->a->cfg;
    char *argv[BACKUP_ITEMS + 6] = {"/bin/cp", "-a", "-H", "--"};
    int n = 4;
    for (int i = 0; i < BACKUP_ITEMS; i++) {
        struct stat st;
        snprintf(b->items[i], sizeof b->items[i], "%s/%s", cfg->data_dir, backup_items[i]);
        if (lstat(b->items[i], &st) == 0) {
            b->m.has[i] = true;
            argv[n++] = b->items[i];
        }
    }
    if (n == 4) {
        log_info(APP_TAG, "backup: no media store and no keys in %s yet", cfg->data_dir);
        finish(b);
        return;
    }
    argv[n++] = b->dir;
    argv[n] = NULL;
    log_info(APP_TAG, "backup: copying the media store and the keys into %s (cp -a -H)", b->dir);
    if (app_child_run(&b->child, argv, "copying the media store and keys", copied) != 0)
        backup_fail(b, "copying the media store and keys", b->child.error);
}

static void based(app_child_t *c, int status)
{
    backup_t *b = c->data;
    if (status != 0) {
        backup_fail(b, "pg_basebackup (its messages are above)", c->error);
        return;
    }
    log_info(APP_TAG, "backup: the cluster's copy is complete in %s", b->pg);
    copy_files(b);
}

static void unpushed_closed(app_child_t *c)
{
    free(c->data);
}

static void backup_start(app_t *a)
{
    const config_t *cfg = a->cfg;
    backup_t *b = calloc(1, sizeof *b);
    if (b == NULL) {
        app_fatal(a, "backup", "out of memory");
        return;
    }
    b->a = a;
    app_child_init(&b->child, &a->loop);
    b->child.data = b;
    if (app_push(a, &backup_part, b) != 0) {
        app_child_close(&b->child, unpushed_closed);
        return;
    }
    snprintf(b->dir, sizeof b->dir, "%s", cfg->backup_dir);
    snprintf(b->pg, sizeof b->pg, "%s/" BACKUP_PG_DIR, b->dir);
    b->m.version = BACKUP_FORMAT_VERSION;
    snprintf(b->m.parleyd, sizeof b->m.parleyd, "%s", PARLEY_VERSION);
    snprintf(b->m.data_dir, sizeof b->m.data_dir, "%s", cfg->data_dir);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(b->m.created, sizeof b->m.created, "%Y-%m-%dT%H:%M:%SZ", &tm);

    const pg_conninfo_t *ci = pg_embedded_conninfo(a->emb);
    char prog[CONFIG_PATH_MAX + 16];
    snprintf(prog, sizeof prog, "%s/pg_basebackup", cfg->pg_bindir);
    char *argv[] = {prog,
                    "--pgdata",
                    b->pg,
                    "--host",
                    (char *)pg_conninfo_get(ci, "host"),
                    "--port",
                    (char *)pg_conninfo_get(ci, "port"),
                    "--username",
                    PG_EMBEDDED_USER,
                    "--no-password",
                    "--wal-method=stream",
                    "--checkpoint=fast",
                    "--label=parleyd backup",
                    "--progress",
                    NULL};
    log_info(APP_TAG, "backup: copying the embedded cluster into %s (pg_basebackup --progress)",
             b->pg);
    if (app_child_run(&b->child, argv, "pg_basebackup", based) != 0)
        backup_fail(b, "pg_basebackup", b->child.error);
}

const app_step_t app_step_backup = {.cmd = CLI_CMD_BACKUP,
                                    .name = "backup",
                                    .after = APP_AFTER_CLUSTER,
                                    .check = backup_check,
                                    .start = backup_start};
