/* serve_internal: what serve's files share (serve.c the sequence and the
 * stores, connect.c the connectors, toolsets and endpoints, auto.c the
 * default selection). Only serve's files include it. */
#ifndef PARLEY_APP_SERVE_INTERNAL_H
#define PARLEY_APP_SERVE_INTERNAL_H

#include "app/app_internal.h"

/* serve's connectors, jobs, pages, toolsets and endpoints (connect.c);
 * 0, or a negative code with err naming the part. */
int app_start_connectors(app_t *a, char *err, size_t errcap);
int app_start_toolsets(app_t *a, char *err, size_t errcap);
int app_start_endpoints(app_t *a, char *err, size_t errcap);
/* The default selection ("auto", auto.c): which selected toolsets have
 * something to serve. app_auto_first checks the store before the
 * endpoints open (APP_STEP_PENDING, then app_resume once checked; 0 when
 * the selection is not auto); app_auto_refresh checks again after the
 * store changed, while a toolset is held back, and tells the sessions
 * when one is served. */
int app_auto_first(app_t *a, char *err, size_t errcap);
/* True when the toolsets setting names "auto" (alone or in a list): a
 * session that names no selection gets the default one, its compact
 * surface (toolsets/surface.h). */
__attribute__((warn_unused_result)) bool app_auto_selected(const config_t *cfg);
void app_auto_refresh(app_t *a);

#endif
