/* app_check: every setting checked before any work (no cluster created,
 * started or joined; nothing bound): the --listen endpoints and the token
 * file against the toolsets served, the toolset names, the database
 * URLs, the upstream URLs and the address allow-list. A bad value is a
 * usage error (the caller exits CLI_EXIT_USAGE), named by its flag
 * (--bluesky-service) whether it came from a flag, the environment or the
 * config file. */
#ifndef PARLEY_APP_CHECK_H
#define PARLEY_APP_CHECK_H

#include <stddef.h>

#include "cli.h"
#include "config.h"

/* Returns 0, or a negative code with err saying which setting is wrong and
 * why. */
int app_check_config(const config_t *cfg, cli_command_t command, char *err, size_t errcap);

#endif
