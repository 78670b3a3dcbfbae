/* conninfo: a parsed libpq connection description as keyword/value arrays,
 * ready for PQconnectStartParams, with the edits the pool makes (extra
 * server options, resolved host addresses) and a password-free description
 * for logs. */
#ifndef PARLEY_DB_CONNINFO_H
#define PARLEY_DB_CONNINFO_H

#include <stdbool.h>
#include <stddef.h>

#define PG_CONNINFO_MAX 48

typedef struct pg_conninfo_s {
    int n;
    /* NULL-terminated, owned (malloc) strings, PQconnectStartParams layout. */
    char *keys[PG_CONNINFO_MAX + 1];
    char *vals[PG_CONNINFO_MAX + 1];
} pg_conninfo_t;

/* Parses a URL or "key=value" conninfo ("" gives an empty set: libpq then
 * uses its PG* environment variables). Returns 0, UV_EINVAL with err set,
 * or UV_ENOMEM. */
int pg_conninfo_parse(pg_conninfo_t *ci, const char *conninfo, char *err, size_t errcap);

/* The value of key, or NULL when unset. */
const char *pg_conninfo_get(const pg_conninfo_t *ci, const char *key);

/* Sets key (replacing any value). Returns 0, UV_ENOMEM or UV_E2BIG. */
int pg_conninfo_set(pg_conninfo_t *ci, const char *key, const char *value);

/* Appends a server option ("-c name=value") to "options". */
int pg_conninfo_add_option(pg_conninfo_t *ci, const char *option);

int pg_conninfo_copy(pg_conninfo_t *dst, const pg_conninfo_t *src);
void pg_conninfo_free(pg_conninfo_t *ci);

/* "host=... port=... dbname=... user=..." without any secret. */
void pg_conninfo_describe(const pg_conninfo_t *ci, char *buf, size_t cap);

#endif
