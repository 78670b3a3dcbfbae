/* tokens: the bearer tokens of --token-file. One token per line:
 *
 *     TOKEN [toolsets=a,b] [read_only] [metrics]
 *
 * '#' starts a comment. A token with toolsets= may use only those toolsets;
 * read_only limits it to read-only tools; /metrics answers a token with
 * full access (neither of them) or one marked metrics. Tokens are compared
 * in constant time and never logged; a token is at least 16 characters. */
#ifndef PARLEY_TRANSPORT_TOKENS_H
#define PARLEY_TRANSPORT_TOKENS_H

#include <stdbool.h>
#include <stddef.h>

#include "mcp/session.h"

#define TOKENS_MAX      1024
#define TOKEN_MIN_LEN   16
#define TOKEN_MAX_LEN   256
#define TOKENS_FILE_MAX (1024 * 1024)

typedef struct token_s {
    char secret[TOKEN_MAX_LEN + 1];
    size_t len;
    char toolsets[256]; /* "" = every served toolset */
    bool read_only;
    bool metrics; /* may read /metrics though narrowed */
} token_t;

typedef struct tokens_s {
    token_t *tokens;
    int n;
} tokens_t;

/* Loads path (read once at start; a regular file that others cannot read,
 * util/secret_file.h). Returns 0, or a negative code with err naming the
 * file and line (never the token). */
int tokens_load(tokens_t *t, const char *path, char *err, size_t errcap);
void tokens_free(tokens_t *t);

/* Finds the token presented in an Authorization header value ("Bearer
 * X"); NULL when absent or unknown. */
const token_t *tokens_check(const tokens_t *t, const char *header, size_t len);

/* True when tok may read /metrics: full access (every toolset, not
 * read-only) or marked metrics. */
__attribute__((warn_unused_result)) bool tokens_may_read_metrics(const token_t *tok);

/* Applies a token's limits to a session against the served registry.
 * Returns 0, or UV_EINVAL with err when it names a toolset not served. */
int tokens_policy(const token_t *tok, const mcp_registry_t *r, mcp_policy_t *out, char *err,
                  size_t errcap);

#endif
