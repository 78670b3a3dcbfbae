/* lock: a role only one daemon may hold at a time (the Telegram poller of
 * a bot), held as a PostgreSQL session-level advisory lock on a dedicated
 * connection. The lock is the fence: when its holder dies (kill -9, a
 * crash, a lost host) its connection closes and PostgreSQL releases the
 * lock at once, so a restarted or standby daemon takes it within
 * PG_LOCK_CHECK_MS, not after a lease ran out.
 *
 * The connection is a one-connection pool. While the lock is not held it
 * is asked for (pg_try_advisory_lock) every PG_LOCK_CHECK_MS; while held,
 * the connection is checked as often: a failed check or a reconnect means
 * the session, and so the lock, is gone (the callback says so and asking
 * starts again). TCP keepalives on the connection bound how long the
 * server keeps a vanished holder's session (PG_LOCK_KEEPALIVE_* below:
 * about 20 s). */
#ifndef PARLEY_DB_LOCK_H
#define PARLEY_DB_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "db/conninfo.h"
#include "db/pool.h"

#define PG_LOCK_CHECK_MS 1000
/* keepalives_idle, _interval, _count (seconds, probes): a holder whose
 * host vanished is dropped by the server after about idle + interval *
 * count = 20 s. */
#define PG_LOCK_KEEPALIVE_IDLE_S     8
#define PG_LOCK_KEEPALIVE_INTERVAL_S 3
#define PG_LOCK_KEEPALIVE_COUNT      4

typedef struct pg_lock_s pg_lock_t;

/* held: the lock was taken (true) or lost (false); also called once with
 * false when the first answer is that another session holds it. */
typedef void (*pg_lock_cb)(pg_lock_t *l, bool held);

/* Starts asking for the lock named key (any text: "telegram_bot:42"; the
 * lock is hashtextextended(key, 0)). Returns 0 and *out, or a negative
 * code with err. */
int pg_lock_start(uv_loop_t *loop, const pg_conninfo_t *conninfo, const char *key,
                  uint32_t connect_timeout_ms, pg_lock_cb cb, void *data, pg_lock_t **out,
                  char *err, size_t errcap);

__attribute__((warn_unused_result)) bool pg_lock_held(const pg_lock_t *l);
void *pg_lock_data(const pg_lock_t *l);

/* Gives the lock up (closing its connection releases it); cb(data) once
 * closed, then l is freed. No callback of pg_lock_start runs after this. */
void pg_lock_close(pg_lock_t *l, void (*cb)(void *data), void *data);

#endif
