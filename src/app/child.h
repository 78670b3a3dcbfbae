/* app_child: one child process a command of the entry runs as a step
 * (backup's pg_basebackup and cp, restore's pg_verifybackup, cp and
 * chown): started with uv_spawn, so the loop never waits on it; its
 * output goes to parleyd's stderr (pg_basebackup's --progress lines
 * among it); while it runs a line says every APP_CHILD_PROGRESS_MS that
 * it still does, so a long copy is never silent; a stop sends it SIGTERM.
 * One child at a time per app_child_t; the handle is reused step after
 * step. */
#ifndef PARLEY_APP_CHILD_H
#define PARLEY_APP_CHILD_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

/* How often a running child's "still running" line comes. */
#define APP_CHILD_PROGRESS_MS 10000
#define APP_CHILD_ERROR_MAX   256

typedef struct app_child_s app_child_t;
/* status: 0 when the child exited with 0; UV_EIO (it failed: error says
 * how) or the spawn's own error. */
typedef void (*app_child_cb)(app_child_t *c, int status);

struct app_child_s {
    uv_loop_t *loop;
    uv_process_t proc;
    uv_timer_t timer;
    bool running;  /* a process is there (until its handle closed) */
    int handles;   /* open handles: the timer, and proc while running */
    char what[96]; /* for the log lines: "copying the media store" */
    uint64_t started;
    int progress_ms;
    int64_t exit_status;
    int term_signal;
    app_child_cb cb;
    bool closing;
    void (*close_cb)(app_child_t *c);
    void *data;
    char error[APP_CHILD_ERROR_MAX];
};

/* Prepares c (its timer) on loop. */
void app_child_init(app_child_t *c, uv_loop_t *loop);
/* Runs argv (argv[0] a path) with
 * a minimal environment (PATH, LC_ALL=C.UTF-8); cb(c, status) once it has
 * exited and its handle closed. Returns 0, or a negative code with
 * c->error when it could not start (cb is not called then). */
int app_child_run(app_child_t *c, char **argv, const char *what, app_child_cb cb);
/* app_child_run as uid and gid (the caller is root). */
int app_child_run_as(app_child_t *c, char **argv, const char *what, long uid, long gid,
                     app_child_cb cb);
/* SIGTERM to the running child, if any (it then ends with an error). */
void app_child_kill(app_child_t *c);
__attribute__((warn_unused_result)) bool app_child_running(const app_child_t *c);
/* Closes c's handles (no child may be running); cb(c) once closed. */
void app_child_close(app_child_t *c, void (*cb)(app_child_t *c));

#endif
