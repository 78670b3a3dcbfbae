/* importer: a running import of one source (see importer.h): the owner
 * handle that keeps the caller's callback and data, and what every import
 * has alike (importer_run_t), beside the source's own state, so that every
 * source is started, stopped, told done and freed alike. */
#include "import/importer.h"

#include <stdio.h>
#include <stdlib.h>

#include "util/log.h"

struct importer_s {
    const importer_def_t *def;
    void *impl; /* the source's state, NULL until started */
    importer_cb cb;
    void *data;
    importer_run_t run;
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
    imp->run.owner = imp;
    if (errcap > 0)
        err[0] = '\0';
    int rc = def->start(env, &imp->run, &imp->impl, err, errcap);
    if (rc != 0) {
        if (errcap > 0 && err[0] == '\0')
            snprintf(err, errcap, "%s", uv_strerror(rc));
        import_progress_abort(&imp->run.progress);
        importer_free(imp);
        return rc;
    }
    *out = imp;
    return 0;
}

void importer__finished(importer_run_t *run, int status)
{
    run->done = true;
    import_progress_abort(&run->progress);
    run->owner->cb(run->owner, status);
}

bool importer__stopping(const importer_run_t *run)
{
    return __atomic_load_n(&run->stop, __ATOMIC_RELAXED);
}

int importer__step_status(importer_run_t *run, int status, int own)
{
    int rc = status != 0 ? status : own;
    if (rc != 0 && run->error[0] == '\0')
        snprintf(run->error, sizeof run->error, "%s", uv_strerror(rc));
    return rc;
}

void importer_stop(importer_t *imp)
{
    if (imp->impl && !imp->run.done)
        __atomic_store_n(&imp->run.stop, true, __ATOMIC_RELAXED);
}

bool importer_done(const importer_t *imp)
{
    return imp->impl == NULL || imp->run.done;
}

const char *importer_error(const importer_t *imp)
{
    return imp->impl ? imp->run.error : "";
}

void importer_summary(const importer_t *imp, char *out, size_t cap, bool *changed)
{
    *changed = false;
    if (cap)
        out[0] = '\0';
    if (imp->impl)
        imp->def->summary(imp->impl, out, cap, changed);
}

void importer_log_changes(const importer_t *imp, const char *tag, const char *path)
{
    char line[1024];
    bool changed;
    importer_summary(imp, line, sizeof line, &changed);
    if (changed)
        log_info(tag, "%s: %s", path, line);
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
