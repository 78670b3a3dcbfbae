/* jobs: the sync_jobs runner (see jobs.h). */
#include "sync/jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/log.h"

#define JOBS_TAG "jobs"

typedef struct claim_s {
    sync_runner_t *r;
    int cls;
    pg_query_t q;
    pg_stmt_t stmt;
    const char *params[4];
    char buf[2][24];
} claim_t;

struct sync_runner_s {
    uv_loop_t *loop;
    pg_pool_t *rw;
    sync_class_t classes[SYNC_MAX_CLASSES];
    int nclasses;
    int running[SYNC_MAX_CLASSES];
    bool claiming[SYNC_MAX_CLASSES];
    claim_t claims[SYNC_MAX_CLASSES];
    char owner[128];
    long pending[SYNC_MAX_CLASSES];
    long in_progress[SYNC_MAX_CLASSES];
    pg_query_t depth_q;
    pg_stmt_t depth_stmt;
    bool counting;
    uint64_t counted_at;
    uv_timer_t timer;
    bool closing;
    bool timer_open;
    void (*close_cb)(void *data);
    void *close_data;
};

static void maybe_closed(sync_runner_t *r);

static void claimed(pg_query_t *q, int status)
{
    claim_t *c = q->data;
    sync_runner_t *r = c->r;
    r->claiming[c->cls] = false;
    json_t *rows = NULL;
    if (status == 0 && q->results[0] && PQntuples(q->results[0]) == 1) {
        json_error_t je;
        rows = json_loads(PQgetvalue(q->results[0], 0, 0), 0, &je);
    } else if (status != 0) {
        log_warn(JOBS_TAG, "claiming %s jobs failed: %s", r->classes[c->cls].name, q->error);
    }
    pg_query_release(q);
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
    memset(c, 0, sizeof *c);
    c->r = r;
    c->cls = cls;
    snprintf(c->buf[0], sizeof c->buf[0], "%d", room);
    snprintf(c->buf[1], sizeof c->buf[1], "%d", SYNC_LEASE_S);
    c->params[0] = r->owner;
    c->params[1] = r->classes[cls].name;
    c->params[2] = c->buf[0];
    c->params[3] = c->buf[1];
    c->stmt.sql = "SELECT parley_jobs_claim($1::text, $2::text, $3::integer, $4::integer)::text";
    c->stmt.nparams = 4;
    c->stmt.params = c->params;
    c->q.stmts = &c->stmt;
    c->q.nstmts = 1;
    c->q.cb = claimed;
    c->q.data = c;
    if (pg_pool_submit(r->rw, &c->q) == 0)
        r->claiming[cls] = true;
}

static void counted(pg_query_t *q, int status)
{
    sync_runner_t *r = q->data;
    r->counting = false;
    if (status == 0 && q->results[0]) {
        memset(r->pending, 0, sizeof r->pending);
        memset(r->in_progress, 0, sizeof r->in_progress);
        PGresult *res = q->results[0];
        for (int row = 0; row < PQntuples(res); row++)
            for (int i = 0; i < r->nclasses; i++)
                if (strcmp(PQgetvalue(res, row, 0), r->classes[i].name) == 0) {
                    r->pending[i] = strtol(PQgetvalue(res, row, 1), NULL, 10);
                    r->in_progress[i] = strtol(PQgetvalue(res, row, 2), NULL, 10);
                }
    }
    pg_query_release(q);
    maybe_closed(r);
}

/* Counts the queue for serverStatus-like figures in /metrics. */
static void count_depth(sync_runner_t *r)
{
    uint64_t now = uv_now(r->loop);
    if (r->closing || r->counting || (r->counted_at != 0 && now - r->counted_at < SYNC_DEPTH_MS))
        return;
    r->counted_at = now;
    memset(&r->depth_q, 0, sizeof r->depth_q);
    r->depth_stmt.sql = "SELECT class, count(*) FILTER (WHERE status = 'pending'), "
                        "count(*) FILTER (WHERE status = 'in_progress') FROM sync_jobs "
                        "GROUP BY class";
    r->depth_stmt.nparams = 0;
    r->depth_stmt.params = NULL;
    r->depth_q.stmts = &r->depth_stmt;
    r->depth_q.nstmts = 1;
    r->depth_q.cb = counted;
    r->depth_q.data = r;
    if (pg_pool_submit(r->rw, &r->depth_q) == 0)
        r->counting = true;
}

static void tick(uv_timer_t *t)
{
    sync_runner_t *r = t->data;
    for (int i = 0; i < r->nclasses; i++)
        claim(r, i);
    count_depth(r);
}

void sync_runner_kick(sync_runner_t *r)
{
    tick(&r->timer);
}

static void finished(pg_query_t *q, int status)
{
    sync_job_t *job = q->data;
    sync_runner_t *r = job->runner;
    if (status != 0)
        log_warn(JOBS_TAG, "recording job %lld failed: %s",
                 (long long)json_integer_value(json_object_get(job->row, "id")), q->error);
    pg_query_release(q);
    r->running[job->cls]--;
    json_decref(job->row);
    free(job->pjson);
    int cls = job->cls;
    free(job);
    claim(r, cls);
    maybe_closed(r);
}

void sync_job_finish(sync_job_t *job, sync_outcome_t outcome, const char *error, long fetched,
                     int64_t chat_id)
{
    sync_runner_t *r = job->runner;
    static const char *const names[] = {"idle", "retry", "error"};
    json_t *p = json_pack("{s:O, s:s, s:s, s:i, s:i}", "id", json_object_get(job->row, "id"),
                          "owner", r->owner, "status", names[outcome], "fetched", (int)fetched,
                          "max_attempts", SYNC_MAX_ATTEMPTS);
    if (error)
        json_object_set_new(p, "error", json_string(error));
    if (chat_id)
        json_object_set_new(p, "chat_id", json_integer((json_int_t)chat_id));
    job->pjson = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    job->params[0] = job->pjson ? job->pjson : "{}";
    job->stmt.sql = "SELECT parley_jobs_finish($1::jsonb)";
    job->stmt.nparams = 1;
    job->stmt.params = job->params;
    job->q.stmts = &job->stmt;
    job->q.nstmts = 1;
    job->q.cb = finished;
    job->q.data = job;
    if (pg_pool_submit(r->rw, &job->q) != 0) {
        /* The lease expires and the job is claimed again. */
        r->running[job->cls]--;
        json_decref(job->row);
        free(job->pjson);
        free(job);
        maybe_closed(r);
    }
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
                      sync_runner_t **out)
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
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    snprintf(r->owner, sizeof r->owner, "%s:%d", host, (int)getpid());
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
    buf_append_str(out, "# HELP parley_sync_jobs Sync jobs on the database by class and "
                        "status (counted every few seconds).\n# TYPE parley_sync_jobs gauge\n");
    for (int i = 0; i < js.nclasses; i++)
        buf_printf(out,
                   "parley_sync_jobs{class=\"%s\",status=\"pending\"} %ld\n"
                   "parley_sync_jobs{class=\"%s\",status=\"in_progress\"} %ld\n",
                   js.name[i], js.pending[i], js.name[i], js.in_progress[i]);
    buf_append_str(out, "# HELP parley_sync_jobs_running Sync jobs this daemon runs.\n"
                        "# TYPE parley_sync_jobs_running gauge\n");
    for (int i = 0; i < js.nclasses; i++)
        buf_printf(out, "parley_sync_jobs_running{class=\"%s\"} %d\n", js.name[i], js.running[i]);
}
