/* memory_boot: bootstrap_memory's sequence over a memory source
 * (memory_source.h), for the memory toolset's tool and for `parleyd
 * bootstrap`: the latest continuation, the messages before it, the
 * foundational era, one source call after the other (nothing blocks the
 * loop), fitted to a token budget by memory_fit.h; the answer is its
 * JSON text.
 *
 * With a project (a session's working directory), every step reads only
 * that project's sessions (the store's sources; a memory-lane database has
 * no projects and answers for all). */
#ifndef PARLEY_ARCHIVE_MEMORY_BOOT_H
#define PARLEY_ARCHIVE_MEMORY_BOOT_H

#include "archive/memory_fit.h"
#include "archive/memory_source.h"

/* The foundational era of a memory-lane database, by its name. */
#define MEMORY_FOUNDATION_ERA "Compacting Meta-Conversation (Era 1)"
/* Messages asked for per step (then what fits is kept). */
#define MEMORY_BOOT_FETCH 1000
/* The steps, for progress. */
#define MEMORY_BOOT_STEPS 3

typedef struct memory_boot_s memory_boot_t;

typedef struct memory_boot_opts_s {
    long token_budget;    /* > 0 */
    const char *era_name; /* or NULL: the foundational era found by the source */
    const char *project;  /* or NULL: every project */
    /* Before each step (step 0..MEMORY_BOOT_STEPS-1), or NULL. */
    void (*progress)(void *data, int step, int total);
} memory_boot_opts_t;

/* Starts the sequence; cb(data, 0, json, ...) with the answer once it is
 * built, or cb(data, status < 0, NULL, err, message) when a step failed.
 * Returns 0 with *out (for memory_boot_cancel, valid until cb), or a
 * negative code without calling back. The options' strings are copied. */
int memory_boot_start(memory_source_t *src, const memory_boot_opts_t *opts, memory_cb cb,
                      void *data, memory_boot_t **out);
/* Cancels the step in flight: cb follows (with an error, or the answer so
 * far). */
void memory_boot_cancel(memory_boot_t *b);

#endif
