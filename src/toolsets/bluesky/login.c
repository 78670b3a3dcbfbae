/* login: the bluesky toolset's login tool (see bluesky.h).
 *
 * With a password it logs in at once. Without one it asks the user
 * through the client (MCP elicitation, revision 2025-11-25): the handle by
 * a form (when it was not given), then the app password by URL mode: a
 * one-time page on loopback (transport/secret_page.h) the user opens, so
 * the secret never passes through the client or the model ("servers MUST
 * NOT use form mode to request sensitive information such as passwords").
 * The call ends when a password typed on the page logs in (the page then
 * says "Signed in"; a password Bluesky refuses is reported on the page,
 * which takes another try while the call waits), when the login fails
 * otherwise, when the user declines or cancels, when the page expires
 * (after a refusal the answer says so), or when the call is cancelled. A client that cannot elicit
 * (or has no URL mode) gets isError guidance and nothing is asked. Under 2026-07-28 the same login
 * runs by multi round-trip requests (login_rounds.c, which holds what
 * both share: the handle's form, the password page and its words).
 *
 * Lifetime: a login_t lives until its call is finished, its page is gone
 * and its connector login has called back. */
#include <openssl/crypto.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolsets/bluesky/bluesky_internal.h"
#include "util/strutil.h"

/* One state enum per login in progress. */
typedef enum {
    LG_HANDLE = 0, /* the form for the handle is out */
    LG_URL,        /* the URL elicitation is out; the page is open */
    LG_PAGE,       /* the user accepted: waiting for the page */
    LG_LOGIN,      /* the connector logs in */
    LG_DONE,       /* the call is finished */
} lg_state_t;

typedef struct login_s {
    mcp_call_t *c;
    bs_ctx_t *ctx;
    lg_state_t state;
    char *handle;
    char *service; /* NULL: the operator's */
    int port;
    secret_page_t *page;
    bool login_running;
    bool url_mode;  /* the password came through the page */
    bool accepted;  /* the client accepted the URL elicitation during a login */
    bool cancelled; /* the call was cancelled during a login from the page */
    char *refused;  /* Bluesky's last refusal of a password typed on the page */
    char elicitation_id[40];
} login_t;

static const char *const no_elicitation_guidance =
    "This client cannot ask for the password safely: it did not declare MCP elicitation "
    "with URL mode, which parley needs to open a local password page (a password must never "
    "go through a chat form). Nothing was asked and nothing was stored.\n\n"
    "To log in, call login again with handle and password, where password is a Bluesky app "
    "password, never the main account password: create one at " BSKY_APP_PASSWORDS_URL
    " (Settings > Privacy and security > App passwords); it can be revoked there at any "
    "time. Where the client offers OAuth sign-in, prefer it.";

static void login_maybe_free(login_t *lg)
{
    if (lg->state != LG_DONE || lg->page != NULL || lg->login_running)
        return;
    free(lg->handle);
    free(lg->service);
    free(lg->refused);
    free(lg);
}

/* Ends the call (once) and closes the page. */
static void login_end(login_t *lg)
{
    lg->state = LG_DONE;
    if (lg->page) {
        /* Its callback runs from inside, sees LG_DONE and frees lg. */
        secret_page_cancel(lg->page);
        return;
    }
    login_maybe_free(lg);
}

static void login_end_error(login_t *lg, const char *msg)
{
    mcp_call_finish_error(lg->c, "%s", msg);
    login_end(lg);
}

/* An outcome that is not an error: the user said no. */
static void login_end_outcome(login_t *lg, const char *status, const char *text)
{
    bs_finish(lg->c, text, json_pack("{s:s}", "status", status));
    login_end(lg);
}

static void logged_in(void *data, int status, const char *json, const char *error)
{
    login_t *lg = data;
    lg->login_running = false;
    if (lg->state == LG_DONE) { /* cannot happen: the call waits for us */
        login_maybe_free(lg);
        return;
    }
    if (lg->page != NULL) { /* a verify page checks the password it took */
        if (bs_page_report(lg->page, lg->handle, status, json, error, !lg->cancelled)) {
            /* Refused: the page takes another try, the call waits on. */
            free(lg->refused);
            lg->refused = strdup(error ? error : "Bluesky refused the login");
            lg->state = lg->accepted ? LG_PAGE : LG_URL;
            return;
        }
        lg->page = NULL;
    }
    if (status != 0) {
        char msg[900];
        if (status == UV_EACCES)
            snprintf(msg, sizeof msg,
                     "%s. Check the handle, and use an app password (" BSKY_APP_PASSWORDS_URL
                     "), never the main account password.",
                     error ? error : "Bluesky refused the login");
        else if (status == UV_EINVAL)
            snprintf(msg, sizeof msg,
                     "The service URL was refused: %s. Give an https URL of a "
                     "public Bluesky PDS, or leave service out.",
                     error ? error : "");
        else
            snprintf(msg, sizeof msg, "%s", error ? error : uv_strerror(status));
        if (status == UV_EAGAIN || status == UV_EACCES || status == UV_EINVAL)
            login_end_error(lg, msg);
        else {
            bs_fail(lg->c, status, error);
            login_end(lg);
        }
        return;
    }
    if (lg->url_mode) /* "the server MAY send notifications/elicitation/complete" */
        mcp_call_notify(lg->c, "notifications/elicitation/complete",
                        json_pack("{s:s}", "elicitationId", lg->elicitation_id));
    bs_finish_logged_in(lg->c, json);
    login_end(lg);
}

/* The tool call was cancelled while the page waits (not while the client
 * is asked: that answer comes as UV_ECANCELED). */
static void login_cancelled(mcp_call_t *c)
{
    login_t *lg = c->data;
    if (lg->state == LG_PAGE && lg->page)
        secret_page_cancel(lg->page); /* page_done ends the call */
    else if (lg->state == LG_LOGIN)
        lg->cancelled = true; /* the login's answer ends the call */
}

static void login_start(login_t *lg, const char *secret)
{
    bs_ctx_t *ctx = lg->ctx;
    lg->state = LG_LOGIN;
    lg->login_running = true;
    int rc = connector_login(ctx->conn, lg->handle, secret, lg->service, logged_in, lg);
    if (rc != 0) {
        lg->login_running = false;
        if (lg->page != NULL) {
            bs_page_report(lg->page, lg->handle, rc, NULL, uv_strerror(rc), false);
            lg->page = NULL;
        }
        bs_fail(lg->c, rc,
                rc == UV_ENOTSUP ? "a service named by a tool needs URL fetching" : NULL);
        login_end(lg);
    }
}

/* ---- the password page -------------------------------------------------- */

static void page_done(secret_page_t *p, int status, const char *secret, void *data)
{
    login_t *lg = data;
    if (status == 0 && lg->state != LG_DONE) {
        login_start(lg, secret); /* the page stays open: logged_in tells it */
        return;
    }
    lg->page = NULL;
    if (status == 0) /* cannot happen: a finished call cancelled its page */
        bs_page_report(p, lg->handle, UV_ECANCELED, NULL, "this login was withdrawn", false);
    if (lg->state == LG_DONE) {
        login_maybe_free(lg);
        return;
    }
    if (lg->login_running)
        return; /* the login's answer ends the call */
    if (status == UV_ETIMEDOUT && lg->refused) {
        char msg[1200];
        snprintf(msg, sizeof msg,
                 "%.600s; the password page expired before a password Bluesky accepted was "
                 "typed. Nothing was stored. Check the handle, and use an app password "
                 "(" BSKY_APP_PASSWORDS_URL "), never the main account password; call login "
                 "again.",
                 lg->refused);
        login_end_error(lg, msg);
    } else if (status == UV_ETIMEDOUT)
        login_end_error(lg, "The password page expired before a password was typed; nothing was "
                            "stored. Call login again.");
    else
        login_end_error(lg, "The password page was closed (parleyd is stopping); nothing was "
                            "stored.");
}

static void url_answered(mcp_call_t *c, int status, const json_t *result, const json_t *error)
{
    login_t *lg = c->data;
    (void)error;
    if (lg->state != LG_URL) { /* the password came first: the login runs */
        const char *a = json_string_value(json_object_get(result, "action"));
        if (status == 0 && a && strcmp(a, "accept") == 0)
            lg->accepted = true; /* a refusal goes on waiting for the page */
        return;
    }
    const char *action = json_string_value(json_object_get(result, "action"));
    if (status == 0 && action && strcmp(action, "accept") == 0) {
        lg->state = LG_PAGE; /* the page's callback goes on */
        return;
    }
    if (status == 0 && action && strcmp(action, "decline") == 0)
        login_end_outcome(lg, "declined",
                          "The user declined to open the password page; nothing was stored. "
                          "Ask before calling login again.");
    else if (status == 0)
        login_end_outcome(lg, "cancelled",
                          "The user dismissed the password request; nothing was stored.");
    else if (status == UV_ETIMEDOUT)
        login_end_error(lg, "The client did not answer the password request in time; nothing "
                            "was stored.");
    else if (status == UV_ECANCELED) {
        mcp_call_finish_error(c, "cancelled");
        login_end(lg);
    } else
        login_end_error(lg, "The client refused the password request (URL elicitation); "
                            "call login with handle and an app password instead.");
}

static void ask_password(login_t *lg)
{
    bs_ctx_t *ctx = lg->ctx;
    uint8_t rnd[16];
    if (uv_random(NULL, NULL, rnd, sizeof rnd, 0, NULL) != 0) {
        login_end_error(lg, "no random bytes for the elicitation id");
        return;
    }
    str_hex(rnd, sizeof rnd, lg->elicitation_id);
    char url[256], warning[700];
    /* A service the model named gets the password: say so, plainly. */
    bs_service_warning(lg->service, true, warning, sizeof warning);
    int rc = bs_page_open(ctx, lg->handle, lg->service, lg->port, warning, page_done, lg, url,
                          sizeof url, &lg->page);
    if (rc != 0) {
        char msg[300];
        if (rc == UV_EADDRINUSE)
            snprintf(msg, sizeof msg, "Port %d is in use; call login with another port (or none).",
                     lg->port);
        else
            snprintf(msg, sizeof msg,
                     "The password page could not be opened (%s); call login with handle and "
                     "an app password instead.",
                     uv_strerror(rc));
        login_end_error(lg, msg);
        return;
    }
    char message[1400];
    bs_page_message(lg->handle, warning, message, sizeof message);
    lg->state = LG_URL;
    lg->url_mode = true;
    rc = mcp_call_request(lg->c, "elicitation", "elicitation/create",
                          json_pack("{s:s, s:s, s:s, s:s}", "mode", "url", "message", message,
                                    "url", url, "elicitationId", lg->elicitation_id),
                          url_answered);
    if (rc != 0)
        login_end_error(lg, no_elicitation_guidance);
}

/* ---- the handle --------------------------------------------------------- */

/* True when h is an AT Protocol handle (a domain name: two or more labels
 * of letters, digits and inner hyphens, 63 bytes each, 253 in all, the
 * last not starting with a digit) or a DID ("did:method:id"). Anything
 * else (a newline, spaces, markup) never reaches a log line, the password
 * page or the service. */
bool bs_handle_valid(const char *h)
{
    size_t n = strlen(h);
    if (strncmp(h, "did:", 4) == 0) {
        const char *m = h + 4, *colon = strchr(m, ':');
        if (n > 2048 || colon == NULL || colon == m || colon[1] == '\0' || h[n - 1] == ':')
            return false;
        for (const char *p = m; p < colon; p++)
            if (*p < 'a' || *p > 'z')
                return false;
        for (const char *p = colon + 1; *p; p++)
            if (!isalnum((unsigned char)*p) && !strchr("._:%-", *p))
                return false;
        return true;
    }
    if (n == 0 || n > 253)
        return false;
    int labels = 0;
    const char *last = h;
    for (const char *p = h;; p++) {
        if (*p == '.' || *p == '\0') {
            size_t len = (size_t)(p - last);
            if (len == 0 || len > 63 || last[0] == '-' || p[-1] == '-')
                return false;
            labels++;
            if (*p == '\0')
                break;
            last = p + 1;
        } else if (!isalnum((unsigned char)*p) && *p != '-') {
            return false;
        }
    }
    return labels >= 2 && !isdigit((unsigned char)last[0]);
}

#define HANDLE_INVALID                                                                             \
    "handle: not a Bluesky handle (e.g. alice.bsky.social) or a DID (did:plc:...); check it and "  \
    "call login again."

static void handle_answered(mcp_call_t *c, int status, const json_t *result, const json_t *error)
{
    login_t *lg = c->data;
    (void)error;
    if (status == UV_ECANCELED) {
        mcp_call_finish_error(c, "cancelled");
        login_end(lg);
        return;
    }
    if (status != 0) {
        login_end_error(lg, status == UV_ETIMEDOUT
                                ? "The client did not answer the handle request in time."
                                : "The client refused the handle request; call login with "
                                  "handle instead.");
        return;
    }
    const char *h = bs_handle_answer(c, result);
    if (h == NULL) {
        login_end(lg);
        return;
    }
    lg->handle = strdup(h);
    if (lg->handle == NULL) {
        login_end_error(lg, "out of memory");
        return;
    }
    ask_password(lg);
}

/* ---- subcommands -------------------------------------------------------- */

static void command_done(void *data, int status, const char *json, const char *error)
{
    mcp_call_t *c = data;
    if (status != 0) {
        bs_fail(c, status, error);
        return;
    }
    const char *cmd = json_string_value(json_object_get(c->args, "command"));
    json_t *v = json_loads(json, 0, NULL);
    char md[4096];
    if (strcmp(cmd, "list") == 0) {
        size_t n = json_array_size(v), off = 0, i;
        json_t *a;
        off += (size_t)snprintf(md, sizeof md, "# Bluesky accounts · %zu\n", n);
        json_array_foreach(v, i, a)
        {
            if (off >= sizeof md - 200)
                break;
            const char *last = json_string_value(json_object_get(a, "lastLoginAt"));
            off += (size_t)snprintf(md + off, sizeof md - off, "- @%s%s · %s · %s%s%s\n",
                                    json_string_value(json_object_get(a, "handle")),
                                    json_is_true(json_object_get(a, "default")) ? " (default)" : "",
                                    json_string_value(json_object_get(a, "did")),
                                    json_string_value(json_object_get(a, "service")),
                                    last ? " · last login " : "", last ? last : "");
        }
        if (n == 0)
            snprintf(md + off, sizeof md - off, "\nNone yet: call login to add one.\n");
        bs_finish(c, md, json_pack("{s:o}", "accounts", v ? v : json_array()));
        return;
    }
    if (strcmp(cmd, "default") == 0) {
        snprintf(md, sizeof md, "@%s is now the default Bluesky account.",
                 json_string_value(json_object_get(v, "handle")));
    } else {
        const char *d = json_string_value(json_object_get(v, "default"));
        snprintf(md, sizeof md,
                 "Forgot @%s: its session is deleted (its posts stay in the archive). %s%s%s",
                 json_string_value(json_object_get(v, "deleted")), d ? "The default is now @" : "",
                 d ? d : "No account is left", d ? "." : ".");
    }
    bs_finish(c, md, v ? v : json_object());
}

void bs_login(mcp_call_t *c)
{
    bs_ctx_t *ctx = mcp_call_context(c);
    const char *cmd = bs_arg(c, "command"), *handle = bs_arg(c, "handle"),
               *pw = bs_arg(c, "password");
    while (handle && *handle == '@')
        handle++;
    if (handle && !bs_handle_valid(handle)) {
        mcp_call_finish_error(c, HANDLE_INVALID);
        return;
    }
    if (cmd) {
        if (strcmp(cmd, "list") != 0 && handle == NULL) {
            mcp_call_finish_error(c,
                                  "login %s needs handle: which account (see login "
                                  "{command: \"list\"}).",
                                  cmd);
            return;
        }
        int rc = connector_accounts(ctx->conn, cmd, handle, command_done, c);
        if (rc != 0)
            bs_fail(c, rc, NULL);
        return;
    }
    if (pw && handle == NULL) {
        mcp_call_finish_error(c, "password without handle: give the handle too "
                                 "(alice.bsky.social).");
        return;
    }
    /* 2026-07-28: round trips instead of requests to the client. */
    if (pw == NULL && mcp_call_can_ask(c) && ctx->pages != NULL &&
        mcp_call_client_has(c, "elicitation", "url") &&
        (handle != NULL || mcp_call_client_has(c, "elicitation", "form"))) {
        bs_login_rounds(c, handle);
        return;
    }
    if (pw == NULL && (!mcp_call_client_has(c, "elicitation", "url") || ctx->pages == NULL ||
                       (handle == NULL && !mcp_call_client_has(c, "elicitation", "form")))) {
        mcp_call_finish_error(c, "%s", no_elicitation_guidance);
        return;
    }
    login_t *lg = calloc(1, sizeof *lg);
    if (lg == NULL) {
        mcp_call_finish_error(c, "out of memory");
        return;
    }
    lg->c = c;
    lg->ctx = ctx;
    c->data = lg;
    c->on_cancel = login_cancelled;
    const char *svc = bs_arg(c, "service");
    lg->service = svc ? strdup(svc) : NULL;
    json_t *port = json_object_get(c->args, "port");
    lg->port = json_is_integer(port) ? (int)json_integer_value(port) : 0;
    if (handle)
        lg->handle = strdup(handle);
    if (pw) {
        login_start(lg, pw);
        return;
    }
    if (lg->handle) {
        ask_password(lg);
        return;
    }
    lg->state = LG_HANDLE;
    int rc =
        mcp_call_request(c, "elicitation", "elicitation/create", bs_handle_form(), handle_answered);
    if (rc != 0)
        login_end_error(lg, no_elicitation_guidance);
}
