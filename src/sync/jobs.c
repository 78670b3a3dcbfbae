/* jobs: the sync_jobs runner (see jobs.h). */
#include "sync/jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "util/prom_text.h"

#define JOBS_TAG "jobs"

/* A claim in flight, one per class. */
typedef struct claim_s {
    sync_runner_t *r;
    int cls;
} claim_t;

struct sync_runner_s {
    uv_loop_t *loop;
    pg_pool_t *rw;
    sync_class_t classes[SYNC_MAX_CLASSES];
    int nclasses;
    int running[SYNC_MAX_CLASSES];
    bool claiming[SYNC_MAX_CLASSES];
    claim_t claims[SYNC_MAX_CLASSES];
    char owner[160];
    pg_lock_t *presence; /* NULL: none (tests) */
    bool presence_open;  /* closing waits for it */
    long pending[SYNC_MAX_CLASSES];
    long in_progress[SYNC_MAX_CLASSES];
    bool counting;
    uint64_t counted_at;
    uv_timer_t timer;
    bool closing;
    bool timer_open;
    void (*close_cb)(void *data);
    void *close_data;
};

static void maybe_closed(sync_runner_t *r);

static void claimed(void *data, int status, const char *value, const char *sqlstate,
                    const char *error)
{
    claim_t *c = data;
    sync_runner_t *r = c->r;
    (void)sqlstate;
    r->claiming[c->cls] = false;
    json_t *rows = NULL;
    if (status == 0 && value) {
        json_error_t je;
        rows = json_loads(value, 0, &je);
    } else if (status != 0) {
        log_warn(JOBS_TAG, "claiming %s jobs failed: %s", r->classes[c->cls].name, error);
    }
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        sync_job_t *job = calloc(1, sizeof *job);
        if (job == NULL)
            break;
        job->runner = r;
        job->cls = c->cls;
        job->row = json_incref(row);
        r->running[c->cls]++;
        log_debug(JOBS_TAG, "running %s job %lld", r->classes[c->cls].name,
                  (long long)json_integer_value(json_object_get(row, "id")));
        r->classes[c->cls].exec(job, r->classes[c->cls].ctx);
    }
    json_decref(rows);
    maybe_closed(r);
}

static void claim(sync_runner_t *r, int cls)
{
    int room = r->classes[cls].concurrency - r->running[cls];
    if (r->closing || r->claiming[cls] || room <= 0)
        return;
    claim_t *c = &r->claims[cls];
    *c = (claim_t){.r = r, .cls = cls};
    char nroom[24], lease[24];
    snprintf(nroom, sizeof nroom, "%d", room);
    snprintf(lease, sizeof lease, "%d", SYNC_LEASE_S);
    const char *params[4] = {r->owner, r->classes[cls].name, nroom, lease};
    if (pg_pool_call(r->rw, "parley_jobs_claim",
                     "SELECT parley_jobs_claim($1::text, $2::text, $3::integer, $4::integer)::text",
                     4, params, claimed, c, NULL) == 0)
        r->claiming[cls] = true;
}

/* depth: {"class": [pending, in_progress], ...} */
static void counted(void *data, int status, const char *value, const char *sqlstate,
                    const char *error)
{
    sync_runner_t *r = data;
    (void)sqlstate;
    (void)error;
    r->counting = false;
    json_error_t je;
    json_t *depth = status == 0 && value ? json_loads(value, 0, &je) : NULL;
    if (depth) {
        for (int i = 0; i < r->nclasses; i++) {
            json_t *v = json_object_get(depth, r->classes[i].name);
            r->pending[i] = (long)json_integer_value(json_array_get(v, 0));
            r->in_progress[i] = (long)json_integer_value(json_array_get(v, 1));
        }
        json_decref(depth);
    }
    maybe_closed(r);
}

/* Counts the queue for serverStatus-like figures in /metrics. */
static void count_depth(sync_runner_t *r)
{
    uint64_t now = uv_now(r->loop);
    if (r->closing || r->counting || (r->counted_at != 0 && now - r->counted_at < SYNC_DEPTH_MS))
        return;
    r->counted_at = now;
    if (pg_pool_call(r->rw, "parley_jobs_depth",
                     "SELECT coalesce(json_object_agg(class, json_build_array(p, ip)), '{}')::text "
                     "FROM (SELECT class, count(*) FILTER (WHERE status = 'pending') AS p, "
                     "count(*) FILTER (WHERE status = 'in_progress') AS ip FROM sync_jobs "
                     "GROUP BY class) s",
                     0, NULL, counted, r, NULL) == 0)
        r->counting = true;
}

static void tick(uv_timer_t *t)
{
    sync_runner_t *r = t->data;
    /* Without the presence lock another daemon may take what we claim. */
    bool present = r->presence == NULL || pg_lock_held(r->presence);
    for (int i = 0; present && i < r->nclasses; i++)
        claim(r, i);
    count_depth(r);
}

static void presence_changed(pg_lock_t *l, bool held)
{
    sync_runner_t *r = pg_lock_data(l);
    if (held && !r->closing)
        tick(&r->timer); /* claim now, not at the next poll */
    else
        log_warn("jobs", "the presence lock is not held (database connection lost?): no new "
                         "claims until it is");
}

static void presence_closed(void *data)
{
    sync_runner_t *r = data;
    r->presence_open = false;
    maybe_closed(r);
}

void sync_runner_kick(sync_runner_t *r)
{
    tick(&r->timer);
}

static void finished(void *data, int status, const char *value, const char *sqlstate,
                     const char *error)
{
    sync_job_t *job = data;
    sync_runner_t *r = job->runner;
    (void)value;
    (void)sqlstate;
    if (status != 0)
        log_warn(JOBS_TAG, "recording job %lld failed: %s",
                 (long long)json_integer_value(json_object_get(job->row, "id")), error);
    r->running[job->cls]--;
    json_decref(job->row);
    int cls = job->cls;
    free(job);
    claim(r, cls);
    maybe_closed(r);
}

/* Records the job's end: status "idle", "retry", "error" or "wait" (then
 * wait_s seconds). */
static void job_end(sync_job_t *job, const char *status, long wait_s, const char *error,
                    long fetched, int64_t chat_id)
{
    sync_runner_t *r = job->runner;
    json_t *p = json_pack("{s:O, s:s, s:s, s:i, s:i}", "id", json_object_get(job->row, "id"),
                          "owner", r->owner, "status", status, "fetched", (int)fetched,
                          "max_attempts", SYNC_MAX_ATTEMPTS);
    if (error)
        json_object_set_new(p, "error", json_string(error));
    if (chat_id)
        json_object_set_new(p, "chat_id", json_integer((json_int_t)chat_id));
    if (wait_s > 0)
        json_object_set_new(p, "wait_s", json_integer(wait_s));
    char *pjson = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    const char *params[1] = {pjson ? pjson : "{}"};
    int rc = pg_pool_call(r->rw, "parley_jobs_finish", "SELECT parley_jobs_finish($1::jsonb)", 1,
                          params, finished, job, NULL);
    free(pjson);
    if (rc != 0) {
        /* The lease expires and the job is claimed again. */
        r->running[job->cls]--;
        json_decref(job->row);
        free(job);
        maybe_closed(r);
    }
}

void sync_job_finish(sync_job_t *job, sync_outcome_t outcome, const char *error, long fetched,
                     int64_t chat_id)
{
    static const char *const names[] = {"idle", "retry", "error"};
    job_end(job, names[outcome], 0, error, fetched, chat_id);
}

void sync_job_wait(sync_job_t *job, long seconds, const char *error)
{
    job_end(job, "wait", seconds > 0 ? seconds : 1, error, 0, 0);
}

const char *sync_job_owner(const sync_job_t *job)
{
    return job->runner->owner;
}

int sync_runner_running(const sync_runner_t *r)
{
    int n = 0;
    for (int i = 0; i < r->nclasses; i++)
        n += r->running[i];
    return n;
}

void sync_runner_stats(const sync_runner_t *r, sync_stats_t *out)
{
    memset(out, 0, sizeof *out);
    out->nclasses = r->nclasses;
    for (int i = 0; i < r->nclasses; i++) {
        out->name[i] = r->classes[i].name;
        out->pending[i] = r->pending[i];
        out->in_progress[i] = r->in_progress[i];
        out->running[i] = r->running[i];
    }
}

int sync_runner_start(uv_loop_t *loop, pg_pool_t *rw, const sync_class_t *classes, int nclasses,
                      const sync_presence_t *presence, sync_runner_t **out)
{
    if (nclasses > SYNC_MAX_CLASSES)
        return UV_EINVAL;
    sync_runner_t *r = calloc(1, sizeof *r);
    if (r == NULL)
        return UV_ENOMEM;
    r->loop = loop;
    r->rw = rw;
    memcpy(r->classes, classes, (size_t)nclasses * sizeof *classes);
    r->nclasses = nclasses;
    if (presence != NULL) {
        snprintf(r->owner, sizeof r->owner, "%s", presence->owner);
        char key[200], err[160];
        snprintf(key, sizeof key, "parley_daemon:%s", r->owner);
        int rc = pg_lock_start(loop, presence->conninfo, key, presence->connect_timeout_ms,
                               presence_changed, r, &r->presence, err, sizeof err);
        if (rc != 0) {
            log_error("jobs", "presence lock: %s", err);
            free(r);
            return rc;
        }
        r->presence_open = true;
    } else {
        char host[64] = "host";
        gethostname(host, sizeof host - 1);
        snprintf(r->owner, sizeof r->owner, "%s:%d", host, (int)getpid());
    }
    uv_timer_init(loop, &r->timer);
    r->timer.data = r;
    r->timer_open = true;
    uv_timer_start(&r->timer, tick, 0, SYNC_POLL_MS);
    *out = r;
    return 0;
}

static void timer_closed(uv_handle_t *h)
{
    sync_runner_t *r = h->data;
    r->timer_open = false;
    maybe_closed(r);
}

static void maybe_closed(sync_runner_t *r)
{
    if (!r->closing || r->counting)
        return;
    for (int i = 0; i < r->nclasses; i++)
        if (r->running[i] > 0 || r->claiming[i])
            return;
    /* The presence lock goes last: our jobs are finished. */
    if (r->presence != NULL) {
        pg_lock_t *l = r->presence;
        r->presence = NULL;
        pg_lock_close(l, presence_closed, r);
        return;
    }
    if (r->presence_open)
        return;
    if (r->timer_open) {
        if (!uv_is_closing((uv_handle_t *)&r->timer))
            uv_close((uv_handle_t *)&r->timer, timer_closed);
        return;
    }
    void (*cb)(void *) = r->close_cb;
    void *data = r->close_data;
    free(r);
    if (cb)
        cb(data);
}

void sync_runner_close(sync_runner_t *r, void (*cb)(void *data), void *data)
{
    r->closing = true;
    r->close_cb = cb;
    r->close_data = data;
    uv_timer_stop(&r->timer);
    maybe_closed(r);
}

void sync_runner_metrics(const sync_runner_t *r, buf_t *out)
{
    sync_stats_t js;
    sync_runner_stats(r, &js);
    prom_text_family(out, "parley_sync_jobs", PROM_TEXT_GAUGE,
                     "Sync jobs on the database by class and status (counted every few seconds).");
    for (int i = 0; i < js.nclasses; i++) {
        prom_text_int(out, "parley_sync_jobs",
                      PROM_LABELS("class", js.name[i], "status", "pending"), js.pending[i]);
        prom_text_int(out, "parley_sync_jobs",
                      PROM_LABELS("class", js.name[i], "status", "in_progress"), js.in_progress[i]);
    }
    prom_text_family(out, "parley_sync_jobs_running", PROM_TEXT_GAUGE,
                     "Sync jobs this daemon runs.");
    for (int i = 0; i < js.nclasses; i++)
        prom_text_int(out, "parley_sync_jobs_running", PROM_LABELS("class", js.name[i]),
                      js.running[i]);
}
