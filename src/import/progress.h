/* progress: the progress lines of a long import, one reporter for every
 * source. On a terminal a line redrawn in place at every step; else a log
 * line every IMPORT_PROGRESS_MS (and the last one once, at the end). */
#ifndef PARLEY_IMPORT_PROGRESS_H
#define PARLEY_IMPORT_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#define IMPORT_PROGRESS_MS 5000 /* between log lines when stderr is not a terminal */

typedef struct import_progress_s {
    uv_loop_t *loop;
    const char *tag;  /* the log tag ("import", "chatwise") */
    const char *unit; /* what done and total count ("bytes", "messages") */
    bool on;          /* false: reports nothing (a follower's import) */
    bool tty;         /* stderr is a terminal */
    bool ended;       /* the final line was written */
    uint64_t started_ms, last_ms;
} import_progress_t;

/* Starts the clock; on false makes every report a no-op. */
void import_progress_init(import_progress_t *p, uv_loop_t *loop, const char *tag, const char *unit,
                          bool on);
/* done of total units (total 0: unknown) and messages read so far; final:
 * the closing line (written once; later reports are ignored). */
void import_progress_report(import_progress_t *p, uint64_t done, uint64_t total, uint64_t messages,
                            bool final);
/* The import failed: ends a redrawn terminal line. */
void import_progress_abort(import_progress_t *p);

#endif
