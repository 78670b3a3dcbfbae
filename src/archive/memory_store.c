/* memory_store: parley's store as a memory source (see memory_store.h). */
#include "archive/memory_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

struct memory_store_s {
    memory_source_t source;
    archive_t *ar;
};

/* A memory tool is one call of its SQL function in the store: the
 * source's callback and handle are the archive call's own. */
static int ms_call(void *impl, const char *what, const char *args_json, memory_cb cb, void *data,
                   void **handle)
{
    memory_store_t *m = impl;
    char fn[ARCHIVE_FN_MAX + 1];
    if ((size_t)snprintf(fn, sizeof fn, "parley_memory_%s", what) >= sizeof fn ||
        !archive_fn_valid(fn))
        return UV_EINVAL;
    /* A search takes a connection of the read-only pool's search class. */
    archive_mode_t mode = strcmp(what, "search_messages") == 0 ? ARCHIVE_SEARCH : ARCHIVE_READ;
    archive_call_t *op = NULL;
    int rc = archive_call(m->ar, mode, fn, args_json, NULL, cb, data, &op);
    if (rc == 0 && handle)
        *handle = op;
    return rc;
}

static void ms_cancel(void *impl, void *handle)
{
    (void)impl;
    archive_call_cancel(handle);
}

int memory_store_new(archive_t *ar, memory_store_t **out)
{
    memory_store_t *m = calloc(1, sizeof *m);
    if (m == NULL)
        return UV_ENOMEM;
    m->ar = ar;
    m->source = (memory_source_t){.name = "store", .call = ms_call, .cancel = ms_cancel, .impl = m};
    *out = m;
    return 0;
}

void memory_store_free(memory_store_t *m)
{
    free(m);
}

memory_source_t *memory_store_source(memory_store_t *m)
{
    return &m->source;
}
