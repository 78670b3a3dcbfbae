/* Tests for db/embedded_conf: the embedded cluster's settings for small,
 * ordinary and large machines, durability always on, and a buffer too
 * small. (test_embedded checks that a real server starts with them.) */
#include <string.h>

#include "db/embedded_conf.h"
#include "testutil.h"

#define GIB (UINT64_C(1) << 30)

static char conf[4096];

static void format(uint64_t mem)
{
    int n = pg_embedded_conf_format(conf, sizeof conf, "/d/pg/run", "5432", mem);
    assert_true(n > 0 && (size_t)n == strlen(conf));
}

static void assert_line(const char *line)
{
    char want[128];
    snprintf(want, sizeof want, "\n%s\n", line);
    if (!strstr(conf, want))
        fail_msg("no line '%s' in:\n%s", line, conf);
}

static void test_durability_always_on(void **state)
{
    (void)state;
    uint64_t sizes[] = {GIB / 2, 24 * GIB, 512 * GIB};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        format(sizes[i]);
        assert_line("fsync = on");
        assert_line("synchronous_commit = on");
        assert_line("full_page_writes = on");
        assert_line("listen_addresses = ''");
        assert_line("unix_socket_directories = '/d/pg/run'");
        assert_line("port = 5432");
        assert_line("jit = off");
        assert_line("wal_level = replica"); /* parleyd backup: pg_basebackup */
        assert_line("max_wal_senders = 4");
    }
}

static void test_memory_shares_and_clamps(void **state)
{
    (void)state;
    format(24 * GIB); /* this project's machines */
    assert_line("shared_buffers = 3072MB");
    assert_line("effective_cache_size = 12288MB");
    assert_line("maintenance_work_mem = 768MB");
    assert_line("work_mem = 24MB");
    format(GIB / 2); /* the floors */
    assert_line("shared_buffers = 128MB");
    assert_line("effective_cache_size = 256MB");
    assert_line("maintenance_work_mem = 64MB");
    assert_line("work_mem = 4MB");
    format(512 * GIB); /* the ceilings; the cache estimate has none */
    assert_line("shared_buffers = 4096MB");
    assert_line("effective_cache_size = 262144MB");
    assert_line("maintenance_work_mem = 1024MB");
    assert_line("work_mem = 32MB");
    format(GIB / 16); /* below every floor: the cache estimate is never under the buffers */
    assert_line("shared_buffers = 128MB");
    assert_line("effective_cache_size = 128MB");
}

static void test_machine_memory(void **state)
{
    (void)state;
    assert_true(pg_embedded_conf_memory() >= (UINT64_C(1) << 20));
}

static void test_too_small(void **state)
{
    (void)state;
    char small[64];
    assert_int_equal(pg_embedded_conf_format(small, sizeof small, "/d", "5432", GIB), UV_ENOBUFS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durability_always_on),
        cmocka_unit_test(test_memory_shares_and_clamps),
        cmocka_unit_test(test_machine_memory),
        cmocka_unit_test(test_too_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
