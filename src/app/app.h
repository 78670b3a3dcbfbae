/* app: the daemon's lifecycle for the serve and migrate commands: signals,
 * the database (embedded cluster or external server), the pools, the
 * migrations, and the two-stage graceful shutdown. */
#ifndef PARLEY_APP_APP_H
#define PARLEY_APP_APP_H

#include "cli.h"
#include "config.h"

/* Exit statuses. */
#define APP_EXIT_OK      0
#define APP_EXIT_FAILURE 1
/* Second SIGINT/SIGTERM during shutdown: exit at once with this status. */
#define APP_EXIT_FORCED 3

/* Name of the NOTIFY channel the daemon listens on. */
#define APP_NOTIFY_CHANNEL "parley_events"
/* The requestState key's file in the data directory (state_key_file). */
#define APP_STATE_KEY_FILE "mcp-state.key"

/* Runs cmd (CLI_CMD_SERVE or CLI_CMD_MIGRATE) on a fresh loop until it
 * ends; returns the process exit status. */
int app_run(const config_t *cfg, cli_command_t cmd);

/* bootstrap, before the loop (app_bootstrap.c): with --hook reads the
 * hook's JSON from stdin (bounded), then makes cfg->boot_project the
 * absolute project directory (--project, the hook's cwd, or the current
 * directory). 0, or UV_EINVAL with err (a usage error). */
int app_bootstrap_prepare(config_t *cfg, char *err, size_t errcap);

#endif
