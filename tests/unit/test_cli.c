/* Tests for cli: commands, flag forms, usage errors, and the precedence
 * flags > environment > file > defaults. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "testutil.h"

static int parse(cli_t *cli, char *err, int argc, ...)
{
    char *argv[32] = {"parleyd"};
    va_list ap;
    va_start(ap, argc);
    for (int i = 1; i <= argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    return cli_parse(argc + 1, argv, cli, err, CONFIG_ERR_MAX);
}

static void test_commands(void **state)
{
    (void)state;
    cli_t cli;
    char err[CONFIG_ERR_MAX];
    assert_int_equal(parse(&cli, err, 0), 0);
    assert_int_equal(cli.command, CLI_CMD_SERVE);
    assert_int_equal(parse(&cli, err, 1, "migrate"), 0);
    assert_int_equal(cli.command, CLI_CMD_MIGRATE);
    assert_int_equal(parse(&cli, err, 2, "serve", "--help"), 0);
    assert_int_equal(cli.command, CLI_CMD_HELP);
    assert_int_equal(parse(&cli, err, 1, "--version"), 0);
    assert_int_equal(cli.command, CLI_CMD_VERSION);
    assert_int_equal(parse(&cli, err, 2, "backup", "/b"), 0);
    assert_int_equal(cli.command, CLI_CMD_BACKUP);
    assert_string_equal(cli.args[0], "/b");
    assert_int_equal(parse(&cli, err, 2, "restore", "/b"), 0);
    assert_int_equal(cli.command, CLI_CMD_RESTORE);
}

static void test_flags(void **state)
{
    (void)state;
    cli_t cli;
    char err[CONFIG_ERR_MAX];
    assert_int_equal(
        parse(&cli, err, 5, "--data-dir", "/d", "serve", "--log-level=debug", "--config=/c"), 0);
    assert_int_equal(cli.nflags, 2);
    assert_string_equal(cli.flags[0].key, "data_dir");
    assert_string_equal(cli.flags[0].value, "/d");
    assert_string_equal(cli.flags[1].key, "log_level");
    assert_string_equal(cli.flags[1].value, "debug");
    assert_string_equal(cli.config_file, "/c");
}

static void expect_usage_error(const char *needle, int argc, char *a1, char *a2)
{
    cli_t cli;
    char err[CONFIG_ERR_MAX];
    assert_int_equal(parse(&cli, err, argc, a1, a2), UV_EINVAL);
    if (strstr(err, needle) == NULL)
        fail_msg("error '%s' does not mention '%s'", err, needle);
}

static void test_usage_errors(void **state)
{
    (void)state;
    expect_usage_error("unknown option '--nope'", 1, "--nope", NULL);
    expect_usage_error("unknown option '-x'", 1, "-x", NULL);
    expect_usage_error("needs a value", 1, "--data-dir", NULL);
    expect_usage_error("unknown command 'launch'", 1, "launch", NULL);
    expect_usage_error("unexpected argument 'extra'", 2, "serve", "extra");
    expect_usage_error("usage: parleyd backup DIR", 1, "backup", NULL);
    expect_usage_error("usage: parleyd restore DIR", 1, "restore", NULL);
}

static void test_precedence(void **state)
{
    (void)state;
    unsetenv("DATABASE_URL");
    unsetenv("PGHOST");
    unsetenv("PGDATABASE");
    unsetenv("PGSERVICE");
    unsetenv("PGHOSTADDR");
    char path[] = "/tmp/parley-cli.XXXXXX";
    int fd = mkstemp(path);
    const char *text = "db_pool_size = 5\ndb_queue_max = 50\nshutdown_timeout_ms = 500\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    setenv("PARLEY_DB_QUEUE_MAX", "60", 1);
    setenv("PARLEY_SHUTDOWN_TIMEOUT_MS", "600", 1);

    cli_t cli;
    char err[CONFIG_ERR_MAX];
    assert_int_equal(parse(&cli, err, 4, "--config", path, "--shutdown-timeout-ms", "700"), 0);
    config_t cfg;
    assert_int_equal(cli_load_config(&cli, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.db_pool_size, 5);          /* file over default */
    assert_int_equal(cfg.db_queue_max, 60);         /* env over file */
    assert_int_equal(cfg.shutdown_timeout_ms, 700); /* flag over env */
    assert_int_equal(cfg.db_ro_pool_size, CONFIG_DEFAULT_DB_RO_POOL_SIZE);
    assert_int_equal(config_source_of(&cfg, "shutdown_timeout_ms"), CONFIG_SRC_FLAG);

    /* PARLEY_CONFIG names the file when --config is absent. */
    setenv("PARLEY_CONFIG", path, 1);
    assert_int_equal(parse(&cli, err, 0), 0);
    assert_int_equal(cli_load_config(&cli, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.db_pool_size, 5);
    unsetenv("PARLEY_CONFIG");

    /* A bad flag value names the flag as typed. */
    assert_int_equal(parse(&cli, err, 2, "--db-pool-size", "lots"), 0);
    assert_int_equal(cli_load_config(&cli, &cfg, err, sizeof err), UV_EINVAL);
    assert_non_null(strstr(err, "--db-pool-size: "));
    assert_null(strstr(err, "db_pool_size"));
    unsetenv("PARLEY_DB_QUEUE_MAX");
    unsetenv("PARLEY_SHUTDOWN_TIMEOUT_MS");
    unlink(path);
}

/* --listen given several times adds endpoints; the environment's list is
 * replaced by the first flag, and a comma list still works. */
static void test_listen_repeats(void **state)
{
    (void)state;
    setenv("PARLEY_LISTEN", "unix:/tmp/env.sock", 1);
    cli_t cli;
    config_t cfg;
    char err[CONFIG_ERR_MAX];
    assert_int_equal(parse(&cli, err, 5, "--listen", "unix:/tmp/a.sock", "--listen",
                           "http://127.0.0.1:1/mcp,tcp://127.0.0.1:2", "--listen=unix:/tmp/b.sock"),
                     0);
    assert_int_equal(cli_load_config(&cli, &cfg, err, sizeof err), 0);
    assert_string_equal(
        cfg.listen, "unix:/tmp/a.sock,http://127.0.0.1:1/mcp,tcp://127.0.0.1:2,unix:/tmp/b.sock");
    assert_int_equal(parse(&cli, err, 0), 0);
    assert_int_equal(cli_load_config(&cli, &cfg, err, sizeof err), 0);
    assert_string_equal(cfg.listen, "unix:/tmp/env.sock");
    unsetenv("PARLEY_LISTEN");
}

static void test_help_lists_every_setting(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cli_print_help(f);
    fclose(f);
    const char *flags[] = {
        "--data-dir",     "--db ",          "--log-level",           "--pg-user",
        "--db-pool-size", "--db-queue-max", "--db-query-timeout-ms", "--shutdown-timeout-ms",
        "--config"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (strstr(buf, flags[i]) == NULL)
            fail_msg("help does not mention %s", flags[i]);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commands),       cmocka_unit_test(test_flags),
        cmocka_unit_test(test_usage_errors),   cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_listen_repeats), cmocka_unit_test(test_help_lists_every_setting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
