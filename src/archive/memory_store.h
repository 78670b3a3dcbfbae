/* memory_store: parley's own store as a memory source (see
 * memory_source.h): the agents' sessions `parleyd import claude-code`
 * brought in, answered by the SQL functions parley_memory_<what>
 * (src/db/sql/memory/store.sql) on the read-only pool. */
#ifndef PARLEY_ARCHIVE_MEMORY_STORE_H
#define PARLEY_ARCHIVE_MEMORY_STORE_H

#include "archive/memory_source.h"

typedef struct memory_store_s memory_store_t;

int memory_store_new(archive_t *ar, memory_store_t **out);
void memory_store_free(memory_store_t *m);
memory_source_t *memory_store_source(memory_store_t *m);

#endif
