/* main: entry point of parleyd: parse the command line, resolve the
 * configuration, run the command. Exit status 0 ok, 1 runtime error,
 * 2 usage error (see cli.h), 3 forced exit on a second signal. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "app/app.h"
#include "app/check.h"
#include "cli.h"
#include "mcp/reference.h"
#include "toolsets/toolset.h"
#include "util/log.h"

int main(int argc, char **argv)
{
    /* A peer that goes away must surface as EPIPE, never kill the daemon. */
    signal(SIGPIPE, SIG_IGN);
    /* So must a file size limit (RLIMIT_FSIZE): a write past it fails with
     * EFBIG, like a full disk, and the download is retried later. */
    signal(SIGXFSZ, SIG_IGN);

    cli_t cli;
    char err[CONFIG_ERR_MAX];
    if (cli_parse(argc, argv, &cli, err, sizeof err) != 0) {
        fprintf(stderr, "parleyd: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    switch (cli.command) {
    case CLI_CMD_HELP:
        cli_print_help(stdout);
        return 0;
    case CLI_CMD_HELP_CONFIG:
        config_print_markdown(stdout);
        return 0;
    case CLI_CMD_HELP_IMPORT:
        cli_print_import_help(stdout, cli.nargs > 0 ? cli.args[0] : NULL);
        return 0;
    case CLI_CMD_HELP_TOOLS:
        for (const toolset_t *const *t = toolsets_table; *t; t++)
            if (strcmp((*t)->mcp->name, cli.args[0]) == 0)
                return mcp_reference_print(stdout, (*t)->mcp) == 0 ? 0 : 1;
        fprintf(stderr, "parleyd: --help-tools: no toolset '%s' (", cli.args[0]);
        for (const toolset_t *const *t = toolsets_table; *t; t++)
            fprintf(stderr, "%s%s", t == toolsets_table ? "" : ", ", (*t)->mcp->name);
        fprintf(stderr, ")\n");
        return CLI_EXIT_USAGE;
    case CLI_CMD_VERSION:
        cli_print_version(stdout);
        return 0;
    default:
        break;
    }
    config_t cfg;
    if (cli_load_config(&cli, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "parleyd: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    /* Every setting is checked before any work: a bad one is a usage
     * error, with no cluster created, started or joined. */
    if (app_check_config(&cfg, cli.command, err, sizeof err) != 0) {
        fprintf(stderr, "parleyd: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    if (cli.command == CLI_CMD_BOOTSTRAP) {
        /* A hook's command: warnings and errors only, unless asked. */
        if (config_source_of(&cfg, "log_level") == CONFIG_SRC_DEFAULT)
            cfg.log_level = LOG_WARN;
        if (app_bootstrap_prepare(&cfg, err, sizeof err) != 0) {
            fprintf(stderr, "parleyd: %s\n", err);
            return CLI_EXIT_USAGE;
        }
    }
    log_set_level(cfg.log_level);
    return app_run(&cfg, cli.command);
}
