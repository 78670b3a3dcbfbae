/* embedded: parleyd's private PostgreSQL cluster, used when no database is
 * configured.
 *
 * Layout under the data directory DIR:
 *   DIR/pg/data            the cluster (initdb into data.tmp, then renamed,
 *                          so a crash during initdb never leaves half a
 *                          cluster behind)
 *   DIR/pg/run             Unix socket directory; no TCP listener
 *   DIR/pg/postgres.log    server log (pg_ctl -l)
 *   DIR/pg/tools.log       output of initdb and pg_ctl
 *   DIR/embedded.lock      flock: serialises start and stop between parleyd
 *                          processes on DIR
 *   DIR/users.lock         flock: held shared by every parleyd using the
 *                          cluster; whoever stops last (gets it exclusive)
 *                          stops the cluster
 *
 * Every step runs off the loop: initdb and pg_ctl through uv_spawn, lock
 * waits through a retry timer. The cluster runs detached (pg_ctl start), so
 * a parleyd killed with SIGKILL leaves it running and the next start reuses
 * it; the lock files of a dead server (postmaster.pid, the socket lock)
 * are removed before a start, and a start that fails while a dead
 * server's processes still exit is retried. As root,
 * PostgreSQL runs as an unprivileged user (pg_user, created with useradd if
 * missing). */
#ifndef PARLEY_DB_EMBEDDED_H
#define PARLEY_DB_EMBEDDED_H

#include <stdbool.h>
#include <uv.h>

#include "db/conninfo.h"

#define PG_EMBEDDED_ERROR_MAX 2048
/* Start attempts before giving up (1 s apart). */
#define PG_EMBEDDED_START_TRIES 5
/* Superuser and database names inside the cluster. */
#define PG_EMBEDDED_USER "parley"
#define PG_EMBEDDED_DB   "parley"

typedef struct pg_embedded_s pg_embedded_t;
typedef void (*pg_embedded_cb)(pg_embedded_t *e, int status);

typedef struct pg_embedded_config_s {
    const char *data_dir;
    const char *bindir;
    const char *run_as; /* used only when running as root */
    int start_timeout_s;
} pg_embedded_config_t;

/* Returns 0 and *out, or UV_EINVAL / UV_ENAMETOOLONG / UV_ENOMEM with err. */
int pg_embedded_new(uv_loop_t *loop, const pg_embedded_config_t *cfg, pg_embedded_t **out,
                    char *err, size_t errcap);

/* Creates the cluster if needed and starts it (or joins a running one).
 * cb(e, 0) when it accepts connections; cb(e, <0) with pg_embedded_error. */
void pg_embedded_start(pg_embedded_t *e, pg_embedded_cb cb);

/* Leaves the cluster: stops it (pg_ctl stop -m fast) unless another parleyd
 * still uses it. cb(e, status) when done. */
void pg_embedded_stop(pg_embedded_t *e, pg_embedded_cb cb);

/* Connection parameters of the running cluster (valid after start). */
const pg_conninfo_t *pg_embedded_conninfo(const pg_embedded_t *e);
const char *pg_embedded_error(const pg_embedded_t *e);
/* True when this process started the server (false: joined a running one). */
__attribute__((warn_unused_result)) bool pg_embedded_started_server(const pg_embedded_t *e);

/* Releases the handles; cb runs when they are closed, then e is freed.
 * Call only when no start or stop is in progress. */
void pg_embedded_close(pg_embedded_t *e, void (*cb)(pg_embedded_t *e));

void *pg_embedded_get_data(const pg_embedded_t *e);
void pg_embedded_set_data(pg_embedded_t *e, void *data);

#endif
