/* cli: the command line of parleyd: which command to run, which flags were
 * given, and the configuration they resolve to together with the
 * environment, the config file and the defaults (see config.h). */
#ifndef PARLEY_CLI_H
#define PARLEY_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "config.h"

#define CLI_MAX_FLAGS 64
#define CLI_MAX_ARGS  16

/* Exit status for usage errors (unknown flag, bad value). */
#define CLI_EXIT_USAGE 2

/* parleyd bootstrap's budget: its default and bounds, in tokens (about
 * four characters each; the bounds are bootstrap_memory's). */
#define CLI_BOOT_BUDGET     2000
#define CLI_BOOT_BUDGET_MIN 1000
#define CLI_BOOT_BUDGET_MAX 1000000

typedef enum {
    CLI_CMD_SERVE = 0,
    CLI_CMD_MIGRATE,
    CLI_CMD_IMPORT,
    CLI_CMD_LOGIN,     /* parleyd login telegram --phone +NNN: a user account, interactively */
    CLI_CMD_BOOTSTRAP, /* parleyd bootstrap [--project DIR] [--token-budget N] [--hook] */
    CLI_CMD_BACKUP,    /* parleyd backup DIR: the embedded cluster, media and keys into DIR */
    CLI_CMD_RESTORE,   /* parleyd restore DIR: such a backup into a new --data-dir */
    CLI_CMD_HELP,
    CLI_CMD_HELP_CONFIG, /* the settings reference as Markdown (docs/configuration.md) */
    CLI_CMD_HELP_TOOLS,  /* a toolset's tools as Markdown (its docs page); args[0] names it */
    CLI_CMD_HELP_IMPORT, /* parleyd import [SOURCE] --help; args[0] names the source, if any */
    CLI_CMD_VERSION,
} cli_command_t;

typedef struct cli_flag_s {
    char key[64];      /* config key: "data_dir" for --data-dir */
    char typed[66];    /* the flag as typed, for messages: "--data-dir" */
    const char *value; /* points into argv */
} cli_flag_t;

typedef struct cli_s {
    cli_command_t command;
    const char *config_file; /* --config, or NULL */
    int nflags;
    cli_flag_t flags[CLI_MAX_FLAGS];
    int nargs; /* positional arguments after the command */
    const char *args[CLI_MAX_ARGS];
    /* bootstrap's own options (after the command): */
    const char *boot_project; /* --project DIR, or NULL */
    int boot_token_budget;    /* --token-budget N, or 0 */
    bool boot_hook;           /* --hook */
} cli_t;

/* Parses argv (argv[0] is the program). Flags take "--flag value" or
 * "--flag=value" and may come before or after the command. Returns 0, or
 * UV_EINVAL with err telling what is wrong (exit CLI_EXIT_USAGE). */
int cli_parse(int argc, char **argv, cli_t *cli, char *err, size_t errcap);

/* Resolves the configuration: defaults, then the config file (--config or
 * PARLEY_CONFIG), then the environment, then the flags. Returns 0 or a
 * negative code with err set. */
int cli_load_config(const cli_t *cli, config_t *cfg, char *err, size_t errcap);

void cli_print_help(FILE *out);
/* The help of parleyd import, or of one source (NULL or unknown: all). */
void cli_print_import_help(FILE *out, const char *source);
void cli_print_version(FILE *out);

#endif
