/* Tests for util/log: line format, level filter, truncation, stderr only. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "util/log.h"

/* Captures what log_* writes to stderr while fn runs. */
static char *capture(void (*fn)(void))
{
    char path[] = "/tmp/parley-log.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    fn();
    dup2(saved, STDERR_FILENO);
    close(saved);
    static char buf[16384];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    assert_true(n >= 0);
    buf[n] = '\0';
    close(fd);
    unlink(path);
    return buf;
}

static void emit_levels(void)
{
    log_set_level(LOG_WARN);
    log_info("main", "hidden %d", 1);
    log_warn("s:7", "shown %d", 2);
    log_error("db", "also shown\n");
}

static void test_format_and_filter(void **state)
{
    (void)state;
    char *out = capture(emit_levels);
    assert_null(strstr(out, "hidden"));
    assert_non_null(strstr(out, " WARN  [s:7] shown 2\n"));
    assert_non_null(strstr(out, " ERROR [db] also shown\n"));
    /* One line each, starting with an ISO-8601 UTC time. */
    assert_int_equal(out[4], '-');
    assert_int_equal(out[10], 'T');
    assert_non_null(strstr(out, "Z WARN"));
    assert_null(strstr(out, "shown\n\n"));
}

static void emit_long(void)
{
    log_set_level(LOG_DEBUG);
    char big[10000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    log_info("main", "%s", big);
}

static void test_truncation(void **state)
{
    (void)state;
    char *out = capture(emit_long);
    size_t n = strlen(out);
    assert_true(n <= 4096);
    assert_memory_equal(out + n - 4, "...\n", 4);
}

static void test_level_parse(void **state)
{
    (void)state;
    log_level_t l;
    assert_true(log_level_parse("DEBUG", &l));
    assert_int_equal(l, LOG_DEBUG);
    assert_true(log_level_parse("warning", &l));
    assert_int_equal(l, LOG_WARN);
    assert_false(log_level_parse("loud", &l));
    assert_string_equal(log_level_name(LOG_ERROR), "ERROR");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_and_filter),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_level_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
