/* embedded: the private PostgreSQL cluster (see embedded.h). A small state
 * machine: each step either finishes at once or waits for one child
 * process, one lock retry or one query, then calls the next step. The
 * operations the steps are made of are embedded_ops.c's. */
#include "db/embedded.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "db/embedded_internal.h"
#include "db/pool.h"
#include "util/log.h"
#include "util/strutil.h"

/* Ends a start or stop with an error; the caller reports e->error. */
void pg_embedded__fail(pg_embedded_t *e, int status)
{
    if (e->lock_fd >= 0) {
        close(e->lock_fd);
        e->lock_fd = -1;
    }
    if (e->state != EMB_STOPPING && e->state != EMB_STOP_LOCK && e->users_fd >= 0) {
        close(e->users_fd);
        e->users_fd = -1;
    }
    e->state = EMB_IDLE;
    pg_embedded_cb cb = e->cb;
    e->cb = NULL;
    cb(e, status);
}

void pg_embedded__done(pg_embedded_t *e, emb_state_t state)
{
    if (e->lock_fd >= 0) {
        close(e->lock_fd); /* releases embedded.lock */
        e->lock_fd = -1;
    }
    e->state = state;
    pg_embedded_cb cb = e->cb;
    e->cb = NULL;
    cb(e, 0);
}

/* Appends the last lines of a log file to e->error (bounded read). */
static void emb_append_log_tail(pg_embedded_t *e, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[600];
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0;
    ssize_t n = pread(fd, buf, sizeof buf - 1, from);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    char *s = buf;
    if (from > 0 && strchr(s, '\n'))
        s = strchr(s, '\n') + 1;
    for (char *p = s; *p; p++)
        if (*p == '\n')
            *p = ' ';
    size_t len = strlen(e->error);
    snprintf(e->error + len, sizeof e->error - len, " [%s: %s]", path, str_trim(s));
}

static void start_wait_cb(uv_timer_t *t)
{
    pg_embedded__step(t->data);
}

/* Tries the start lock (exclusive): true once held; false while another
 * holds it (a timer steps again) or when taking it failed (e failed). */
static bool start_lock_held(pg_embedded_t *e)
{
    int rc = pg_embedded__try_lock(e, e->lock_fd, LOCK_EX, e->lock_path);
    if (rc < 0)
        pg_embedded__fail(e, rc);
    return rc > 0;
}

void pg_embedded__step(pg_embedded_t *e)
{
    char pg_ctl[EMB_PATH_MAX + 16], initdb[EMB_PATH_MAX + 16], timeout[16];
    snprintf(pg_ctl, sizeof pg_ctl, "%s/pg_ctl", e->bindir);
    snprintf(initdb, sizeof initdb, "%s/initdb", e->bindir);
    int rc;
    switch (e->state) {
    case EMB_LOCK:
        if (!start_lock_held(e))
            return;
        /* Holders of the start lock are the only ones who stop the
         * cluster, so the shared lock is free to take now. */
        if ((rc = pg_embedded__try_lock(e, e->users_fd, LOCK_SH, e->users_path)) != 1) {
            pg_embedded__fail(e, rc < 0 ? rc : UV_EAGAIN);
            return;
        }
        e->state = EMB_USER;
        pg_embedded__step(e);
        return;

    case EMB_USER: {
        if (!e->as_root) {
            e->state = EMB_PREPARE;
            pg_embedded__step(e);
            return;
        }
        /* getpwnam reads local files here; done once at start-up. */
        struct passwd *pw = getpwnam(e->run_as);
        if (pw != NULL) {
            if (pw->pw_uid == 0) {
                snprintf(e->error, sizeof e->error,
                         "pg_user '%s' is root; PostgreSQL refuses to run as root", e->run_as);
                pg_embedded__fail(e, UV_EINVAL);
                return;
            }
            e->uid = pw->pw_uid;
            e->gid = pw->pw_gid;
            e->state = EMB_PREPARE;
            pg_embedded__step(e);
            return;
        }
        if (e->user_created_tried) {
            snprintf(e->error, sizeof e->error,
                     "cannot create system user '%s' for the embedded cluster (useradd failed, "
                     "see %s); create it or set --pg-user",
                     e->run_as, e->tools_log);
            pg_embedded__fail(e, UV_ENOENT);
            return;
        }
        e->user_created_tried = true;
        log_info(EMB_TAG, "creating system user '%s' to run the embedded cluster", e->run_as);
        /* useradd runs as root: no SETUID for this one child. */
        e->as_root = false;
        char *argv[] = {
            "/usr/sbin/useradd", "--system", "--user-group",      "--no-create-home", "--home-dir",
            "/nonexistent",      "--shell",  "/usr/sbin/nologin", e->run_as,          NULL};
        rc = pg_embedded__mkdir_owned(e, e->data_dir, 0700, false);
        if (rc == 0)
            rc = pg_embedded__mkdir_owned(e, e->pg_dir, 0700, false);
        if (rc != 0) {
            e->as_root = true;
            pg_embedded__fail(e, rc);
            return;
        }
        pg_embedded__spawn_or_fail(e, argv);
        e->as_root = true;
        return; /* back here after useradd exits */
    }

    case EMB_PREPARE:
        if ((rc = pg_embedded__mkdir_owned(e, e->data_dir, 0700, false)) != 0 ||
            (e->as_root && chmod(e->data_dir, 0711) != 0 && (rc = -errno)) ||
            (rc = pg_embedded__mkdir_owned(e, e->pg_dir, 0700, true)) != 0 ||
            (rc = pg_embedded__mkdir_owned(e, e->sock_dir, 0700, true)) != 0 ||
            (e->as_root && (rc = pg_embedded__check_reachable(e)) != 0)) {
            if (e->error[0] == '\0')
                snprintf(e->error, sizeof e->error, "cannot prepare %s: %s", e->data_dir,
                         uv_strerror(rc));
            pg_embedded__fail(e, rc);
            return;
        }
        {
            char version[EMB_PATH_MAX + 16];
            snprintf(version, sizeof version, "%s/PG_VERSION", e->pgdata);
            if (pg_embedded__file_exists(version)) {
                e->state = EMB_CONFIGURE;
                pg_embedded__step(e);
                return;
            }
            if (pg_embedded__file_exists(e->pgdata)) {
                snprintf(e->error, sizeof e->error,
                         "%s exists but is not a PostgreSQL cluster; move it away", e->pgdata);
                pg_embedded__fail(e, UV_EEXIST);
                return;
            }
        }
        e->state = EMB_CLEAN_TMP;
        {
            char *argv[] = {"/bin/rm", "-rf", e->pgdata_tmp, NULL};
            pg_embedded__spawn_or_fail(e, argv);
        }
        return;

    case EMB_CLEAN_TMP: {
        log_info(EMB_TAG, "creating the embedded cluster in %s", e->pgdata);
        e->state = EMB_INITDB;
        char *argv[] = {initdb,
                        "-D",
                        e->pgdata_tmp,
                        "-U",
                        PG_EMBEDDED_USER,
                        "--auth=trust",
                        "-E",
                        "UTF8",
                        "--locale=C.UTF-8",
                        "--no-instructions",
                        NULL};
        pg_embedded__spawn_or_fail(e, argv);
        return;
    }

    case EMB_INITDB:
        if (e->exit_status != 0) {
            char why[512];
            snprintf(why, sizeof why, "%.500s", e->error); /* a spawn error, if any */
            snprintf(e->error, sizeof e->error, "initdb failed (exit %lld)%s%s",
                     (long long)e->exit_status, why[0] ? ": " : "", why);
            emb_append_log_tail(e, e->tools_log);
            pg_embedded__fail(e, UV_EIO);
            return;
        }
        if ((rc = pg_embedded__include_conf(e)) != 0) {
            pg_embedded__fail(e, rc);
            return;
        }
        if (rename(e->pgdata_tmp, e->pgdata) != 0) {
            rc = -errno;
            snprintf(e->error, sizeof e->error, "cannot rename %s: %s", e->pgdata_tmp,
                     strerror(-rc));
            pg_embedded__fail(e, rc);
            return;
        }
        e->state = EMB_CONFIGURE;
        pg_embedded__step(e);
        return;

    case EMB_CONFIGURE:
        if ((rc = pg_embedded__write_conf(e)) != 0) {
            pg_embedded__fail(e, rc);
            return;
        }
        if (pg_embedded__server_alive(e)) {
            log_info(EMB_TAG, "joining the embedded cluster already running in %s", e->pgdata);
            e->state = EMB_CREATEDB;
            pg_embedded__createdb(e);
            return;
        }
        __attribute__((fallthrough));
    case EMB_START_WAIT:
        e->start_tries++;
        e->state = EMB_START;
        snprintf(timeout, sizeof timeout, "%d", e->start_timeout_s);
        {
            char *argv[] = {pg_ctl,  "start", "-D",          e->pgdata, "-w", "-t",
                            timeout, "-l",    e->server_log, "-s",      NULL};
            pg_embedded__spawn_or_fail(e, argv);
        }
        return;

    case EMB_START:
        if (e->exit_status != 0) {
            if (e->start_tries < PG_EMBEDDED_START_TRIES) {
                /* A killed server's processes may still hold its shared
                 * memory for a moment: try again shortly. */
                log_warn(EMB_TAG, "embedded cluster did not start (attempt %d of %d); retrying",
                         e->start_tries, PG_EMBEDDED_START_TRIES);
                e->state = EMB_START_WAIT;
                uv_timer_start(&e->timer, start_wait_cb, 1000, 0);
                return;
            }
            snprintf(e->error, sizeof e->error, "the embedded cluster did not start");
            emb_append_log_tail(e, e->server_log);
            pg_embedded__fail(e, UV_EIO);
            return;
        }
        e->started_server = true;
        log_info(EMB_TAG, "embedded cluster started (socket in %s)", e->sock_dir);
        e->state = EMB_CREATEDB;
        pg_embedded__createdb(e);
        return;

    case EMB_STOP_LOCK: {
        if (!start_lock_held(e))
            return;
        /* Last user? Then take users.lock exclusively and stop. */
        flock(e->users_fd, LOCK_UN);
        if (flock(e->users_fd, LOCK_EX | LOCK_NB) != 0) {
            log_info(EMB_TAG, "another parleyd still uses the embedded cluster; leaving it up");
            close(e->users_fd);
            e->users_fd = -1;
            pg_embedded__done(e, EMB_IDLE);
            return;
        }
        log_info(EMB_TAG, "stopping the embedded cluster");
        e->state = EMB_STOPPING;
        char *argv[] = {pg_ctl, "stop",          "-D", e->pgdata, "-m", "fast", "-w",
                        "-t",   EMB_STOP_FAST_S, "-s", NULL};
        pg_embedded__spawn_or_fail(e, argv);
        return;
    }

    case EMB_STOPPING:
        if (e->exit_status != 0) {
            /* Busy backends (a query that ignores its cancel): stop now.
             * The next start recovers from the WAL, as after a crash. */
            snprintf(e->error, sizeof e->error, "pg_ctl stop -m fast failed (exit %lld)",
                     (long long)e->exit_status);
            emb_append_log_tail(e, e->tools_log);
            log_warn(EMB_TAG, "%s; stopping with -m immediate", e->error);
            e->state = EMB_STOPPING_NOW;
            char *argv[] = {pg_ctl, "stop", "-D", e->pgdata, "-m", "immediate", "-w", "-s", NULL};
            pg_embedded__spawn_or_fail(e, argv);
            return;
        }
        close(e->users_fd);
        e->users_fd = -1;
        log_info(EMB_TAG, "embedded cluster stopped");
        pg_embedded__done(e, EMB_IDLE);
        return;

    case EMB_STOPPING_NOW:
        close(e->users_fd);
        e->users_fd = -1;
        if (e->exit_status != 0) {
            snprintf(e->error, sizeof e->error, "pg_ctl stop -m immediate failed (exit %lld)",
                     (long long)e->exit_status);
            emb_append_log_tail(e, e->tools_log);
            log_error(EMB_TAG, "%s", e->error);
            pg_embedded__fail(e, UV_EIO);
            return;
        }
        log_warn(EMB_TAG, "embedded cluster stopped (immediate: it recovers at the next start)");
        pg_embedded__done(e, EMB_IDLE);
        return;

    default:
        return;
    }
}

int pg_embedded_new(uv_loop_t *loop, const pg_embedded_config_t *cfg, pg_embedded_t **out,
                    char *err, size_t errcap)
{
    pg_embedded_t *e = calloc(1, sizeof *e);
    if (e == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    e->loop = loop;
    e->lock_fd = e->users_fd = -1;
    e->start_timeout_s = cfg->start_timeout_s > 0 ? cfg->start_timeout_s : 60;
    e->as_root = geteuid() == 0;
    e->uid = geteuid();
    e->gid = getegid();
    char abs[EMB_PATH_MAX];
    bool ok = true;
    if (cfg->data_dir[0] != '/') {
        char cwd[EMB_PATH_MAX];
        ok = getcwd(cwd, sizeof cwd) != NULL &&
             str_fmt(abs, sizeof abs, "%s/%s", cwd, cfg->data_dir);
    } else {
        ok = str_copy(abs, sizeof abs, cfg->data_dir);
    }
    size_t n = strlen(abs);
    while (ok && n > 1 && abs[n - 1] == '/')
        abs[--n] = '\0';
    ok = ok && str_copy(e->data_dir, sizeof e->data_dir, abs) &&
         str_copy(e->bindir, sizeof e->bindir, cfg->bindir) &&
         str_copy(e->run_as, sizeof e->run_as, cfg->run_as) &&
         str_fmt(e->pg_dir, sizeof e->pg_dir, "%s/pg", abs) &&
         str_fmt(e->pgdata, sizeof e->pgdata, "%s/pg/data", abs) &&
         str_fmt(e->pgdata_tmp, sizeof e->pgdata_tmp, "%s/pg/data.tmp", abs) &&
         str_fmt(e->sock_dir, sizeof e->sock_dir, "%s/pg/run", abs) &&
         str_fmt(e->server_log, sizeof e->server_log, "%s/pg/postgres.log", abs) &&
         str_fmt(e->tools_log, sizeof e->tools_log, "%s/pg/tools.log", abs) &&
         str_fmt(e->lock_path, sizeof e->lock_path, "%s/embedded.lock", abs) &&
         str_fmt(e->users_path, sizeof e->users_path, "%s/users.lock", abs);
    if (!ok) {
        snprintf(err, errcap, "data directory path is too long");
        free(e);
        return UV_ENAMETOOLONG;
    }
    struct sockaddr_un sun;
    if (strlen(e->sock_dir) + sizeof "/.s.PGSQL." EMB_PORT > sizeof sun.sun_path) {
        snprintf(err, errcap,
                 "data directory path %s is too long for a Unix socket inside it (at most %zu "
                 "characters); choose a shorter --data-dir",
                 e->data_dir, sizeof sun.sun_path - sizeof "/pg/run/.s.PGSQL." EMB_PORT);
        free(e);
        return UV_ENAMETOOLONG;
    }
    int rc = pg_conninfo_set(&e->conninfo, "host", e->sock_dir);
    if (rc == 0)
        rc = pg_conninfo_set(&e->conninfo, "port", EMB_PORT);
    if (rc == 0)
        rc = pg_conninfo_set(&e->conninfo, "user", PG_EMBEDDED_USER);
    if (rc == 0)
        rc = pg_conninfo_set(&e->conninfo, "dbname", PG_EMBEDDED_DB);
    if (rc != 0) {
        pg_conninfo_free(&e->conninfo);
        free(e);
        snprintf(err, errcap, "out of memory");
        return rc;
    }
    uv_timer_init(loop, &e->timer);
    e->timer.data = e;
    e->handles_open = 1;
    *out = e;
    return 0;
}

void pg_embedded_start(pg_embedded_t *e, pg_embedded_cb cb)
{
    e->cb = cb;
    e->error[0] = '\0';
    e->start_tries = 0;
    e->started_server = false;
    int rc = pg_embedded__mkdir_owned(e, e->data_dir, 0700, false);
    if (rc == 0 && (rc = pg_embedded__open_lock(e->lock_path)) >= 0) {
        e->lock_fd = rc;
        rc = pg_embedded__open_lock(e->users_path);
        if (rc >= 0) {
            e->users_fd = rc;
            rc = 0;
        }
    }
    if (rc < 0) {
        if (e->error[0] == '\0')
            snprintf(e->error, sizeof e->error, "cannot open lock files in %s: %s", e->data_dir,
                     uv_strerror(rc));
        pg_embedded__fail(e, rc);
        return;
    }
    e->lock_deadline = uv_now(e->loop) + (uint64_t)e->start_timeout_s * 1000;
    e->state = EMB_LOCK;
    pg_embedded__step(e);
}

void pg_embedded_stop(pg_embedded_t *e, pg_embedded_cb cb)
{
    e->cb = cb;
    e->error[0] = '\0';
    if (e->state != EMB_RUNNING || e->users_fd < 0) {
        e->state = EMB_IDLE;
        e->cb = NULL;
        cb(e, 0);
        return;
    }
    int rc = pg_embedded__open_lock(e->lock_path);
    if (rc < 0) {
        snprintf(e->error, sizeof e->error, "cannot open %s: %s", e->lock_path, uv_strerror(rc));
        pg_embedded__fail(e, rc);
        return;
    }
    e->lock_fd = rc;
    e->lock_deadline = uv_now(e->loop) + (uint64_t)e->start_timeout_s * 1000;
    e->state = EMB_STOP_LOCK;
    pg_embedded__step(e);
}

const pg_conninfo_t *pg_embedded_conninfo(const pg_embedded_t *e)
{
    return &e->conninfo;
}

const char *pg_embedded_error(const pg_embedded_t *e)
{
    return e->error;
}

bool pg_embedded_started_server(const pg_embedded_t *e)
{
    return e->started_server;
}

static void timer_close_cb(uv_handle_t *h)
{
    pg_embedded_t *e = h->data;
    e->handles_open--;
    if (e->handles_open == 0) {
        void (*cb)(pg_embedded_t *) = e->close_cb;
        pg_conninfo_free(&e->conninfo);
        if (cb)
            cb(e);
        free(e);
    }
}

void pg_embedded_close(pg_embedded_t *e, void (*cb)(pg_embedded_t *e))
{
    e->state = EMB_CLOSING;
    e->close_cb = cb;
    if (e->lock_fd >= 0)
        close(e->lock_fd);
    if (e->users_fd >= 0)
        close(e->users_fd);
    e->lock_fd = e->users_fd = -1;
    uv_close((uv_handle_t *)&e->timer, timer_close_cb);
}

void *pg_embedded_get_data(const pg_embedded_t *e)
{
    return e->data;
}

void pg_embedded_set_data(pg_embedded_t *e, void *data)
{
    e->data = data;
}
