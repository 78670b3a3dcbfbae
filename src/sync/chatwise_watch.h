/* chatwise_watch: keeps the archive following ChatWise while parleyd
 * serves: every interval it stats the app's database file and its -wal
 * (on the thread pool, through uv_fs_stat) and, when either changed since
 * the last import, imports the file again (chatwise_import: incremental,
 * so only what is new or changed is written). One import at a time; a
 * failed import is logged (once until one succeeds) and tried again at
 * every check. */
#ifndef PARLEY_SYNC_CHATWISE_WATCH_H
#define PARLEY_SYNC_CHATWISE_WATCH_H

#include <stdbool.h>
#include <uv.h>

#include "db/pool.h"

typedef struct chatwise_watch_s chatwise_watch_t;

/* Starts watching path (app.db or its folder) every interval_s seconds,
 * with a first check at once. */
int chatwise_watch_start(uv_loop_t *loop, pg_pool_t *pool, const char *path, int interval_s,
                         chatwise_watch_t **out);
/* Stops: no new checks; an import in flight stops after its batch. */
void chatwise_watch_stop(chatwise_watch_t *w);
/* True once stopped and nothing is in flight (then chatwise_watch_free). */
__attribute__((warn_unused_result)) bool chatwise_watch_idle(const chatwise_watch_t *w);
void chatwise_watch_free(chatwise_watch_t *w);

#endif
