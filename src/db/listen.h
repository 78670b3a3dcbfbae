/* listen: a dedicated connection that LISTENs on channels and hands each
 * NOTIFY to a callback, re-issuing LISTEN after every reconnect (so a
 * database restart only loses notifications sent while it was down). It is
 * a one-connection pg_pool whose setup statements are the LISTENs. */
#ifndef PARLEY_DB_LISTEN_H
#define PARLEY_DB_LISTEN_H

#include "db/pool.h"

#define PG_LISTEN_MAX_CHANNELS 16

typedef struct pg_listen_s pg_listen_t;
typedef void (*pg_listen_cb)(pg_listen_t *l, const char *channel, const char *payload);
typedef void (*pg_listen_close_cb)(pg_listen_t *l);

/* channels: NULL-terminated names matching [a-z_][a-z0-9_]{0,62}. Returns 0
 * and *out, or UV_EINVAL (bad channel name) / UV_ENOMEM with err set. */
int pg_listen_start(uv_loop_t *loop, const pg_conninfo_t *conninfo, const char *const *channels,
                    uint32_t connect_timeout_ms, pg_listen_cb cb, void *data, pg_listen_t **out,
                    char *err, size_t errcap);

void *pg_listen_data(const pg_listen_t *l);

/* The underlying one-connection pool (for NOTIFY through the same session
 * in tests, and for stats). */
pg_pool_t *pg_listen_pool(pg_listen_t *l);

/* Closes the connection; cb runs once it is closed, then l is freed. */
void pg_listen_close(pg_listen_t *l, pg_listen_close_cb cb);

#endif
