/* cli: command-line parsing and configuration resolution (see cli.h). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "db/conninfo.h"
#include "import/importers.h"
#include "upstream/connectors.h"
#include "util/strutil.h"

static const struct {
    const char *name;
    cli_command_t cmd;
} commands[] = {
    {"serve", CLI_CMD_SERVE},     {"migrate", CLI_CMD_MIGRATE},     {"import", CLI_CMD_IMPORT},
    {"login", CLI_CMD_LOGIN},     {"bootstrap", CLI_CMD_BOOTSTRAP}, {"backup", CLI_CMD_BACKUP},
    {"restore", CLI_CMD_RESTORE}, {"help", CLI_CMD_HELP},           {"version", CLI_CMD_VERSION},
};

#define BOOT_USAGE "usage: parleyd bootstrap [--project DIR] [--token-budget N] [--hook]"

/* bootstrap's own options, after the command: 1 when argv[*i] was one
 * (*i past its value), 0 when it is none of them, or UV_EINVAL with err. */
static int bootstrap_option(int argc, char **argv, int *i, cli_t *cli, char *err, size_t errcap)
{
    const char *a = argv[*i];
    static const char *const names[] = {"--project", "--token-budget", "--hook"};
    size_t k, len = 0;
    for (k = 0; k < 3; k++) {
        len = strlen(names[k]);
        if (strncmp(a, names[k], len) == 0 && (a[len] == '\0' || a[len] == '='))
            break;
    }
    if (k == 3)
        return 0;
    const char *value = a[len] == '=' ? a + len + 1 : NULL;
    if (k == 2) {
        if (value) {
            snprintf(err, errcap, "--hook takes no value (%s)", BOOT_USAGE);
            return UV_EINVAL;
        }
        cli->boot_hook = true;
        return 1;
    }
    if (value == NULL) {
        if (*i + 1 >= argc) {
            snprintf(err, errcap, "%s needs a value (%s)", names[k], BOOT_USAGE);
            return UV_EINVAL;
        }
        value = argv[++*i];
    }
    if (k == 0) {
        if (value[0] == '\0' || strlen(value) >= CONFIG_PATH_MAX) {
            snprintf(err, errcap, "--project: a directory, as a session's working directory (%s)",
                     BOOT_USAGE);
            return UV_EINVAL;
        }
        cli->boot_project = value;
        return 1;
    }
    char *end;
    long n = strtol(value, &end, 10);
    if (end == value || *end != '\0' || n < CLI_BOOT_BUDGET_MIN || n > CLI_BOOT_BUDGET_MAX) {
        snprintf(err, errcap, "--token-budget: '%.40s' is not a number of tokens %d..%d (%s)",
                 value, CLI_BOOT_BUDGET_MIN, CLI_BOOT_BUDGET_MAX, BOOT_USAGE);
        return UV_EINVAL;
    }
    cli->boot_token_budget = (int)n;
    return 1;
}

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
        if (!only_args && have_command && cli->command == CLI_CMD_BOOTSTRAP) {
            int rc = bootstrap_option(argc, argv, &i, cli, err, errcap);
            if (rc < 0)
                return rc;
            if (rc == 1)
                continue;
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
                         "unknown command '%s' (commands: serve, migrate, import, login, "
                         "bootstrap, backup, restore, help, version)",
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
        const importer_def_t *d = importers_find(cli->nargs > 0 ? cli->args[0] : NULL);
        if (d) {
            int n = cli->nargs - 1;
            if (n >= d->min_args && n <= d->max_args)
                return 0;
            snprintf(err, errcap, "usage: parleyd import %s %s (see parleyd import %s --help)",
                     d->name, d->args, d->name);
            return UV_EINVAL;
        }
        /* No source, or one that is not in the table: say which. */
        size_t n = cli->nargs > 0 ? (size_t)snprintf(err, errcap, "unknown import source '%.60s'; ",
                                                     cli->args[0])
                                  : 0;
        if (n < errcap)
            n += (size_t)snprintf(err + n, errcap - n,
                                  "usage: parleyd import SOURCE ... where SOURCE is");
        for (size_t k = 0; importers_table[k] && n < errcap; k++)
            n += (size_t)snprintf(err + n, errcap - n, "%s %s", k ? "," : "",
                                  importers_table[k]->name);
        if (n < errcap)
            snprintf(err + n, errcap - n, " (see parleyd import --help)");
        return UV_EINVAL;
    }
    if (cli->command == CLI_CMD_LOGIN) {
        if (cli->nargs == 1 && connectors_find_login(cli->args[0]) != NULL)
            return 0;
        snprintf(err, errcap,
                 "usage: parleyd login telegram --phone +NNN [--account NAME] (Bluesky accounts "
                 "sign in through the bluesky toolset's login tool)");
        return UV_EINVAL;
    }
    if (cli->command == CLI_CMD_BACKUP || cli->command == CLI_CMD_RESTORE) {
        const char *name = cli->command == CLI_CMD_BACKUP ? "backup" : "restore";
        if (cli->nargs == 1 && cli->args[0][0] != '\0' && strlen(cli->args[0]) < CONFIG_PATH_MAX)
            return 0;
        snprintf(err, errcap, "usage: parleyd %s DIR [--data-dir DIR] (see parleyd --help)", name);
        return UV_EINVAL;
    }
    if (cli->nargs > 0 && cli->command == CLI_CMD_BOOTSTRAP) {
        snprintf(err, errcap, "unexpected argument '%s' (%s)", cli->args[0], BOOT_USAGE);
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
    if (cli->command == CLI_CMD_LOGIN) {
        const connector_def_t *d = connectors_find_login(cli->args[0]);
        snprintf(cfg->login_name, sizeof cfg->login_name, "%s", cli->args[0]);
        char v[8];
        if (d->login_requires && (config_get(cfg, d->login_requires, v, sizeof v) != 0 || !v[0])) {
            snprintf(err, errcap, "login %s needs --%s", d->login_name, d->login_requires);
            return UV_EINVAL;
        }
    }
    if (cli->command == CLI_CMD_BOOTSTRAP) {
        cfg->boot_hook = cli->boot_hook;
        cfg->boot_token_budget = cli->boot_token_budget ? cli->boot_token_budget : CLI_BOOT_BUDGET;
        if (cli->boot_project)
            snprintf(cfg->boot_project, sizeof cfg->boot_project, "%s", cli->boot_project);
    }
    if (cli->command == CLI_CMD_BACKUP || cli->command == CLI_CMD_RESTORE)
        snprintf(cfg->backup_dir, sizeof cfg->backup_dir, "%s", cli->args[0]);
    if (cli->command == CLI_CMD_IMPORT) {
        const importer_def_t *d = importers_find(cli->args[0]);
        snprintf(cfg->import_source, sizeof cfg->import_source, "%s", d->name);
        char home_dir[CONFIG_PATH_MAX];
        const char *path = cli->nargs > 1 ? cli->args[1] : NULL;
        if (path == NULL) {
            const char *home = getenv("HOME");
            snprintf(home_dir, sizeof home_dir, "%s/%s", home ? home : "",
                     d->default_arg ? d->default_arg : "");
            path = home_dir;
        }
        if (!str_copy(cfg->import_path, sizeof cfg->import_path, path)) {
            snprintf(err, errcap, "import: the path is too long");
            return UV_EINVAL;
        }
    }
    /* The import sources' own settings (--tz, --eras), for every command:
     * a bad value is a usage error wherever it is given. */
    importer_env_t env = {.path = cfg->import_path, .tz = cfg->tz, .eras = cfg->eras};
    for (int k = 0; importers_table[k]; k++) {
        char msg[CONFIG_ERR_MAX];
        if (importers_table[k]->check && (rc = importers_table[k]->check(&env, msg, sizeof msg))) {
            snprintf(err, errcap, "%s", msg);
            return rc;
        }
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
    const importer_def_t *d = importers_find(source);
    if (d) {
        fprintf(out, "Usage: parleyd import %s %s [options]\n\n%s\n", d->name, d->args, d->help);
        fprintf(out, "Options are those of parleyd --help (--db, --data-dir, --log-level, "
                     "...).\nExit status: 0 imported (skipped rows are counted in the "
                     "summary), 1 failed,\n2 usage error.\n");
        return;
    }
    fprintf(out, "Usage: parleyd import SOURCE ARGS [options]\n\nSources:\n");
    for (int k = 0; importers_table[k]; k++)
        fprintf(out, "  %s %s\n      %s\n", importers_table[k]->name, importers_table[k]->args,
                importers_table[k]->what);
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
            "  serve               run the daemon (default): start or reuse the database,\n"
            "                      apply migrations, serve until SIGINT/SIGTERM\n"
            "  migrate             apply the schema migrations, build the indexes they ask\n"
            "                      for (CONCURRENTLY, while other daemons serve) and exit\n"
            "  import SOURCE ...   import into the store and exit (parleyd import --help\n"
            "                      lists the sources)\n"
            "  login telegram --phone +NNN [--account NAME]\n"
            "                      sign a Telegram user account in (TDLib): asks for the\n"
            "                      code, then the 2FA password if set, on stdin; serve then\n"
            "                      runs the account\n"
            "  bootstrap [--project DIR] [--token-budget N] [--hook]\n"
            "                      print a project's memory of earlier agent sessions (the\n"
            "                      latest continuation first) as plain text within N tokens\n"
            "                      (default %d, about 4 characters each); DIR is a session's\n"
            "                      working directory (default: the current one). --hook\n"
            "                      reads a SessionStart hook's JSON (Claude Code, Codex) on\n"
            "                      stdin, takes its cwd, and answers the hook's JSON\n"
            "                      (hookSpecificOutput.additionalContext)\n"
            "  backup DIR          copy the embedded cluster (pg_basebackup, while a daemon\n"
            "                      may serve), the media store and the keys into DIR, which\n"
            "                      must be new or empty; with --db use the database's own\n"
            "                      tools\n"
            "  restore DIR         make a data directory (--data-dir, with no cluster yet)\n"
            "                      from the backup in DIR; serve then starts on it\n"
            "  help                show this text\n"
            "  version             show the version\n"
            "\n"
            "Options (precedence: flags > environment > config file > defaults):\n"
            "  --config FILE                  config file of 'key = value' lines; env "
            "PARLEY_CONFIG\n"
            "  --help-config                  print this reference as a Markdown table\n"
            "  --help-tools TOOLSET           print a toolset's tools as Markdown\n",
            PARLEY_VERSION, CLI_BOOT_BUDGET);
    config_print_reference(out);
    fprintf(out, "\nWith no database configured parleyd runs a private PostgreSQL cluster in\n"
                 "DATA_DIR/pg. Exit status: 0 ok, 1 runtime error, 2 usage error, 3 exited at\n"
                 "once on a second SIGINT/SIGTERM.\n");
}
