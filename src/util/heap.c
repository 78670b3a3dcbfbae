/* heap: the allocator's trim and mmap thresholds (see heap.h). */
#include "util/heap.h"

#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

bool heap_tune(void)
{
#if defined(__GLIBC__)
    const char *tunables = getenv("GLIBC_TUNABLES");
    if ((tunables && (strstr(tunables, "malloc.trim_threshold") ||
                      strstr(tunables, "malloc.mmap_threshold"))) ||
        getenv("MALLOC_TRIM_THRESHOLD_") || getenv("MALLOC_MMAP_THRESHOLD_"))
        return false;
    return mallopt(M_TRIM_THRESHOLD, (int)HEAP_TRIM_BYTES) == 1 &&
           mallopt(M_MMAP_THRESHOLD, (int)HEAP_MMAP_BYTES) == 1;
#else
    return false;
#endif
}
