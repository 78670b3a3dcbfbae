/* jobs: runs the sync_jobs queue. Every SYNC_POLL_MS (and when kicked)
 * the runner claims due jobs of each class it has room for
 * (parley_jobs_claim: FOR UPDATE SKIP LOCKED, under a lease, so several
 * daemons on one database share the work), hands each to its class's executor,
 * and records the outcome (parley_jobs_finish: idle, error, or back to
 * pending with exponential backoff and jitter up to SYNC_MAX_ATTEMPTS).
 *
 * Presence: the runner holds the daemon's presence lock, the advisory
 * lock "parley_daemon:<owner>" on a connection of its own (db/lock.h), and
 * claims only while it holds it. A killed daemon's connection closes, the
 * lock goes, and the others take its jobs over at their next claim
 * (parley_daemon_alive, src/db/sql/presence.sql), not when the lease
 * expires. */
#ifndef PARLEY_SYNC_JOBS_H
#define PARLEY_SYNC_JOBS_H

#include <jansson.h>
#include <stdbool.h>
#include <uv.h>

#include "db/conninfo.h"
#include "db/lock.h"
#include "db/pool.h"

#define SYNC_POLL_MS      1000
#define SYNC_LEASE_S      120
#define SYNC_MAX_ATTEMPTS 5
#define SYNC_MAX_CLASSES  8
#define SYNC_DEPTH_MS     5000 /* how often the queue depth is counted */

typedef struct sync_runner_s sync_runner_t;
typedef struct sync_job_s sync_job_t;

typedef enum {
    SYNC_IDLE = 0, /* done; waits for realtime or a new request */
    SYNC_RETRY,    /* failed; try again later */
    SYNC_ERROR,    /* failed for good */
} sync_outcome_t;

/* Runs a job; must end it with sync_job_finish (now or later). */
typedef void (*sync_exec_fn)(sync_job_t *job, void *ctx);

typedef struct sync_class_s {
    const char *name; /* sync_jobs.class */
    int concurrency;
    sync_exec_fn exec;
    void *ctx;
} sync_class_t;

struct sync_job_s {
    sync_runner_t *runner;
    int cls;
    json_t *row; /* id, class, channel, chat_id, depth, attempts, params */
};

/* Who claims, and the connection that says it is alive. */
typedef struct sync_presence_s {
    const char *owner;             /* unique per daemon: host:pid:random */
    const pg_conninfo_t *conninfo; /* for the presence lock's connection */
    uint32_t connect_timeout_ms;
} sync_presence_t;

/* presence NULL: an owner of host:pid and no presence lock (claims at
 * once; tests). */
int sync_runner_start(uv_loop_t *loop, pg_pool_t *rw, const sync_class_t *classes, int nclasses,
                      const sync_presence_t *presence, sync_runner_t **out);

/* Looks for work now (e.g. after syncJobsAdd). */
void sync_runner_kick(sync_runner_t *r);

/* Ends a job. error: NULL or a message stored with it; fetched: items
 * stored; chat_id: the resolved chat (0: unchanged). */
void sync_job_finish(sync_job_t *job, sync_outcome_t outcome, const char *error, long fetched,
                     int64_t chat_id);

/* Ends a job the upstream asked to wait (a FloodWait): it goes back to
 * pending, due in seconds, without counting as a failed attempt; error
 * says why (shown by syncJobsList). */
void sync_job_wait(sync_job_t *job, long seconds, const char *error);

/* The daemon the job is leased to (what its progress is recorded under). */
const char *sync_job_owner(const sync_job_t *job);

/* Jobs running now. */
int sync_runner_running(const sync_runner_t *r);

/* The queue as last counted (every SYNC_DEPTH_MS, for every daemon on the
 * database): per class, jobs pending and in progress; and the jobs this
 * daemon runs. */
typedef struct sync_stats_s {
    int nclasses;
    const char *name[SYNC_MAX_CLASSES];
    long pending[SYNC_MAX_CLASSES];
    long in_progress[SYNC_MAX_CLASSES];
    int running[SYNC_MAX_CLASSES];
} sync_stats_t;

void sync_runner_stats(const sync_runner_t *r, sync_stats_t *out);

/* Appends the queue's Prometheus figures (jobs by class and status, jobs
 * this daemon runs) to out. */
struct buf_s;
void sync_runner_metrics(const sync_runner_t *r, struct buf_s *out);

/* Stops claiming; cb(data) once the running jobs ended. */
void sync_runner_close(sync_runner_t *r, void (*cb)(void *data), void *data);

#endif
