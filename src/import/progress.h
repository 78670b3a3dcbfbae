/* progress: the progress lines of a long import, one reporter for every
 * source. On a terminal a line redrawn in place at every step; else a log
 * line at most every interval (IMPORT_PROGRESS_MS unless the import is
 * given another), and the last one once, at the end. A timer sees that no
 * interval passes without a line, whatever the import waits on: while one
 * statement runs for a long time (a chat's rows merged into the store) it
 * writes the line again with how long the import has waited, and on what
 * (import_progress_waiting). */
#ifndef PARLEY_IMPORT_PROGRESS_H
#define PARLEY_IMPORT_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

/* Default interval between progress lines: at most this long without one
 * while an import runs (the environment variable PARLEY_IMPORT_PROGRESS_MS
 * of `parleyd import` changes it, for tests; see app_import.c). */
#define IMPORT_PROGRESS_MS       5000
#define IMPORT_PROGRESS_MS_MIN   10      /* the shortest interval accepted */
#define IMPORT_PROGRESS_MS_MAX   3600000 /* the longest */
#define IMPORT_PROGRESS_WAIT_MAX 160     /* bytes of the description of a wait */

typedef struct import_progress_s {
    uv_loop_t *loop;
    const char *tag;  /* the log tag ("import", "chatwise") */
    const char *unit; /* what done and total count ("bytes", "messages") */
    bool on;          /* false: reports nothing (a follower's import) */
    bool tty;         /* stderr is a terminal */
    bool ended;       /* the final line was written (or the import failed) */
    uint64_t interval_ms;
    uint64_t started_ms, last_ms;
    uint64_t done, total, messages; /* the last report's figures */
    uint64_t waiting_since_ms;
    char waiting[IMPORT_PROGRESS_WAIT_MAX]; /* what the import waits on, or "" */
    uv_timer_t *timer;                      /* its own allocation, freed by its close callback */
} import_progress_t;

/* Starts the clock and, when on, the timer; interval_ms 0: the default
 * IMPORT_PROGRESS_MS. on false makes every report a no-op. The timer runs
 * until the final report or import_progress_abort, one of which must come
 * on the loop before the reporter is freed. */
void import_progress_init(import_progress_t *p, uv_loop_t *loop, const char *tag, const char *unit,
                          bool on, uint64_t interval_ms);
/* done of total units (total 0: unknown) and messages read so far; final:
 * the closing line (written once; later reports are ignored). A line that
 * is not final never says the import is complete: with everything read
 * (done == total) and work left, only the timer's lines say what it waits
 * on. */
void import_progress_report(import_progress_t *p, uint64_t done, uint64_t total, uint64_t messages,
                            bool final);
/* What the import waits on from now ("the database: ..."), printed with
 * the time waited in the lines written while it lasts; NULL or "" when it
 * waits on nothing in particular. */
void import_progress_waiting(import_progress_t *p, const char *what);
/* The import failed or never started: ends a redrawn terminal line and
 * stops the timer. */
void import_progress_abort(import_progress_t *p);

#endif
