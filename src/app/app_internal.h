/* app_internal: the entry's state, shared by its files: app.c (signals,
 * the state machine, the database, the drain and the stop), app_serve.c
 * (what serve starts) and app_import.c (one import).
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
    toolset_env_t env;          /* serve: what the toolsets' contexts are built from */
    struct sync_runner_s *jobs; /* serve: the connectors' jobs, or NULL (for /metrics) */
    struct net_client_s *fetch; /* serve: URLs tools give, under the address policy */
    long long words_merged;     /* import: into the vocabulary */
    size_t serve_step;          /* serve: the next step of app_serve_start's sequence */
    /* serve, default selection (app_auto.c): a check of the store's
     * sources in flight, and another wanted once it ends. */
    bool auto_busy, auto_again;
} app_t;

/* A serve step that goes on later (app_serve_continue) instead of now. */
#define APP_STEP_PENDING 1

/* Ends with exit_code (the first failure's code is kept): stop taking
 * work, drain, close the stack. */
void app_shutdown(app_t *a, int exit_code);
/* Logs what failed ("what: detail", or what alone when detail is NULL)
 * and shuts down with APP_EXIT_FAILURE. */
void app_fatal(app_t *a, const char *what, const char *detail);
/* Pushes a part on the stack; a full stack is a fatal error (returns its
 * code). */
int app_push(app_t *a, const app_part_ops_t *ops, void *obj);

/* serve, after the migrations: everything serve runs (app_serve.c). */
void app_serve_start(app_t *a);
/* serve's connectors, jobs, pages, toolsets and endpoints (app_connect.c);
 * 0, or a negative code with err naming the part. */
int app_start_connectors(app_t *a, char *err, size_t errcap);
int app_start_toolsets(app_t *a, char *err, size_t errcap);
int app_start_endpoints(app_t *a, char *err, size_t errcap);
/* Runs serve's steps from a->serve_step on (after a pending one). */
void app_serve_continue(app_t *a);
/* The default selection ("auto", app_auto.c): which selected toolsets
 * have something to serve. app_auto_first checks the store before the
 * endpoints open (APP_STEP_PENDING, then app_serve_continue; 0 when the
 * selection is not auto); app_auto_refresh checks again after the store
 * changed, while a toolset is held back, and tells the sessions when
 * one is served. */
int app_auto_first(app_t *a, char *err, size_t errcap);
/* True when the toolsets setting names "auto" (alone or in a list): a
 * session that names no selection gets the default one, its compact
 * surface (toolsets/surface.h). */
__attribute__((warn_unused_result)) bool app_auto_selected(const config_t *cfg);
void app_auto_refresh(app_t *a);
/* The builder of the indexes the migrations asked for (db/index_build.h)
 * as a part, its data pointer the app: serve's (tries a failed build
 * again) and migrate's (fail_fast: ends with the failure). */
int app_start_index_builds(app_t *a, bool fail_fast, index_build_cb cb, char *err, size_t errcap);
/* A pool part (its data pointer is the app): app.c. */
extern const app_part_ops_t app_pool_part;
/* The word forms' builder (archive/search_forms.h) as a part: serve's,
 * and the end of an import's (app_serve.c). */
extern const app_part_ops_t app_forms_part;
/* import, after the migrations: the one import (app_import.c). */
void app_import_start(app_t *a);
/* login, after the migrations: one account signed in (app_login.c). */
void app_login_start(app_t *a);
/* bootstrap, after the migrations: one project's memory printed
 * (app_bootstrap.c). */
void app_bootstrap_start(app_t *a);
/* backup, before the cluster starts (app_backup.c): the data directory
 * has a cluster; DIR is new or empty (then made) and outside the data
 * directory. 0, or a negative code with err. */
int app_backup_check(const config_t *cfg, char *err, size_t errcap);
/* backup, once the embedded cluster runs: the copies and the manifest
 * (app_backup.c). */
void app_backup_start(app_t *a);
/* restore, with no database (app_restore.c). */
void app_restore_start(app_t *a);
/* A connector's setting by key (connector_env_t.setting; data: the app). */
int app_connector_setting(void *data, const char *key, char *out, size_t cap);

#endif
