/* index_build: builds the indexes that migrations asked for
 * (parley_index_build, migration 034: a row of schema_index_builds each)
 * after the migrations, outside their transaction, while the daemon
 * serves. For each pending build in the order asked: drop an invalid
 * index of that name that a failed or stopped build left, run the
 * migration's CREATE INDEX CONCURRENTLY, drop the index it replaces if
 * any, mark it done. A restart goes on where it stopped: a valid index is
 * done, an invalid one is built again.
 *
 * The work runs on a connection of its own (a one-connection pool,
 * without statement_timeout: INDEX_BUILD_TIMEOUT_MS is its limit), since
 * a build takes minutes on a large table and cannot run in a pipeline or
 * a transaction. Of several daemons on one database one builds: the
 * first step that finds work takes the session advisory lock
 * hashtextextended('parley_index_builds', 0) on that connection, held
 * until it closes; the others see "busy" and ask again every retry_ms
 * (so when the builder dies, its lock goes with its connection and
 * another daemon picks the work up, dropping what the dead build left).
 * Every progress_ms of a build its progress is logged, read from
 * pg_stat_progress_create_index through the read-write pool (the phase,
 * blocks or tuples done of the total as a percentage). A failure (the
 * build's error, a lost connection) is logged with the index's name and
 * the work tried again after retry_ms; only with fail_fast does it end
 * the work (the callback with UV_EIO). The queries of the store must stay
 * correct without an index that is not built yet, only slower. The SQL
 * is in src/db/sql/index_builds.sql. */
#ifndef PARLEY_DB_INDEX_BUILD_H
#define PARLEY_DB_INDEX_BUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "db/conninfo.h"
#include "db/pool.h"

/* A running build's progress is logged every INDEX_BUILD_PROGRESS_MS. */
#define INDEX_BUILD_PROGRESS_MS 5000
/* After a failure, or while another daemon builds, the work is tried
 * again after INDEX_BUILD_RETRY_MS. */
#define INDEX_BUILD_RETRY_MS 30000
/* Failures in a row wait twice as long each time, at most this long. */
#define INDEX_BUILD_RETRY_MAX_MS (3600u * 1000u)
/* The longest one statement of the builder may run: an index built on a
 * very large table (the word pairs' index took 217 s at 5 million
 * messages). */
#define INDEX_BUILD_TIMEOUT_MS (12u * 3600u * 1000u)
#define INDEX_BUILD_ERR_MAX    512

typedef struct index_build_s index_build_t;

/* Called once when nothing is pending any more (status 0), or, with
 * fail_fast, when a build failed (UV_EIO, the reason in
 * index_build_error). Not called after index_build_stop. */
typedef void (*index_build_cb)(index_build_t *b, int status);

typedef struct index_build_opts_s {
    uint32_t connect_timeout_ms;
    uint32_t progress_ms; /* 0: INDEX_BUILD_PROGRESS_MS */
    uint32_t retry_ms;    /* 0: INDEX_BUILD_RETRY_MS */
    /* A failed build ends the work (UV_EIO) instead of being tried again:
     * for a command that must end (parleyd migrate), where serve waits. */
    bool fail_fast;
} index_build_opts_t;

/* What one builder did, for its owner and the tests. */
typedef struct index_build_stats_s {
    int built;            /* CREATE INDEX CONCURRENTLY statements that completed */
    int dropped_invalid;  /* invalid leftovers dropped */
    int dropped_replaced; /* replaced indexes dropped */
    int failures;         /* statements that failed */
    int busy;             /* steps that found another daemon building */
    int progress_logged;  /* progress lines logged */
} index_build_stats_t;

/* Starts the builder on a connection of its own to conninfo; rw is the
 * read-write pool for the progress reads. Returns 0 and *out, or a
 * negative code with err. */
int index_build_start(uv_loop_t *loop, const pg_conninfo_t *conninfo, pg_pool_t *rw,
                      const index_build_opts_t *opts, index_build_cb cb, void *data,
                      index_build_t **out, char *err, size_t errcap);

/* Stops: a statement in flight is cancelled (an unfinished build leaves
 * an invalid index, dropped and built again at the next start). */
void index_build_stop(index_build_t *b);
/* True once done or stopped and every handle and the connection are
 * closed; then index_build_free. */
__attribute__((warn_unused_result)) bool index_build_idle(const index_build_t *b);
void index_build_free(index_build_t *b);

const char *index_build_error(const index_build_t *b);
void *index_build_data(const index_build_t *b);
void index_build_stats(const index_build_t *b, index_build_stats_t *out);

#endif
