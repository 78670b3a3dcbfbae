/* migrate: applies the embedded schema migrations (see migrate.h). */
#include "db/migrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/strutil.h"

static const char sql_lock[] = "SELECT pg_advisory_xact_lock($1::bigint)";
static const char sql_table[] = "CREATE TABLE IF NOT EXISTS schema_version ("
                                " version integer PRIMARY KEY,"
                                " name text NOT NULL,"
                                " applied_at timestamptz NOT NULL DEFAULT now())";
static const char sql_func[] =
    "CREATE OR REPLACE FUNCTION pg_temp.parley_migrate(v integer, n text, body text)"
    " RETURNS boolean LANGUAGE plpgsql AS $fn$"
    " BEGIN"
    "   IF EXISTS (SELECT 1 FROM schema_version WHERE version = v) THEN RETURN false; END IF;"
    "   PERFORM set_config('parley.migration', v::text, true);"
    "   EXECUTE body;"
    "   PERFORM set_config('parley.migration', '', true);"
    "   INSERT INTO schema_version (version, name) VALUES (v, n);"
    "   RETURN true;"
    " END $fn$";
static const char sql_apply[] = "SELECT pg_temp.parley_migrate($1::integer, $2, $3)";
/* The release check (see migrate.h, "Releases"): a parleyd as new as the
 * schema records which older parleyd may share it; an older one runs on
 * the newer functions if it is recorded compatible, or refuses to start. */
static const char sql_relfunc[] =
    "CREATE OR REPLACE FUNCTION pg_temp.parley_release(p_latest integer, p_compat integer)"
    " RETURNS void LANGUAGE plpgsql AS $fn$"
    " DECLARE db integer; need integer;"
    " BEGIN"
    "   CREATE TABLE IF NOT EXISTS schema_release ("
    "     latest integer PRIMARY KEY, compatible_from integer NOT NULL,"
    "     recorded_at timestamptz NOT NULL DEFAULT now());"
    "   SELECT coalesce(max(version), 0) INTO db FROM schema_version;"
    "   IF db <= p_latest THEN"
    "     INSERT INTO schema_release AS r (latest, compatible_from) VALUES (p_latest, p_compat)"
    "     ON CONFLICT ON CONSTRAINT schema_release_pkey DO UPDATE"
    "       SET compatible_from = EXCLUDED.compatible_from, recorded_at = now()"
    "       WHERE r.compatible_from <> EXCLUDED.compatible_from;"
    "     RETURN;"
    "   END IF;"
    "   SELECT r.compatible_from INTO need FROM schema_release r ORDER BY r.latest DESC LIMIT 1;"
    "   IF need > p_latest THEN"
    "     RAISE EXCEPTION USING ERRCODE = '" MIGRATE_TOO_OLD_SQLSTATE "', MESSAGE = format("
    "       'the database is at schema version %s and takes parleyd of schema version %s or"
    " later; this parleyd knows version %s: upgrade it (a rolling upgrade spans one"
    " release; see docs/deployment.md, Upgrades)', db, need, p_latest);"
    "   END IF;"
    " END $fn$";
static const char sql_release[] = "SELECT pg_temp.parley_release($1::integer, $2::integer)";
/* The functions of a release older than the schema are not applied: the
 * newer release's functions stay (they work for the older parleyd). */
static const char sql_rfunc[] =
    "CREATE OR REPLACE FUNCTION pg_temp.parley_repeatable(body text, latest integer)"
    " RETURNS void LANGUAGE plpgsql AS $fn$ BEGIN"
    "   IF (SELECT coalesce(max(version), 0) FROM schema_version) <= latest THEN"
    "     EXECUTE body;"
    "   END IF;"
    " END $fn$";
static const char sql_rapply[] = "SELECT pg_temp.parley_repeatable($1, $2::integer)";
static const char sql_version[] = "SELECT coalesce(max(version), 0) FROM schema_version";

int migrate_latest_version(void)
{
    return migrations_count > 0 ? migrations[migrations_count - 1].version : 0;
}

static void migrate_done(pg_query_t *q, int status)
{
    migrate_t *m = q->data;
    m->applied = 0;
    m->schema_version = 0;
    m->functions_applied = false;
    m->error[0] = '\0';
    if (status == 0) {
        for (int i = 0; i < migrations_count; i++) {
            PGresult *r = q->results[3 + i];
            if (r && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0) {
                m->applied++;
                log_info("migrate", "applied migration %03d_%s", migrations[i].version,
                         migrations[i].name);
            }
        }
        PGresult *r = q->results[q->nstmts - 1];
        if (r && PQntuples(r) == 1)
            m->schema_version = atoi(PQgetvalue(r, 0, 0));
        m->functions_applied = m->schema_version <= migrate_latest_version();
        if (!m->functions_applied)
            log_warn("migrate",
                     "database schema version %d is newer than this parleyd knows (%d): it "
                     "runs on the newer release's functions and applies none of its own",
                     m->schema_version, migrate_latest_version());
    } else if (strcmp(q->sqlstate, MIGRATE_TOO_OLD_SQLSTATE) == 0) {
        snprintf(m->error, sizeof m->error, "%s", q->error);
    } else {
        /* Name the migration that failed when the server says which. */
        snprintf(m->error, sizeof m->error, "schema update failed: %.400s (SQLSTATE %s)", q->error,
                 q->sqlstate[0] ? q->sqlstate : "none");
    }
    pg_query_release(q);
    m->cb(m, status);
}

int migrate_start(migrate_t *m, pg_pool_t *pool)
{
    if (migrations_count + repeatable_sql_count > MIGRATE_MAX)
        return UV_E2BIG;
    int n = 0;
    m->lock_param[0] = MIGRATE_LOCK_KEY;
    m->stmts[n++] = (pg_stmt_t){.sql = sql_lock, .nparams = 1, .params = m->lock_param};
    m->stmts[n++] = (pg_stmt_t){.sql = sql_table};
    m->stmts[n++] = (pg_stmt_t){.sql = sql_func};
    for (int i = 0; i < migrations_count; i++) {
        snprintf(m->versions[i], sizeof m->versions[i], "%d", migrations[i].version);
        m->params[i][0] = m->versions[i];
        m->params[i][1] = migrations[i].name;
        m->params[i][2] = migrations[i].sql;
        m->stmts[n++] = (pg_stmt_t){.sql = sql_apply, .nparams = 3, .params = m->params[i]};
    }
    snprintf(m->latest, sizeof m->latest, "%d", migrate_latest_version());
    snprintf(m->compat, sizeof m->compat, "%d", MIGRATE_COMPATIBLE_FROM);
    m->release_params[0] = m->latest;
    m->release_params[1] = m->compat;
    m->stmts[n++] = (pg_stmt_t){.sql = sql_relfunc};
    m->stmts[n++] = (pg_stmt_t){.sql = sql_release, .nparams = 2, .params = m->release_params};
    m->stmts[n++] = (pg_stmt_t){.sql = sql_rfunc};
    for (int i = 0; i < repeatable_sql_count; i++) {
        m->rparams[i][0] = repeatable_sql[i].sql;
        m->rparams[i][1] = m->latest;
        m->stmts[n++] = (pg_stmt_t){.sql = sql_rapply, .nparams = 2, .params = m->rparams[i]};
    }
    m->stmts[n++] = (pg_stmt_t){.sql = sql_version};
    memset(&m->query, 0, sizeof m->query);
    m->query.stmts = m->stmts;
    m->query.nstmts = n;
    /* The wait for a connection is the pool's (db_query_timeout_ms: an
     * unreachable server fails the run promptly); the run, once it holds
     * one, has its own limit (MIGRATE_TIMEOUT_MS). */
    m->query.run_timeout_ms = MIGRATE_TIMEOUT_MS;
    m->query.run_replaces_deadline = true;
    m->query.cb = migrate_done;
    m->query.data = m;
    return pg_pool_submit(pool, &m->query);
}
