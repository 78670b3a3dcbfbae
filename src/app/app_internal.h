/* app_internal: what every file of the entry sees: its state (app_t) and
 * what the steps share: the stop (core.c) and the parts several steps
 * start (parts.c). The steps themselves (steps.h) are not declared here:
 * no step reaches another.
 *
 * Ownership: every part started is pushed on a->stack as it starts and is
 * stopped, closed and freed through it, in reverse start order; the
 * pointers kept here beside it are borrowed views for the parts started
 * later (the pools for the archive, the fetch client for connectors).
 * Nothing is freed before the loop has ended. */
#ifndef PARLEY_APP_APP_INTERNAL_H
#define PARLEY_APP_APP_INTERNAL_H

#include <uv.h>

#include "app/app.h"
#include "app/stack.h"
#include "db/conninfo.h"
#include "db/embedded.h"
#include "db/index_build.h"
#include "db/migrate.h"
#include "db/pool.h"
#include "mcp/server.h"
#include "toolsets/toolset.h"
#include "util/sdnotify.h"

#define APP_TAG "main"

typedef enum {
    APP_STARTING = 0,
    APP_RUNNING,
    APP_DRAINING,
    APP_CLOSING,
} app_state_t;

typedef struct app_s {
    uv_loop_t loop;
    char owner[160]; /* this daemon's claims: host:pid:random (app_start_connectors) */
    const config_t *cfg;
    cli_command_t cmd;
    app_state_t state;
    int exit_code;
    uv_signal_t sigint, sigterm;
    uv_timer_t drain_timer;
    uint64_t drain_deadline;
    sdnotify_watchdog_t watchdog; /* systemd's WATCHDOG=1 pings, when it asks for them */
    app_stack_t stack;
    pg_embedded_t *emb; /* while the embedded cluster is there */
    bool emb_running;   /* started (stop it before closing) */
    pg_conninfo_t conninfo;
    pg_pool_t *rw, *ro;
    migrate_t mig;
    mcp_server_t mcp; /* serve: once mcp_started */
    bool mcp_started;
    toolset_env_t env;               /* serve: what the toolsets' contexts are built from */
    struct sync_runner_s *jobs;      /* serve: the connectors' jobs, or NULL (for /metrics) */
    struct net_client_s *fetch;      /* serve: URLs tools give, under the address policy */
    long long words_merged;          /* import: into the vocabulary */
    int forms_waits;                 /* import: its list's step gave up waiting (import.c) */
    size_t serve_step;               /* serve: the next stage of its sequence (serve.c) */
    void (*resume)(struct app_s *a); /* what goes on after APP_STEP_PENDING, or NULL */
    /* serve, default selection (app_auto.c): a check of the store's
     * sources in flight, and another wanted once it ends. */
    bool auto_busy, auto_again;
} app_t;

/* A step's stage that goes on later (serve's sequence): it returns
 * APP_STEP_PENDING and, when done, calls app_resume. */
#define APP_STEP_PENDING 1

/* Ends with exit_code (the first failure's code is kept): stop taking
 * work, drain, close the stack (core.c). */
void app_shutdown(app_t *a, int exit_code);
/* Logs what failed ("what: detail", or what alone when detail is NULL)
 * and shuts down with APP_EXIT_FAILURE. */
void app_fatal(app_t *a, const char *what, const char *detail);
/* Pushes a part on the stack; a full stack is a fatal error (returns its
 * code). */
int app_push(app_t *a, const app_part_ops_t *ops, void *obj);
/* Goes on with what returned APP_STEP_PENDING (a->resume, set by the
 * step that waits; cleared before it runs). */
void app_resume(app_t *a);
/* The entry's own: closes the stack, then the entry's handles (core.c;
 * app.c's, when a start fails before anything was pushed). */
void app__close(app_t *a);

/* ---- the parts several steps start (parts.c) ---- */

/* A pool part (its data pointer is the app). */
extern const app_part_ops_t app_pool_part;
/* The builder of the indexes the migrations asked for (db/index_build.h)
 * as a part, its data pointer the app: serve's (tries a failed build
 * again) and migrate's (fail_fast: ends with the failure). */
int app_start_index_builds(app_t *a, bool fail_fast, index_build_cb cb, char *err, size_t errcap);
/* The word forms' builder (archive/search_forms.h) as a part: serve's,
 * and the end of an import's. */
extern const app_part_ops_t app_forms_part;
/* A connector's setting by key (connector_env_t.setting; data: the config_t). */
int app_connector_setting(const void *data, const char *key, char *out, size_t cap);

#endif
