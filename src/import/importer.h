/* importer: an import source as the entry point sees it (the table of
 * them is importers.c), and a running import of one.
 *
 * A source is a definition: its name on the command line, its arguments
 * and help, and four functions over the source's own state (check, start,
 * summary, free; follow_* when `serve` can follow it). What every import
 * has alike (stopping, being done, its error, its progress lines) is the
 * owner's (importer_run_t), not each source's. The
 * entry never names a source: `parleyd import NAME` finds NAME in the
 * table, cli.c builds usage and help from it, and follow.c re-imports any
 * followable source when its files change.
 *
 * Adding an import source: its file(s) in src/import/ defining an
 * importer_def_t, its SQL, and one line in importers.c. */
#ifndef PARLEY_IMPORT_IMPORTER_H
#define PARLEY_IMPORT_IMPORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "db/conninfo.h"
#include "db/pool.h"
#include "import/progress.h"

/* The time limit of one statement of an import (a batch of up to 16 MiB
 * of rows, with their search vectors): an import is long work, not a
 * tool's query (db_query_timeout_ms), and a slow machine must not fail it. */
#define IMPORTER_QUERY_TIMEOUT_MS (10u * 60 * 1000)

/* What an import is started with (borrowed until it is freed). */
typedef struct importer_env_s {
    uv_loop_t *loop;
    pg_pool_t *pool;               /* read-write */
    const pg_conninfo_t *conninfo; /* for a source that needs its own connection */
    const char *path;              /* the source's argument (or its default) */
    const char *data_dir;          /* the daemon's data directory (DATA_DIR/media: files) */
    const char *tz;                /* UTC offset of dates given without one */
    const char *eras;              /* a file naming sessions' eras, or "" */
    bool progress;                 /* report progress (an import command; not a follower) */
    uint64_t progress_ms;          /* between progress lines; 0: IMPORT_PROGRESS_MS */
    /* Only these files, paths relative to path (a follower that knows what
     * changed), instead of the source listing path; NULL: list. Each is
     * read as a listed one would be (beneath path, no symbolic link
     * followed; one not of the source's form, absolute, or with a ".."
     * component is skipped and named). Copied by start. Sources that do
     * not list files (one file given as path) ignore it. */
    const char *const *files;
    size_t nfiles;
} importer_env_t;

typedef struct importer_s importer_t;

/* The longest error text of an import (a path and what went wrong). */
#define IMPORTER_ERROR_MAX 6144

/* What every running import shares with its owner: made by importer_start
 * and given to the source's start, valid until importer_free. The owner
 * answers importer_stop, importer_done and importer_error from it, so no
 * source repeats them. */
typedef struct importer_run_s {
    importer_t *owner;
    /* Set once by importer_stop (atomically: read it with
     * importer__stopping, from any thread): the source ends after its
     * current step, with UV_ECANCELED. */
    bool stop;
    bool done; /* importer__finished was called */
    /* The source's progress lines: its start inits them (on or off); the
     * owner ends them when the import fails or never starts. */
    import_progress_t progress;
    char error[IMPORTER_ERROR_MAX]; /* why the import failed; "" until then */
} importer_run_t;

/* status 0: imported (rows that could not be stored are counted, not
 * failures); else the import failed (importer_error says why) or was
 * stopped (UV_ECANCELED). Called once, never from importer_start. */
typedef void (*importer_cb)(importer_t *imp, int status);

typedef struct importer_def_s {
    const char *name;        /* "telegram-export": parleyd import NAME */
    const char *args;        /* "PATH", "[DIR]": the arguments after NAME */
    int min_args, max_args;  /* how many of them */
    const char *default_arg; /* the argument when none is given, under $HOME; or NULL */
    const char *what;        /* one line for parleyd import --help */
    const char *help;        /* parleyd import NAME --help */
    /* Followable sources (serve follows a file and imports it again when
     * it changes): the file a folder given as the path holds, and the
     * suffix of a file beside it that changes with it (SQLite's "-wal");
     * follow_file NULL: not followable. */
    const char *follow_file;
    const char *follow_companion;
    /* The file a folder given as the path must hold (telegram-export's
     * result.json, ChatWise's app.db), checked before any database work
     * (app/import.c); NULL: a folder is read as it is. */
    const char *folder_file;
    /* serve follows a folder of files of this source (follow_dir.h): the
     * importer takes env->files and reads each from where the store says
     * it stopped. */
    bool follow_dir;
    /* Checks the source's settings in env (not the path) before any work:
     * 0, or UV_EINVAL with err naming the setting ("tz: ..."). NULL: none. */
    int (*check)(const importer_env_t *env, char *err, size_t errcap);
    /* Starts reading env->path, keeping run for the import's life;
     * importer__finished(run, status) once later. The functions below take
     * the impl start gave. Returns 0, or a negative code with err saying
     * why (left empty: the code's own text); then what it set *impl to is
     * freed with free, and importer__finished is never called. */
    int (*start)(const importer_env_t *env, importer_run_t *run, void **impl, char *err,
                 size_t errcap);
    /* The closing line ("imported 3 chats, ..."); *changed: whether it
     * wrote anything new (a follower logs only then). */
    void (*summary)(const void *impl, char *out, size_t cap, bool *changed);
    void (*free)(void *impl);
} importer_def_t;

/* Starts def over env; cb(imp, status) once when it ends. */
int importer_start(const importer_def_t *def, const importer_env_t *env, importer_cb cb, void *data,
                   importer_t **out, char *err, size_t errcap);
void importer_stop(importer_t *imp);
__attribute__((warn_unused_result)) bool importer_done(const importer_t *imp);
const char *importer_error(const importer_t *imp);
void importer_summary(const importer_t *imp, char *out, size_t cap, bool *changed);
const importer_def_t *importer_def(const importer_t *imp);
void *importer_data(const importer_t *imp);
/* Frees a finished (or never started) import; NULL is a no-op. Never
 * from inside its callback. */
void importer_free(importer_t *imp);

/* A follower's line after an import that succeeded: the summary, under
 * tag and after path, when the import wrote anything new (else nothing). */
void importer_log_changes(const importer_t *imp, const char *tag, const char *path);

/* For a source's own file: its import ended. Marks it done, ends the
 * progress lines (the source wrote the final one first, when status is 0)
 * and calls the owner's cb. */
void importer__finished(importer_run_t *run, int status);
/* Whether importer_stop was called (any thread). */
bool importer__stopping(const importer_run_t *run);
/* How a step on the thread pool ended: status is uv's (the work's), own
 * the step's code. The failure's code (uv's first), with run->error set to
 * its text when the step left none; 0 when both are 0. */
int importer__step_status(importer_run_t *run, int status, int own);

#endif
