/* Tests for config: defaults, file format, environment, precedence and
 * every kind of bad value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "config.h"
#include "testutil.h"

static char *write_file(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/parley-conf.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static int clear_env(void **state)
{
    (void)state;
    const char *vars[] = {"PARLEY_DATA_DIR",  "DATABASE_URL",        "PARLEY_DB",
                          "PARLEY_LOG_LEVEL", "PARLEY_DB_POOL_SIZE", "PGHOST",
                          "PGHOSTADDR",       "PGDATABASE",          "PGSERVICE",
                          "PARLEY_CONFIG",    "XDG_DATA_HOME"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    setenv("HOME", "/home/u", 1);
    return 0;
}

static void test_defaults(void **state)
{
    (void)state;
    config_t c;
    char err[CONFIG_ERR_MAX];
    assert_int_equal(config_init(&c, err, sizeof err), 0);
    if (geteuid() == 0)
        assert_string_equal(c.data_dir, "/var/lib/parley");
    else
        assert_string_equal(c.data_dir, "/home/u/.local/share/parley");
    assert_false(c.db_external);
    assert_int_equal(c.db_pool_size, CONFIG_DEFAULT_DB_POOL_SIZE);
    assert_int_equal(c.db_queue_max, CONFIG_DEFAULT_DB_QUEUE_MAX);
    assert_int_equal(c.log_level, LOG_INFO);
    assert_int_equal(config_source_of(&c, "db_pool_size"), CONFIG_SRC_DEFAULT);
    assert_int_equal(config_source_of(&c, "nope"), -1);
}

static void test_xdg(void **state)
{
    (void)state;
    if (geteuid() == 0)
        skip(); /* root uses /var/lib/parley */
    setenv("XDG_DATA_HOME", "/xdg", 1);
    config_t c;
    char err[CONFIG_ERR_MAX];
    assert_int_equal(config_init(&c, err, sizeof err), 0);
    assert_string_equal(c.data_dir, "/xdg/parley");
}

static void test_file(void **state)
{
    (void)state;
    config_t c;
    char err[CONFIG_ERR_MAX];
    assert_int_equal(config_init(&c, err, sizeof err), 0);
    char *path = write_file("# comment\n\n data_dir = \"/srv/parley\"  \n"
                            "db-pool-size=7\nlog_level = debug\ndb = 'postgres://h/db'\n");
    assert_int_equal(config_load_file(&c, path, err, sizeof err), 0);
    unlink(path);
    assert_string_equal(c.data_dir, "/srv/parley");
    assert_int_equal(c.db_pool_size, 7);
    assert_int_equal(c.log_level, LOG_DEBUG);
    assert_string_equal(c.db_url, "postgres://h/db");
    assert_true(c.db_external);
    assert_int_equal(config_source_of(&c, "db_pool_size"), CONFIG_SRC_FILE);
}

static void expect_file_error(const char *text, const char *needle)
{
    config_t c;
    char err[CONFIG_ERR_MAX];
    assert_int_equal(config_init(&c, err, sizeof err), 0);
    char *path = write_file(text);
    int rc = config_load_file(&c, path, err, sizeof err);
    unlink(path);
    assert_true(rc < 0);
    if (strstr(err, needle) == NULL)
        fail_msg("error '%s' does not mention '%s'", err, needle);
    assert_non_null(strstr(err, path)); /* names the file */
}

static void test_file_errors(void **state)
{
    (void)state;
    expect_file_error("bogus_key = 1\n", ":1: unknown setting 'bogus_key'");
    expect_file_error("\n\ndb_pool_size = many\n", ":3: db_pool_size: 'many' is not an integer");
    expect_file_error("db_pool_size = 0\n", "between 1 and 256");
    expect_file_error("no equals sign\n", "expected 'key = value'");
    expect_file_error("data_dir = \"/x\n", "unterminated quote");
    expect_file_error("log_level = loud\n", "not one of debug");
    expect_file_error("data_dir = \n", "must not be empty");

    config_t c;
    char err[CONFIG_ERR_MAX];
    assert_int_equal(config_init(&c, err, sizeof err), 0);
    assert_true(config_load_file(&c, "/nonexistent/parley.conf", err, sizeof err) < 0);
    assert_non_null(strstr(err, "/nonexistent/parley.conf"));
}

/* A config file that sets a secret follows secret_file's mode rule; one
 * without secrets may be read by anyone; a FIFO is refused at once. */
static void test_file_secrets(void **state)
{
    (void)state;
    assert_string_equal(config__secret_key("telegram_api_hash", "abc"), "telegram_api_hash");
    assert_string_equal(config__secret_key("telegram_bot_token", "1:x"), "telegram_bot_token");
    assert_null(config__secret_key("telegram_bot_token", ""));
    assert_string_equal(config__secret_key("db", "postgres://u:pw@h/db"), "db");
    assert_string_equal(config__secret_key("memory_db", "host=h password=pw"), "memory_db");
    assert_string_equal(config__secret_key("db_ro", "postgres://u@h/db?password=pw"), "db_ro");
    assert_null(config__secret_key("db", "postgres://u@h:5432/db"));
    assert_null(config__secret_key("db", "host=/run/pg dbname=x"));
    assert_null(config__secret_key("log_level", "debug"));

    config_t c;
    char err[CONFIG_ERR_MAX];
    assert_int_equal(config_init(&c, err, sizeof err), 0);
    char *path = write_file("log_level = debug\ntelegram_api_hash = 0123abcd\n");
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(config_load_file(&c, path, err, sizeof err), UV_EPERM);
    assert_non_null(strstr(err, "config file (telegram_api_hash) "));
    assert_non_null(strstr(err, "(mode 0644); chmod 600 it"));
    assert_non_null(strstr(err, path));
    assert_null(strstr(err, "0123abcd")); /* never the secret */
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(config_init(&c, err, sizeof err), 0);
    assert_int_equal(config_load_file(&c, path, err, sizeof err), 0);
    unlink(path);
    path = write_file("log_level = debug\ndb = postgres://h/db\n");
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(config_load_file(&c, path, err, sizeof err), 0);
    unlink(path);

    alarm(10); /* a blocking open fails the test instead of hanging it */
    path = write_file("");
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(config_load_file(&c, path, err, sizeof err), UV_EINVAL);
    assert_non_null(strstr(err, "a FIFO, not a regular file"));
    unlink(path);
    alarm(0);
}

static void test_env(void **state)
{
    (void)state;
    config_t c;
    char err[CONFIG_ERR_MAX];
    assert_int_equal(config_init(&c, err, sizeof err), 0);
    setenv("PARLEY_DB_POOL_SIZE", "9", 1);
    setenv("DATABASE_URL", "postgres://envhost/x", 1);
    assert_int_equal(config_load_env(&c, err, sizeof err), 0);
    assert_int_equal(c.db_pool_size, 9);
    assert_string_equal(c.db_url, "postgres://envhost/x");
    assert_true(c.db_external);
    assert_int_equal(config_source_of(&c, "db"), CONFIG_SRC_ENV);

    setenv("PARLEY_DB_POOL_SIZE", "-1", 1);
    assert_int_equal(config_load_env(&c, err, sizeof err), UV_EINVAL);
    assert_non_null(strstr(err, "PARLEY_DB_POOL_SIZE"));
}

static void test_pg_env_selects_external(void **state)
{
    (void)state;
    config_t c;
    char err[CONFIG_ERR_MAX];
    assert_int_equal(config_init(&c, err, sizeof err), 0);
    setenv("PGHOST", "/var/run/postgresql", 1);
    assert_int_equal(config_load_env(&c, err, sizeof err), 0);
    assert_true(c.db_external);
    assert_string_equal(c.db_url, ""); /* libpq reads PG* itself */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_defaults, clear_env),
        cmocka_unit_test_setup(test_xdg, clear_env),
        cmocka_unit_test_setup(test_file, clear_env),
        cmocka_unit_test_setup(test_file_errors, clear_env),
        cmocka_unit_test_setup(test_file_secrets, clear_env),
        cmocka_unit_test_setup(test_env, clear_env),
        cmocka_unit_test_setup(test_pg_env_selects_external, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
