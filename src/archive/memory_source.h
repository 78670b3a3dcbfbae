/* memory_source: where the memory toolset reads an agent's past: a source
 * answers each memory tool ("latest_continuation", "messages_before", ...)
 * with the tool's JSON, built by PostgreSQL. Two sources implement it: the
 * memory-lane Django database (memory_django.c, read-only) and, later,
 * parley's own store filled from agents' transcripts. The toolset knows
 * the interface only. */
#ifndef PARLEY_ARCHIVE_MEMORY_SOURCE_H
#define PARLEY_ARCHIVE_MEMORY_SOURCE_H

#include "archive/archive.h"

/* json on success (an object; one with "error" is the caller's mistake, its
 * value in words for the model); else status < 0 with err and message. */
typedef void (*memory_cb)(void *data, int status, const char *json, archive_err_t err,
                          const char *message);

typedef struct memory_source_s {
    const char *name; /* "django" */
    /* Answers what (a tool's name without the "get_" prefix) for args
     * (JSON text). Returns 0 with *handle (for cancel, until cb), or a
     * negative code without calling back (UV_EINVAL: unknown what). */
    int (*call)(void *impl, const char *what, const char *args_json, memory_cb cb, void *data,
                void **handle);
    void (*cancel)(void *impl, void *handle);
    void *impl;
} memory_source_t;

#endif
