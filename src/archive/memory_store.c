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

typedef struct scall_s {
    archive_call_t *op;
    memory_cb cb;
    void *data;
} scall_t;

static void done(void *data, int status, const char *json, archive_err_t err, const char *message)
{
    scall_t *sc = data;
    sc->cb(sc->data, status, json, err, message);
    free(sc);
}

static int ms_call(void *impl, const char *what, const char *args_json, memory_cb cb, void *data,
                   void **handle)
{
    memory_store_t *m = impl;
    char fn[ARCHIVE_FN_MAX + 1];
    if ((size_t)snprintf(fn, sizeof fn, "parley_memory_%s", what) >= sizeof fn ||
        !archive_fn_valid(fn))
        return UV_EINVAL;
    scall_t *sc = calloc(1, sizeof *sc);
    if (sc == NULL)
        return UV_ENOMEM;
    sc->cb = cb;
    sc->data = data;
    /* A search takes a connection of the read-only pool's search class. */
    archive_mode_t mode = strcmp(what, "search_messages") == 0 ? ARCHIVE_SEARCH : ARCHIVE_READ;
    int rc = archive_call(m->ar, mode, fn, args_json, NULL, done, sc, &sc->op);
    if (rc != 0) {
        free(sc);
        return rc;
    }
    if (handle)
        *handle = sc;
    return 0;
}

static void ms_cancel(void *impl, void *handle)
{
    (void)impl;
    archive_call_cancel(((scall_t *)handle)->op);
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
