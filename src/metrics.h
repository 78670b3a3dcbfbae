/* metrics: the Prometheus text of /metrics. Each part of the daemon
 * exports its own figures (mcp_server_metrics, pg_pool_metrics,
 * sync_runner_metrics, a connector's metrics op); this asks them, in a
 * fixed order, and knows no part's internals. */
#ifndef PARLEY_METRICS_H
#define PARLEY_METRICS_H

#include "db/pool.h"
#include "mcp/server.h"
#include "sync/jobs.h"
#include "upstream/connector.h"
#include "util/buf.h"

/* What there is to ask; a NULL part is skipped. */
typedef struct metrics_sources_s {
    const mcp_server_t *mcp;
    const pg_pool_t *rw, *ro;
    const sync_runner_t *jobs;
    connector_t *const *connectors;
    int nconnectors;
} metrics_sources_t;

void metrics_write(const metrics_sources_t *src, buf_t *out);

#endif
