/* connectors: the connectors compiled in (see connectors.h), and reading
 * a connector's settings from its environment. */
#include "upstream/connectors.h"

#include <stdlib.h>

#include "upstream/bsky.h"
#include "upstream/tg_connector.h"

const connector_def_t *const connectors_table[] = {
    &tg_connector_def,
    &bsky_connector_def,
    NULL,
};

const char *connector_env_text(const connector_env_t *env, const char *key, char *out, size_t cap)
{
    if (cap == 0)
        return out;
    out[0] = '\0';
    if (env->setting == NULL || env->setting(env->setting_data, key, out, cap) != 0)
        out[0] = '\0';
    return out;
}

long connector_env_int(const connector_env_t *env, const char *key)
{
    char v[32];
    return strtol(connector_env_text(env, key, v, sizeof v), NULL, 10);
}
