/* Tests for db/lock: one holder at a time; the second is told at its first
 * answer that another session holds the lock; when the holder goes (its
 * connection closed, as when its process dies) the other takes it within a
 * couple of checks; a holder whose backend is terminated is told it lost
 * the lock and takes it again when it is free. */
#include <stdlib.h>
#include <string.h>

#include "db/lock.h"
#include "testutil.h"

typedef struct seen_s {
    int taken, lost, refused;
    bool closed;
} seen_t;

static void changed(pg_lock_t *l, bool held)
{
    seen_t *s = pg_lock_data(l);
    if (held)
        s->taken++;
    else if (s->taken > s->lost)
        s->lost++;
    else
        s->refused++;
}

static void closed(void *data)
{
    ((seen_t *)data)->closed = true;
}

static pg_lock_t *start(uv_loop_t *loop, const char *key, seen_t *s)
{
    pg_conninfo_t ci;
    test_pg_conninfo(&ci, NULL);
    pg_lock_t *l;
    char err[256];
    assert_int_equal(pg_lock_start(loop, &ci, key, 3000, changed, s, &l, err, sizeof err), 0);
    pg_conninfo_free(&ci);
    return l;
}

static void run_until_count(uv_loop_t *loop, const int *n, int want, uint64_t ms)
{
    for (uint64_t t = 0; *n < want && t < ms; t += 20)
        test_run_for(loop, 20);
    assert_int_equal(*n, want);
}

static void test_one_holder_and_takeover(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    seen_t a = {0}, b = {0};
    pg_lock_t *la = start(&loop, "parley_test_lock", &a);
    run_until_count(&loop, &a.taken, 1, 5000);
    assert_true(pg_lock_held(la));
    pg_lock_t *lb = start(&loop, "parley_test_lock", &b);
    run_until_count(&loop, &b.refused, 1, 5000);
    assert_false(pg_lock_held(lb));
    test_run_for(&loop, PG_LOCK_CHECK_MS * 2);
    assert_int_equal(b.taken, 0);
    assert_int_equal(a.lost, 0);
    /* The holder goes: the other has it within two checks. */
    pg_lock_close(la, closed, &a);
    test_run_until(&loop, &a.closed, 5000);
    run_until_count(&loop, &b.taken, 1, PG_LOCK_CHECK_MS * 3);
    assert_true(pg_lock_held(lb));

    /* Its backend is terminated (a network cut, an admin): it is told,
     * reconnects and takes the free lock again. */
    test_pg_exec("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
                 "AND objid = hashtextextended('parley_test_lock', 0)::bit(32)::int::oid");
    run_until_count(&loop, &b.lost, 1, PG_LOCK_CHECK_MS * 5);
    run_until_count(&loop, &b.taken, 2, 15000);
    pg_lock_close(lb, closed, &b);
    test_run_until(&loop, &b.closed, 5000);
    test_loop_close(&loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_holder_and_takeover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
