/* importer: a running import of one source (see importer.h): the owner
 * handle that keeps the caller's callback and data beside the source's
 * own state, so that every source is started, stopped and freed alike. */
#include "import/importer.h"

#include <stdlib.h>

struct importer_s {
    const importer_def_t *def;
    void *impl; /* the source's state, NULL until started */
    importer_cb cb;
    void *data;
};

int importer_start(const importer_def_t *def, const importer_env_t *env, importer_cb cb, void *data,
                   importer_t **out, char *err, size_t errcap)
{
    importer_t *imp = calloc(1, sizeof *imp);
    if (imp == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    imp->def = def;
    imp->cb = cb;
    imp->data = data;
    int rc = def->start(env, imp, &imp->impl, err, errcap);
    if (rc != 0) {
        free(imp);
        return rc;
    }
    *out = imp;
    return 0;
}

void importer__finished(importer_t *owner, int status)
{
    owner->cb(owner, status);
}

void importer_stop(importer_t *imp)
{
    if (imp->impl && !imp->def->done(imp->impl))
        imp->def->stop(imp->impl);
}

bool importer_done(const importer_t *imp)
{
    return imp->impl == NULL || imp->def->done(imp->impl);
}

const char *importer_error(const importer_t *imp)
{
    return imp->impl ? imp->def->error(imp->impl) : "";
}

void importer_summary(const importer_t *imp, char *out, size_t cap, bool *changed)
{
    *changed = false;
    if (cap)
        out[0] = '\0';
    if (imp->impl)
        imp->def->summary(imp->impl, out, cap, changed);
}

const importer_def_t *importer_def(const importer_t *imp)
{
    return imp->def;
}

void *importer_data(const importer_t *imp)
{
    return imp->data;
}

void importer_free(importer_t *imp)
{
    if (imp == NULL)
        return;
    if (imp->impl)
        imp->def->free(imp->impl);
    free(imp);
}
