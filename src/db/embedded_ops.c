/* embedded_ops: the operations of the embedded cluster's steps (see
 * embedded_internal.h): running initdb and pg_ctl as children, the data
 * directory's locks with retries, the configuration parley writes, the
 * admin database, and telling a live server from a dead one's lock files. */
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

#include "db/embedded_conf.h"
#include "db/embedded_internal.h"
#include "db/pool.h"
#include "util/log.h"
#include "util/strutil.h"

/* ---- child processes ----------------------------------------------------- */

static void proc_close_cb(uv_handle_t *h)
{
    pg_embedded_t *e = h->data;
    e->proc_open = false;
    e->handles_open--;
    pg_embedded__step(e);
}

static void proc_exit_cb(uv_process_t *p, int64_t exit_status, int term_signal)
{
    pg_embedded_t *e = p->data;
    e->exit_status = term_signal ? 128 + term_signal : exit_status;
    uv_close((uv_handle_t *)p, proc_close_cb);
}

/* Runs argv as the cluster's user with output appended to tools.log; the
 * state machine continues in proc_close_cb with e->exit_status. */
static int emb_spawn(pg_embedded_t *e, char **argv)
{
    int fd = open(e->tools_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        int err = errno;
        snprintf(e->error, sizeof e->error, "cannot open %s: %s", e->tools_log, strerror(err));
        return -err;
    }
    if (e->as_root && fchown(fd, e->uid, e->gid) != 0) {
        /* root can always chown; ignore odd file systems */
    }
    char env_home[EMB_PATH_MAX + 8];
    snprintf(env_home, sizeof env_home, "HOME=%s", e->pg_dir);
    char *env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", env_home, NULL};
    /* rm and initdb inherit the exclusive lock as fd 3: if parleyd is
     * killed while they run, the next parleyd waits for them to finish
     * instead of racing them on data.tmp. pg_ctl must not (the server
     * would hold the lock for its whole life). */
    bool hold_lock = e->state == EMB_CLEAN_TMP || e->state == EMB_INITDB;
    uv_stdio_container_t stdio[4] = {
        {.flags = UV_IGNORE},
        {.flags = UV_INHERIT_FD, .data.fd = fd},
        {.flags = UV_INHERIT_FD, .data.fd = fd},
        {.flags = UV_INHERIT_FD, .data.fd = e->lock_fd},
    };
    /* Detached: in a process group of their own, so a terminal's Ctrl-C
     * reaches parleyd alone, which stops the start-up cleanly (initdb
     * killed half-way would only fail it). */
    uv_process_options_t o = {
        .flags = UV_PROCESS_DETACHED,
        .exit_cb = proc_exit_cb,
        .file = argv[0],
        .args = argv,
        .env = env,
        .cwd = e->pg_dir,
        .stdio_count = hold_lock && e->lock_fd >= 0 ? 4 : 3,
        .stdio = stdio,
    };
    if (e->as_root) {
        o.flags |= UV_PROCESS_SETUID | UV_PROCESS_SETGID;
        o.uid = e->uid;
        o.gid = e->gid;
    }
    e->proc.data = e;
    int rc = uv_spawn(e->loop, &e->proc, &o);
    close(fd);
    if (rc != 0) {
        /* A failed uv_spawn still initialised the handle: close it. */
        snprintf(e->error, sizeof e->error, "cannot run %s: %s", argv[0], uv_strerror(rc));
        e->proc_open = true;
        e->handles_open++;
        e->exit_status = 127;
        uv_close((uv_handle_t *)&e->proc, proc_close_cb);
        return 0; /* reported through exit_status 127 */
    }
    e->proc_open = true;
    e->handles_open++;
    return 0;
}

void pg_embedded__spawn_or_fail(pg_embedded_t *e, char **argv)
{
    log_debug(EMB_TAG, "running %s %s", argv[0], argv[1] ? argv[1] : "");
    int rc = emb_spawn(e, argv);
    if (rc != 0)
        pg_embedded__fail(e, rc);
}

/* ---- locks --------------------------------------------------------------- */

int pg_embedded__open_lock(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    return fd < 0 ? -errno : fd;
}

static void lock_retry_cb(uv_timer_t *t)
{
    pg_embedded__step(t->data);
}

/* Tries flock(fd, op|LOCK_NB). Returns 1 when held, 0 when a retry is
 * scheduled, or a negative code (timeout sets e->error). */
int pg_embedded__try_lock(pg_embedded_t *e, int fd, int op, const char *what)
{
    if (flock(fd, op | LOCK_NB) == 0)
        return 1;
    if (errno != EWOULDBLOCK) {
        int err = errno;
        snprintf(e->error, sizeof e->error, "cannot lock %s: %s", what, strerror(err));
        return -err;
    }
    if (uv_now(e->loop) >= e->lock_deadline) {
        snprintf(e->error, sizeof e->error,
                 "timed out waiting for %s (another parleyd is starting or stopping the "
                 "embedded cluster)",
                 what);
        return UV_ETIMEDOUT;
    }
    uv_timer_start(&e->timer, lock_retry_cb, EMB_LOCK_POLL_MS, 0);
    return 0;
}

/* ---- steps --------------------------------------------------------------- */

bool pg_embedded__file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int pg_embedded__mkdir_owned(pg_embedded_t *e, const char *path, mode_t mode, bool give_to_pg)
{
    if (mkdir(path, mode) != 0 && errno != EEXIST) {
        int err = errno;
        snprintf(e->error, sizeof e->error, "cannot create %s: %s", path, strerror(err));
        return -err;
    }
    if (give_to_pg && e->as_root && chown(path, e->uid, e->gid) != 0) {
        int err = errno;
        snprintf(e->error, sizeof e->error, "cannot chown %s: %s", path, strerror(err));
        return -err;
    }
    return 0;
}

/* As root: every ancestor of pg_dir must be enterable by the run-as user. */
int pg_embedded__check_reachable(pg_embedded_t *e)
{
    char path[EMB_PATH_MAX];
    if (!str_copy(path, sizeof path, e->pg_dir))
        return UV_ENAMETOOLONG;
    char *slash;
    while ((slash = strrchr(path, '/')) != NULL) {
        *slash = '\0';
        const char *dir = path[0] ? path : "/";
        struct stat st;
        if (stat(dir, &st) != 0)
            continue;
        bool ok = (st.st_mode & S_IXOTH) || (st.st_uid == e->uid && (st.st_mode & S_IXUSR)) ||
                  (st.st_gid == e->gid && (st.st_mode & S_IXGRP));
        if (!ok) {
            snprintf(e->error, sizeof e->error,
                     "the embedded cluster runs as user '%s', which cannot enter %s (mode %04o); "
                     "choose a --data-dir it can reach (as root the default is /var/lib/parley) "
                     "or set --pg-user",
                     e->run_as, dir, (unsigned)(st.st_mode & 07777));
            return UV_EACCES;
        }
        if (path[0] == '\0')
            break;
    }
    return 0;
}

int pg_embedded__write_conf(pg_embedded_t *e)
{
    char path[EMB_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/parley.conf", e->pgdata);
    char body[EMB_PATH_MAX + 2048];
    /* Quotes in the socket path would break the setting: refuse them. */
    if (strchr(e->sock_dir, '\'') || strchr(e->sock_dir, '\\')) {
        snprintf(e->error, sizeof e->error, "data directory path must not contain ' or \\");
        return UV_EINVAL;
    }
    int n = pg_embedded_conf_format(body, sizeof body, e->sock_dir, EMB_PORT,
                                    pg_embedded_conf_memory());
    if (n < 0) {
        snprintf(e->error, sizeof e->error, "cannot format parley.conf: %s", uv_strerror(n));
        return n;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, body, (size_t)n) != n) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        snprintf(e->error, sizeof e->error, "cannot write %s: %s", path, strerror(err));
        return -err;
    }
    if (e->as_root && fchown(fd, e->uid, e->gid) != 0) {
        /* readable by the owner check below anyway */
    }
    close(fd);
    return 0;
}

int pg_embedded__include_conf(pg_embedded_t *e)
{
    char path[EMB_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/postgresql.conf", e->pgdata_tmp);
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    static const char line[] = "\ninclude_if_exists = 'parley.conf'\n";
    if (fd < 0 || write(fd, line, sizeof line - 1) != (ssize_t)(sizeof line - 1)) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        snprintf(e->error, sizeof e->error, "cannot write %s: %s", path, strerror(err));
        return -err;
    }
    close(fd);
    return 0;
}

static void admin_closed(pg_pool_t *pool)
{
    pg_embedded_t *e = pg_pool_get_data(pool);
    e->admin = NULL;
    if (e->error[0])
        pg_embedded__fail(e, UV_EIO);
    else
        pg_embedded__done(e, EMB_RUNNING);
}

static void createdb_done(pg_query_t *q, int status)
{
    pg_embedded_t *e = q->data;
    if (status != 0 && strcmp(q->sqlstate, "42P04") != 0) /* duplicate_database */
        snprintf(e->error, sizeof e->error, "cannot create database %s: %s", PG_EMBEDDED_DB,
                 q->error);
    pg_query_release(q);
    pg_pool_close(e->admin, admin_closed);
}

static void checkdb_done(pg_query_t *q, int status)
{
    pg_embedded_t *e = q->data;
    bool exists = status == 0 && PQntuples(q->results[0]) == 1;
    if (status != 0)
        snprintf(e->error, sizeof e->error, "cannot reach the embedded cluster: %s", q->error);
    pg_query_release(q);
    if (status != 0 || exists) {
        pg_pool_close(e->admin, admin_closed);
        return;
    }
    /* A constant statement: no request data is involved. */
    e->stmt = (pg_stmt_t){.sql = "CREATE DATABASE " PG_EMBEDDED_DB};
    e->q = (pg_query_t){.stmts = &e->stmt, .nstmts = 1, .cb = createdb_done, .data = e};
    int rc = pg_pool_submit(e->admin, &e->q);
    if (rc != 0) {
        snprintf(e->error, sizeof e->error, "cannot create database: %s", uv_strerror(rc));
        pg_pool_close(e->admin, admin_closed);
    }
}

void pg_embedded__createdb(pg_embedded_t *e)
{
    pg_conninfo_t ci;
    int rc = pg_conninfo_copy(&ci, &e->conninfo);
    if (rc == 0)
        rc = pg_conninfo_set(&ci, "dbname", "postgres");
    pg_pool_config_t pc = {.name = EMB_TAG,
                           .size = 1,
                           .queue_max = 4,
                           .query_timeout_ms = 30000,
                           .connect_timeout_ms = 10000};
    if (rc == 0)
        rc = pg_pool_new(e->loop, &pc, &ci, &e->admin, e->error, sizeof e->error);
    pg_conninfo_free(&ci);
    if (rc != 0) {
        pg_embedded__fail(e, rc);
        return;
    }
    pg_pool_set_data(e->admin, e);
    e->param[0] = PG_EMBEDDED_DB;
    e->stmt = (pg_stmt_t){
        .sql = "SELECT 1 FROM pg_database WHERE datname = $1", .nparams = 1, .params = e->param};
    e->q = (pg_query_t){.stmts = &e->stmt, .nstmts = 1, .cb = checkdb_done, .data = e};
    rc = pg_pool_submit(e->admin, &e->q);
    if (rc != 0) {
        snprintf(e->error, sizeof e->error, "cannot query the embedded cluster: %s",
                 uv_strerror(rc));
        pg_pool_close(e->admin, admin_closed);
    }
}

/* Reads the pid on the first line of a PostgreSQL lock file; 0 if none. */
static pid_t read_lock_pid(const char *path)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return 0;
    long pid = 0;
    if (fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    fclose(f);
    return (pid_t)pid;
}

/* True when pid is a live (not zombie) postgres process. A SIGKILLed
 * postmaster may linger as a zombie, and its pid may be reused: pg_ctl
 * status and PostgreSQL's own lock check both trust kill(pid, 0). */
static bool pid_is_live_postgres(pid_t pid)
{
    if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM))
        return false;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    if (paren == NULL || paren[1] == '\0' || paren[2] == 'Z' || paren[2] == 'X')
        return false;
    snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
    f = fopen(path, "re");
    if (f == NULL)
        return false;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0'; /* argv[0] only: NUL-separated */
    return strstr(buf, "postgres") != NULL;
}

/* Is the cluster's postmaster running? Removes lock files left by a dead
 * one, so that the start that follows is not refused. */
bool pg_embedded__server_alive(pg_embedded_t *e)
{
    char pidfile[EMB_PATH_MAX + 32], socklock[EMB_PATH_MAX + 32];
    snprintf(pidfile, sizeof pidfile, "%s/postmaster.pid", e->pgdata);
    snprintf(socklock, sizeof socklock, "%s/.s.PGSQL." EMB_PORT ".lock", e->sock_dir);
    pid_t pid = read_lock_pid(pidfile);
    if (pid > 0 && pid_is_live_postgres(pid))
        return true;
    if (pid > 0 || pg_embedded__file_exists(pidfile)) {
        log_warn(EMB_TAG, "removing stale %s (process %ld is gone)", pidfile, (long)pid);
        unlink(pidfile);
    }
    pid_t spid = read_lock_pid(socklock);
    if (spid > 0 && !pid_is_live_postgres(spid))
        unlink(socklock);
    return false;
}
