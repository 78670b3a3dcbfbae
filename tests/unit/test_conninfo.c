/* Tests for db/conninfo: URL and key=value parsing, edits, descriptions
 * without secrets. */
#include <string.h>

#include "db/conninfo.h"
#include "testutil.h"

static void test_parse_url(void **state)
{
    (void)state;
    pg_conninfo_t ci;
    char err[256];
    assert_int_equal(
        pg_conninfo_parse(&ci, "postgres://bob:s3cret@db.example:6543/arch", err, sizeof err), 0);
    assert_string_equal(pg_conninfo_get(&ci, "host"), "db.example");
    assert_string_equal(pg_conninfo_get(&ci, "port"), "6543");
    assert_string_equal(pg_conninfo_get(&ci, "dbname"), "arch");
    assert_string_equal(pg_conninfo_get(&ci, "password"), "s3cret");
    char desc[256];
    pg_conninfo_describe(&ci, desc, sizeof desc);
    assert_null(strstr(desc, "s3cret"));
    assert_non_null(strstr(desc, "host=db.example"));
    pg_conninfo_free(&ci);
}

static void test_edit(void **state)
{
    (void)state;
    pg_conninfo_t ci, copy;
    char err[256];
    assert_int_equal(pg_conninfo_parse(&ci, "host=/tmp options='-c a=b'", err, sizeof err), 0);
    assert_int_equal(pg_conninfo_add_option(&ci, "-c default_transaction_read_only=on"), 0);
    assert_string_equal(pg_conninfo_get(&ci, "options"),
                        "-c a=b -c default_transaction_read_only=on");
    assert_int_equal(pg_conninfo_set(&ci, "host", "/run"), 0);
    assert_int_equal(pg_conninfo_copy(&copy, &ci), 0);
    assert_string_equal(pg_conninfo_get(&copy, "host"), "/run");
    assert_null(pg_conninfo_get(&copy, "user"));
    pg_conninfo_free(&ci);
    pg_conninfo_free(&copy);
}

static void test_bad(void **state)
{
    (void)state;
    pg_conninfo_t ci;
    char err[256];
    assert_int_equal(pg_conninfo_parse(&ci, "host='unterminated", err, sizeof err), UV_EINVAL);
    assert_non_null(strstr(err, "bad database URL"));
    assert_int_equal(pg_conninfo_parse(&ci, "nosuchkey=1", err, sizeof err), UV_EINVAL);
    assert_int_equal(pg_conninfo_parse(&ci, "", err, sizeof err), 0);
    assert_int_equal(ci.n, 0);
    char desc[128];
    pg_conninfo_describe(&ci, desc, sizeof desc);
    assert_non_null(strstr(desc, "PG*"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_url),
        cmocka_unit_test(test_edit),
        cmocka_unit_test(test_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
