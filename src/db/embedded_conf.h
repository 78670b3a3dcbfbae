/* embedded_conf: the settings parleyd gives its embedded PostgreSQL
 * cluster (DATA_DIR/pg/data/parley.conf, included from postgresql.conf and
 * written again at every start). Durability stays as PostgreSQL ships it
 * (fsync, synchronous_commit, full_page_writes on, written out so nobody
 * has to guess); memory is sized from the machine; WAL and checkpoints are
 * spaced for bulk imports; the planner is told storage is solid-state and
 * JIT is off; replication connections over the socket are allowed for
 * `parleyd backup` (pg_basebackup). docs/deployment.md gives the reason for each setting. */
#ifndef PARLEY_DB_EMBEDDED_CONF_H
#define PARLEY_DB_EMBEDDED_CONF_H

#include <stddef.h>
#include <stdint.h>

/* Memory settings as shares of the machine's memory (or of the cgroup's
 * limit when lower), each clamped; values in MiB. */
#define EMB_SHARED_BUFFERS_SHARE 8 /* RAM / 8 */
#define EMB_SHARED_BUFFERS_MIN   128
#define EMB_SHARED_BUFFERS_MAX   4096
#define EMB_CACHE_SHARE          2 /* effective_cache_size: RAM / 2 */
#define EMB_MAINT_MEM_SHARE      32
#define EMB_MAINT_MEM_MIN        64
#define EMB_MAINT_MEM_MAX        1024
#define EMB_WORK_MEM_SHARE       1024
#define EMB_WORK_MEM_MIN         4
#define EMB_WORK_MEM_MAX         32
/* Connections the cluster accepts (pools of several daemons and tools). */
#define EMB_MAX_CONNECTIONS 200
/* WAL senders: `parleyd backup` runs pg_basebackup, which takes two (the
 * base copy and the WAL streamed beside it); room for two at once. */
#define EMB_MAX_WAL_SENDERS 4

/* The machine's memory as parleyd sizes the cluster by: the cgroup's limit
 * when there is one below the physical memory, else the physical memory.
 * Bytes; never 0 (falls back to 1 GiB when libuv cannot tell). */
uint64_t pg_embedded_conf_memory(void);

/* Writes parley.conf's text for a cluster whose Unix socket lives in
 * sock_dir (no quote or backslash in it: the caller checks), sized for
 * mem_bytes of memory, into buf. Returns the length written (< cap), or
 * UV_ENOBUFS when it does not fit. */
int pg_embedded_conf_format(char *buf, size_t cap, const char *sock_dir, const char *port,
                            uint64_t mem_bytes);

#endif
