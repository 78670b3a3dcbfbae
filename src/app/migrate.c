/* app migrate: `parleyd migrate` once the migrations are applied: the
 * indexes they asked for are built before it exits (serve builds them
 * too, while it serves); a failed build ends it with the reason. */
#include "app/steps.h"

#include <stdio.h>

#include "util/log.h"

static void indexes_done(index_build_t *b, int status)
{
    app_t *a = index_build_data(b);
    if (status != 0) {
        char why[INDEX_BUILD_ERR_MAX + 128];
        snprintf(why, sizeof why,
                 "%s (the schema is applied; serve builds the index at start and tries again "
                 "until it succeeds)",
                 index_build_error(b));
        app_fatal(a, "index build", why);
        return;
    }
    if (a->state == APP_STARTING)
        app_shutdown(a, APP_EXIT_OK);
}

static void migrate_step_start(app_t *a)
{
    log_info(APP_TAG, "schema is at version %d (%d migration%s applied)", a->mig.schema_version,
             a->mig.applied, a->mig.applied == 1 ? "" : "s");
    char err[CONFIG_ERR_MAX] = "";
    if (app_start_index_builds(a, true, indexes_done, err, sizeof err) != 0)
        app_fatal(a, "index builds", err);
}

const app_step_t app_step_migrate = {.cmd = CLI_CMD_MIGRATE,
                                     .name = "migrate",
                                     .after = APP_AFTER_MIGRATIONS,
                                     .start = migrate_step_start};
