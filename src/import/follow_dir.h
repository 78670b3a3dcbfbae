/* follow_dir: keeps the archive following a folder of session transcripts
 * while parleyd serves (serve --claude-code-dir, --codex-dir): a file that appears and
 * lines appended to one are imported within FOLLOW_DIR_DEBOUNCE_MS of
 * the kernel saying so (inotify, through one uv_fs_event a folder), and
 * at every rescan (rescan_ms) whatever the events missed. Each scan walks
 * the folder on the thread pool without following a symbolic link and
 * compares every *.jsonl file's size, time and inode with the last scan's;
 * the source's importer is started with only the files that changed
 * (importer_env_t.files), and imports from the byte offset the store
 * keeps for each, so a restart, another daemon or a file rewritten
 * resumes as the importer decides. One daemon follows a folder at a time:
 * an advisory lock named by the source and the folder's real path; a
 * daemon that loses it (its connection, a kill -9 of the holder's) stops
 * watching, another takes over within PG_LOCK_CHECK_MS. Works for any
 * source whose definition sets follow_dir (importer.h). */
#ifndef PARLEY_IMPORT_FOLLOW_DIR_H
#define PARLEY_IMPORT_FOLLOW_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "db/conninfo.h"
#include "import/importer.h"

/* From an event to the scan it causes: events of one write come together. */
#define FOLLOW_DIR_DEBOUNCE_MS 100
/* Folders watched at most (the root, its projects, their subfolders). */
#define FOLLOW_DIR_MAX_WATCHES 1024
/* Folders below the root walked at most (Codex: YYYY/MM/DD). */
#define FOLLOW_DIR_DEPTH 4
/* Files followed at most (the rest are still imported by a rescan's
 * import of the whole folder: they are only not told apart). */
#define FOLLOW_DIR_MAX_FILES 100000

typedef struct import_follow_dir_s import_follow_dir_t;

/* Starts following env->path with def's importer: asks for the folder's
 * lock on a connection of its own (conninfo), then watches and scans
 * every rescan_ms, with a first scan at once. env is copied (its strings
 * other than path must outlive the follower). Returns 0, or a negative
 * code with err (UV_EINVAL: def does not follow folders or rescan_ms is 0;
 * the folder cannot be resolved). */
int import_follow_dir_start(const importer_def_t *def, const importer_env_t *env,
                            const pg_conninfo_t *conninfo, uint32_t connect_timeout_ms,
                            uint64_t rescan_ms, import_follow_dir_t **out, char *err,
                            size_t errcap);
/* Stops: no new scans; an import in flight stops after its batch; the
 * lock is given up. */
void import_follow_dir_stop(import_follow_dir_t *w);
/* True once stopped and nothing is in flight (then import_follow_dir_free). */
__attribute__((warn_unused_result)) bool import_follow_dir_idle(const import_follow_dir_t *w);
void import_follow_dir_free(import_follow_dir_t *w);

/* ---- for the tests: the scan's comparison, pure ---------------------------------- */

/* A file as a scan saw it. */
typedef struct follow_dir_file_s {
    char *rel; /* its path below the root */
    int64_t size, mtime_ns;
    uint64_t dev, ino;
} follow_dir_file_t;

/* The files of now (sorted by rel) that are new or differ from before
 * (sorted by rel) in size, time or inode: their indexes into now, in
 * order, into changed (room for nnow). Returns how many. */
size_t follow_dir__changed(const follow_dir_file_t *before, size_t nbefore,
                           const follow_dir_file_t *now, size_t nnow, size_t *changed);

#endif
