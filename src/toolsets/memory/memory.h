/* memory: the memory toolset (../shared/specs/memory-recovery-tools.md):
 * an AI agent that starts with an empty context recovers its own past —
 * the continuation of its last session, the work before it, the
 * foundational era — in a few calls, or in one (bootstrap_memory, trimmed
 * to a token budget). The tools ask a memory source
 * (archive/memory_source.h): the memory-lane Django database given with
 * --memory-db. A prompt, bootstrap, tells an agent the sequence. */
#ifndef PARLEY_TOOLSETS_MEMORY_MEMORY_H
#define PARLEY_TOOLSETS_MEMORY_MEMORY_H

#include "archive/memory_boot.h"
#include "toolsets/toolset.h"

/* bootstrap_memory's default budget, in tokens (about 4 characters each). */
#define MEMORY_BOOTSTRAP_BUDGET 30000

/* The toolset's row of the table of toolsets (toolsets.c). */
extern const toolset_t toolset_memory;

#endif
