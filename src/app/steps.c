/* app steps: the table of the entry's commands (steps.h). */
#include "app/steps.h"

#include <stddef.h>

static const app_step_t *const steps[] = {
    &app_step_serve,     &app_step_migrate, &app_step_import,  &app_step_login,
    &app_step_bootstrap, &app_step_backup,  &app_step_restore,
};

const app_step_t *app_step_find(cli_command_t cmd)
{
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i]->cmd == cmd)
            return steps[i];
    return NULL;
}
