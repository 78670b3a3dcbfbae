/* search_forms: the background work that brings the search to the
 * configured word forms and keeps its vocabulary (see search_forms.h).
 * States: step (ask the database what is left) -> fill (batches until
 * finished) -> step, or lock -> drop what a failed build left -> create
 * the index -> unlock -> step, until the step answers ready; then the
 * vocabulary: words fill (batches until finished) -> merge (while a batch
 * comes back full) -> sleep SEARCH_WORDS_MERGE_MS -> merge ..., until
 * stopped. A failure waits SEARCH_FORMS_RETRY_MS and steps again. Each
 * statement is one pg_pool_call on the builder's own pool; its callback
 * only records and moves to the next statement. */
#include "archive/search_forms.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define SF_TAG "search"

typedef enum {
    SF_STEP,
    SF_FILL,
    SF_LOCK,
    SF_DROP,
    SF_CREATE,
    SF_UNLOCK,
    SF_WORDS_FILL,
    SF_WORDS_MERGE,
    SF_WORDS_SLEEP, /* the retry timer runs, to merge again */
    SF_WAIT,        /* the retry timer runs */
    SF_DONE,
    SF_STOPPED,
} sf_state_t;

struct search_forms_s {
    uv_loop_t *loop;
    pg_pool_t *pool; /* the builder's connection; NULL once closed */
    pg_pool_t *rw;   /* progress reads */
    uv_timer_t retry, progress;
    int handles_open;
    sf_state_t state;
    bool pool_closing, failing, ready_said;
    bool fail_fast;           /* search_forms_fail_fast */
    int busy_tries;           /* steps in a row that met the writers of messages */
    pg_call_t *call;          /* on pool, in flight */
    pg_call_t *progress_call; /* on rw, in flight */
    char languages[256];
    char resolved[256];
    char fill_batch[16];
    char create_sql[512], drop_sql[512];
    char index_name[64]; /* what the index being built serves, for the log */
    long long rows_filled, rows_estimate;
    uint64_t started_ms;
    search_forms_cb cb;
    void *data;
    char error[SEARCH_FORMS_ERR_MAX];
};

static void run(search_forms_t *s);

static void handle_closed(uv_handle_t *h)
{
    search_forms_t *s = h->data;
    s->handles_open--;
}

static void pool_closed(pg_pool_t *p)
{
    search_forms_t *s = pg_pool_get_data(p);
    s->pool = NULL;
}

/* Closes the timers and the connection (done or stopped). */
static void shut(search_forms_t *s, sf_state_t final)
{
    s->state = final;
    uv_timer_stop(&s->retry);
    uv_timer_stop(&s->progress);
    if (s->progress_call)
        pg_call_cancel(s->progress_call);
    if (!uv_is_closing((uv_handle_t *)&s->retry)) {
        uv_close((uv_handle_t *)&s->retry, handle_closed);
        uv_close((uv_handle_t *)&s->progress, handle_closed);
    }
    if (s->pool && !s->pool_closing) {
        s->pool_closing = true;
        pg_pool_close(s->pool, pool_closed); /* a call in flight ends UV_ECANCELED */
    }
}

static void retry_cb(uv_timer_t *t)
{
    search_forms_t *s = t->data;
    s->state = s->state == SF_WORDS_SLEEP ? SF_WORDS_MERGE : SF_STEP;
    run(s);
}

/* A statement failed: said once until a step succeeds, tried again later;
 * with fail_fast, before the list is in use, the callback is told instead
 * (UV_EIO, the reason in search_forms_error), unless the failure was
 * busy: the step that changes the list met the writers of messages, which
 * end (at most SEARCH_FORMS_BUSY_TRIES steps in a row). */
static void fail(search_forms_t *s, const char *what, const char *error, bool busy)
{
    uv_timer_stop(&s->progress);
    if (s->fail_fast && !s->ready_said && !busy) {
        snprintf(s->error, sizeof s->error, "%s failed: %s", what, error ? error : "?");
        shut(s, SF_DONE);
        s->cb(s, UV_EIO);
        return;
    }
    if (!s->failing)
        log_warn(SF_TAG, "word forms (%s): %s failed, tried again in %d s: %s", s->languages, what,
                 SEARCH_FORMS_RETRY_MS / 1000, error ? error : "?");
    else
        log_debug(SF_TAG, "word forms: %s failed again: %s", what, error ? error : "?");
    s->failing = true;
    s->state = SF_WAIT;
    uv_timer_start(&s->retry, retry_cb, SEARCH_FORMS_RETRY_MS, 0);
}

static void progress_done(void *data, int status, const char *value, const char *sqlstate,
                          const char *error)
{
    (void)sqlstate;
    search_forms_t *s = data;
    s->progress_call = NULL;
    if (status != 0 || value == NULL) {
        if (status != 0 && status != UV_ECANCELED)
            log_debug(SF_TAG, "reading the index build's progress: %s", error ? error : "?");
        return;
    }
    json_t *p = json_loads(value, 0, NULL);
    const char *phase = json_string_value(json_object_get(p, "phase"));
    long long done = json_integer_value(json_object_get(p, "blocks_done"));
    long long total = json_integer_value(json_object_get(p, "blocks_total"));
    if (total > 0)
        log_info(SF_TAG, "word forms (%s): building the index: %s, %lld %% of %lld blocks",
                 s->resolved, phase ? phase : "?", done * 100 / total, total);
    else
        log_info(SF_TAG, "word forms (%s): building the index: %s", s->resolved,
                 phase ? phase : "?");
    json_decref(p);
}

static void progress_cb(uv_timer_t *t)
{
    search_forms_t *s = t->data;
    if (s->state == SF_FILL) {
        log_info(SF_TAG, "word forms (%s): %lld of about %lld rows filled", s->resolved,
                 s->rows_filled, s->rows_estimate);
    } else if (s->state == SF_WORDS_FILL) {
        log_info(SF_TAG, "vocabulary: the words of %lld of about %lld rows in", s->rows_filled,
                 s->rows_estimate);
    } else if (s->state == SF_CREATE && s->progress_call == NULL) {
        int rc = pg_pool_call(s->rw, "parley_search_forms_progress",
                              "SELECT parley_search_forms_progress()", 0, NULL, progress_done, s,
                              &s->progress_call);
        if (rc != 0)
            s->progress_call = NULL;
    }
}

/* What each state's statement is called in a failure message. */
static const char *state_what(sf_state_t st)
{
    switch (st) {
    case SF_STEP:
        return "a step";
    case SF_FILL:
        return "filling the forms";
    case SF_LOCK:
        return "taking the index lock";
    case SF_DROP:
        return "dropping a failed index build";
    case SF_CREATE:
        return "building the index";
    case SF_WORDS_FILL:
        return "filling the vocabulary";
    case SF_WORDS_MERGE:
        return "merging new words into the vocabulary";
    default:
        return "releasing the index lock";
    }
}

/* The step's answer: the next state, or done. Returns false when done. */
static bool on_step(search_forms_t *s, json_t *r)
{
    const char *state = json_string_value(json_object_get(r, "state"));
    const char *langs = json_string_value(json_object_get(r, "languages"));
    snprintf(s->resolved, sizeof s->resolved, "%s", langs ? langs : "");
    s->failing = false;
    if (state && strcmp(state, "fill") == 0) {
        s->rows_filled = json_integer_value(json_object_get(r, "rows_filled"));
        log_info(SF_TAG, "word forms (%s): filling the forms of the stored messages%s", s->resolved,
                 s->rows_filled ? " (going on)" : "");
        s->state = SF_FILL;
        uv_timer_start(&s->progress, progress_cb, SEARCH_FORMS_PROGRESS_MS,
                       SEARCH_FORMS_PROGRESS_MS);
        return true;
    }
    if (state && strcmp(state, "index") == 0) {
        const char *create = json_string_value(json_object_get(r, "create"));
        const char *drop = json_string_value(json_object_get(r, "drop_invalid"));
        const char *index = json_string_value(json_object_get(r, "index"));
        snprintf(s->create_sql, sizeof s->create_sql, "%s", create ? create : "");
        snprintf(s->drop_sql, sizeof s->drop_sql, "%s", drop ? drop : "");
        snprintf(s->index_name, sizeof s->index_name, "%s", index ? index : "messages.forms");
        s->state = SF_LOCK;
        return true;
    }
    uint64_t ms = uv_now(s->loop) - s->started_ms;
    if (s->resolved[0])
        log_info(SF_TAG, "word forms (%s) in use (%llu.%llu s)", s->resolved,
                 (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000 / 100));
    else
        log_info(SF_TAG, "word forms off: the search matches words as written");
    return false;
}

static void on_words_fill(search_forms_t *s, json_t *r)
{
    s->rows_filled = json_integer_value(json_object_get(r, "rows_filled"));
    s->rows_estimate = json_integer_value(json_object_get(r, "rows_estimate"));
    if (json_is_true(json_object_get(r, "finished"))) {
        uv_timer_stop(&s->progress);
        log_info(SF_TAG, "vocabulary complete (%lld rows read): fuzzy search uses it",
                 s->rows_filled);
        s->state = SF_WORDS_MERGE;
    }
}

/* A merge's answer: the rows it took; a full batch means more wait. */
static void on_words_merge(search_forms_t *s, const char *value)
{
    long long n = value ? strtoll(value, NULL, 10) : 0;
    if (n > 0)
        log_debug(SF_TAG, "vocabulary: %lld new words merged", n);
    if (n < SEARCH_WORDS_MERGE_BATCH) {
        s->state = SF_WORDS_SLEEP;
        uv_timer_start(&s->retry, retry_cb, SEARCH_WORDS_MERGE_MS, 0);
    }
}

static void on_fill(search_forms_t *s, json_t *r)
{
    s->rows_filled = json_integer_value(json_object_get(r, "rows_filled"));
    s->rows_estimate = json_integer_value(json_object_get(r, "rows_estimate"));
    if (json_is_true(json_object_get(r, "finished"))) {
        uv_timer_stop(&s->progress);
        log_info(SF_TAG, "word forms (%s): %lld rows filled", s->resolved, s->rows_filled);
        s->state = SF_STEP;
    }
}

/* Every statement's callback: records the answer and sends the next. */
static void call_done(void *data, int status, const char *value, const char *sqlstate,
                      const char *error)
{
    search_forms_t *s = data;
    s->call = NULL;
    if (s->state == SF_STOPPED)
        return;
    if (status != 0 && s->state == SF_STEP && strcmp(sqlstate, "22023") == 0) {
        snprintf(s->error, sizeof s->error, "%s", error ? error : "bad search_languages");
        shut(s, SF_DONE);
        s->cb(s, UV_EINVAL);
        return;
    }
    if (status != 0) {
        /* The step that changes the list met the writers of messages
         * (lock_not_available after its wait) or lost a deadlock to one. */
        bool busy = s->state == SF_STEP &&
                    (strcmp(sqlstate, "55P03") == 0 || strcmp(sqlstate, "40P01") == 0) &&
                    ++s->busy_tries <= SEARCH_FORMS_BUSY_TRIES;
        fail(s, state_what(s->state), error, busy);
        return;
    }
    s->busy_tries = 0;
    json_t *r = json_loads(value ? value : "", 0, NULL);
    if (r == NULL && (s->state == SF_STEP || s->state == SF_FILL || s->state == SF_WORDS_FILL)) {
        fail(s, state_what(s->state), "an answer that is not JSON", false);
        return;
    }
    switch (s->state) {
    case SF_STEP:
        if (!on_step(s, r)) {
            /* The forms are in use: said once; the vocabulary goes on. */
            s->state = SF_WORDS_FILL;
            uv_timer_start(&s->progress, progress_cb, SEARCH_FORMS_PROGRESS_MS,
                           SEARCH_FORMS_PROGRESS_MS);
            if (!s->ready_said) {
                s->ready_said = true;
                json_decref(r);
                s->cb(s, 0);
                if (s->state == SF_STOPPED)
                    return;
                run(s);
                return;
            }
        }
        break;
    case SF_FILL:
        on_fill(s, r);
        break;
    case SF_WORDS_FILL:
        on_words_fill(s, r);
        break;
    case SF_WORDS_MERGE:
        on_words_merge(s, value);
        if (s->state == SF_WORDS_SLEEP) {
            json_decref(r);
            return;
        }
        break;
    case SF_LOCK:
        if (value == NULL || strcmp(value, "t") != 0) {
            log_info(SF_TAG,
                     "word forms (%s): another daemon builds the index; checking again "
                     "in %d s",
                     s->resolved, SEARCH_FORMS_RETRY_MS / 1000);
            json_decref(r);
            s->state = SF_WAIT;
            uv_timer_start(&s->retry, retry_cb, SEARCH_FORMS_RETRY_MS, 0);
            return;
        }
        s->state = s->drop_sql[0] ? SF_DROP : SF_CREATE;
        break;
    case SF_DROP:
        s->state = SF_CREATE;
        break;
    case SF_CREATE:
        uv_timer_stop(&s->progress);
        log_info(SF_TAG, "word forms (%s): index of %s built", s->resolved, s->index_name);
        s->state = SF_UNLOCK;
        break;
    default:
        s->state = SF_STEP;
        break;
    }
    json_decref(r);
    run(s);
}

/* Sends the statement of the current state. */
static void run(search_forms_t *s)
{
    int rc = 0;
    switch (s->state) {
    case SF_STEP: {
        const char *p[] = {s->languages};
        rc = pg_pool_call(s->pool, NULL, "SELECT parley_search_forms_step($1::text)", 1, p,
                          call_done, s, &s->call);
        break;
    }
    case SF_FILL: {
        const char *p[] = {s->resolved, s->fill_batch};
        rc = pg_pool_call(s->pool, NULL, "SELECT parley_search_forms_fill($1::text, $2::integer)",
                          2, p, call_done, s, &s->call);
        break;
    }
    case SF_LOCK: {
        const char *p[] = {SEARCH_FORMS_LOCK_KEY};
        rc = pg_pool_call(s->pool, NULL, "SELECT pg_try_advisory_lock(hashtext($1::text))", 1, p,
                          call_done, s, &s->call);
        break;
    }
    case SF_DROP:
        /* Built by parley_search_forms_step from constant names. */
        rc = pg_pool_call(s->pool, NULL, s->drop_sql, 0, NULL, call_done, s, &s->call);
        break;
    case SF_CREATE:
        log_info(SF_TAG, "word forms (%s): building the index of %s", s->resolved, s->index_name);
        uv_timer_start(&s->progress, progress_cb, SEARCH_FORMS_PROGRESS_MS,
                       SEARCH_FORMS_PROGRESS_MS);
        rc = pg_pool_call(s->pool, NULL, s->create_sql, 0, NULL, call_done, s, &s->call);
        break;
    case SF_UNLOCK: {
        const char *p[] = {SEARCH_FORMS_LOCK_KEY};
        rc = pg_pool_call(s->pool, NULL, "SELECT pg_advisory_unlock(hashtext($1::text))", 1, p,
                          call_done, s, &s->call);
        break;
    }
    case SF_WORDS_FILL: {
        const char *p[] = {s->fill_batch};
        rc = pg_pool_call(s->pool, NULL, "SELECT parley_search_words_fill($1::integer)", 1, p,
                          call_done, s, &s->call);
        break;
    }
    case SF_WORDS_MERGE: {
        char batch[16];
        snprintf(batch, sizeof batch, "%d", SEARCH_WORDS_MERGE_BATCH);
        const char *p[] = {batch};
        rc = pg_pool_call(s->pool, NULL, "SELECT parley_search_words_merge($1::integer)", 1, p,
                          call_done, s, &s->call);
        break;
    }
    default:
        return;
    }
    if (rc != 0) {
        s->call = NULL;
        fail(s, "queueing a statement", uv_strerror(rc), false);
    }
}

int search_forms_start(uv_loop_t *loop, const pg_conninfo_t *conninfo, pg_pool_t *rw,
                       const char *languages, int fill_batch, uint32_t connect_timeout_ms,
                       search_forms_cb cb, void *data, search_forms_t **out, char *err,
                       size_t errcap)
{
    search_forms_t *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    if (strlen(languages) >= sizeof s->languages) {
        snprintf(err, errcap, "search_languages is too long");
        free(s);
        return UV_EINVAL;
    }
    snprintf(s->languages, sizeof s->languages, "%s", languages);
    snprintf(s->resolved, sizeof s->resolved, "%s", languages);
    snprintf(s->fill_batch, sizeof s->fill_batch, "%d", fill_batch);
    s->loop = loop;
    s->rw = rw;
    s->cb = cb;
    s->data = data;
    pg_pool_config_t pc = {
        .name = "search",
        .size = 1,
        .queue_max = 4,
        .query_timeout_ms = SEARCH_FORMS_BUILD_TIMEOUT_MS,
        .connect_timeout_ms = connect_timeout_ms,
    };
    int rc = pg_pool_new(loop, &pc, conninfo, &s->pool, err, errcap);
    if (rc != 0) {
        free(s);
        return rc;
    }
    pg_pool_set_data(s->pool, s);
    uv_timer_init(loop, &s->retry);
    uv_timer_init(loop, &s->progress);
    s->retry.data = s->progress.data = s;
    s->handles_open = 2;
    s->started_ms = uv_now(loop);
    s->state = SF_STEP;
    run(s);
    *out = s;
    return 0;
}

void search_forms_fail_fast(search_forms_t *s)
{
    s->fail_fast = true;
}

void search_forms_stop(search_forms_t *s)
{
    if (s == NULL || s->state == SF_STOPPED)
        return;
    if (s->call)
        pg_call_cancel(s->call);
    shut(s, SF_STOPPED);
}

bool search_forms_idle(const search_forms_t *s)
{
    return s->handles_open == 0 && s->pool == NULL && s->call == NULL && s->progress_call == NULL;
}

void search_forms_free(search_forms_t *s)
{
    free(s);
}

const char *search_forms_error(const search_forms_t *s)
{
    return s->error;
}

void *search_forms_data(const search_forms_t *s)
{
    return s->data;
}
