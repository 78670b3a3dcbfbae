/* embedded_internal: what the files of the embedded cluster share
 * (internal to src/db): embedded.c is the start/stop state machine and
 * the API; embedded_ops.c the operations its steps are made of (child
 * processes, the data directory's locks, configuration files, the admin
 * database, the lock files of a dead server). */
#ifndef PARLEY_DB_EMBEDDED_INTERNAL_H
#define PARLEY_DB_EMBEDDED_INTERNAL_H

#include <stdbool.h>
#include <sys/types.h>

#include "db/embedded.h"
#include "db/pool.h"

#define EMB_PATH_MAX     512
#define EMB_LOCK_POLL_MS 50
#define EMB_PORT         "5432"
#define EMB_TAG          "pg"
/* pg_ctl stop -m fast waits this long for the backends (a query that
 * ignores its cancel keeps one alive) before the stop turns immediate. */
#define EMB_STOP_FAST_S "10"

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
    EMB_STOP_LOCK,    /* waiting for embedded.lock to stop */
    EMB_STOPPING,     /* pg_ctl stop -m fast */
    EMB_STOPPING_NOW, /* pg_ctl stop -m immediate: fast did not end in time */
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

/* embedded.c */
void pg_embedded__done(pg_embedded_t *e, emb_state_t state);
void pg_embedded__step(pg_embedded_t *e);
void pg_embedded__fail(pg_embedded_t *e, int status);

/* embedded_ops.c */
int pg_embedded__check_reachable(pg_embedded_t *e);
void pg_embedded__createdb(pg_embedded_t *e);
__attribute__((warn_unused_result)) bool pg_embedded__file_exists(const char *path);
int pg_embedded__include_conf(pg_embedded_t *e);
int pg_embedded__mkdir_owned(pg_embedded_t *e, const char *path, mode_t mode, bool give_to_pg);
int pg_embedded__open_lock(const char *path);
__attribute__((warn_unused_result)) bool pg_embedded__server_alive(pg_embedded_t *e);
void pg_embedded__spawn_or_fail(pg_embedded_t *e, char **argv);
int pg_embedded__try_lock(pg_embedded_t *e, int fd, int op, const char *what);
int pg_embedded__write_conf(pg_embedded_t *e);

#endif
