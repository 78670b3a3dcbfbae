/* connectors: the connectors compiled in (see connectors.h), and reading
 * a connector's settings from its environment. */
#include "upstream/connectors.h"

#include <stdlib.h>

#include "upstream/bluesky/bsky.h"
#include "upstream/telegram/bot/tg_connector.h"
#include "upstream/telegram/user/tg_user.h"

#include <string.h>

/* The Bot API first: a verb both can do (sending) goes through the bot;
 * the user account does what the bot cannot. */
const connector_def_t *const connectors_table[] = {
    &tg_connector_def,
    &tg_user_connector_def,
    &bsky_connector_def,
    NULL,
};

const connector_def_t *connectors_find_login(const char *name)
{
    for (int i = 0; name && connectors_table[i]; i++)
        if (connectors_table[i]->login_name && strcmp(connectors_table[i]->login_name, name) == 0)
            return connectors_table[i];
    return NULL;
}

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
