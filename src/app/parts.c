/* app parts: the parts several steps start (app_internal.h): a pool, the
 * builder of the indexes the migrations asked for (serve's and migrate's),
 * the word forms' builder (serve's and the end of an import's), and the
 * getter of a connector's setting (serve's connectors and login's). */
#include "app/app_internal.h"

#include <stdio.h>

#include "archive/search_forms.h"

static void pool_closed(pg_pool_t *p)
{
    app_t *a = pg_pool_get_data(p);
    app_stack_next(&a->stack);
}

static void pool_close(void *obj, app_stack_t *s)
{
    (void)s;
    pg_pool_close(obj, pool_closed);
}

static bool pool_idle(const void *obj)
{
    return pg_pool_is_idle((pg_pool_t *)obj);
}

const app_part_ops_t app_pool_part = {.name = "pool", .idle = pool_idle, .close = pool_close};

static void index_stop(void *obj)
{
    index_build_stop(obj);
}

static bool index_idle(const void *obj)
{
    return index_build_idle(obj);
}

static void index_free(void *obj)
{
    index_build_free(obj);
}

static const app_part_ops_t index_part = {
    .name = "index builds", .stop = index_stop, .idle = index_idle, .free = index_free};

int app_start_index_builds(app_t *a, bool fail_fast, index_build_cb cb, char *err, size_t errcap)
{
    index_build_opts_t o = {.connect_timeout_ms = (uint32_t)a->cfg->db_connect_timeout_ms,
                            .fail_fast = fail_fast};
    index_build_t *b = NULL;
    int rc = index_build_start(&a->loop, &a->conninfo, a->rw, &o, cb, a, &b, err, errcap);
    if (rc != 0)
        return rc;
    rc = app_push(a, &index_part, b);
    if (rc != 0) {
        index_build_stop(b); /* not owned: left to the loop's end */
        snprintf(err, errcap, "too many parts");
    }
    return rc;
}

static void forms_stop(void *obj)
{
    search_forms_stop(obj);
}

static bool forms_idle(const void *obj)
{
    return search_forms_idle(obj);
}

static void forms_free(void *obj)
{
    search_forms_free(obj);
}

const app_part_ops_t app_forms_part = {
    .name = "search", .stop = forms_stop, .idle = forms_idle, .free = forms_free};

int app_connector_setting(const void *data, const char *key, char *out, size_t cap)
{
    return config_get(data, key, out, cap);
}
