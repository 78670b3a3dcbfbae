/* toolset: a tool surface as the entry point sees it: its static MCP table
 * (tools, resources, prompts; see mcp/registry.h) and the context its
 * handlers get (mcp_call_context), built at start from the daemon's
 * environment and freed at stop. The MCP engine never names a toolset: the
 * entry point hands the registry the table of toolsets (toolsets.c) and
 * sets each selected one's context.
 *
 * Adding a toolset: a folder src/toolsets/NAME/ defining a toolset_t and
 * one line in toolsets.c. A toolset reaches the store only through
 * archive/archive.h and upstreams only through upstream/connector.h. */
#ifndef PARLEY_TOOLSETS_TOOLSET_H
#define PARLEY_TOOLSETS_TOOLSET_H

#include <stddef.h>
#include <uv.h>

#include "archive/archive.h"
#include "archive/memory_source.h"
#include "archive/uploads.h"
#include "mcp/registry.h"
#include "upstream/connector.h"

#define TOOLSET_MAX_CONNECTORS 8
/* The longest path a toolset keeps (a root under the data directory). */
#define TOOLSET_PATH_MAX 1040
/* The longest search text (query, regex) a tool takes, in characters: the
 * cost of matching grows with it (quadratically for fuzzy matching), and
 * a longer one is refused by name instead of holding the database. */
#define TOOL_QUERY_MAX "1000"

/* What a toolset's context is built from (borrowed for the daemon's life):
 * what toolsets use of the settings, not the settings themselves (the
 * entry layer's config.h stays above them). */
typedef struct toolset_env_s {
    uv_loop_t *loop;
    const char *data_dir;    /* the daemon's data directory (DATA_DIR/media: the media store) */
    const char *export_root; /* where mediaDownload may write; "": DATA_DIR/exports */
    const char *upload_root; /* where messagesSendFile may read; "": DATA_DIR/uploads */
    const char *timezone;    /* the user's time zone: an IANA name or a UTC offset */
    archive_t *archive;      /* the store */
    uploads_t *uploads;      /* files given to send (files_upload) */
    memory_source_t *memory; /* an agent's past (--memory-db), or NULL */
    /* One-time local pages for secrets (URL-mode elicitation), or NULL. */
    struct secret_page_server_s *pages;
    connector_t *connectors[TOOLSET_MAX_CONNECTORS];
    int nconnectors;
    /* The daemon's own figures as a JSON object (malloc'd), for status
     * tools; NULL when none. */
    char *(*status_json)(void *data);
    void *status_data;
} toolset_env_t;

/* Receives one URI a change of the store touched. */
typedef void (*toolset_uri_cb)(const char *uri, void *data);

typedef struct toolset_s {
    const mcp_toolset_t *mcp;
    /* The connector capabilities its tools use (CONNECTOR_CAN_*): the
     * entry starts a connector the settings leave optional (Bluesky) only
     * when a selected toolset uses what it offers. */
    unsigned caps;
    /* Builds the context (NULL: the toolset has none) and checks what the
     * static tables cannot (a tool's SQL function name). Returns 0, or a
     * negative code with err saying what is wrong. */
    int (*open)(const toolset_env_t *env, void **ctx, char *err, size_t errcap);
    void (*close)(void *ctx);
    /* The toolset's resources a change of the store touched: event is
     * what the store said (src/db/sql/events.sql: {"chats": [ids],
     * "messages": [[chat, id], ...]}); calls updated for each URI. NULL:
     * its resources do not follow the store. */
    void (*store_changed)(const json_t *event, toolset_uri_cb updated, void *data);
    /* When the default selection ("auto") serves the toolset: when the
     * store holds data of one of auto_sources (comma-separated names of
     * src/db/sql/sources.sql, as parley_sources_present answers them), or
     * when one of auto_settings (comma-separated setting keys) is set
     * other than by its default. Both NULL: always. */
    const char *auto_sources;
    const char *auto_settings;
} toolset_t;

/* Every toolset compiled in (each toolset's own row, toolset_<name>,
 * declared in its header), NULL-terminated. A new toolset is its folder
 * plus one entry here. */
extern const toolset_t *const toolsets_table[];

/* The MCP tables of toolsets_table into out, NULL-terminated (at most
 * cap - 1 of them), as mcp_registry_build takes them. */
void toolsets_mcp_list(const mcp_toolset_t **out, int cap);

/* A notification of the store (its JSON payload) to every toolset's
 * store_changed. A payload that is not a JSON object is ignored. */
void toolsets_store_changed(const char *payload, toolset_uri_cb updated, void *data);

/* The first connector that declares any of caps (CONNECTOR_CAPS_CHAT: a
 * message service), or NULL. */
connector_t *toolset_env_connector(const toolset_env_t *env, unsigned caps);

/* {"timezone": the timezone setting, "UTC" when unset}: the context SQL
 * functions get for date words in arguments, made once per toolset.
 * Malloc'd; NULL on ENOMEM (or a timezone that is not UTF-8). */
char *toolset_env_sql_ctx(const toolset_env_t *env);

#endif
