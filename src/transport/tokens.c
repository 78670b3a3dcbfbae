/* tokens: bearer tokens from --token-file (see tokens.h). */
#include "transport/tokens.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "util/secret_file.h"
#include "util/strutil.h"

int tokens_load(tokens_t *t, const char *path, char *err, size_t errcap)
{
    memset(t, 0, sizeof *t);
    /* Read once at start-up, before the loop serves; bounded in size.
     * Opened without blocking, a regular file under secret_file's mode
     * rule (it holds secrets). */
    struct stat st;
    FILE *f = NULL;
    int orc = secret_file_fopen(path, SECRET_FILE_PRIVATE, "token file", &f, &st, err, errcap);
    if (orc != 0)
        return orc;
    t->tokens = calloc(TOKENS_MAX, sizeof *t->tokens);
    if (t->tokens == NULL) {
        fclose(f);
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    char line[1024];
    int lineno = 0, rc = 0;
    size_t total = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        total += strlen(line);
        if (total > TOKENS_FILE_MAX) {
            snprintf(err, errcap, "token file %s: larger than %d bytes", path, TOKENS_FILE_MAX);
            rc = UV_E2BIG;
            break;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *save = NULL, *word = strtok_r(line, " \t\r\n", &save);
        if (word == NULL)
            continue;
        if (t->n == TOKENS_MAX) {
            snprintf(err, errcap, "token file %s: more than %d tokens", path, TOKENS_MAX);
            rc = UV_E2BIG;
            break;
        }
        token_t *tok = &t->tokens[t->n];
        size_t len = strlen(word);
        if (len < TOKEN_MIN_LEN || len > TOKEN_MAX_LEN) {
            snprintf(err, errcap, "%s:%d: a token must be %d to %d characters long", path, lineno,
                     TOKEN_MIN_LEN, TOKEN_MAX_LEN);
            rc = UV_EINVAL;
            break;
        }
        memcpy(tok->secret, word, len + 1);
        tok->len = len;
        while (rc == 0 && (word = strtok_r(NULL, " \t\r\n", &save)) != NULL) {
            if (strncmp(word, "toolsets=", 9) == 0 &&
                str_copy(tok->toolsets, sizeof tok->toolsets, word + 9))
                continue;
            if (strcmp(word, "read_only") == 0 || strcmp(word, "read-only") == 0) {
                tok->read_only = true;
                continue;
            }
            if (strcmp(word, "metrics") == 0) {
                tok->metrics = true;
                continue;
            }
            snprintf(err, errcap,
                     "%s:%d: unknown option '%.40s' (toolsets=a,b, read_only or metrics)", path,
                     lineno, word);
            rc = UV_EINVAL;
        }
        if (rc == 0)
            t->n++;
    }
    fclose(f);
    if (rc == 0 && t->n == 0) {
        snprintf(err, errcap, "token file %s: no tokens", path);
        rc = UV_EINVAL;
    }
    if (rc != 0)
        tokens_free(t);
    return rc;
}

void tokens_free(tokens_t *t)
{
    if (t->tokens)
        memset(t->tokens, 0, TOKENS_MAX * sizeof *t->tokens);
    free(t->tokens);
    memset(t, 0, sizeof *t);
}

/* Compares without an early exit, so timing does not reveal a prefix. */
static bool same_secret(const token_t *tok, const char *p, size_t len)
{
    unsigned char diff = (unsigned char)(tok->len != len);
    for (size_t i = 0; i < tok->len; i++)
        diff |= (unsigned char)(tok->secret[i] ^ (i < len ? p[i] : 0));
    return diff == 0;
}

const token_t *tokens_check(const tokens_t *t, const char *header, size_t len)
{
    if (header == NULL || len < 7 || strncasecmp(header, "Bearer ", 7) != 0)
        return NULL;
    header += 7;
    len -= 7;
    while (len > 0 && (header[len - 1] == ' ' || header[len - 1] == '\t'))
        len--;
    const token_t *found = NULL;
    for (int i = 0; i < t->n; i++)
        if (same_secret(&t->tokens[i], header, len) && found == NULL)
            found = &t->tokens[i];
    return found;
}

bool tokens_may_read_metrics(const token_t *tok)
{
    return tok->metrics || (tok->toolsets[0] == '\0' && !tok->read_only);
}

int tokens_policy(const token_t *tok, const mcp_registry_t *r, mcp_policy_t *out, char *err,
                  size_t errcap)
{
    out->read_only = tok->read_only;
    out->toolset_mask = ~0u;
    if (tok->toolsets[0] == '\0')
        return 0;
    out->toolset_mask = 0;
    char list[sizeof tok->toolsets];
    memcpy(list, tok->toolsets, sizeof list);
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name;
         name = strtok_r(NULL, ",", &save)) {
        int i;
        for (i = 0; i < r->ntoolsets; i++)
            if (strcmp(r->toolsets[i]->name, name) == 0)
                break;
        if (i == r->ntoolsets) {
            snprintf(err, errcap, "a token names toolset '%.60s', which is not served", name);
            return UV_EINVAL;
        }
        out->toolset_mask |= 1u << i;
    }
    return 0;
}
