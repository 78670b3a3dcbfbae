/* index_build: the background builder of the indexes migrations asked for
 * (see index_build.h). States: step (ask the database what is next) ->
 * drop (an invalid leftover, or the replaced index) -> step, or -> create
 * (the progress timer runs) -> step, until the step answers idle (done)
 * or busy (another daemon builds: wait retry_ms, step again). A failure
 * waits retry_ms and steps again (fail_fast: ends the work). Each
 * statement is one pg_pool_call on the builder's own pool; its callback
 * only records and moves to the next statement. */
#include "db/index_build.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define IB_TAG "index"
/* The statements come from the migrations (schema_index_builds), whose
 * parley_index_build refuses one this long; a longer one (written into
 * the table by hand) is refused here rather than cut. */
#define IB_SQL_MAX 4096

typedef enum {
    IB_STEP,
    IB_DROP,
    IB_CREATE,
    IB_WAIT, /* the retry timer runs */
    IB_DONE,
    IB_STOPPED,
} ib_state_t;

struct index_build_s {
    uv_loop_t *loop;
    pg_pool_t *pool; /* the builder's connection; NULL once closed */
    pg_pool_t *rw;   /* progress reads, failures noted */
    uv_timer_t retry, progress;
    int handles_open;
    ib_state_t state;
    index_build_opts_t opts;
    bool pool_closing, failing, busy_said;
    uint32_t fail_delay_ms;   /* the wait after the last failure; 0: none since a build */
    pg_call_t *call;          /* on pool, in flight */
    pg_call_t *progress_call; /* on rw, in flight */
    pg_call_t *note_call;     /* on rw, in flight */
    char name[64], table[64], what[16], pid[16];
    int version, attempt;
    char sql[IB_SQL_MAX];
    uint64_t build_started_ms;
    index_build_stats_t stats;
    index_build_cb cb;
    void *data;
    char error[INDEX_BUILD_ERR_MAX];
};

static void run(index_build_t *b);

static void handle_closed(uv_handle_t *h)
{
    index_build_t *b = h->data;
    b->handles_open--;
}

static void pool_closed(pg_pool_t *p)
{
    index_build_t *b = pg_pool_get_data(p);
    b->pool = NULL;
}

/* Closes the timers and the connection (done or stopped); the lock goes
 * with the connection. */
static void shut(index_build_t *b, ib_state_t final)
{
    b->state = final;
    uv_timer_stop(&b->retry);
    uv_timer_stop(&b->progress);
    if (b->progress_call)
        pg_call_cancel(b->progress_call);
    if (!uv_is_closing((uv_handle_t *)&b->retry)) {
        uv_close((uv_handle_t *)&b->retry, handle_closed);
        uv_close((uv_handle_t *)&b->progress, handle_closed);
    }
    if (b->pool && !b->pool_closing) {
        b->pool_closing = true;
        pg_pool_close(b->pool, pool_closed); /* a call in flight ends UV_ECANCELED */
    }
}

static void retry_cb(uv_timer_t *t)
{
    index_build_t *b = t->data;
    b->state = IB_STEP;
    run(b);
}

static uint64_t elapsed_s(const index_build_t *b)
{
    return (uv_now(b->loop) - b->build_started_ms) / 1000;
}

/* A delay for the log: "30 s", or "300 ms" under a second. */
static const char *delay_str(char *buf, size_t cap, uint32_t ms)
{
    if (ms >= 1000)
        snprintf(buf, cap, "%u s", ms / 1000);
    else
        snprintf(buf, cap, "%u ms", ms);
    return buf;
}

static void noted(void *data, int status, const char *value, const char *sqlstate,
                  const char *error)
{
    (void)value;
    (void)sqlstate;
    index_build_t *b = data;
    b->note_call = NULL;
    if (status != 0 && status != UV_ECANCELED)
        log_debug(IB_TAG, "recording a failed build: %s", error ? error : "?");
}

/* A statement failed: logged (in full once, until a step succeeds),
 * recorded in schema_index_builds.last_error, tried again after
 * retry_ms; with fail_fast the callback is told instead. */
static void fail(index_build_t *b, const char *what, const char *error)
{
    uv_timer_stop(&b->progress);
    b->stats.failures++;
    const char *why = error && error[0] ? error : "?";
    if (b->name[0] && b->note_call == NULL && b->state != IB_STEP) {
        const char *p[] = {b->name, why};
        if (pg_pool_call(b->rw, NULL, "SELECT parley_index_build_failed($1::text, $2::text)", 2, p,
                         noted, b, &b->note_call) != 0)
            b->note_call = NULL;
    }
    if (b->opts.fail_fast) {
        snprintf(b->error, sizeof b->error, "index %s: %s failed: %s", b->name[0] ? b->name : "?",
                 what, why);
        shut(b, IB_DONE);
        b->cb(b, UV_EIO);
        return;
    }
    /* Failures in a row wait twice as long each time, up to
     * INDEX_BUILD_RETRY_MAX_MS: a build that fails for a lasting reason
     * (duplicates under a unique index) must not read a large table again
     * every retry_ms for ever. */
    uint32_t delay = b->opts.retry_ms;
    if (b->fail_delay_ms != 0)
        delay = b->fail_delay_ms >= INDEX_BUILD_RETRY_MAX_MS / 2 ? INDEX_BUILD_RETRY_MAX_MS
                                                                 : 2 * b->fail_delay_ms;
    if (delay < b->opts.retry_ms)
        delay = b->opts.retry_ms;
    b->fail_delay_ms = delay;
    char d[32];
    if (!b->failing)
        log_warn(IB_TAG, "index %s%s%s: %s failed, tried again in %s: %s",
                 b->name[0] ? b->name : "builds", b->table[0] ? " on " : "", b->table, what,
                 delay_str(d, sizeof d, delay), why);
    else
        log_warn(IB_TAG, "index %s: %s failed again, tried again in %s: %s", b->name, what,
                 delay_str(d, sizeof d, delay), why);
    b->failing = true;
    b->state = IB_WAIT;
    uv_timer_start(&b->retry, retry_cb, delay, 0);
}

/* One progress line from parley_index_build_progress's answer: the phase
 * and, as a percentage, blocks (the scans), tuples (the sort, the
 * insertion) or transactions waited for, whichever the phase counts. */
static void progress_done(void *data, int status, const char *value, const char *sqlstate,
                          const char *error)
{
    (void)sqlstate;
    index_build_t *b = data;
    b->progress_call = NULL;
    if (status != 0) {
        if (status != UV_ECANCELED)
            log_debug(IB_TAG, "reading the build's progress: %s", error ? error : "?");
        return;
    }
    if (b->state != IB_CREATE)
        return;
    b->stats.progress_logged++;
    json_t *p = value ? json_loads(value, 0, NULL) : NULL;
    if (p == NULL) {
        log_info(IB_TAG, "index %s on %s: waiting to start, %llu s", b->name, b->table,
                 (unsigned long long)elapsed_s(b));
        return;
    }
    const char *phase = json_string_value(json_object_get(p, "phase"));
    static const char *const unit[] = {"blocks", "tuples", "transactions"};
    static const char *const key[][2] = {{"blocks_done", "blocks_total"},
                                         {"tuples_done", "tuples_total"},
                                         {"lockers_done", "lockers_total"}};
    int u = -1;
    long long done = 0, total = 0;
    for (int i = 0; i < 3 && u < 0; i++) {
        total = json_integer_value(json_object_get(p, key[i][1]));
        done = json_integer_value(json_object_get(p, key[i][0]));
        if (total > 0)
            u = i;
    }
    if (u >= 0)
        log_info(IB_TAG, "index %s on %s: %s, %lld %% (%lld of %lld %s), %llu s", b->name, b->table,
                 phase ? phase : "?", done * 100 / total, done, total, unit[u],
                 (unsigned long long)elapsed_s(b));
    else
        log_info(IB_TAG, "index %s on %s: %s, %llu s", b->name, b->table, phase ? phase : "?",
                 (unsigned long long)elapsed_s(b));
    json_decref(p);
}

static void progress_cb(uv_timer_t *t)
{
    index_build_t *b = t->data;
    if (b->state != IB_CREATE || b->progress_call != NULL)
        return;
    const char *p[] = {b->pid};
    if (pg_pool_call(b->rw, "parley_index_build_progress",
                     "SELECT parley_index_build_progress($1::integer)", 1, p, progress_done, b,
                     &b->progress_call) != 0)
        b->progress_call = NULL;
}

static void copy_str(char *dst, size_t cap, json_t *r, const char *key)
{
    const char *v = json_string_value(json_object_get(r, key));
    snprintf(dst, cap, "%s", v ? v : "");
}

/* The step's answer: the next state. Returns false when the work is done
 * or waits (the state says which). */
static bool on_step(index_build_t *b, json_t *r)
{
    const char *state = json_string_value(json_object_get(r, "state"));
    if (state == NULL || strcmp(state, "idle") == 0)
        return false;
    if (strcmp(state, "busy") == 0) {
        b->stats.busy++;
        long long n = json_integer_value(json_object_get(r, "pending"));
        char d[32];
        if (!b->busy_said)
            log_info(IB_TAG,
                     "another daemon builds the %lld index%s the migrations asked for; checking "
                     "again every %s",
                     n, n == 1 ? "" : "es", delay_str(d, sizeof d, b->opts.retry_ms));
        b->busy_said = true;
        b->state = IB_WAIT;
        uv_timer_start(&b->retry, retry_cb, b->opts.retry_ms, 0);
        return false;
    }
    b->failing = false;
    copy_str(b->name, sizeof b->name, r, "name");
    copy_str(b->table, sizeof b->table, r, "table");
    if (strcmp(state, "gone") == 0) {
        log_warn(IB_TAG, "index %s: its table %s is gone; not built", b->name, b->table);
        return true; /* step again */
    }
    const char *sql = json_string_value(json_object_get(r, "sql"));
    if (sql == NULL || strlen(sql) >= sizeof b->sql) {
        fail(b, "reading the step", "a statement missing or longer than IB_SQL_MAX");
        return false;
    }
    snprintf(b->sql, sizeof b->sql, "%s", sql);
    if (strcmp(state, "drop") == 0) {
        copy_str(b->what, sizeof b->what, r, "what");
        if (strcmp(b->what, "invalid") == 0)
            log_info(IB_TAG, "index %s on %s: dropping what an unfinished build left", b->name,
                     b->table);
        else
            log_info(IB_TAG, "index %s on %s: dropping it (replaced by %s)", b->name, b->table,
                     json_string_value(json_object_get(r, "for")));
        b->state = IB_DROP;
        return true;
    }
    b->version = (int)json_integer_value(json_object_get(r, "version"));
    b->attempt = (int)json_integer_value(json_object_get(r, "attempt"));
    snprintf(b->pid, sizeof b->pid, "%lld", json_integer_value(json_object_get(r, "pid")));
    char by[32] = "";
    if (b->version > 0)
        snprintf(by, sizeof by, "migration %03d, ", b->version);
    log_info(IB_TAG, "index %s on %s: building it concurrently (%sattempt %d)", b->name, b->table,
             by, b->attempt);
    b->build_started_ms = uv_now(b->loop);
    b->state = IB_CREATE;
    uv_timer_start(&b->progress, progress_cb, b->opts.progress_ms, b->opts.progress_ms);
    return true;
}

static const char *state_what(ib_state_t st)
{
    switch (st) {
    case IB_STEP:
        return "a step";
    case IB_DROP:
        return "dropping the index";
    default:
        return "building the index";
    }
}

/* Every statement's callback: records the answer and sends the next. */
static void call_done(void *data, int status, const char *value, const char *sqlstate,
                      const char *error)
{
    (void)sqlstate;
    index_build_t *b = data;
    b->call = NULL;
    if (b->state == IB_STOPPED || b->state == IB_DONE)
        return;
    if (status != 0) {
        fail(b, state_what(b->state), error);
        return;
    }
    switch (b->state) {
    case IB_STEP: {
        json_t *r = json_loads(value ? value : "", 0, NULL);
        if (r == NULL) {
            fail(b, "a step", "an answer that is not JSON");
            return;
        }
        bool next = on_step(b, r);
        json_decref(r);
        if (!next) {
            if (b->state == IB_STEP) {
                if (b->stats.built + b->stats.dropped_replaced > 0)
                    log_info(IB_TAG, "every index the migrations asked for is built");
                shut(b, IB_DONE);
                b->cb(b, 0);
            }
            return;
        }
        break;
    }
    case IB_DROP:
        if (strcmp(b->what, "invalid") == 0)
            b->stats.dropped_invalid++;
        else
            b->stats.dropped_replaced++;
        b->state = IB_STEP;
        break;
    case IB_CREATE: {
        uv_timer_stop(&b->progress);
        uint64_t ms = uv_now(b->loop) - b->build_started_ms;
        b->stats.built++;
        b->fail_delay_ms = 0;
        log_info(IB_TAG, "index %s on %s built (%llu.%llu s)", b->name, b->table,
                 (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000 / 100));
        b->state = IB_STEP;
        break;
    }
    default:
        b->state = IB_STEP;
        break;
    }
    run(b);
}

/* Sends the statement of the current state. */
static void run(index_build_t *b)
{
    int rc;
    switch (b->state) {
    case IB_STEP:
        b->name[0] = b->table[0] = '\0'; /* a failed step names no index */
        rc = pg_pool_call(b->pool, NULL, "SELECT parley_index_build_step()", 0, NULL, call_done, b,
                          &b->call);
        break;
    case IB_DROP:
    case IB_CREATE:
        /* The migration's statement (one; the extended protocol runs no
         * more), or a DROP built by the step from checked names. */
        rc = pg_pool_call(b->pool, NULL, b->sql, 0, NULL, call_done, b, &b->call);
        break;
    default:
        return;
    }
    if (rc != 0) {
        b->call = NULL;
        fail(b, "queueing a statement", uv_strerror(rc));
    }
}

/* The builder's session: no server-side limit on its statements (the
 * pool's INDEX_BUILD_TIMEOUT_MS is theirs), whatever the role or the
 * database sets. */
static const char *const ib_setup_sql[] = {"SET statement_timeout = 0", "SET lock_timeout = 0",
                                           NULL};

int index_build_start(uv_loop_t *loop, const pg_conninfo_t *conninfo, pg_pool_t *rw,
                      const index_build_opts_t *opts, index_build_cb cb, void *data,
                      index_build_t **out, char *err, size_t errcap)
{
    index_build_t *b = calloc(1, sizeof *b);
    if (b == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    b->opts = *opts;
    if (b->opts.progress_ms == 0)
        b->opts.progress_ms = INDEX_BUILD_PROGRESS_MS;
    if (b->opts.retry_ms == 0)
        b->opts.retry_ms = INDEX_BUILD_RETRY_MS;
    b->loop = loop;
    b->rw = rw;
    b->cb = cb;
    b->data = data;
    pg_pool_config_t pc = {
        .name = "index",
        .size = 1,
        .queue_max = 4,
        .query_timeout_ms = INDEX_BUILD_TIMEOUT_MS,
        .connect_timeout_ms = opts->connect_timeout_ms,
        .setup_sql = ib_setup_sql,
    };
    int rc = pg_pool_new(loop, &pc, conninfo, &b->pool, err, errcap);
    if (rc != 0) {
        free(b);
        return rc;
    }
    pg_pool_set_data(b->pool, b);
    uv_timer_init(loop, &b->retry);
    uv_timer_init(loop, &b->progress);
    b->retry.data = b->progress.data = b;
    b->handles_open = 2;
    b->state = IB_STEP;
    run(b);
    *out = b;
    return 0;
}

void index_build_stop(index_build_t *b)
{
    if (b == NULL || b->state == IB_STOPPED)
        return;
    if (b->call)
        pg_call_cancel(b->call);
    /* A failure being recorded (note_call) is one short UPDATE on the
     * read-write pool, left to finish: parleyd migrate stops right after
     * a failed build, whose reason the row should keep. */
    shut(b, IB_STOPPED);
}

bool index_build_idle(const index_build_t *b)
{
    return b->handles_open == 0 && b->pool == NULL && b->call == NULL && b->progress_call == NULL &&
           b->note_call == NULL;
}

void index_build_free(index_build_t *b)
{
    free(b);
}

const char *index_build_error(const index_build_t *b)
{
    return b->error;
}

void *index_build_data(const index_build_t *b)
{
    return b->data;
}

void index_build_stats(const index_build_t *b, index_build_stats_t *out)
{
    *out = b->stats;
}
