/* connectors: how the entry starts connectors, and the table of them
 * (connectors.c, like toolsets.c for toolsets). Each connector has a
 * definition {name, wanted, open, close, free}: wanted says from the
 * settings (and the capabilities the selected toolsets use) whether it
 * runs; open starts it and everything it owns (its HTTP client, its bot,
 * its job classes); close ends it (calls back once); free releases it
 * after the loop has ended. The entry walks the table at start and closes
 * what it opened in reverse order; it never names a connector.
 *
 * Adding a connector: its files in src/upstream/ defining a
 * connector_def_t (and its connector_ops_t, connector.h), its settings in
 * config.c's table, and one line in connectors.c. */
#ifndef PARLEY_UPSTREAM_CONNECTORS_H
#define PARLEY_UPSTREAM_CONNECTORS_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "db/conninfo.h"
#include "db/pool.h"
#include "upstream/connector.h"

struct net_client_s;

/* What a connector is started from (borrowed for its life). */
typedef struct connector_env_s {
    uv_loop_t *loop;
    pg_pool_t *rw;                 /* the read-write pool */
    const pg_conninfo_t *conninfo; /* for a connector that needs its own connection */
    struct net_client_s *fetch;    /* URLs tools give, under the address policy */
    const char *data_dir;          /* the daemon's data directory (DATA_DIR/media: files) */
    /* A setting by its key as text into out ("" when unset): a connector
     * reads its own keys ("telegram_bot_token"). 0, or UV_ENOENT for a
     * key that does not exist. */
    int (*setting)(const void *data, const char *key, char *out, size_t cap);
    const void *setting_data;
    unsigned caps_wanted; /* the CONNECTOR_CAN_* the selected toolsets use */
    /* This daemon among those on the database (host:pid:random): what its
     * claims are recorded under (see sync/jobs.h, presence). */
    const char *owner;
} connector_env_t;

/* How a login asks its user (parleyd login: a prompt on stdout, a line of
 * stdin). ask prints question and calls answer(adata, line) once with the
 * line without its newline, or NULL at the end of input or on a stop.
 * secret: the answer is a password (not echoed where it can say so). */
typedef struct connector_prompt_s {
    void (*ask)(void *pdata, const char *question, bool secret,
                void (*answer)(void *adata, const char *line), void *adata);
    void *pdata;
} connector_prompt_t;

/* A login's end: status 0 and message (the line to print: who signed in),
 * or a negative code and message saying why it failed. */
typedef void (*connector_login_cb)(void *data, int status, const char *message);

typedef struct connector_def_s {
    const char *name; /* "telegram" */
    /* Its job executors use what its close frees (the Telegram bot): it is
     * closed after the job runner has stopped. Else (Bluesky) it is closed
     * before the runner, cancelling its requests, so that its running jobs
     * end at once instead of holding the stop. */
    bool closes_after_jobs;
    __attribute__((warn_unused_result)) bool (*wanted)(const connector_env_t *env);
    /* Starts the connector: *obj is its state (for close and free), *conn
     * its interface (valid until free). 0, or a negative code with err
     * saying why (nothing is left to close; free(*obj) still runs when
     * *obj was set). */
    int (*open)(const connector_env_t *env, void **obj, connector_t **conn, char *err,
                size_t errcap);
    /* Ends what it runs (requests in flight are cancelled); cb(data) once
     * when nothing is left on the loop. */
    void (*close)(void *obj, void (*cb)(void *data), void *data);
    void (*free)(void *obj); /* NULL-safe */
    /* parleyd login NAME: the NAME (NULL: the connector has no login
     * command) and the login, which signs an account in interactively
     * through prompt (settings as for open: "phone", "account") and calls
     * done once. *obj is closed and freed with close and free. 0, or a
     * negative code with err (done is not called). */
    const char *login_name;
    /* The setting the login cannot do without ("phone"), checked with the
     * other settings before any work (a usage error); NULL: none. */
    const char *login_requires;
    /* Checks the login's settings (env's setting alone: no loop, no pool,
     * no database yet) before the database starts, so a login that
     * cannot work is refused with no cluster made: 0, or a negative code
     * with err naming what is missing. NULL: none. */
    int (*login_check)(const connector_env_t *env, char *err, size_t errcap);
    int (*login)(const connector_env_t *env, const connector_prompt_t *prompt,
                 connector_login_cb done, void *data, void **obj, char *err, size_t errcap);
} connector_def_t;

/* Every connector compiled in, ending with NULL. */
extern const connector_def_t *const connectors_table[];

/* The connector whose login command is name, or NULL. */
const connector_def_t *connectors_find_login(const char *name);

/* The setting key of env as text, or "" (out is returned). */
const char *connector_env_text(const connector_env_t *env, const char *key, char *out, size_t cap);
/* The setting key of env as an integer, or 0. */
long connector_env_int(const connector_env_t *env, const char *key);

#endif
