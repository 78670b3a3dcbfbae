/* search: message search through parley_search (see search.h). */
#include "archive/search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

#define NPARAMS 12

struct archive_op_s {
    pg_query_t q;
    pg_stmt_t stmt;
    const char *params[NPARAMS];
    char num[5][24];
    char *chats; /* "{1,2,3}" */
    archive_json_cb cb;
    void *data;
};

static const char *const kinds[] = {NULL,     "links",     "media", "photos",
                                    "videos", "documents", "files"};

static void op_done(pg_query_t *q, int status)
{
    archive_op_t *op = q->data;
    const char *json = NULL, *error = NULL;
    if (status == 0 && q->results[0] && PQntuples(q->results[0]) == 1) {
        json = PQgetvalue(q->results[0], 0, 0);
    } else {
        if (status == 0)
            status = UV_EIO;
        /* Invalid regular expression (2201B), bad datetime (22007, 22008):
         * the caller's argument. */
        if (strcmp(q->sqlstate, "2201B") == 0 || strncmp(q->sqlstate, "2200", 4) == 0)
            status = UV_EINVAL;
        error = q->error[0] ? q->error : uv_strerror(status);
    }
    op->cb(op->data, status, json, error);
    pg_query_release(q);
    free(op->chats);
    free(op);
}

int archive_search(pg_pool_t *pool, const archive_search_req_t *req, archive_json_cb cb, void *data,
                   archive_op_t **out)
{
    if (req->limit < 1 || req->limit > ARCHIVE_SEARCH_MAX_LIMIT || req->offset < 0 ||
        req->nchats < 0 || req->nchats > ARCHIVE_SEARCH_MAX_CHATS ||
        (unsigned)req->kind >= sizeof kinds / sizeof kinds[0])
        return UV_EINVAL;
    archive_op_t *op = calloc(1, sizeof *op);
    if (op == NULL)
        return UV_ENOMEM;
    if (req->chat_ids != NULL) {
        buf_t b;
        buf_init(&b, 64u * 1024);
        int rc = buf_append_str(&b, "{");
        for (int i = 0; rc == 0 && i < req->nchats; i++)
            rc = buf_printf(&b, "%s%lld", i ? "," : "", (long long)req->chat_ids[i]);
        if (rc == 0)
            rc = buf_append_str(&b, "}");
        size_t len;
        op->chats = rc == 0 ? buf_steal(&b, &len) : NULL;
        buf_free(&b);
        if (op->chats == NULL) {
            free(op);
            return UV_ENOMEM;
        }
    }
    snprintf(op->num[0], sizeof op->num[0], "%lld", (long long)req->topic_id);
    snprintf(op->num[1], sizeof op->num[1], "%lld", (long long)req->sender_id);
    snprintf(op->num[2], sizeof op->num[2], "%d", req->limit);
    snprintf(op->num[3], sizeof op->num[3], "%d", req->offset);
    const char **p = op->params;
    p[0] = req->query && req->query[0] ? req->query : NULL;
    p[1] = req->regex && req->regex[0] ? req->regex : NULL;
    p[2] = req->fuzzy ? "true" : "false";
    p[3] = op->chats;
    p[4] = req->has_topic ? op->num[0] : NULL;
    p[5] = req->has_sender ? op->num[1] : NULL;
    p[6] = req->from_date;
    p[7] = req->to_date;
    p[8] = kinds[req->kind];
    p[9] = req->order_by_rank ? "rank" : "time";
    p[10] = op->num[2];
    p[11] = op->num[3];
    op->stmt.sql = "SELECT parley_search($1::text, $2::text, $3::boolean, $4::bigint[], "
                   "$5::bigint, $6::bigint, $7::timestamptz, $8::timestamptz, $9::text, $10::text, "
                   "$11::integer, $12::integer)::text";
    op->stmt.name = "parley_search";
    op->stmt.nparams = NPARAMS;
    op->stmt.params = op->params;
    op->q.stmts = &op->stmt;
    op->q.nstmts = 1;
    op->q.cb = op_done;
    op->q.data = op;
    op->cb = cb;
    op->data = data;
    int rc = pg_pool_submit(pool, &op->q);
    if (rc != 0) {
        free(op->chats);
        free(op);
        return rc;
    }
    if (out)
        *out = op;
    return 0;
}

void archive_cancel(archive_op_t *op)
{
    pg_query_cancel(&op->q);
}
