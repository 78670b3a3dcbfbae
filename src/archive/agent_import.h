/* agent_import: `parleyd import claude-code [DIR]`: agents' session
 * transcripts (DIR/PROJECT/SESSION.jsonl, JSON Lines; default
 * ~/.claude/projects) into the store, through parley_agent_ingest (see
 * src/db/sql/memory/agent_import.sql). Incremental and idempotent: each
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
 * a symlink loop; a symlink to a regular file is followed). Files are
 * opened O_NONBLOCK and checked with fstat, so no entry blocks the import.
 * A file shorter than what was read of it, or whose recorded offset no
 * longer ends a line, was rewritten: it is read again from its start
 * (what was stored stays; nothing is stored twice). */
#ifndef PARLEY_ARCHIVE_AGENT_IMPORT_H
#define PARLEY_ARCHIVE_AGENT_IMPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "db/pool.h"

#define AGENT_IMPORT_CHUNK         (4u << 20) /* bytes read per step */
#define AGENT_IMPORT_MAX_FILES     100000
#define AGENT_IMPORT_MAX_LINE      (16u << 20) /* bytes; a longer line is skipped */
#define AGENT_IMPORT_MAX_ERAS_FILE (1u << 20)  /* bytes */

/* The events of a piece of a transcript, from the file's untrusted bytes
 * (pure; the fuzz target transcripts drives it). buf[0..len) holds whole
 * lines (the importer reads up to the last newline; a last line without
 * one counts too). Each line that is not blank must be one JSON object,
 * else it is counted in *malformed, reported with path and its number,
 * and skipped (a NUL byte makes a line malformed). Lines are numbered
 * from first_line + 1. Returns the JSON text [{"line": N, "event":
 * {...}}, ...] (the caller frees it) with *lines the number of lines, or
 * NULL when out of memory. */
char *agent_import_events(const char *buf, size_t len, const char *path, uint64_t first_line,
                          uint64_t *lines, uint64_t *malformed);
/* Whether s[0..n) is a time PostgreSQL's timestamptz surely reads: ISO
 * 8601, YYYY-MM-DD[(T| )hh:mm[:ss[.f{1,9}]]][Z|(+|-)hh[[:]mm]], a real
 * calendar date of years 1 to 9999. An event whose "timestamp" is present
 * and not null must have one (else the line is malformed). */
bool agent_import_time_ok(const char *s, size_t n);

typedef struct agent_import_s agent_import_t;
typedef void (*agent_import_cb)(agent_import_t *imp, int status);

typedef struct agent_import_stats_s {
    uint64_t files, files_changed, lines, malformed, messages, heaps, sessions;
    uint64_t too_long;      /* lines over AGENT_IMPORT_MAX_LINE, skipped */
    uint64_t refused;       /* events PostgreSQL refused, skipped */
    uint64_t files_skipped; /* entries not regular files or unreadable */
    uint64_t reread;        /* files that shrank, read again from the start */
} agent_import_stats_t;

/* Starts importing dir; cb runs once at the end (status 0, or a negative
 * code with agent_import_error). eras (NULL or "" for none) names a JSON
 * file {KEY: "Era name"}, KEY a project folder under dir or a session's
 * working directory; without a name there an era is named after the
 * working directory's last component. */
int agent_import_start(uv_loop_t *loop, pg_pool_t *pool, const char *dir, const char *eras,
                       agent_import_cb cb, void *data, agent_import_t **out, char *err,
                       size_t errcap);
void *agent_import_data(const agent_import_t *imp);
void agent_import_get_stats(const agent_import_t *imp, agent_import_stats_t *out);
const char *agent_import_error(const agent_import_t *imp);
/* Stops after the piece in flight (cb runs with UV_ECANCELED). */
void agent_import_stop(agent_import_t *imp);
__attribute__((warn_unused_result)) bool agent_import_done(const agent_import_t *imp);
void agent_import_free(agent_import_t *imp);

#endif
