/* archive: generic JSON calls for the toolsets (see archive.h). */
#include "archive/archive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/pool.h"

struct archive_s {
    pg_pool_t *rw;
    pg_pool_t *ro;
    bool ro_may_lag; /* reads tell a replica's lag */
    uint32_t regex_timeout_ms;
};

struct archive_call_s {
    pg_call_t *pc;
    bool regex; /* under the regex time limit */
    archive_call_cb cb;
    void *data;
};

int archive_new(pg_pool_t *rw, pg_pool_t *ro, bool ro_may_lag, archive_t **out)
{
    archive_t *ar = calloc(1, sizeof *ar);
    if (ar == NULL)
        return UV_ENOMEM;
    ar->rw = rw;
    ar->ro = ro ? ro : rw;
    ar->ro_may_lag = ro_may_lag && ro != NULL;
    ar->regex_timeout_ms = ARCHIVE_REGEX_TIMEOUT_MS;
    *out = ar;
    return 0;
}

void archive_free(archive_t *ar)
{
    free(ar);
}

void archive_set_regex_timeout(archive_t *ar, uint32_t ms)
{
    if (ms > 0)
        ar->regex_timeout_ms = ms;
}

/* The pool's share key of a principal: FNV-1a of its text (a digest
 * already; this only folds it to the pool's opaque key). */
static uint64_t share_of(const char *principal)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)(principal ? principal : ""); *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h;
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

static void call_done(void *data, int status, const char *value, const char *sqlstate,
                      const char *error)
{
    archive_call_t *op = data;
    if (status == 0 && value != NULL) {
        op->cb(op->data, 0, value, ARCHIVE_ERR_NONE, NULL);
    } else if (status == UV_ETIMEDOUT && op->regex && pg_call_ran_out(op->pc)) {
        op->cb(op->data, status, NULL, ARCHIVE_ERR_TOO_SLOW, error);
    } else {
        if (status == 0)
            status = UV_EIO; /* the function answered NULL: an unknown record */
        op->cb(op->data, status, NULL, classify(sqlstate, status),
               error && error[0] ? error : uv_strerror(status));
    }
    free(op);
}

int archive_call(archive_t *ar, archive_mode_t mode, const char *fn, const char *args_json,
                 const char *ctx_json, archive_call_cb cb, void *data, archive_call_t **out)
{
    return archive_call_opts(ar, mode, NULL, fn, args_json, ctx_json, cb, data, out);
}

int archive_call_opts(archive_t *ar, archive_mode_t mode, const archive_call_opts_t *opts,
                      const char *fn, const char *args_json, const char *ctx_json,
                      archive_call_cb cb, void *data, archive_call_t **out)
{
    if (!archive_fn_valid(fn))
        return UV_EINVAL;
    archive_call_t *op = calloc(1, sizeof *op);
    if (op == NULL)
        return UV_ENOMEM;
    op->cb = cb;
    op->data = data;
    op->regex = opts != NULL && opts->regex;
    /* fn is an identifier from a static table (checked above): the only
     * text that is not a bind parameter. */
    char sql[ARCHIVE_FN_MAX + 512];
    if (mode != ARCHIVE_WRITE && ar->ro_may_lag)
        snprintf(sql, sizeof sql,
                 "SELECT (CASE WHEN jsonb_typeof(r) = 'object' AND pg_is_in_recovery() THEN r || "
                 "jsonb_build_object('replica', jsonb_build_object('lagMs', (extract(epoch FROM "
                 "now() - pg_last_xact_replay_timestamp()) * 1000)::bigint, 'replayedAt', "
                 "pg_last_xact_replay_timestamp())) ELSE r END)::text "
                 "FROM (SELECT %s($1::jsonb, $2::jsonb) AS r) s",
                 fn);
    else
        snprintf(sql, sizeof sql, "SELECT %s($1::jsonb, $2::jsonb)::text", fn);
    const char *params[2] = {args_json ? args_json : "{}", ctx_json ? ctx_json : "{}"};
    pg_call_opts_t po = {
        .limited = mode == ARCHIVE_SEARCH,
        .share = share_of(opts ? opts->principal : NULL),
        .run_timeout_ms = op->regex ? ar->regex_timeout_ms : 0,
    };
    int rc = pg_pool_call_opts(mode == ARCHIVE_WRITE ? ar->rw : ar->ro, &po, fn, sql, 2, params,
                               call_done, op, &op->pc);
    if (rc != 0) {
        free(op);
        return rc;
    }
    if (out)
        *out = op;
    return 0;
}

void archive_call_cancel(archive_call_t *op)
{
    pg_call_cancel(op->pc);
}
