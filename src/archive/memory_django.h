/* memory_django: the memory-lane Django database as a memory source (see
 * memory_source.h; schema in ../shared/specs/memory-lane-schema.sql). parley
 * reaches it through a small pool of its own whose sessions are read-only
 * (default_transaction_read_only): nothing is ever written there, not even
 * a function, so every tool is one parameterised statement ($1: the tool's
 * arguments as jsonb) that builds the answer's JSON. Messages are ordered
 * by when they were said ("timestamp", milliseconds), never by created_at
 * (when they were imported); content blocks are rendered to text in full
 * (thinking, tool use and tool results labelled). */
#ifndef PARLEY_ARCHIVE_MEMORY_DJANGO_H
#define PARLEY_ARCHIVE_MEMORY_DJANGO_H

#include <uv.h>

#include "archive/memory_source.h"
#include "db/pool.h"

/* Connections of the memory database's pool. */
#define MEMORY_DJANGO_POOL_SIZE 2
/* The most messages one answer carries (limits above are capped, and the
 * answer says so). */
#define MEMORY_LIMIT_MAX 1000

typedef struct memory_django_s memory_django_t;

/* Starts the pool (it connects in the background: an unreachable database
 * is reported per call, and in the log). */
int memory_django_new(uv_loop_t *loop, const pg_conninfo_t *ci, uint32_t query_timeout_ms,
                      uint32_t connect_timeout_ms, memory_django_t **out, char *err, size_t errcap);

memory_source_t *memory_django_source(memory_django_t *m);

/* Checks that the schema's tables are there (logs what is missing). */
void memory_django_check(memory_django_t *m);

/* Closes the pool; cb(data) once it is closed, then m is freed. */
void memory_django_close(memory_django_t *m, void (*cb)(void *data), void *data);

#endif
