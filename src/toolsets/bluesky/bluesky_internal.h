/* bluesky_internal: what the bluesky toolset's files share: the context,
 * the answer helpers, and the login handler (login.c). */
#ifndef PARLEY_TOOLSETS_BLUESKY_INTERNAL_H
#define PARLEY_TOOLSETS_BLUESKY_INTERNAL_H

#include <jansson.h>

#include "mcp/call.h"
#include "toolsets/toolset.h"
#include "transport/secret_page.h"

/* Where the password page is, for the model and the user. */
#define BSKY_APP_PASSWORDS_URL "https://bsky.app/settings/app-passwords"

typedef struct bs_ctx_s {
    archive_t *archive;
    connector_t *conn;           /* "bluesky" */
    secret_page_server_t *pages; /* URL-mode elicitation pages, or NULL */
} bs_ctx_t;

/* Finishes c with markdown as the text and structured (stolen) as
 * structuredContent. */
void bs_finish(mcp_call_t *c, const char *markdown, json_t *structured);

/* Finishes c with isError for a connector failure (status, error). */
void bs_fail(mcp_call_t *c, int status, const char *error);

/* The call's string argument key, or NULL when absent or empty. */
const char *bs_arg(const mcp_call_t *c, const char *key);

/* The login tool. */
void bs_login(mcp_call_t *c);

#endif
