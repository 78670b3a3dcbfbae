/* follow: keeps the archive following a source while parleyd serves
 * (serve --chatwise-db follows ChatWise): every interval it stats the
 * source's file and its companion (on the thread pool, through
 * uv_fs_stat) and, when either changed since the last import, imports it
 * again through the source's importer (incremental: only what is new or
 * changed is written). One import at a time; a failed import is logged
 * (once until one succeeds) and tried again at every check; a file that
 * is not a regular file is never opened. Works for any source whose
 * definition names a follow_file (importer.h). */
#ifndef PARLEY_IMPORT_FOLLOW_H
#define PARLEY_IMPORT_FOLLOW_H

#include <stdbool.h>
#include <uv.h>

#include "import/importer.h"

typedef struct import_follow_s import_follow_t;

/* Starts following env->path (def's file, or a folder holding it) every
 * interval_s seconds, with a first check at once; env is copied (its
 * strings other than path must outlive the follower). UV_EINVAL: def is
 * not followable or interval_s is not positive. */
int import_follow_start(const importer_def_t *def, const importer_env_t *env, int interval_s,
                        import_follow_t **out);
/* Stops: no new checks; an import in flight stops after its batch. */
void import_follow_stop(import_follow_t *w);
/* True once stopped and nothing is in flight (then import_follow_free). */
__attribute__((warn_unused_result)) bool import_follow_idle(const import_follow_t *w);
void import_follow_free(import_follow_t *w);

#endif
