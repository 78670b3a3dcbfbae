/* cli: command-line parsing and configuration resolution (see cli.h). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "archive/tg_import.h"
#include "db/conninfo.h"
#include "util/strutil.h"

static const struct {
    const char *name;
    cli_command_t cmd;
} commands[] = {
    {"serve", CLI_CMD_SERVE}, {"migrate", CLI_CMD_MIGRATE}, {"import", CLI_CMD_IMPORT},
    {"help", CLI_CMD_HELP},   {"version", CLI_CMD_VERSION},
};

/* The import sources: what `parleyd import NAME` takes, and its help. */
static const struct {
    const char *name;
    const char *args; /* the positional arguments after NAME */
    int min, max;     /* how many of them */
    const char *what; /* one line for parleyd --help */
    const char *help; /* parleyd import NAME --help */
} import_sources[] = {
    {"telegram-export", "PATH", 1, 1,
     "import a Telegram Desktop JSON export (result.json or its folder) into the store; "
     "idempotent",
     "PATH is a Telegram Desktop export in JSON: its result.json, or the folder holding it (a\n"
     "single chat or the whole account). Every chat, message, person and file record is\n"
     "stored; importing the same export again changes nothing. Progress is logged;\n"
     "SIGINT or SIGTERM stops at the next step: the partial chat is rolled back, the\n"
     "chats imported completely stay, and running the import again completes it.\n"},
    {"claude-code", "[DIR]", 0, 1,
     "import agents' session transcripts (DIR/PROJECT/*.jsonl; default ~/.claude/projects); "
     "incremental and idempotent; --eras FILE names the eras",
     "DIR holds one folder per project with the sessions' JSON Lines transcripts (default\n"
     "~/.claude/projects). Only what was appended since the last import is read; a\n"
     "transcript that shrank or was rewritten is read again from its start (nothing is\n"
     "stored twice). Entries that are not regular files, malformed lines, lines over the\n"
     "limit and events the store refuses are skipped with a warning naming file and line;\n"
     "the summary counts them. --eras FILE (a JSON object {\"KEY\": \"Era name\"}, KEY a\n"
     "project folder or a working directory) names the eras.\n"},
    {"chatwise", "PATH", 1, 1,
     "import the chats of ChatWise (its app.db, or the folder holding it); incremental and "
     "idempotent",
     "PATH is ChatWise's SQLite database app.db, or the folder holding it; it is read, never\n"
     "written. Only chats and messages changed since the last import are read. A row that\n"
     "cannot be stored as it is (a time out of range, a value over 8 MiB, a row the store\n"
     "refuses) is stored degraded or skipped with a warning naming table and row id; the\n"
     "summary counts them. `serve --chatwise-db PATH` follows the file while serving.\n"},
};
#define NSOURCES (sizeof import_sources / sizeof import_sources[0])

int cli_parse(int argc, char **argv, cli_t *cli, char *err, size_t errcap)
{
    memset(cli, 0, sizeof *cli);
    bool have_command = false, only_args = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_args && strcmp(a, "--") == 0) {
            only_args = true;
            continue;
        }
        if (!only_args && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            if (have_command && cli->command == CLI_CMD_IMPORT) {
                /* parleyd import [NAME] --help: that command's own help. */
                cli->command = CLI_CMD_HELP_IMPORT;
                if (i + 1 < argc && cli->nargs == 0 && argv[i + 1][0] != '-')
                    cli->args[cli->nargs++] = argv[i + 1];
                return 0;
            }
            cli->command = CLI_CMD_HELP;
            return 0;
        }
        if (!only_args && strcmp(a, "--help-config") == 0) {
            cli->command = CLI_CMD_HELP_CONFIG;
            return 0;
        }
        if (!only_args && strcmp(a, "--help-tools") == 0) {
            if (i + 1 >= argc) {
                snprintf(err, errcap, "--help-tools needs a toolset's name");
                return UV_EINVAL;
            }
            cli->command = CLI_CMD_HELP_TOOLS;
            cli->args[cli->nargs++] = argv[i + 1];
            return 0;
        }
        if (!only_args && (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0)) {
            cli->command = CLI_CMD_VERSION;
            return 0;
        }
        if (!only_args && a[0] == '-') {
            if (a[1] != '-' || a[2] == '\0') {
                snprintf(err, errcap, "unknown option '%s' (options are long: --name value)", a);
                return UV_EINVAL;
            }
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            char key[64];
            if (len >= sizeof key) {
                snprintf(err, errcap, "unknown option '%.80s'", a);
                return UV_EINVAL;
            }
            for (size_t k = 0; k < len; k++)
                key[k] = name[k] == '-' ? '_' : name[k];
            key[len] = '\0';
            bool is_config = strcmp(key, "config") == 0;
            if (!is_config && !config_has_key(key)) {
                snprintf(err, errcap, "unknown option '--%.*s' (see parleyd --help)", (int)len,
                         name);
                return UV_EINVAL;
            }
            const char *value;
            if (eq)
                value = eq + 1;
            else if (config_key_is_bool(key))
                value = "true";
            else if (i + 1 < argc)
                value = argv[++i];
            else {
                snprintf(err, errcap, "option '--%s' needs a value", name);
                return UV_EINVAL;
            }
            if (is_config) {
                cli->config_file = value;
                continue;
            }
            if (cli->nflags == CLI_MAX_FLAGS) {
                snprintf(err, errcap, "too many options (at most %d)", CLI_MAX_FLAGS);
                return UV_EINVAL;
            }
            cli_flag_t *f = &cli->flags[cli->nflags++];
            memcpy(f->key, key, len + 1);
            snprintf(f->typed, sizeof f->typed, "--%.*s", (int)len, name);
            f->value = value;
            continue;
        }
        if (!have_command) {
            size_t k;
            for (k = 0; k < sizeof commands / sizeof commands[0]; k++)
                if (strcmp(a, commands[k].name) == 0)
                    break;
            if (k == sizeof commands / sizeof commands[0]) {
                snprintf(err, errcap,
                         "unknown command '%s' (commands: serve, migrate, import, help, "
                         "version)",
                         a);
                return UV_EINVAL;
            }
            cli->command = commands[k].cmd;
            have_command = true;
            continue;
        }
        if (cli->nargs == CLI_MAX_ARGS) {
            snprintf(err, errcap, "too many arguments");
            return UV_EINVAL;
        }
        cli->args[cli->nargs++] = a;
    }
    if (cli->command == CLI_CMD_IMPORT) {
        for (size_t k = 0; cli->nargs > 0 && k < NSOURCES; k++)
            if (strcmp(cli->args[0], import_sources[k].name) == 0) {
                int n = cli->nargs - 1;
                if (n >= import_sources[k].min && n <= import_sources[k].max)
                    return 0;
                snprintf(err, errcap, "usage: parleyd import %s %s (see parleyd import %s --help)",
                         import_sources[k].name, import_sources[k].args, import_sources[k].name);
                return UV_EINVAL;
            }
        size_t n =
            (size_t)snprintf(err, errcap, "usage: parleyd import SOURCE ... where SOURCE is");
        for (size_t k = 0; k < NSOURCES && n < errcap; k++)
            n += (size_t)snprintf(err + n, errcap - n, "%s %s", k ? "," : "",
                                  import_sources[k].name);
        if (n < errcap)
            snprintf(err + n, errcap - n, " (see parleyd import --help)");
        return UV_EINVAL;
    }
    if (cli->nargs > 0 && cli->command != CLI_CMD_HELP) {
        snprintf(err, errcap, "unexpected argument '%s'", cli->args[0]);
        return UV_EINVAL;
    }
    return 0;
}

int cli_load_config(const cli_t *cli, config_t *cfg, char *err, size_t errcap)
{
    int rc = config_init(cfg, err, errcap);
    if (rc != 0)
        return rc;
    const char *file = cli->config_file ? cli->config_file : getenv("PARLEY_CONFIG");
    if (file && file[0]) {
        if (!str_copy(cfg->config_file, sizeof cfg->config_file, file)) {
            snprintf(err, errcap, "config file path is too long");
            return UV_EINVAL;
        }
        if ((rc = config_load_file(cfg, file, err, errcap)) != 0)
            return rc;
    }
    if ((rc = config_load_env(cfg, err, errcap)) != 0)
        return rc;
    for (int i = 0; i < cli->nflags; i++) {
        char msg[CONFIG_ERR_MAX];
        rc = config_set(cfg, cli->flags[i].key, cli->flags[i].value, CONFIG_SRC_FLAG, msg,
                        sizeof msg);
        if (rc != 0) {
            /* Named as typed ("--log-level: ..."), not by its key. */
            size_t kl = strlen(cli->flags[i].key);
            const char *why =
                strncmp(msg, cli->flags[i].key, kl) == 0 && msg[kl] == ':' && msg[kl + 1] == ' '
                    ? msg + kl + 2
                    : msg;
            snprintf(err, errcap, "%s: %s", cli->flags[i].typed, why);
            return rc;
        }
    }
    if (cli->command == CLI_CMD_IMPORT) {
        cfg->import_claude_code = strcmp(cli->args[0], "claude-code") == 0;
        cfg->import_chatwise = strcmp(cli->args[0], "chatwise") == 0;
        char home_dir[CONFIG_PATH_MAX];
        const char *path = cli->nargs > 1 ? cli->args[1] : NULL;
        if (path == NULL) {
            const char *home = getenv("HOME");
            snprintf(home_dir, sizeof home_dir, "%s/.claude/projects", home ? home : "");
            path = home_dir;
        }
        if (!str_copy(cfg->import_path, sizeof cfg->import_path, path)) {
            snprintf(err, errcap, "import: the path is too long");
            return UV_EINVAL;
        }
    }
    char tzn[16];
    if (!tg_import_parse_tz(cfg->tz, tzn, sizeof tzn)) {
        snprintf(err, errcap, "tz: '%s' is not a UTC offset (e.g. +03:00, -05:00, UTC)", cfg->tz);
        return UV_EINVAL;
    }
    /* A malformed database URL is a bad value, found before any work. */
    const char *urls[] = {cfg->db_url, cfg->db_ro_url, cfg->memory_db};
    static const char *const keys[] = {"db", "db_ro", "memory_db"};
    for (size_t i = 0; i < 3; i++) {
        pg_conninfo_t ci;
        char msg[CONFIG_ERR_MAX];
        if (urls[i][0] == '\0')
            continue;
        rc = pg_conninfo_parse(&ci, urls[i], msg, sizeof msg);
        if (rc != 0) {
            snprintf(err, errcap, "%s: %s", keys[i], msg);
            return rc;
        }
        pg_conninfo_free(&ci);
    }
    return 0;
}

void cli_print_import_help(FILE *out, const char *source)
{
    for (size_t k = 0; source && k < NSOURCES; k++)
        if (strcmp(source, import_sources[k].name) == 0) {
            fprintf(out, "Usage: parleyd import %s %s [options]\n\n%s\n", import_sources[k].name,
                    import_sources[k].args, import_sources[k].help);
            fprintf(out, "Options are those of parleyd --help (--db, --data-dir, --log-level, "
                         "...).\nExit status: 0 imported (skipped rows are counted in the "
                         "summary), 1 failed,\n2 usage error.\n");
            return;
        }
    fprintf(out, "Usage: parleyd import SOURCE ARGS [options]\n\nSources:\n");
    for (size_t k = 0; k < NSOURCES; k++)
        fprintf(out, "  %s %s\n      %s\n", import_sources[k].name, import_sources[k].args,
                import_sources[k].what);
    fprintf(out, "\nparleyd import SOURCE --help tells more of one; options are those of "
                 "parleyd --help.\n");
}

void cli_print_version(FILE *out)
{
    fprintf(out, "parleyd %s\n", PARLEY_VERSION);
}

void cli_print_help(FILE *out)
{
    fprintf(out,
            "parleyd %s - conversation archive for AI agents, served over MCP\n"
            "\n"
            "Usage: parleyd [command] [options]\n"
            "\n"
            "Commands:\n"
            "  serve      run the daemon (default): start or reuse the database, apply\n"
            "             migrations, serve until SIGINT/SIGTERM\n"
            "  migrate    apply the schema migrations and exit\n"
            "  import SOURCE ...\n"
            "             import into the store (parleyd import --help lists the sources)\n"
            "  help       show this text\n"
            "  version    show the version\n"
            "\n"
            "Options (precedence: flags > environment > config file > defaults):\n"
            "  --config FILE                  config file of 'key = value' lines; env "
            "PARLEY_CONFIG\n"
            "  --help-config                  print this reference as a Markdown table\n"
            "  --help-tools TOOLSET           print a toolset's tools as Markdown\n",
            PARLEY_VERSION);
    config_print_reference(out);
    fprintf(out, "\nWith no database configured parleyd runs a private PostgreSQL cluster in\n"
                 "DATA_DIR/pg. Exit status: 0 ok, 1 runtime error, 2 usage error, 3 exited at\n"
                 "once on a second SIGINT/SIGTERM.\n");
}
