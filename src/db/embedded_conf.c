/* embedded_conf: the text of the embedded cluster's parley.conf (see
 * embedded_conf.h); a pure function of the socket directory and the
 * machine's memory, so a unit test can read what any machine gets. */
#include <inttypes.h>
#include <stdio.h>
#include <uv.h>

#include "db/embedded_conf.h"

#define MIB (UINT64_C(1) << 20)

static uint64_t share_mib(uint64_t mem, uint64_t share, uint64_t lo, uint64_t hi)
{
    uint64_t v = mem / share / MIB;
    return v < lo ? lo : v > hi ? hi : v;
}

uint64_t pg_embedded_conf_memory(void)
{
    uint64_t total = uv_get_total_memory();
    uint64_t limit = uv_get_constrained_memory();
    if (limit != 0 && (total == 0 || limit < total))
        total = limit;
    return total != 0 ? total : UINT64_C(1) << 30;
}

int pg_embedded_conf_format(char *buf, size_t cap, const char *sock_dir, const char *port,
                            uint64_t mem_bytes)
{
    uint64_t shared = share_mib(mem_bytes, EMB_SHARED_BUFFERS_SHARE, EMB_SHARED_BUFFERS_MIN,
                                EMB_SHARED_BUFFERS_MAX);
    uint64_t cache = share_mib(mem_bytes, EMB_CACHE_SHARE, shared, UINT64_MAX);
    uint64_t maint =
        share_mib(mem_bytes, EMB_MAINT_MEM_SHARE, EMB_MAINT_MEM_MIN, EMB_MAINT_MEM_MAX);
    uint64_t work = share_mib(mem_bytes, EMB_WORK_MEM_SHARE, EMB_WORK_MEM_MIN, EMB_WORK_MEM_MAX);
    int n = snprintf(buf, cap,
                     "# Written by parleyd at every start; edits here are lost.\n"
                     "# Reasons for each setting: docs/deployment.md (The embedded PostgreSQL).\n"
                     "listen_addresses = ''\n"
                     "unix_socket_directories = '%s'\n"
                     "unix_socket_permissions = 0700\n"
                     "port = %s\n"
                     "max_connections = %d\n"
                     "logging_collector = off\n"
                     "# Durability as PostgreSQL ships it.\n"
                     "fsync = on\n"
                     "synchronous_commit = on\n"
                     "full_page_writes = on\n"
                     "# Memory, sized from %" PRIu64 " MiB.\n"
                     "shared_buffers = %" PRIu64 "MB\n"
                     "effective_cache_size = %" PRIu64 "MB\n"
                     "maintenance_work_mem = %" PRIu64 "MB\n"
                     "work_mem = %" PRIu64 "MB\n"
                     "# WAL and checkpoints: spaced for bulk imports.\n"
                     "max_wal_size = 4GB\n"
                     "min_wal_size = 256MB\n"
                     "checkpoint_timeout = 15min\n"
                     "checkpoint_completion_target = 0.9\n"
                     "wal_compression = on\n"
                     "# parleyd backup: pg_basebackup over the socket (pg_hba.conf from\n"
                     "# initdb --auth=trust allows local replication).\n"
                     "wal_level = replica\n"
                     "max_wal_senders = %d\n"
                     "# Planner: solid-state storage; no JIT for short queries.\n"
                     "random_page_cost = 1.1\n"
                     "effective_io_concurrency = 200\n"
                     "jit = off\n",
                     sock_dir, port, EMB_MAX_CONNECTIONS, mem_bytes / MIB, shared, cache, maint,
                     work, EMB_MAX_WAL_SENDERS);
    if (n < 0 || (size_t)n >= cap)
        return UV_ENOBUFS;
    return n;
}
