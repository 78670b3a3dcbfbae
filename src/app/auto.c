/* app_auto: the default toolset selection ("auto"): serve the toolsets
 * that have something to serve. The registry holds every toolset "all"
 * holds; this file hides those whose sources (toolset_t.auto_sources) the
 * store has no data of and whose settings (auto_settings) are at their
 * defaults, asks the store once before the endpoints open, and again
 * whenever the store changes while one is hidden; a toolset whose data
 * arrived is served from then on, and the sessions are told
 * (notifications/tools/list_changed, or a 2026-07-28 subscription's).
 * Never hidden again: what a session was shown stays callable. */
#include <string.h>

#include "app/serve_internal.h"
#include "config.h"
#include "util/log.h"

bool app_auto_selected(const config_t *cfg)
{
    char list[sizeof cfg->toolsets];
    snprintf(list, sizeof list, "%s", cfg->toolsets);
    for (char *save = NULL, *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
        if (strcmp(t, "auto") == 0)
            return true;
    return false;
}

/* True when one of the comma-separated names in names is a key of
 * present whose value is true. */
static bool any_present(const json_t *present, const char *names)
{
    char list[256];
    snprintf(list, sizeof list, "%s", names);
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (json_is_true(json_object_get(present, t)))
            return true;
    return false;
}

/* True when one of the comma-separated setting keys is set other than by
 * its default. */
static bool any_setting(const config_t *cfg, const char *keys)
{
    char list[256];
    snprintf(list, sizeof list, "%s", keys);
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (config_source_of(cfg, t) > CONFIG_SRC_DEFAULT)
            return true;
    return false;
}

/* Serves the toolsets present (the store's answer) or the settings ask
 * for; hides the others when hide (the first check). Returns true when
 * what is served changed after the first check. */
static bool apply(app_t *a, const json_t *present, bool first)
{
    bool changed = false;
    for (int i = 0; toolsets_table[i]; i++) {
        const toolset_t *ts = toolsets_table[i];
        if (!mcp_registry_has_toolset(&a->mcp.registry, ts->mcp))
            continue;
        bool serve = (ts->auto_sources == NULL && ts->auto_settings == NULL) ||
                     (ts->auto_sources && any_present(present, ts->auto_sources)) ||
                     (ts->auto_settings && any_setting(a->cfg, ts->auto_settings));
        if (!serve && !first)
            continue;
        if (mcp_registry_set_hidden(&a->mcp.registry, ts->mcp, !serve)) {
            if (!first)
                log_info(APP_TAG, "toolset %s: data arrived; serving it", ts->mcp->name);
            changed = true;
        }
    }
    return changed && !first;
}

static void check(app_t *a, bool first);

static void checked(void *data, int status, const char *json, archive_err_t err,
                    const char *message)
{
    app_t *a = data;
    (void)err;
    bool first = a->state == APP_STARTING;
    a->auto_busy = false;
    if (a->state != APP_STARTING && a->state != APP_RUNNING)
        return;
    json_t *present = status == 0 ? json_loads(json, 0, NULL) : NULL;
    if (!json_is_object(present)) {
        /* Serving too much beats serving too little: everything selected. */
        log_warn(APP_TAG, "toolsets: could not check which sources have data (%s); serving %s",
                 status != 0 ? message : "no answer",
                 first ? "every toolset" : "what is served now");
        a->mcp.registry.hidden = first ? 0 : a->mcp.registry.hidden;
    } else if (apply(a, present, first)) {
        mcp_server_list_changed(&a->mcp, "tools");
        mcp_server_list_changed(&a->mcp, "resources");
        mcp_server_list_changed(&a->mcp, "prompts");
    }
    json_decref(present);
    if (first) {
        for (int i = 0; toolsets_table[i]; i++)
            if (mcp_registry_has_toolset(&a->mcp.registry, toolsets_table[i]->mcp) &&
                !mcp_registry_toolset_in(
                    &a->mcp.registry, toolsets_table[i]->mcp,
                    mcp_registry_shown(&a->mcp.registry, MCP_REGISTRY_ALL_TOOLSETS)))
                log_info(APP_TAG,
                         "toolset %s: nothing to serve yet (served once its data arrives, or "
                         "with --toolsets all)",
                         toolsets_table[i]->mcp->name);
        app_resume(a);
    } else if (a->auto_again && a->mcp.registry.hidden != 0) {
        a->auto_again = false;
        check(a, false);
    }
}

static void check(app_t *a, bool first)
{
    archive_call_t *op = NULL;
    int rc = archive_call(a->env.archive, ARCHIVE_WRITE, "parley_sources_present", NULL, NULL,
                          checked, a, &op);
    if (rc == 0) {
        a->auto_busy = true;
        return;
    }
    /* The pool is full: the next change of the store asks again. */
    if (first)
        checked(a, rc, NULL, ARCHIVE_ERR_BUSY, uv_strerror(rc));
    else
        log_debug(APP_TAG, "toolsets: sources not checked (%s)", uv_strerror(rc));
}

int app_auto_first(app_t *a, char *err, size_t errcap)
{
    (void)err;
    (void)errcap;
    if (!app_auto_selected(a->cfg))
        return 0;
    check(a, true);
    return APP_STEP_PENDING;
}

void app_auto_refresh(app_t *a)
{
    if (a->state != APP_RUNNING || !app_auto_selected(a->cfg))
        return;
    if (a->auto_busy) {
        a->auto_again = true;
        return;
    }
    check(a, false);
}
