/* agent_formats: the two transcript formats agent_import reads, Claude
 * Code's (DIR/PROJECT/SESSION.jsonl; agent_events.h) and Codex CLI's
 * (DIR/YYYY/MM/DD/rollout-*.jsonl; codex_events.h), and the listing of a
 * folder's transcripts in either: what differs between the formats (where
 * their files are, which given paths are theirs, a folder's project, the
 * parser of a piece of lines) and the files an import reads, found under
 * DIR or given, sorted by path. Listing runs on the thread pool: every
 * entry is looked at with fstatat(AT_SYMLINK_NOFOLLOW) under its folder's
 * descriptor, so a symbolic link (to a file or a folder, inside DIR or out
 * of it) is skipped and named, never followed, and nothing outside DIR is
 * listed; DIR itself may be a link (the user's own setting). An entry not
 * listed (a link, a FIFO, a device, one that cannot be read) is warned
 * and counted. */
#ifndef PARLEY_IMPORT_AGENT_FORMATS_H
#define PARLEY_IMPORT_AGENT_FORMATS_H

#include <dirent.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_FORMATS_MAX_FILES 100000 /* files listed at most (UV_E2BIG beyond) */
/* Why a symbolic link under DIR is not read. */
#define AGENT_FORMATS_LINK_SKIPPED                                                                 \
    "a symbolic link, not followed (only files inside the folder are read)"

/* The files of one import, as listed. */
typedef struct agent_listing_s {
    const char *dir; /* DIR (borrowed) */
    char **files;    /* full paths, DIR/... */
    char **projects; /* each file's project folder, as under DIR ("" for DIR itself) */
    size_t nfiles, cap;
    uint64_t skipped; /* entries not listed (each warned) */
    int status;       /* a failure that ends the listing, or 0 */
} agent_listing_t;

/* A transcript format: what differs between Claude Code's and Codex's. */
typedef struct agent_format_s {
    const char *source; /* "claude-code", "codex": parley_agent_ingest's f.source */
    /* Lists the format's files under the open DIR d into l (l->status set
     * on a failure that ends the listing). */
    void (*list)(agent_listing_t *l, DIR *d);
    /* The folder (as under DIR) a file given by its path relative to DIR
     * belongs to, into folder; NULL when the file is one of the format's,
     * else why not. */
    const char *(*given)(const char *rel, char *folder, size_t cap);
    /* The project of a folder when its sessions name no working directory. */
    const char *(*project)(const char *folder);
    /* The events of a piece of a file (agent_events_parse's contract). */
    char *(*parse)(const char *buf, size_t len, const char *path, uint64_t first_line,
                   uint64_t *lines, uint64_t *malformed);
} agent_format_t;

extern const agent_format_t agent_formats_claude;
extern const agent_format_t agent_formats_codex;

/* Lists fmt's files under dir into l (zeroed by the caller); or, given
 * not NULL, the ngiven files named by paths relative to dir, each taken
 * as DIR/REL without looking at it (read beneath dir later, as listed ones
 * are; one not of the format's form, absolute, or with a ".." component
 * is skipped and named). Sorted by path, so that runs are reproducible.
 * Returns 0, or a negative code with err saying why; l holds what was
 * listed either way (agent_formats_listing_free). Thread pool. */
int agent_formats_list(agent_listing_t *l, const agent_format_t *fmt, const char *dir,
                       char *const *given, size_t ngiven, char *err, size_t errcap);
void agent_formats_listing_free(agent_listing_t *l);

#endif
