/* migrate: the store's schema as embedded in the binary, and the runner
 * that brings a database up to it. Two kinds of SQL:
 *   - migrations (src/db/migrations/NNN_name.sql, see
 *     cmake/embed_migrations.cmake): tables, columns, indexes; append-only,
 *     each applied once and recorded in schema_version;
 *   - repeatable files (src/db/sql/, in the order of src/db/sql/manifest,
 *     see cmake/embed_sql.cmake): the functions, CREATE OR REPLACE, applied
 *     at every run after the migrations.
 *
 * A run is one pipelined implicit transaction on the read-write pool: take
 * an advisory lock (so daemons starting together on one database apply each
 * migration exactly once and never interleave), create schema_version if
 * needed, call a session-temporary function per embedded migration that
 * executes its SQL and records it unless schema_version already has it
 * (with the setting parley.migration at its version meanwhile, which
 * parley_index_build records), then one that executes each repeatable
 * file. An index a migration asks for with parley_index_build (migration
 * 034) is built after the run, outside its transaction (db/index_build.h).
 * The SQL travels as a bind parameter; nothing is spliced into statement
 * text.
 *
 * Releases: daemons of two releases share one database during a rolling
 * upgrade (docs/deployment.md, Upgrades). A parleyd's schema version is its
 * newest embedded migration. A run of a parleyd at least as new as the
 * database records in schema_release which older parleyd may share the
 * schema (MIGRATE_COMPATIBLE_FROM) and applies its functions. A run of an
 * older parleyd applies no function (it would put its older ones over the
 * newer release's, which the newer daemons then run); it starts on the
 * newer functions if the newest release recorded admits it, and refuses to
 * start otherwise (MIGRATE_TOO_OLD_SQLSTATE). For that to work every change
 * is expand/contract: a migration never drops or renames what the previous
 * release's daemon or functions use, and a function keeps its arguments and
 * the fields its callers in the previous release read; the contraction
 * lands one release later. */
#ifndef PARLEY_DB_MIGRATE_H
#define PARLEY_DB_MIGRATE_H

#include "db/pool.h"

/* Advisory lock key held while migrating ("parley" in ASCII). */
#define MIGRATE_LOCK_KEY "112568754006393"
/* The time limit of a run once it holds a connection, its wait for the
 * lock included (the wait for a connection is the pool's): a migration
 * that builds an index on a large store runs for minutes (61 s for the
 * word forms' index at 5 million messages), which a tool's query limit
 * (db_query_timeout_ms, 30 s by default) must not cut. */
#define MIGRATE_TIMEOUT_MS (6u * 3600 * 1000)
/* The oldest parleyd, by its schema version, that may share a database
 * this one has brought up: the previous release's newest migration
 * (tests/integration/data/previous_release names that release; the
 * rolling_upgrade test checks the two agree). Raise it with every release
 * that adds migrations; never above the previous release's. */
#define MIGRATE_COMPATIBLE_FROM 33
/* The SQLSTATE of the refusal of a parleyd older than the database admits. */
#define MIGRATE_TOO_OLD_SQLSTATE "PL001"
/* Migrations and repeatable files together, within one pipelined query. */
#define MIGRATE_MAX (PG_QUERY_MAX_STMTS - 8)

typedef struct migration_s {
    int version;
    const char *name;
    const char *sql;
} migration_t;

extern const migration_t migrations[];
extern const int migrations_count;

typedef struct repeatable_sql_s {
    const char *name; /* path under src/db/sql */
    const char *sql;
} repeatable_sql_t;

extern const repeatable_sql_t repeatable_sql[];
extern const int repeatable_sql_count;

typedef struct migrate_s migrate_t;
typedef void (*migrate_cb)(migrate_t *m, int status);

struct migrate_s {
    migrate_cb cb; /* set by the caller */
    void *data;
    /* Results, valid in cb. */
    int applied;            /* migrations applied by this run */
    int schema_version;     /* highest version recorded in the database */
    bool functions_applied; /* false: the database is newer than this parleyd */
    char error[PG_QUERY_ERROR_MAX];
    /* Private. */
    pg_query_t query;
    pg_stmt_t stmts[PG_QUERY_MAX_STMTS];
    char versions[MIGRATE_MAX][12];
    const char *params[MIGRATE_MAX][3];
    const char *rparams[MIGRATE_MAX][2];
    char latest[12], compat[12];
    const char *release_params[2];
    const char *lock_param[1];
};

/* Starts a run on pool. Returns 0 (m->cb runs once with 0 or a negative
 * code and m->error) or a negative code from pg_pool_submit. */
int migrate_start(migrate_t *m, pg_pool_t *pool);

/* The highest embedded version. */
int migrate_latest_version(void);

#endif
