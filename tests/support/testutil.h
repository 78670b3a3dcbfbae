/* testutil: helpers shared by the C tests: running a loop until a condition
 * or a deadline, checking that a loop closes cleanly, temporary
 * directories, and blocking libpq access to the shared test cluster (tests
 * may block; the daemon never does). */
#ifndef PARLEY_TESTUTIL_H
#define PARLEY_TESTUTIL_H

#include <libpq-fe.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <uv.h>

#include "db/conninfo.h"

/* Runs loop until *flag is true or timeout_ms passes; fails the test on
 * timeout. */
void test_run_until(uv_loop_t *loop, const bool *flag, uint64_t timeout_ms);

/* Runs loop for ms milliseconds. */
void test_run_for(uv_loop_t *loop, uint64_t ms);

/* Runs the loop dry and asserts uv_loop_close succeeds: every handle the
 * code under test opened was closed. */
void test_loop_close(uv_loop_t *loop);

/* mkdtemp under /tmp (short paths: Unix sockets live inside). Caller frees
 * with test_rmdir. */
char *test_tmpdir(const char *prefix);
void test_rmdir(char *dir);

/* conninfo of the shared cluster (PARLEY_TEST_PG), dbname replaced when
 * dbname is non-NULL. Skips the test when the variable is unset. */
void test_pg_conninfo(pg_conninfo_t *ci, const char *dbname);

/* Runs SQL on the shared cluster's "postgres" database (blocking). */
void test_pg_exec(const char *sql);

/* Creates a fresh database with a unique name into buf. */
void test_pg_create_db(char *buf, size_t cap);

/* A pool of size connections on a fresh database with every migration
 * applied and the indexes they ask for built (the loop runs until they
 * are). */
struct pg_pool_s;
void test_pg_migrated_pool(uv_loop_t *loop, int size, struct pg_pool_s **out);
/* Closes pool and runs the loop until it is closed. */
void test_pg_pool_close(uv_loop_t *loop, struct pg_pool_s *pool);
/* The same, with the database's name into db (cap bytes). */
void test_pg_migrated_db(uv_loop_t *loop, int size, struct pg_pool_s **out, char *db, size_t cap);

/* Runs a shell command and returns its exit status. */
int test_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
