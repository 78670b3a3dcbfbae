/* endpoints: the MCP endpoints of serve (see endpoints.h). With bearer
 * tokens (token_file), every endpoint but a unix: socket (created 0600,
 * owner-only) needs one: an http(s):// endpoint checks it on every
 * request, and a tcp:// endpoint, whose newline-delimited sessions cannot
 * carry one, is refused before anything binds. allow_anonymous names the
 * loopback endpoints served without a token all the same. */
#include "endpoints.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/conn.h"
#include "transport/endpoint.h"
#include "transport/listener.h"
#include "transport/tls.h"
#include "transport/tokens.h"
#include "util/log.h"
#include "util/strutil.h"
#include "util/secret_file.h"

#define EP_TAG "main"

struct endpoints_s {
    uv_loop_t *loop;
    endpoints_config_t ec;
    listener_t *listeners[ENDPOINTS_MAX];
    int nlisteners;
    http_server_t *https[ENDPOINTS_MAX]; /* kept until disposed after the loop */
    int nhttp;
    tokens_t tokens;
    tls_ctx_t *tls;
    conn_t *stdio;
    bool closing;
    int parts; /* listeners, HTTP servers and stdio still closing */
    void (*close_cb)(void *data);
    void *close_data;
};

static void part_closed(endpoints_t *e)
{
    if (--e->parts == 0 && e->close_cb)
        e->close_cb(e->close_data);
}

static void listener_closed(listener_t *l)
{
    part_closed(l->data);
}

static void http_closed(http_server_t *hs)
{
    part_closed(http_server_get_data(hs));
}

static void stdio_closed(conn_t *c)
{
    endpoints_t *e = c->data;
    conn_free(c);
    free(c);
    e->stdio = NULL;
    if (e->closing) {
        part_closed(e);
        return;
    }
    log_info(EP_TAG, "stdin ended: shutting down");
    if (e->ec.stdio_ended)
        e->ec.stdio_ended(e->ec.data);
}

static int start_stdio(endpoints_t *e, char *err, size_t errcap)
{
    conn_t *c = malloc(sizeof *c);
    if (c == NULL || conn_init(c, e->loop, e->ec.mcp, "stdio", stdio_closed, e) != 0) {
        free(c);
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    e->stdio = c;
    int rc = conn_open_fd(c, 0, true);
    if (rc == 0)
        rc = conn_open_fd(c, 1, false);
    if (rc == 0)
        rc = conn_start(c);
    if (rc != 0) {
        snprintf(err, errcap, "stdin/stdout: %s", uv_strerror(rc));
        conn_close(c);
        return rc;
    }
    log_info(EP_TAG, "serving MCP on stdin/stdout");
    return 0;
}

/* Marks the endpoints allow_anonymous names (each as written in listen):
 * anon[i] for eps[i]. A name that is no endpoint, or names one beyond
 * loopback, is an error. */
static int parse_anonymous(const config_t *cfg, const endpoint_t *eps, int n, bool *anon, char *err,
                           size_t errcap)
{
    char list[CONFIG_LIST_MAX];
    snprintf(list, sizeof list, "%s", cfg->allow_anonymous);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        tok = str_trim(tok);
        if (*tok == '\0')
            continue;
        int found = -1;
        for (int i = 0; i < n && found < 0; i++)
            if (strcmp(eps[i].text, tok) == 0)
                found = i;
        if (found < 0) {
            snprintf(err, errcap,
                     "--allow-anonymous: '%.200s' is not one of the listen endpoints (write it as "
                     "in listen)",
                     tok);
            return UV_EINVAL;
        }
        if (!endpoint_is_loopback(&eps[found])) {
            snprintf(err, errcap,
                     "--allow-anonymous: %s is not a loopback endpoint; only this machine's "
                     "clients may go without a token",
                     eps[found].text);
            return UV_EACCES;
        }
        anon[found] = true;
    }
    return 0;
}

/* A listen value that is wrong: err names it by its flag, whichever
 * place it came from ("--listen: foo: unknown endpoint ..."), as every
 * other setting's error does. Returns rc. */
static int listen_error(char *err, size_t errcap, const char *why, int rc)
{
    snprintf(err, errcap, "--listen: %s", why);
    return rc;
}

/* Checks every --listen value (and allow_anonymous) before anything
 * binds; anon[i]: eps[i] is served without a token. */
static int parse_endpoints(const config_t *cfg, endpoint_t *eps, bool *anon, int *n, char *err,
                           size_t errcap)
{
    char list[CONFIG_LIST_MAX], why[2 * CONFIG_ERR_MAX]; /* an endpoint (300) and why */
    snprintf(list, sizeof list, "%s", cfg->listen);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        tok = str_trim(tok);
        if (*tok == '\0')
            continue;
        if (*n == ENDPOINTS_MAX) {
            snprintf(why, sizeof why, "at most %d endpoints", ENDPOINTS_MAX);
            return listen_error(err, errcap, why, UV_EINVAL);
        }
        endpoint_t *ep = &eps[*n];
        int rc = endpoint_parse(ep, tok, why, sizeof why);
        if (rc != 0)
            return listen_error(err, errcap, why, rc);
        if (ep->kind == ENDPOINT_TCP && cfg->tls_cert[0])
            ep->tls = true;
        if (ep->tls && (cfg->tls_cert[0] == '\0' || cfg->tls_key[0] == '\0')) {
            snprintf(why, sizeof why, "%s: TLS needs --tls-cert FILE and --tls-key FILE", ep->text);
            return listen_error(err, errcap, why, UV_EINVAL);
        }
        if (!endpoint_is_loopback(ep) && ep->kind == ENDPOINT_TCP) {
            /* Newline-delimited sessions carry no credentials: only local
             * clients may use them. */
            snprintf(why, sizeof why,
                     "%s: tcp:// endpoints bind to loopback only (they carry no bearer token); "
                     "serve remote clients on https:// with --token-file",
                     ep->text);
            return listen_error(err, errcap, why, UV_EACCES);
        }
        if (!endpoint_is_loopback(ep) && cfg->token_file[0] == '\0') {
            snprintf(why, sizeof why,
                     "%s: refusing to listen beyond loopback without bearer tokens; bind to "
                     "127.0.0.1 or [::1], or configure --token-file",
                     ep->text);
            return listen_error(err, errcap, why, UV_EACCES);
        }
        anon[*n] = false;
        (*n)++;
    }
    int rc = parse_anonymous(cfg, eps, *n, anon, err, errcap);
    if (rc != 0 || cfg->token_file[0] == '\0')
        return rc;
    for (int i = 0; i < *n; i++) {
        if (eps[i].kind == ENDPOINT_TCP && !anon[i]) {
            /* With tokens, any local user could use every tool on it. */
            snprintf(why, sizeof why,
                     "%s: with --token-file every endpoint but a unix: socket needs a bearer "
                     "token, and a tcp:// endpoint cannot carry one; serve it as "
                     "http://HOST:PORT/PATH, or name it in --allow-anonymous to let any local "
                     "user reach it without a token",
                     eps[i].text);
            return listen_error(err, errcap, why, UV_EACCES);
        }
    }
    return 0;
}

/* The certificate and key are regular files (a FIFO is refused, never
 * waited on) and the key follows secret_file's mode rule, checked at
 * start before TLS reads them. */
static int check_tls_files(const config_t *cfg, char *err, size_t errcap)
{
    int fd;
    struct stat st;
    int rc = secret_file_open(cfg->tls_cert, 0, "tls_cert", &fd, &st, err, errcap);
    if (rc != 0)
        return rc;
    close(fd);
    rc = secret_file_open(cfg->tls_key, SECRET_FILE_PRIVATE, "tls_key", &fd, &st, err, errcap);
    if (rc == 0)
        close(fd);
    return rc;
}

int endpoints_check(const config_t *cfg, const mcp_registry_t *registry, char *err, size_t errcap)
{
    endpoint_t eps[ENDPOINTS_MAX];
    bool anon[ENDPOINTS_MAX];
    int n = 0;
    int rc = parse_endpoints(cfg, eps, anon, &n, err, errcap);
    if (rc == 0 && cfg->tls_cert[0] && cfg->tls_key[0])
        rc = check_tls_files(cfg, err, errcap);
    if (rc != 0 || cfg->token_file[0] == '\0')
        return rc;
    tokens_t tokens;
    memset(&tokens, 0, sizeof tokens);
    if ((rc = tokens_load(&tokens, cfg->token_file, err, errcap)) == 0) {
        for (int i = 0; i < tokens.n && rc == 0; i++) {
            mcp_policy_t pol;
            rc = tokens_policy(&tokens.tokens[i], registry, &pol, err, errcap);
        }
    }
    tokens_free(&tokens);
    return rc;
}

int endpoints_start(uv_loop_t *loop, const endpoints_config_t *ec, endpoints_t **out, char *err,
                    size_t errcap)
{
    endpoints_t *e = calloc(1, sizeof *e);
    *out = e;
    if (e == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    e->loop = loop;
    e->ec = *ec;
    const config_t *cfg = ec->cfg;
    endpoint_t eps[ENDPOINTS_MAX];
    bool anon[ENDPOINTS_MAX];
    int neps = 0;
    int rc = parse_endpoints(cfg, eps, anon, &neps, err, errcap);
    if (rc != 0)
        return rc;
    if (cfg->tls_cert[0] && cfg->tls_key[0]) {
        e->tls = tls_ctx_new_server(cfg->tls_cert, cfg->tls_key, err, errcap);
        if (e->tls == NULL)
            return UV_EINVAL;
    }
    if (cfg->token_file[0] && (rc = tokens_load(&e->tokens, cfg->token_file, err, errcap)) != 0)
        return rc;
    for (int i = 0; i < e->tokens.n; i++) {
        mcp_policy_t pol;
        if ((rc = tokens_policy(&e->tokens.tokens[i], &ec->mcp->registry, &pol, err, errcap)) != 0)
            return rc;
    }
    for (int i = 0; i < neps; i++) {
        if (anon[i] && e->tokens.n > 0 && eps[i].kind != ENDPOINT_UNIX)
            log_warn(EP_TAG, "%s: served without a token (allow_anonymous)", eps[i].text);
        if (eps[i].kind == ENDPOINT_HTTP) {
            http_options_t ho = {
                .tokens = e->tokens.n > 0 && !anon[i] ? &e->tokens : NULL,
                .allowed_origins = cfg->allowed_origins,
                .metrics = ec->metrics,
                .metrics_data = ec->metrics_data,
                .ssl_ctx = eps[i].tls ? tls_ctx_native(e->tls) : NULL,
                .max_pending_conns = cfg->http_max_pending_conns,
            };
            http_server_t *hs = NULL;
            rc = http_server_start(loop, ec->mcp, &eps[i], &ho, &hs, err, errcap);
            if (hs) {
                http_server_set_data(hs, e);
                e->https[e->nhttp++] = hs;
            }
            if (rc != 0)
                return rc;
            continue;
        }
        listener_t *l;
        rc = listener_start(loop, ec->mcp, &eps[i], eps[i].tls ? e->tls : NULL, &l, err, errcap);
        if (rc != 0)
            return rc;
        l->data = e;
        e->listeners[e->nlisteners++] = l;
    }
    if (cfg->stdio && (rc = start_stdio(e, err, errcap)) != 0)
        return rc;
    if (!cfg->stdio && neps == 0)
        log_info(EP_TAG, "no MCP endpoint configured (use --stdio or --listen)");
    return 0;
}

void endpoints_close(endpoints_t *e, void (*cb)(void *data), void *data)
{
    e->closing = true;
    e->close_cb = cb;
    e->close_data = data;
    e->parts = 1; /* held until every close is issued */
    for (int i = 0; i < e->nlisteners; i++) {
        e->parts++;
        listener_close(e->listeners[i], listener_closed);
    }
    e->nlisteners = 0;
    for (int i = 0; i < e->nhttp; i++) {
        e->parts++;
        http_server_close(e->https[i], http_closed);
    }
    if (e->stdio) {
        e->parts++;
        conn_end(e->stdio);
    }
    part_closed(e);
}

bool endpoints_hold_loop(const endpoints_t *e)
{
    return e != NULL && e->nhttp > 0;
}

bool endpoints_dispose(endpoints_t *e)
{
    if (e == NULL)
        return false;
    for (int i = 0; i < e->nhttp; i++)
        http_server_dispose(e->https[i]);
    return e->nhttp > 0;
}

void endpoints_free(endpoints_t *e)
{
    if (e == NULL)
        return;
    tokens_free(&e->tokens);
    tls_ctx_free(e->tls);
    free(e);
}
