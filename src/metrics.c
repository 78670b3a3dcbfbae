/* metrics: /metrics from each part's own figures (see metrics.h). */
#include "metrics.h"

void metrics_write(const metrics_sources_t *src, buf_t *out)
{
    if (src->mcp)
        mcp_server_metrics(src->mcp, out);
    if (src->rw)
        pg_pool_metrics(src->rw, "rw", true, out);
    if (src->ro)
        pg_pool_metrics(src->ro, "ro", src->rw == NULL, out);
    if (src->jobs)
        sync_runner_metrics(src->jobs, out);
    for (int i = 0; i < src->nconnectors; i++)
        connector_metrics(src->connectors[i], out);
}
