/* http_principal: who a Streamable HTTP request is (see http_internal.h):
 * the owner its session counts against (its token; without one, this
 * endpoint) and whether one more may open (max_sessions and the owner's
 * principal_session_share); the toolsets its path selects (the endpoint's
 * path: the server's default; PATH/NAME[,NAME...]: those whole); and the
 * token's policy and principal applied to a new session. */
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include <h2o.h>

#include "mcp/jsonrpc.h"
#include "mcp/session.h"
#include "transport/http_internal.h"
#include "util/strutil.h"

void http__owner_of(const http_server_t *hs, const token_t *tok, char *out, size_t cap)
{
    if (tok != NULL && hs->opt.tokens != NULL)
        snprintf(out, cap, "token:%td", tok - hs->opt.tokens->tokens);
    else if (hs->anon_owner[0] != '\0' && strlen(hs->anon_owner) < cap)
        memcpy(out, hs->anon_owner, strlen(hs->anon_owner) + 1);
    else
        snprintf(out, cap, "endpoint:%p", (const void *)hs);
}

bool http__admit(http_server_t *hs, h2o_req_t *req, const token_t *tok, const json_t *id)
{
    char owner[64], msg[300];
    http__owner_of(hs, tok, owner, sizeof owner);
    mcp_admit_t a = mcp_server_admit_owner(hs->srv, owner);
    if (a == MCP_ADMIT_OK)
        return true;
    int status = a == MCP_ADMIT_SHARE ? 429 : 503;
    if (a == MCP_ADMIT_SHARE)
        snprintf(msg, sizeof msg,
                 "too many open sessions and streams for %s: %d, its share of max_sessions "
                 "(principal_session_share); close one (a subscriptions/listen stream, a "
                 "session) or retry later",
                 tok ? "this token" : "clients without a token on this endpoint",
                 mcp_server_owner_open(hs->srv, owner));
    else
        snprintf(msg, sizeof msg, "too many sessions (max_sessions); retry later");
    http__add_header(req, "retry-after", "1", 1);
    size_t len = 0;
    char *e = jsonrpc_error(id, JSONRPC_SERVER_BUSY, msg, NULL, &len);
    http__send_body(req, status, status == 429 ? "Too Many Requests" : "Service Unavailable",
                    "application/json", e ? e : "", e ? len : 0);
    free(e);
    return false;
}

int http__selection(const http_server_t *hs, const char *path, size_t len, unsigned *mask,
                    bool *brief, char *err, size_t errcap)
{
    const mcp_registry_t *r = &hs->srv->registry;
    size_t base = strlen(hs->ep.http_path);
    /* "/" as the endpoint's path: its selections are /NAME. */
    size_t cut = base == 1 ? 0 : base;
    if (len < base || memcmp(path, hs->ep.http_path, base) != 0 ||
        (len > base && path[cut] != '/')) {
        snprintf(err, errcap, "Not Found: the MCP endpoint is %s", hs->ep.http_path);
        return UV_ENOENT;
    }
    *mask = MCP_REGISTRY_ALL_TOOLSETS;
    *brief = hs->srv->default_brief;
    if (len <= cut + 1)
        return 0;
    *mask = 0;
    *brief = false;
    for (size_t i = cut + 1; i <= len;) {
        size_t end = i;
        while (end < len && path[end] != ',')
            end++;
        size_t n = end - i;
        int k = -1;
        for (int t = 0; t < r->ntoolsets && t < MCP_REGISTRY_MAX_TOOLSETS; t++)
            if (strlen(r->toolsets[t]->name) == n && memcmp(r->toolsets[t]->name, path + i, n) == 0)
                k = t;
        if (n == 3 && memcmp(path + i, "all", 3) == 0) {
            *mask = MCP_REGISTRY_ALL_TOOLSETS;
        } else if (k < 0) {
            char known[256] = "";
            size_t off = 0;
            for (int t = 0; t < r->ntoolsets && off < sizeof known; t++)
                off += (size_t)snprintf(known + off, sizeof known - off, "%s%s", t ? ", " : "",
                                        r->toolsets[t]->name);
            snprintf(err, errcap,
                     "Not Found: no toolset '%.*s' here (this server serves: %s; or all; "
                     "%s alone serves the default)",
                     (int)(n < 64 ? n : 64), path + i, known, hs->ep.http_path);
            return UV_ENOENT;
        } else {
            *mask |= 1u << k;
        }
        i = end + 1;
    }
    return 0;
}

void http__apply_token(http_server_t *hs, hsess_t *h, const token_t *tok, h2o_req_t *req)
{
    char why[8];
    unsigned mask = MCP_REGISTRY_ALL_TOOLSETS;
    bool brief = hs->srv->default_brief;
    /* The path was checked when the request arrived (on_req). */
    if (http__selection(hs, req->path_normalized.base, req->path_normalized.len, &mask, &brief, why,
                        sizeof why) != 0)
        mask = 0;
    h->select_mask = mask;
    h->select_brief = brief;
    mcp_session_set_selection(h->session, mask, brief);
    char owner[64];
    http__owner_of(hs, tok, owner, sizeof owner);
    mcp_session_set_owner(h->session, owner);
    h->token = tok;
    if (tok == NULL)
        return;
    /* The principal a 2026-07-28 requestState is bound to: a digest of
     * the token, never the token. */
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    char principal[65] = "";
    if (EVP_Digest(tok->secret, tok->len, md, &mdlen, EVP_sha256(), NULL) == 1 && mdlen >= 32)
        str_hex(md, 32, principal);
    mcp_session_set_principal(h->session, principal);
    /* Checked at start; should it fail now, the session gets nothing
     * rather than everything. */
    mcp_policy_t pol = {.toolset_mask = 0, .read_only = true};
    char err[160];
    if (tokens_policy(tok, &hs->srv->registry, &pol, err, sizeof err) != 0)
        pol = (mcp_policy_t){.toolset_mask = 0, .read_only = true};
    mcp_session_set_policy(h->session, &pol);
}
