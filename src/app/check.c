/* app_check: the settings checked before any work (see app_check.h). */
#include "app/check.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "db/conninfo.h"
#include "endpoints.h"
#include "mcp/registry.h"
#include "net/addr_policy.h"
#include "toolsets/surface.h"
#include "toolsets/toolset.h"

/* An upstream's base URL: http:// or https://, then a host. */
static int check_url(const char *key, const char *url, char *err, size_t errcap)
{
    const char *rest = strncasecmp(url, "https://", 8) == 0  ? url + 8
                       : strncasecmp(url, "http://", 7) == 0 ? url + 7
                                                             : NULL;
    if (url[0] == '\0')
        return 0;
    if (rest == NULL || rest[0] == '\0' || rest[0] == '/' || strpbrk(url, " \t\r\n") != NULL) {
        snprintf(err, errcap, "%s: '%.200s' is not an http:// or https:// URL with a host", key,
                 url);
        return UV_EINVAL;
    }
    return 0;
}

static int check_conninfo(const char *key, const char *value, char *err, size_t errcap)
{
    if (value[0] == '\0')
        return 0;
    pg_conninfo_t ci;
    char why[CONFIG_ERR_MAX];
    int rc = pg_conninfo_parse(&ci, value, why, sizeof why);
    if (rc != 0) {
        snprintf(err, errcap, "%s: %s", key, why);
        return rc;
    }
    pg_conninfo_free(&ci);
    return 0;
}

/* The allow-list of addresses tools may fetch from: each an address. */
static int check_allow_list(const config_t *cfg, char *err, size_t errcap)
{
    char list[CONFIG_LIST_MAX];
    snprintf(list, sizeof list, "%s", cfg->url_allow_addresses);
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(list, ", ", &save); tok;
         tok = strtok_r(NULL, ", ", &save)) {
        struct sockaddr_in6 a6;
        struct sockaddr_in a4;
        if (++n > ADDR_POLICY_ALLOW_MAX) {
            snprintf(err, errcap, "--url-allow-addresses: at most %d addresses",
                     ADDR_POLICY_ALLOW_MAX);
            return UV_EINVAL;
        }
        if (uv_ip4_addr(tok, 0, &a4) != 0 && uv_ip6_addr(tok, 0, &a6) != 0) {
            snprintf(err, errcap, "--url-allow-addresses: '%.100s' is not an IP address", tok);
            return UV_EINVAL;
        }
    }
    return 0;
}

int app_check_config(const config_t *cfg, cli_command_t command, char *err, size_t errcap)
{
    int rc;
    if ((rc = check_conninfo("--db", cfg->db_url, err, errcap)) != 0 ||
        (rc = check_conninfo("--db-ro", cfg->db_ro_url, err, errcap)) != 0 ||
        (rc = check_conninfo("--memory-db", cfg->memory_db, err, errcap)) != 0 ||
        (rc = check_url("--telegram-api-url", cfg->telegram_api_url, err, errcap)) != 0 ||
        (rc = check_url("--bluesky-service", cfg->bluesky_service, err, errcap)) != 0 ||
        (rc = check_allow_list(cfg, err, errcap)) != 0)
        return rc;
    if ((command == CLI_CMD_BACKUP || command == CLI_CMD_RESTORE) && cfg->db_external) {
        snprintf(err, errcap,
                 "%s is for the embedded cluster; with an existing PostgreSQL (--db, "
                 "DATABASE_URL, PG* variables) use its own tools (pg_dump, pg_basebackup, "
                 "point-in-time recovery) and copy DATA_DIR/media and the keys: see "
                 "docs/deployment.md, \"Backing up an existing PostgreSQL\"",
                 command == CLI_CMD_BACKUP ? "parleyd backup" : "parleyd restore");
        return UV_EINVAL;
    }
    if (command != CLI_CMD_SERVE)
        return 0;
    const mcp_toolset_t *available[MCP_REGISTRY_MAX_TOOLSETS + 1];
    toolsets_mcp_list(available, MCP_REGISTRY_MAX_TOOLSETS + 1);
    mcp_registry_t reg;
    char why[CONFIG_ERR_MAX];
    if ((rc = mcp_registry_build(&reg, available, cfg->toolsets, cfg->read_only, why,
                                 sizeof why)) != 0) {
        snprintf(err, errcap, "--toolsets: %s", why);
        return rc;
    }
    if ((rc = mcp_registry_set_default(&reg, surface_default, surface_default_count, why,
                                       sizeof why)) != 0) {
        snprintf(err, errcap, "%s", why);
        mcp_registry_free(&reg);
        return rc;
    }
    rc = endpoints_check(cfg, &reg, err, errcap);
    mcp_registry_free(&reg);
    return rc;
}
