/* archive: generic JSON calls for the toolsets (see archive.h). */
#include "archive/archive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/pool.h"

struct archive_s {
    pg_pool_t *rw;
    pg_pool_t *ro;
};

struct archive_call_s {
    pg_query_t q;
    pg_stmt_t stmt;
    const char *params[2];
    char *args, *ctx;
    char sql[ARCHIVE_FN_MAX + 64];
    char name[ARCHIVE_FN_MAX + 1];
    archive_call_cb cb;
    void *data;
};

int archive_new(pg_pool_t *rw, pg_pool_t *ro, archive_t **out)
{
    archive_t *ar = calloc(1, sizeof *ar);
    if (ar == NULL)
        return UV_ENOMEM;
    ar->rw = rw;
    ar->ro = ro ? ro : rw;
    *out = ar;
    return 0;
}

void archive_free(archive_t *ar)
{
    free(ar);
}

bool archive_fn_valid(const char *fn)
{
    size_t n = fn ? strlen(fn) : 0;
    if (n == 0 || n > ARCHIVE_FN_MAX || (fn[0] >= '0' && fn[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((fn[i] >= 'a' && fn[i] <= 'z') || (fn[i] >= '0' && fn[i] <= '9') || fn[i] == '_'))
            return false;
    return true;
}

/* SQLSTATE to the error class the model sees. */
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

static void call_free(archive_call_t *op)
{
    free(op->args);
    free(op->ctx);
    free(op);
}

static void call_done(pg_query_t *q, int status)
{
    archive_call_t *op = q->data;
    PGresult *r = q->results[0];
    if (status == 0 && r && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0)) {
        op->cb(op->data, 0, PQgetvalue(r, 0, 0), ARCHIVE_ERR_NONE, NULL);
    } else {
        if (status == 0)
            status = UV_EIO; /* the function answered NULL: an unknown record */
        op->cb(op->data, status, NULL, classify(q->sqlstate, status),
               q->error[0] ? q->error : uv_strerror(status));
    }
    pg_query_release(q);
    call_free(op);
}

int archive_call(archive_t *ar, archive_mode_t mode, const char *fn, const char *args_json,
                 const char *ctx_json, archive_call_cb cb, void *data, archive_call_t **out)
{
    if (!archive_fn_valid(fn))
        return UV_EINVAL;
    archive_call_t *op = calloc(1, sizeof *op);
    if (op == NULL)
        return UV_ENOMEM;
    op->args = strdup(args_json ? args_json : "{}");
    op->ctx = strdup(ctx_json ? ctx_json : "{}");
    if (op->args == NULL || op->ctx == NULL) {
        call_free(op);
        return UV_ENOMEM;
    }
    /* fn is an identifier from a static table (checked above): the only
     * text that is not a bind parameter. */
    snprintf(op->sql, sizeof op->sql, "SELECT %s($1::jsonb, $2::jsonb)::text", fn);
    snprintf(op->name, sizeof op->name, "%s", fn);
    op->params[0] = op->args;
    op->params[1] = op->ctx;
    op->stmt = (pg_stmt_t){.sql = op->sql, .name = op->name, .nparams = 2, .params = op->params};
    op->q.stmts = &op->stmt;
    op->q.nstmts = 1;
    op->q.cb = call_done;
    op->q.data = op;
    op->cb = cb;
    op->data = data;
    int rc = pg_pool_submit(mode == ARCHIVE_WRITE ? ar->rw : ar->ro, &op->q);
    if (rc != 0) {
        call_free(op);
        return rc;
    }
    if (out)
        *out = op;
    return 0;
}

void archive_call_cancel(archive_call_t *op)
{
    pg_query_cancel(&op->q);
}
