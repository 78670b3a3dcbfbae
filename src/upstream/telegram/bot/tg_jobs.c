/* tg_jobs: sync_jobs executors for the Bot API connector (see tg_jobs.h). */
#include "upstream/telegram/bot/tg_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct meta_s {
    sync_job_t *job;
    tg_jobs_ctx_t *ctx;
    int64_t chat_id;
} meta_t;

void tg_jobs_sync(sync_job_t *job, void *ctx)
{
    (void)ctx;
    sync_job_finish(job, SYNC_IDLE,
                    "a bot account cannot read chat history; new messages arrive in real time "
                    "while realtime sync is on",
                    0, 0);
}

static void meta_stored(void *data, int status, const char *value, const char *sqlstate,
                        const char *error)
{
    meta_t *m = data;
    (void)value;
    (void)sqlstate;
    if (status != 0)
        sync_job_finish(m->job, SYNC_RETRY, error, 0, 0);
    else
        sync_job_finish(m->job, SYNC_IDLE, NULL, 1, m->chat_id);
    free(m);
}

static void meta_fetched(void *data, int status, const char *json, const char *error)
{
    meta_t *m = data;
    if (status != 0) {
        sync_job_finish(m->job, SYNC_RETRY, error, 0, 0);
        free(m);
        return;
    }
    json_error_t je;
    json_t *c = json_loads(json, 0, &je);
    m->chat_id = json_integer_value(json_object_get(c, "id"));
    json_decref(c);
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)m->chat_id);
    const char *params[2] = {id, json};
    if (pg_pool_call(m->ctx->rw, NULL,
                     "SELECT parley_bot_chat_metadata($1::bigint, $2::jsonb, NULL)", 2, params,
                     meta_stored, m, NULL) != 0) {
        sync_job_finish(m->job, SYNC_RETRY, "database busy", 0, 0);
        free(m);
    }
}

void tg_jobs_metadata(sync_job_t *job, void *ctx)
{
    tg_jobs_ctx_t *t = ctx;
    meta_t *m = calloc(1, sizeof *m);
    if (m == NULL) {
        sync_job_finish(job, SYNC_RETRY, "out of memory", 0, 0);
        return;
    }
    m->job = job;
    m->ctx = t;
    json_t *row = job->row;
    json_t *chat = json_object_get(row, "chat_id");
    json_t *body;
    if (json_is_integer(chat))
        body = json_pack("{s:O}", "chat_id", chat);
    else
        body = json_pack("{s:s}", "chat_id",
                         json_string_value(json_object_get(row, "channel"))
                             ? json_string_value(json_object_get(row, "channel"))
                             : "");
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    int rc = tg_bot_call(t->bot, "getChat", text ? text : "{}", meta_fetched, m);
    free(text);
    if (rc != 0) {
        sync_job_finish(job, SYNC_RETRY, uv_strerror(rc), 0, 0);
        free(m);
    }
}
