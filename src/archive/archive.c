/* archive: generic JSON calls for the toolsets (see archive.h). */
#include "archive/archive.h"

#include <stdlib.h>
#include <string.h>

struct archive_tool_op_s {
    pg_query_t q;
    pg_stmt_t stmt;
    const char *params[3];
    char *args, *ctx, *tool;
    archive_tool_cb cb;
    void *data;
    bool is_search;
};

static archive_err_t classify(const char *sqlstate, int status)
{
    if (strcmp(sqlstate, "PT400") == 0 || strncmp(sqlstate, "22", 2) == 0)
        return ARCHIVE_ERR_ARGUMENT;
    if (strcmp(sqlstate, "PT501") == 0)
        return ARCHIVE_ERR_CONNECTOR;
    if (status == UV_ETIMEDOUT || status == UV_EBUSY || status == UV_ECONNRESET ||
        strncmp(sqlstate, "08", 2) == 0 || strcmp(sqlstate, "57014") == 0)
        return ARCHIVE_ERR_BUSY;
    return ARCHIVE_ERR_INTERNAL;
}

static void tool_done(pg_query_t *q, int status)
{
    archive_tool_op_t *op = q->data;
    if (status == 0 && q->results[0] && PQntuples(q->results[0]) == 1 &&
        !PQgetisnull(q->results[0], 0, 0)) {
        op->cb(op->data, 0, PQgetvalue(q->results[0], 0, 0), ARCHIVE_ERR_NONE, NULL);
    } else {
        if (status == 0)
            status = UV_EIO;
        op->cb(op->data, status, NULL, classify(q->sqlstate, status),
               q->error[0] ? q->error : uv_strerror(status));
    }
    pg_query_release(q);
    free(op->args);
    free(op->ctx);
    free(op->tool);
    free(op);
}

int archive_tool(archive_t *ar, bool write, const char *tool, const char *args_json,
                 const char *ctx_json, archive_tool_cb cb, void *data, archive_tool_op_t **out)
{
    archive_tool_op_t *op = calloc(1, sizeof *op);
    if (op == NULL)
        return UV_ENOMEM;
    op->tool = strdup(tool);
    op->args = strdup(args_json ? args_json : "{}");
    op->ctx = strdup(ctx_json ? ctx_json : "{}");
    if (op->tool == NULL || op->args == NULL || op->ctx == NULL) {
        free(op->tool);
        free(op->args);
        free(op->ctx);
        free(op);
        return UV_ENOMEM;
    }
    op->params[0] = op->tool;
    op->params[1] = op->args;
    op->params[2] = op->ctx;
    op->stmt.sql = "SELECT parley_tg_tool($1::text, $2::jsonb, $3::jsonb)::text";
    op->stmt.name = "parley_tg_tool";
    op->stmt.nparams = 3;
    op->stmt.params = op->params;
    op->q.stmts = &op->stmt;
    op->q.nstmts = 1;
    op->q.cb = tool_done;
    op->q.data = op;
    op->cb = cb;
    op->data = data;
    int rc = pg_pool_submit(write ? ar->rw : ar->ro, &op->q);
    if (rc != 0) {
        free(op->tool);
        free(op->args);
        free(op->ctx);
        free(op);
        return rc;
    }
    if (out)
        *out = op;
    return 0;
}

void archive_tool_cancel(archive_tool_op_t *op)
{
    pg_query_cancel(&op->q);
}
