/* tg_user_history: the job class telegram.history, a chat's history
 * backfilled through a user account (see tg_user_internal.h). A job is
 * one chat of one account (syncJobsAdd: depth, minDate) and pages back
 * with getChatHistory, newest first:
 *
 *   from_message_id  the cursor's "from" (0: the newest); TDLib answers
 *                    from that message on, inclusive, and often fewer than
 *                    asked (the first page from the end may hold one)
 *   stop             an empty page (nothing older: the chat's start), the
 *                    depth reached, or a message older than minDate
 *
 * Each page is stored with the job's new cursor {"from", "oldest",
 * "count", "done"} in one statement (parley_tdu_history_page), so a
 * restart, a kill -9 or another daemon taking the job over continues from
 * the last page stored, never from the beginning; storing is idempotent.
 * A FloodWait (429 "retry after N") puts the job back for N seconds
 * (sync_job_wait: syncJobsList shows when it resumes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "upstream/telegram/user/tg_user_internal.h"
#include "util/log.h"

typedef struct hist_s {
    sync_job_t *job;
    tgu_t *u;
    int64_t account_id, chat;
    long depth, count;
    int64_t min_date; /* epoch seconds; 0: none */
    json_int_t from;  /* TDLib id to page from; 0: the newest */
    bool done;
    long stored; /* this run */
} hist_t;

static void hist_page(hist_t *h);

static void hist_end(hist_t *h, sync_outcome_t outcome, const char *error)
{
    /* fetched: counted page by page (parley_tdu_history_page) */
    sync_job_finish(h->job, outcome, error, 0, 0);
    free(h);
}

static void hist_stored(void *data, int status, const char *value, const char *sqlstate,
                        const char *error)
{
    (void)sqlstate;
    hist_t *h = data;
    if (status != 0) {
        hist_end(h, SYNC_RETRY, error ? error : uv_strerror(status));
        return;
    }
    json_error_t je;
    json_t *r = value ? json_loads(value, 0, &je) : NULL;
    bool active = r == NULL || !json_is_false(json_object_get(r, "active"));
    h->stored += (long)json_integer_value(json_object_get(r, "stored"));
    json_decref(r);
    if (!active) { /* canceled, or taken over: the outcome is not ours to record */
        hist_end(h, SYNC_IDLE, NULL);
        return;
    }
    if (h->done)
        hist_end(h, SYNC_IDLE, NULL);
    else
        hist_page(h);
}

static void hist_got(void *data, int status, json_t *reply)
{
    hist_t *h = data;
    if (status == UV_EAGAIN) {
        long wait = tdjson_retry_after(reply);
        char why[160];
        snprintf(why, sizeof why, "Telegram asked to wait %ld s (FloodWait); the job resumes then",
                 wait);
        log_info("telegram", "history of chat %lld: FloodWait, resuming in %ld s",
                 (long long)h->chat, wait);
        sync_job_wait(h->job, wait, why);
        free(h);
        return;
    }
    if (status != 0) {
        char why[300];
        snprintf(why, sizeof why, "getChatHistory: %s",
                 tdjson_error_message(reply, uv_strerror(status)));
        hist_end(h, status == UV_EINVAL || status == UV_ENOENT ? SYNC_ERROR : SYNC_RETRY, why);
        return;
    }
    json_t *msgs = json_object_get(reply, "messages");
    json_t *keep = json_array();
    json_int_t oldest = h->from;
    bool older = false; /* the page held a message before the cursor */
    bool past_min = false;
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m)
    {
        json_int_t id = json_integer_value(json_object_get(m, "id"));
        if (h->from != 0 && id >= h->from)
            continue; /* the cursor's own message (inclusive), or newer */
        older = true;
        if (oldest == 0 || id < oldest)
            oldest = id;
        if (h->min_date && json_integer_value(json_object_get(m, "date")) < h->min_date) {
            past_min = true;
            continue;
        }
        if (h->count + (long)json_array_size(keep) < h->depth)
            json_array_append(keep, m);
    }
    h->count += (long)json_array_size(keep);
    h->from = oldest;
    h->done = !older || past_min || h->count >= h->depth;
    json_t *cursor = json_pack("{s:I, s:I, s:i, s:b}", "from", h->from, "oldest", h->from >> 20,
                               "count", (int)h->count, "done", h->done);
    char *mj = json_dumps(keep, JSON_COMPACT), *cj = json_dumps(cursor, JSON_COMPACT);
    json_decref(keep);
    json_decref(cursor);
    char job[24], acc[24];
    snprintf(job, sizeof job, "%lld",
             (long long)json_integer_value(json_object_get(h->job->row, "id")));
    snprintf(acc, sizeof acc, "%lld", (long long)h->account_id);
    const char *p[] = {job, sync_job_owner(h->job), acc, mj, cj};
    int rc = mj && cj ? pg_pool_call(h->u->rw, NULL,
                                     "SELECT parley_tdu_history_page($1::bigint, $2, $3::bigint, "
                                     "$4::jsonb, $5::jsonb)",
                                     5, p, hist_stored, h, NULL)
                      : UV_ENOMEM;
    free(mj);
    free(cj);
    if (rc != 0)
        hist_end(h, SYNC_RETRY, "database busy");
}

static void hist_page(hist_t *h)
{
    tgu_account_t *acc = tgu__by_id(h->u, h->account_id);
    long want = h->depth - h->count;
    json_t *rq = json_pack(
        "{s:s, s:I, s:I, s:i, s:i, s:b}", "@type", "getChatHistory", "chat_id", (json_int_t)h->chat,
        "from_message_id", h->from, "offset", 0, "limit",
        (int)(want < TGU_HISTORY_PAGE ? want + (h->from != 0) : TGU_HISTORY_PAGE), "only_local", 0);
    int rc = tgu__account_send(acc, rq, hist_got, h);
    if (rc != 0)
        hist_end(h, SYNC_RETRY,
                 rc == UV_ENOTCONN ? "the Telegram account is not connected now" : uv_strerror(rc));
}

void tgu__history_exec(sync_job_t *job, void *ctx)
{
    tgu_t *u = ctx;
    json_t *row = job->row;
    hist_t *h = calloc(1, sizeof *h);
    if (h == NULL) {
        sync_job_finish(job, SYNC_RETRY, "out of memory", 0, 0);
        return;
    }
    json_t *cursor = json_object_get(row, "cursor");
    *h = (hist_t){.job = job,
                  .u = u,
                  .account_id = json_integer_value(json_object_get(row, "account_id")),
                  .chat = json_integer_value(json_object_get(row, "chat_id")),
                  .depth = json_is_integer(json_object_get(row, "depth"))
                               ? (long)json_integer_value(json_object_get(row, "depth"))
                               : 1000,
                  .min_date = json_integer_value(json_object_get(row, "min_date")),
                  .from = json_integer_value(json_object_get(cursor, "from")),
                  .count = (long)json_integer_value(json_object_get(cursor, "count"))};
    tgu_account_t *acc = tgu__by_id(u, h->account_id);
    if (h->chat == 0) {
        hist_end(h, SYNC_ERROR, "the job names no known chat; add it again with a chat id");
    } else if (acc == NULL) {
        /* Another daemon runs the account (or it is starting): not a failure. */
        sync_job_wait(job, TGU_HISTORY_ELSEWHERE_S,
                      "waiting for the daemon that runs the job's Telegram account");
        free(h);
    } else if (h->count >= h->depth) {
        hist_end(h, SYNC_IDLE, NULL);
    } else {
        hist_page(h);
    }
}
