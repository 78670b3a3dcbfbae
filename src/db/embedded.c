/* embedded: the private PostgreSQL cluster (see embedded.h). A small state
 * machine: each step either finishes at once or waits for one child
 * process, one lock retry or one query, then calls embedded_step again. */
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

#include "db/pool.h"
#include "util/log.h"
#include "util/strutil.h"

#define EMB_PATH_MAX     512
#define EMB_LOCK_POLL_MS 50
#define EMB_PORT         "5432"
#define EMB_TAG          "pg"

typedef enum {
    EMB_IDLE = 0,
    EMB_LOCK,       /* waiting for embedded.lock */
    EMB_USER,       /* resolving / creating the run-as user */
    EMB_PREPARE,    /* directories, ownership */
    EMB_CLEAN_TMP,  /* rm -rf data.tmp */
    EMB_INITDB,     /* initdb into data.tmp */
    EMB_CONFIGURE,  /* parley.conf */
    EMB_START,      /* pg_ctl start */
    EMB_START_WAIT, /* between start attempts */
    EMB_CREATEDB,   /* CREATE DATABASE parley if missing */
    EMB_RUNNING,
    EMB_STOP_LOCK, /* waiting for embedded.lock to stop */
    EMB_STOPPING,  /* pg_ctl stop */
    EMB_CLOSING,
} emb_state_t;

struct pg_embedded_s {
    uv_loop_t *loop;
    emb_state_t state;
    char data_dir[EMB_PATH_MAX];
    char bindir[EMB_PATH_MAX];
    char run_as[64];
    int start_timeout_s;
    char pg_dir[EMB_PATH_MAX], pgdata[EMB_PATH_MAX], pgdata_tmp[EMB_PATH_MAX];
    char sock_dir[EMB_PATH_MAX], server_log[EMB_PATH_MAX], tools_log[EMB_PATH_MAX];
    char lock_path[EMB_PATH_MAX], users_path[EMB_PATH_MAX];
    int lock_fd, users_fd;
    bool as_root;
    uid_t uid;
    gid_t gid;
    bool user_created_tried;
    bool started_server;
    int start_tries;
    uint64_t lock_deadline;
    uv_timer_t timer;
    uv_process_t proc;
    bool proc_open;
    int64_t exit_status;
    pg_embedded_cb cb;
    void (*close_cb)(pg_embedded_t *e);
    int handles_open;
    pg_conninfo_t conninfo;
    pg_pool_t *admin; /* one connection to "postgres" for CREATE DATABASE */
    pg_query_t q;
    pg_stmt_t stmt;
    const char *param[1];
    void *data;
    char error[PG_EMBEDDED_ERROR_MAX];
};

static void embedded_step(pg_embedded_t *e);

/* Ends a start or stop with an error; the caller reports e->error. */
static void emb_fail(pg_embedded_t *e, int status)
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

static void emb_done(pg_embedded_t *e, emb_state_t state)
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

/* ---- child processes ----------------------------------------------------- */

static void proc_close_cb(uv_handle_t *h)
{
    pg_embedded_t *e = h->data;
    e->proc_open = false;
    e->handles_open--;
    embedded_step(e);
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

static void emb_spawn_or_fail(pg_embedded_t *e, char **argv)
{
    log_debug(EMB_TAG, "running %s %s", argv[0], argv[1] ? argv[1] : "");
    int rc = emb_spawn(e, argv);
    if (rc != 0)
        emb_fail(e, rc);
}

/* ---- locks --------------------------------------------------------------- */

static int open_lock(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    return fd < 0 ? -errno : fd;
}

static void lock_retry_cb(uv_timer_t *t)
{
    embedded_step(t->data);
}

/* Tries flock(fd, op|LOCK_NB). Returns 1 when held, 0 when a retry is
 * scheduled, or a negative code (timeout sets e->error). */
static int emb_try_lock(pg_embedded_t *e, int fd, int op, const char *what)
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

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int mkdir_owned(pg_embedded_t *e, const char *path, mode_t mode, bool give_to_pg)
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
static int check_reachable(pg_embedded_t *e)
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

static int write_conf(pg_embedded_t *e)
{
    char path[EMB_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/parley.conf", e->pgdata);
    char body[EMB_PATH_MAX * 2 + 512];
    /* Quotes in the socket path would break the setting: refuse them. */
    if (strchr(e->sock_dir, '\'') || strchr(e->sock_dir, '\\')) {
        snprintf(e->error, sizeof e->error, "data directory path must not contain ' or \\");
        return UV_EINVAL;
    }
    int n = snprintf(body, sizeof body,
                     "# Written by parleyd at every start; edits here are lost.\n"
                     "listen_addresses = ''\n"
                     "unix_socket_directories = '%s'\n"
                     "unix_socket_permissions = 0700\n"
                     "port = " EMB_PORT "\n"
                     "max_connections = 200\n"
                     "logging_collector = off\n",
                     e->sock_dir);
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

static int include_conf(pg_embedded_t *e)
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
        emb_fail(e, UV_EIO);
    else
        emb_done(e, EMB_RUNNING);
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

static void emb_createdb(pg_embedded_t *e)
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
        emb_fail(e, rc);
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
static bool emb_server_alive(pg_embedded_t *e)
{
    char pidfile[EMB_PATH_MAX + 32], socklock[EMB_PATH_MAX + 32];
    snprintf(pidfile, sizeof pidfile, "%s/postmaster.pid", e->pgdata);
    snprintf(socklock, sizeof socklock, "%s/.s.PGSQL." EMB_PORT ".lock", e->sock_dir);
    pid_t pid = read_lock_pid(pidfile);
    if (pid > 0 && pid_is_live_postgres(pid))
        return true;
    if (pid > 0 || file_exists(pidfile)) {
        log_warn(EMB_TAG, "removing stale %s (process %ld is gone)", pidfile, (long)pid);
        unlink(pidfile);
    }
    pid_t spid = read_lock_pid(socklock);
    if (spid > 0 && !pid_is_live_postgres(spid))
        unlink(socklock);
    return false;
}

static void start_wait_cb(uv_timer_t *t)
{
    embedded_step(t->data);
}

static void embedded_step(pg_embedded_t *e)
{
    char pg_ctl[EMB_PATH_MAX + 16], initdb[EMB_PATH_MAX + 16], timeout[16];
    snprintf(pg_ctl, sizeof pg_ctl, "%s/pg_ctl", e->bindir);
    snprintf(initdb, sizeof initdb, "%s/initdb", e->bindir);
    int rc;
    switch (e->state) {
    case EMB_LOCK:
        rc = emb_try_lock(e, e->lock_fd, LOCK_EX, e->lock_path);
        if (rc == 0)
            return;
        if (rc < 0) {
            emb_fail(e, rc);
            return;
        }
        /* Holders of the start lock are the only ones who stop the
         * cluster, so the shared lock is free to take now. */
        if ((rc = emb_try_lock(e, e->users_fd, LOCK_SH, e->users_path)) != 1) {
            emb_fail(e, rc < 0 ? rc : UV_EAGAIN);
            return;
        }
        e->state = EMB_USER;
        embedded_step(e);
        return;

    case EMB_USER: {
        if (!e->as_root) {
            e->state = EMB_PREPARE;
            embedded_step(e);
            return;
        }
        /* getpwnam reads local files here; done once at start-up. */
        struct passwd *pw = getpwnam(e->run_as);
        if (pw != NULL) {
            if (pw->pw_uid == 0) {
                snprintf(e->error, sizeof e->error,
                         "pg_user '%s' is root; PostgreSQL refuses to run as root", e->run_as);
                emb_fail(e, UV_EINVAL);
                return;
            }
            e->uid = pw->pw_uid;
            e->gid = pw->pw_gid;
            e->state = EMB_PREPARE;
            embedded_step(e);
            return;
        }
        if (e->user_created_tried) {
            snprintf(e->error, sizeof e->error,
                     "cannot create system user '%s' for the embedded cluster (useradd failed, "
                     "see %s); create it or set --pg-user",
                     e->run_as, e->tools_log);
            emb_fail(e, UV_ENOENT);
            return;
        }
        e->user_created_tried = true;
        log_info(EMB_TAG, "creating system user '%s' to run the embedded cluster", e->run_as);
        /* useradd runs as root: no SETUID for this one child. */
        e->as_root = false;
        char *argv[] = {
            "/usr/sbin/useradd", "--system", "--user-group",      "--no-create-home", "--home-dir",
            "/nonexistent",      "--shell",  "/usr/sbin/nologin", e->run_as,          NULL};
        rc = mkdir_owned(e, e->data_dir, 0700, false);
        if (rc == 0)
            rc = mkdir_owned(e, e->pg_dir, 0700, false);
        if (rc != 0) {
            e->as_root = true;
            emb_fail(e, rc);
            return;
        }
        emb_spawn_or_fail(e, argv);
        e->as_root = true;
        return; /* back here after useradd exits */
    }

    case EMB_PREPARE:
        if ((rc = mkdir_owned(e, e->data_dir, 0700, false)) != 0 ||
            (e->as_root && chmod(e->data_dir, 0711) != 0 && (rc = -errno)) ||
            (rc = mkdir_owned(e, e->pg_dir, 0700, true)) != 0 ||
            (rc = mkdir_owned(e, e->sock_dir, 0700, true)) != 0 ||
            (e->as_root && (rc = check_reachable(e)) != 0)) {
            if (e->error[0] == '\0')
                snprintf(e->error, sizeof e->error, "cannot prepare %s: %s", e->data_dir,
                         uv_strerror(rc));
            emb_fail(e, rc);
            return;
        }
        {
            char version[EMB_PATH_MAX + 16];
            snprintf(version, sizeof version, "%s/PG_VERSION", e->pgdata);
            if (file_exists(version)) {
                e->state = EMB_CONFIGURE;
                embedded_step(e);
                return;
            }
            if (file_exists(e->pgdata)) {
                snprintf(e->error, sizeof e->error,
                         "%s exists but is not a PostgreSQL cluster; move it away", e->pgdata);
                emb_fail(e, UV_EEXIST);
                return;
            }
        }
        e->state = EMB_CLEAN_TMP;
        {
            char *argv[] = {"/bin/rm", "-rf", e->pgdata_tmp, NULL};
            emb_spawn_or_fail(e, argv);
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
        emb_spawn_or_fail(e, argv);
        return;
    }

    case EMB_INITDB:
        if (e->exit_status != 0) {
            char why[512];
            snprintf(why, sizeof why, "%.500s", e->error); /* a spawn error, if any */
            snprintf(e->error, sizeof e->error, "initdb failed (exit %lld)%s%s",
                     (long long)e->exit_status, why[0] ? ": " : "", why);
            emb_append_log_tail(e, e->tools_log);
            emb_fail(e, UV_EIO);
            return;
        }
        if ((rc = include_conf(e)) != 0) {
            emb_fail(e, rc);
            return;
        }
        if (rename(e->pgdata_tmp, e->pgdata) != 0) {
            rc = -errno;
            snprintf(e->error, sizeof e->error, "cannot rename %s: %s", e->pgdata_tmp,
                     strerror(-rc));
            emb_fail(e, rc);
            return;
        }
        e->state = EMB_CONFIGURE;
        embedded_step(e);
        return;

    case EMB_CONFIGURE:
        if ((rc = write_conf(e)) != 0) {
            emb_fail(e, rc);
            return;
        }
        if (emb_server_alive(e)) {
            log_info(EMB_TAG, "joining the embedded cluster already running in %s", e->pgdata);
            e->state = EMB_CREATEDB;
            emb_createdb(e);
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
            emb_spawn_or_fail(e, argv);
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
            emb_fail(e, UV_EIO);
            return;
        }
        e->started_server = true;
        log_info(EMB_TAG, "embedded cluster started (socket in %s)", e->sock_dir);
        e->state = EMB_CREATEDB;
        emb_createdb(e);
        return;

    case EMB_STOP_LOCK: {
        rc = emb_try_lock(e, e->lock_fd, LOCK_EX, e->lock_path);
        if (rc == 0)
            return;
        if (rc < 0) {
            emb_fail(e, rc);
            return;
        }
        /* Last user? Then take users.lock exclusively and stop. */
        flock(e->users_fd, LOCK_UN);
        if (flock(e->users_fd, LOCK_EX | LOCK_NB) != 0) {
            log_info(EMB_TAG, "another parleyd still uses the embedded cluster; leaving it up");
            close(e->users_fd);
            e->users_fd = -1;
            emb_done(e, EMB_IDLE);
            return;
        }
        log_info(EMB_TAG, "stopping the embedded cluster");
        e->state = EMB_STOPPING;
        char *argv[] = {pg_ctl, "stop", "-D", e->pgdata, "-m", "fast", "-w", "-s", NULL};
        emb_spawn_or_fail(e, argv);
        return;
    }

    case EMB_STOPPING:
        close(e->users_fd);
        e->users_fd = -1;
        if (e->exit_status != 0) {
            snprintf(e->error, sizeof e->error, "pg_ctl stop failed (exit %lld)",
                     (long long)e->exit_status);
            emb_append_log_tail(e, e->tools_log);
            emb_fail(e, UV_EIO);
            return;
        }
        log_info(EMB_TAG, "embedded cluster stopped");
        emb_done(e, EMB_IDLE);
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
    int rc = mkdir_owned(e, e->data_dir, 0700, false);
    if (rc == 0 && (rc = open_lock(e->lock_path)) >= 0) {
        e->lock_fd = rc;
        rc = open_lock(e->users_path);
        if (rc >= 0) {
            e->users_fd = rc;
            rc = 0;
        }
    }
    if (rc < 0) {
        if (e->error[0] == '\0')
            snprintf(e->error, sizeof e->error, "cannot open lock files in %s: %s", e->data_dir,
                     uv_strerror(rc));
        emb_fail(e, rc);
        return;
    }
    e->lock_deadline = uv_now(e->loop) + (uint64_t)e->start_timeout_s * 1000;
    e->state = EMB_LOCK;
    embedded_step(e);
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
    int rc = open_lock(e->lock_path);
    if (rc < 0) {
        snprintf(e->error, sizeof e->error, "cannot open %s: %s", e->lock_path, uv_strerror(rc));
        emb_fail(e, rc);
        return;
    }
    e->lock_fd = rc;
    e->lock_deadline = uv_now(e->loop) + (uint64_t)e->start_timeout_s * 1000;
    e->state = EMB_STOP_LOCK;
    embedded_step(e);
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
