/* bluesky_internal: what the bluesky toolset's files share: the context,
 * the answer helpers, and the login's parts (login.c, login_rounds.c). */
#ifndef PARLEY_TOOLSETS_BLUESKY_INTERNAL_H
#define PARLEY_TOOLSETS_BLUESKY_INTERNAL_H

#include <jansson.h>

#include "mcp/call.h"
#include "toolsets/login_rounds.h"
#include "toolsets/toolset.h"
#include "transport/secret_page.h"

/* Where the password page is, for the model and the user. */
#define BSKY_APP_PASSWORDS_URL "https://bsky.app/settings/app-passwords"

/* Password pages of 2026-07-28 logins open at once on this daemon. */
#define BS_PENDING_MAX 32
/* How often a daemon that does not hold the page asks the store. */
#define BS_LOGIN_POLL_MS 1000

typedef struct bs_ctx_s {
    archive_t *archive;
    connector_t *conn;           /* "bluesky" */
    secret_page_server_t *pages; /* URL-mode elicitation pages, or NULL */
    login_rounds_t logins;       /* 2026-07-28 logins' pages (of bs_login_ops) */
} bs_ctx_t;

/* Finishes c with markdown as the text and structured (stolen) as
 * structuredContent. */
void bs_finish(mcp_call_t *c, const char *markdown, json_t *structured);

/* Finishes c with isError for a connector failure (status, error). */
void bs_fail(mcp_call_t *c, int status, const char *error);

/* Tells a verify password page (secret_page.h) what came of the login
 * with the password typed there: status, account_json and error as
 * connector_login's callback gives them, handle the account asked for.
 * Bluesky refused the password (UV_EACCES) and retry: the form again,
 * saying so, and true (the page takes another try). Otherwise the page
 * shows "Signed in as @handle" or why the login failed, is finished (dead)
 * and false. */
bool bs_page_report(secret_page_t *page, const char *handle, int status, const char *account_json,
                    const char *error, bool retry);

/* The call's string argument key, or NULL when absent or empty. */
const char *bs_arg(const mcp_call_t *c, const char *key);

/* The login tool. */
void bs_login(mcp_call_t *c);

/* True when h is an AT Protocol handle or a DID (login.c). */
__attribute__((warn_unused_result)) bool bs_handle_valid(const char *h);

/* login_rounds.c: the login without a password under 2026-07-28, by
 * multi round-trip requests (handle: the argument, or NULL to ask it). */
void bs_login_rounds(mcp_call_t *c, const char *handle);
/* Its part of the logins of several rounds (toolsets/login_rounds.h). */
extern const login_rounds_ops_t bs_login_ops;
/* Finishes a login with its account (the connector's JSON): "Logged in
 * to Bluesky as @handle ...". */
void bs_finish_logged_in(mcp_call_t *c, const char *account_json);

/* The form asking for the handle (elicitation/create's params). */
json_t *bs_handle_form(void);
/* The handle the user gave in that form (answer, an ElicitResult:
 * borrowed from it); NULL when c is finished: the user said no, or it is
 * no handle. */
const char *bs_handle_answer(mcp_call_t *c, const json_t *answer);

/* What the page and its request add when service (a service the model
 * named, NULL: none) gets the password: a warning ("" without one);
 * trust: and to type it only if the user trusts it. */
void bs_service_warning(const char *service, bool trust, char *out, size_t cap);
/* The page request's message (URL mode) for handle, warning appended. */
void bs_page_message(const char *handle, const char *warning, char *out, size_t cap);
/* Opens the verify password page for handle at service (NULL: the
 * operator's) on port (0: any), warning appended to its text; as
 * secret_page_open. */
int bs_page_open(const bs_ctx_t *ctx, const char *handle, const char *service, int port,
                 const char *warning, secret_page_cb cb, void *data, char *url, size_t urlcap,
                 secret_page_t **page);

#endif
