/* pool_call: one statement, one value (see pool.h): the statement set-up
 * callers would otherwise write by hand, with copies of everything the
 * query borrows. */
#include <stdlib.h>
#include <string.h>

#include "db/pool.h"

struct pg_call_s {
    pg_query_t q;
    pg_stmt_t stmt;
    pg_call_cb cb;
    void *data;
    char *strings; /* sql, name and the parameters, one block */
    const char *params[];
};

static void call_done(pg_query_t *q, int status)
{
    pg_call_t *c = q->data;
    PGresult *r = q->results[0];
    const char *value = NULL;
    if (status == 0 && r && PQntuples(r) > 0 && PQnfields(r) > 0 && !PQgetisnull(r, 0, 0))
        value = PQgetvalue(r, 0, 0);
    c->cb(c->data, status, value, q->sqlstate, status == 0 ? NULL : q->error);
    pg_query_release(q);
    free(c->strings);
    free(c);
}

int pg_pool_call(pg_pool_t *pool, const char *name, const char *sql, int nparams,
                 const char *const *params, pg_call_cb cb, void *data, pg_call_t **out)
{
    return pg_pool_call_opts(pool, &(pg_call_opts_t){0}, name, sql, nparams, params, cb, data, out);
}

int pg_pool_call_limited(pg_pool_t *pool, const char *name, const char *sql, int nparams,
                         const char *const *params, pg_call_cb cb, void *data, pg_call_t **out)
{
    return pg_pool_call_opts(pool, &(pg_call_opts_t){.limited = true}, name, sql, nparams, params,
                             cb, data, out);
}

int pg_pool_call_timeout(pg_pool_t *pool, uint32_t timeout_ms, const char *name, const char *sql,
                         int nparams, const char *const *params, pg_call_cb cb, void *data,
                         pg_call_t **out)
{
    return pg_pool_call_opts(pool, &(pg_call_opts_t){.timeout_ms = timeout_ms}, name, sql, nparams,
                             params, cb, data, out);
}

int pg_pool_call_opts(pg_pool_t *pool, const pg_call_opts_t *opts, const char *name,
                      const char *sql, int nparams, const char *const *params, pg_call_cb cb,
                      void *data, pg_call_t **out)
{
    if (nparams < 0 || nparams > 65535)
        return UV_EINVAL;
    size_t len = strlen(sql) + 1 + (name ? strlen(name) + 1 : 0);
    for (int i = 0; i < nparams; i++)
        len += params[i] ? strlen(params[i]) + 1 : 0;
    pg_call_t *c = calloc(1, sizeof *c + (size_t)nparams * sizeof c->params[0]);
    char *p = malloc(len);
    if (c == NULL || p == NULL) {
        free(c);
        free(p);
        return UV_ENOMEM;
    }
    c->strings = p;
    size_t n = strlen(sql) + 1;
    memcpy(p, sql, n);
    c->stmt.sql = p;
    p += n;
    if (name) {
        n = strlen(name) + 1;
        memcpy(p, name, n);
        c->stmt.name = p;
        p += n;
    }
    for (int i = 0; i < nparams; i++) {
        if (params[i] == NULL)
            continue;
        n = strlen(params[i]) + 1;
        memcpy(p, params[i], n);
        c->params[i] = p;
        p += n;
    }
    c->stmt.nparams = nparams;
    c->stmt.params = c->params;
    c->q.stmts = &c->stmt;
    c->q.nstmts = 1;
    c->q.cb = call_done;
    c->q.data = c;
    c->q.limited = opts->limited;
    c->q.share = opts->share;
    c->q.timeout_ms = opts->timeout_ms;
    c->q.run_timeout_ms = opts->run_timeout_ms;
    c->cb = cb;
    c->data = data;
    int rc = pg_pool_submit(pool, &c->q);
    if (rc != 0) {
        free(c->strings);
        free(c);
        return rc;
    }
    if (out)
        *out = c;
    return 0;
}

void pg_call_cancel(pg_call_t *c)
{
    pg_query_cancel(&c->q);
}

bool pg_call_ran_out(const pg_call_t *c)
{
    return c->q.ran_out;
}
