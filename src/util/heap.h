/* heap: how the C library's allocator gives freed memory back.
 *
 * glibc returns the free top of its heap to the system once it exceeds
 * M_TRIM_THRESHOLD (128 KiB at first), and a daemon under load that frees
 * and takes back more than that every turn of its loop pays a page fault
 * per 4 KiB each time: at 256 Streamable HTTP sessions, 1.2-1.8 faults and
 * 50-57 µs of CPU a trivial call against 0.01 and 25-26 µs with the top
 * kept (bench/README.md, "Per-call work of parleyd"). heap_tune keeps up to
 * HEAP_TRIM_BYTES; fixing the trim threshold also fixes glibc's mmap
 * threshold (else moving), set to HEAP_MMAP_BYTES: blocks below it come
 * from the heap. */
#ifndef PARLEY_UTIL_HEAP_H
#define PARLEY_UTIL_HEAP_H

#include <stdbool.h>

#define HEAP_TRIM_BYTES (16u << 20) /* free memory kept at the heap's top */
#define HEAP_MMAP_BYTES (4u << 20)  /* blocks this large or larger are mapped */

/* Applies the two thresholds, unless the environment sets either of them
 * (GLIBC_TUNABLES glibc.malloc.trim_threshold or mmap_threshold,
 * MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_): the user's word wins.
 * Returns true when applied; false too on a C library without mallopt. */
bool heap_tune(void);

#endif
