/* agent_import: `parleyd import claude-code [DIR]` and `parleyd import
 * codex DIR`: agents' session transcripts into the store, through
 * parley_agent_ingest (see src/db/sql/memory/agent_import.sql): Claude
 * Code's (DIR/PROJECT/SESSION.jsonl, JSON Lines; default
 * ~/.claude/projects; agent_events.h) and Codex CLI's (DIR/YYYY/MM/DD/
 * rollout-<time>-<uuid>.jsonl; codex_events.h), one machinery for both
 * (what differs, and the listing of the files: agent_formats.h).
 * With env->files, only those files (relative to DIR) are read, nothing is
 * listed. Incremental and idempotent: each
 * file resumes at the byte offset its complete lines were applied up to
 * (recorded with them, in one transaction), so a file that grew imports
 * only its new lines and the same file twice changes nothing. Files are
 * listed and read on the thread pool, in pieces of at most
 * AGENT_IMPORT_CHUNK bytes (a longer line alone, up to
 * AGENT_IMPORT_MAX_LINE). What cannot be stored is skipped, named, counted,
 * and the import goes on: a malformed line, one with a timestamp that is
 * not an ISO 8601 time, a line over AGENT_IMPORT_MAX_LINE, an event
 * PostgreSQL refuses (each with its file and line number), an entry that
 * is not a regular file or cannot be read (a FIFO, a device, a directory,
 * a symbolic link, which is never followed). Files are opened beneath
 * DIR (util/beneath.h), O_NONBLOCK, and checked with fstat, so no entry
 * blocks the import and nothing outside DIR is read.
 * A file shorter than what was read of it, or whose recorded offset no
 * longer ends a line, was rewritten: it is read again from its start
 * (what was stored stays; nothing is stored twice). */
#ifndef PARLEY_IMPORT_AGENT_IMPORT_H
#define PARLEY_IMPORT_AGENT_IMPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "db/pool.h"
#include "import/importer.h"

#define AGENT_IMPORT_CHUNK         (4u << 20)  /* bytes read per step */
#define AGENT_IMPORT_MAX_LINE      (16u << 20) /* bytes; a longer line is skipped */
#define AGENT_IMPORT_MAX_ERAS_FILE (1u << 20)  /* bytes */

typedef struct agent_import_s agent_import_t;

typedef struct agent_import_stats_s {
    uint64_t files, files_changed, lines, malformed, messages, heaps, sessions;
    uint64_t too_long;      /* lines over AGENT_IMPORT_MAX_LINE, skipped */
    uint64_t refused;       /* events PostgreSQL refused, skipped */
    uint64_t files_skipped; /* entries not regular files or unreadable */
    uint64_t reread;        /* files that shrank, read again from the start */
} agent_import_stats_t;

/* The source "claude-code" (importer.h): env->path is the folder of
 * projects; env->eras (NULL or "" for none) names a JSON file {KEY: "Era
 * name"}, KEY a project folder under it or a session's working directory
 * (without a name there an era is named after the working directory's
 * last component); progress by files when env->progress. A stop ends it
 * after the piece in flight (UV_ECANCELED). */
extern const importer_def_t agent_import_source;
/* The source "codex" (importer.h): env->path is Codex CLI's sessions
 * folder; each session's project is its working directory (session_meta's
 * cwd), env->eras keyed by working directories. */
extern const importer_def_t codex_import_source;

#endif
