/* listen: LISTEN/NOTIFY connection (see listen.h). */
#include "db/listen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pg_listen_s {
    pg_pool_t *pool;
    pg_listen_cb cb;
    pg_listen_close_cb close_cb;
    void *data;
    int nchannels;
    /* "LISTEN name" statements, NULL-terminated, for the pool's setup. */
    char *setup[PG_LISTEN_MAX_CHANNELS + 1];
};

static bool channel_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

static void on_notify(pg_pool_t *pool, const char *channel, const char *payload)
{
    pg_listen_t *l = pg_pool_get_data(pool);
    l->cb(l, channel, payload);
}

static void listen_free(pg_listen_t *l)
{
    for (int i = 0; i < l->nchannels; i++)
        free(l->setup[i]);
    free(l);
}

int pg_listen_start(uv_loop_t *loop, const pg_conninfo_t *conninfo, const char *const *channels,
                    uint32_t connect_timeout_ms, pg_listen_cb cb, void *data, pg_listen_t **out,
                    char *err, size_t errcap)
{
    pg_listen_t *l = calloc(1, sizeof *l);
    if (l == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    l->cb = cb;
    l->data = data;
    for (int i = 0; channels[i]; i++) {
        /* LISTEN takes an identifier, not a parameter: only names that
         * need no quoting are accepted. */
        if (i == PG_LISTEN_MAX_CHANNELS || !channel_name_ok(channels[i])) {
            snprintf(err, errcap, "bad LISTEN channel '%s' (want [a-z_][a-z0-9_]*, at most %d)",
                     channels[i], PG_LISTEN_MAX_CHANNELS);
            listen_free(l);
            return UV_EINVAL;
        }
        size_t n = strlen(channels[i]) + 8;
        if ((l->setup[i] = malloc(n)) == NULL) {
            listen_free(l);
            snprintf(err, errcap, "out of memory");
            return UV_ENOMEM;
        }
        snprintf(l->setup[i], n, "LISTEN %s", channels[i]);
        l->nchannels++;
    }
    pg_pool_config_t pc = {
        .name = "listen",
        .size = 1,
        .queue_max = 16,
        .query_timeout_ms = 10000,
        .connect_timeout_ms = connect_timeout_ms,
        .setup_sql = (const char *const *)l->setup,
        .on_notify = on_notify,
    };
    int rc = pg_pool_new(loop, &pc, conninfo, &l->pool, err, errcap);
    if (rc != 0) {
        listen_free(l);
        return rc;
    }
    pg_pool_set_data(l->pool, l);
    *out = l;
    return 0;
}

void *pg_listen_data(const pg_listen_t *l)
{
    return l->data;
}

pg_pool_t *pg_listen_pool(pg_listen_t *l)
{
    return l->pool;
}

static void listen_pool_closed(pg_pool_t *pool)
{
    pg_listen_t *l = pg_pool_get_data(pool);
    if (l->close_cb)
        l->close_cb(l);
    listen_free(l);
}

void pg_listen_close(pg_listen_t *l, pg_listen_close_cb cb)
{
    l->close_cb = cb;
    pg_pool_close(l->pool, listen_pool_closed);
}
