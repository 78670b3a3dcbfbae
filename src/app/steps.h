/* app steps: the table of the entry's commands (serve, migrate, import,
 * login, bootstrap, backup, restore), which app.c walks without naming
 * one. Each step is a file of src/app/ that sees only app_internal.h (the
 * entry's state and the parts several steps share) and is reached only
 * through its row here: no step calls another. A new command is its own
 * file plus one row. */
#ifndef PARLEY_APP_STEPS_H
#define PARLEY_APP_STEPS_H

#include "app/app_internal.h"

/* What must run before a step starts. */
typedef enum {
    APP_AFTER_NOTHING = 0, /* no database at all (restore) */
    APP_AFTER_CLUSTER,     /* the embedded cluster, nothing more (backup) */
    APP_AFTER_MIGRATIONS,  /* the database, the read-write pool, the migrations */
} app_after_t;

typedef struct {
    cli_command_t cmd;
    const char *name; /* for the log */
    app_after_t after;
    /* Optional: checked before any database work; 0, or a negative code
     * with err (the command then fails, nothing started). */
    int (*check)(const config_t *cfg, char *err, size_t errcap);
    /* Starts the step's parts (each pushed on a->stack); a failure ends
     * the run through app_fatal. */
    void (*start)(app_t *a);
} app_step_t;

extern const app_step_t app_step_serve;
extern const app_step_t app_step_migrate;
extern const app_step_t app_step_import;
extern const app_step_t app_step_login;
extern const app_step_t app_step_bootstrap;
extern const app_step_t app_step_backup;
extern const app_step_t app_step_restore;

/* The step of cmd, or NULL. */
const app_step_t *app_step_find(cli_command_t cmd);

#endif
