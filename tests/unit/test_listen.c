/* Tests for db/listen: notifications reach the callback; bad channel names
 * are refused before anything is sent. */
#include <stdlib.h>
#include <string.h>

#include "db/listen.h"
#include "testutil.h"

static int received;
static char last_payload[128];

static void on_notify(pg_listen_t *l, const char *channel, const char *payload)
{
    (void)l;
    assert_string_equal(channel, "parley_test");
    snprintf(last_payload, sizeof last_payload, "%s", payload);
    received++;
}

static bool closed;
static void on_closed(pg_listen_t *l)
{
    (void)l;
    closed = true;
}

static void test_notify(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_conninfo_t ci;
    test_pg_conninfo(&ci, NULL);
    const char *channels[] = {"parley_test", NULL};
    pg_listen_t *l;
    char err[256];
    assert_int_equal(
        pg_listen_start(&loop, &ci, channels, 3000, on_notify, NULL, &l, err, sizeof err), 0);
    pg_conninfo_free(&ci);
    /* Wait until the LISTEN is in place. */
    for (int i = 0; i < 100; i++) {
        pg_pool_stats_t s;
        pg_pool_stats(pg_listen_pool(l), &s);
        if (s.conns_ready == 1)
            break;
        test_run_for(&loop, 50);
    }
    test_pg_exec("SELECT pg_notify('parley_test', 'hello')");
    for (int i = 0; i < 100 && received == 0; i++)
        test_run_for(&loop, 20);
    assert_int_equal(received, 1);
    assert_string_equal(last_payload, "hello");
    closed = false;
    pg_listen_close(l, on_closed);
    test_run_until(&loop, &closed, 5000);
    test_loop_close(&loop);
}

static void test_bad_channel(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    pg_conninfo_t ci = {0};
    const char *channels[] = {"Robert\"; DROP", NULL};
    pg_listen_t *l;
    char err[256];
    assert_int_equal(
        pg_listen_start(&loop, &ci, channels, 3000, on_notify, NULL, &l, err, sizeof err),
        UV_EINVAL);
    assert_non_null(strstr(err, "bad LISTEN channel"));
    test_loop_close(&loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_notify),
        cmocka_unit_test(test_bad_channel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
