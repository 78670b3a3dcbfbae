/* conninfo: parsed libpq connection descriptions (see conninfo.h). */
#include "db/conninfo.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

int pg_conninfo_parse(pg_conninfo_t *ci, const char *conninfo, char *err, size_t errcap)
{
    memset(ci, 0, sizeof *ci);
    if (conninfo == NULL || conninfo[0] == '\0')
        return 0;
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(conninfo, &perr);
    if (opts == NULL) {
        /* libpq's message never echoes a password back. */
        snprintf(err, errcap, "bad database URL: %s", perr ? perr : "out of memory");
        size_t n = strlen(err);
        while (n > 0 && err[n - 1] == '\n')
            err[--n] = '\0';
        PQfreemem(perr);
        return perr ? UV_EINVAL : UV_ENOMEM;
    }
    int rc = 0;
    for (PQconninfoOption *o = opts; o->keyword && rc == 0; o++)
        if (o->val != NULL)
            rc = pg_conninfo_set(ci, o->keyword, o->val);
    PQconninfoFree(opts);
    if (rc != 0) {
        snprintf(err, errcap, "database URL: too many parameters");
        pg_conninfo_free(ci);
    }
    return rc;
}

const char *pg_conninfo_get(const pg_conninfo_t *ci, const char *key)
{
    for (int i = 0; i < ci->n; i++)
        if (strcmp(ci->keys[i], key) == 0)
            return ci->vals[i];
    return NULL;
}

int pg_conninfo_set(pg_conninfo_t *ci, const char *key, const char *value)
{
    char *v = strdup(value);
    if (v == NULL)
        return UV_ENOMEM;
    for (int i = 0; i < ci->n; i++) {
        if (strcmp(ci->keys[i], key) == 0) {
            free(ci->vals[i]);
            ci->vals[i] = v;
            return 0;
        }
    }
    if (ci->n == PG_CONNINFO_MAX) {
        free(v);
        return UV_E2BIG;
    }
    char *k = strdup(key);
    if (k == NULL) {
        free(v);
        return UV_ENOMEM;
    }
    ci->keys[ci->n] = k;
    ci->vals[ci->n] = v;
    ci->n++;
    ci->keys[ci->n] = NULL;
    ci->vals[ci->n] = NULL;
    return 0;
}

int pg_conninfo_add_option(pg_conninfo_t *ci, const char *option)
{
    const char *old = pg_conninfo_get(ci, "options");
    if (old == NULL || old[0] == '\0')
        return pg_conninfo_set(ci, "options", option);
    size_t n = strlen(old) + strlen(option) + 2;
    char *joined = malloc(n);
    if (joined == NULL)
        return UV_ENOMEM;
    snprintf(joined, n, "%s %s", old, option);
    int rc = pg_conninfo_set(ci, "options", joined);
    free(joined);
    return rc;
}

int pg_conninfo_copy(pg_conninfo_t *dst, const pg_conninfo_t *src)
{
    memset(dst, 0, sizeof *dst);
    for (int i = 0; i < src->n; i++) {
        int rc = pg_conninfo_set(dst, src->keys[i], src->vals[i]);
        if (rc != 0) {
            pg_conninfo_free(dst);
            return rc;
        }
    }
    return 0;
}

void pg_conninfo_free(pg_conninfo_t *ci)
{
    for (int i = 0; i < ci->n; i++) {
        free(ci->keys[i]);
        free(ci->vals[i]);
    }
    memset(ci, 0, sizeof *ci);
}

void pg_conninfo_describe(const pg_conninfo_t *ci, char *buf, size_t cap)
{
    static const char *const shown[] = {"host", "hostaddr", "port", "dbname", "user"};
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        const char *v = pg_conninfo_get(ci, shown[i]);
        if (v == NULL || len >= cap)
            continue;
        int n = snprintf(buf + len, cap - len, "%s%s=%s", len ? " " : "", shown[i], v);
        if (n > 0)
            len += (size_t)n;
    }
    if (len == 0)
        snprintf(buf, cap, "(libpq defaults from PG* variables)");
}
