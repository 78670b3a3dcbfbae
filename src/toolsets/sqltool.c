/* sqltool: a tool answered by its SQL function (see sqltool.h). */
#include "toolsets/sqltool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive/regex_guard.h"
#include "util/buf.h"
#include "util/json_out.h"

/* The arguments' text is bounded by the request that carried them
 * (max_message_bytes); this only bounds the buffer. */
#define SQLTOOL_ARGS_MAX ((size_t)1 << 30)

static void run_cancel(mcp_call_t *c)
{
    if (c->data)
        archive_call_cancel(c->data);
}

bool sqltool_run(mcp_call_t *c, archive_t *ar, archive_mode_t mode, const char *fn,
                 const char *args_json, const char *ctx_json, archive_call_cb cb, void *data)
{
    if (c->tool != NULL && (c->tool->def->annotations & SQLTOOL_SEARCH) &&
        !sqltool_query_bounded(c, "query", json_is_true(json_object_get(c->args, "fuzzy")), false))
        return false;
    if (!sqltool_regex_allowed(c, "regex"))
        return false;
    const char *rx = json_string_value(json_object_get(c->args, "regex"));
    archive_call_opts_t opts = {.principal = mcp_call_principal(c), .regex = rx && rx[0]};
    buf_t args;
    buf_init(&args, SQLTOOL_ARGS_MAX);
    int rc = args_json ? 0 : json_out_append(&args, c->args);
    archive_call_t *op = NULL;
    if (rc == 0)
        rc = archive_call_opts(ar, mode, &opts, fn, args_json ? args_json : args.data, ctx_json, cb,
                               data, &op);
    buf_free(&args);
    if (rc == UV_EBUSY) {
        /* The pool's queue is full (db_queue_max): the bound on queries
         * waiting for a connection, answered at once. */
        mcp_call_finish_error(c, "The archive is busy: as many queries as it queues (db_queue_max) "
                                 "already wait for a database connection; retry in a moment.");
        return false;
    }
    if (rc != 0) {
        mcp_call_finish_error(c, "The archive is busy (%s); retry in a moment.", uv_strerror(rc));
        return false;
    }
    c->data = op;
    c->on_cancel = run_cancel;
    return true;
}

void sqltool_fail(mcp_call_t *c, archive_err_t err, const char *message)
{
    switch (err) {
    case ARCHIVE_ERR_ARGUMENT:
    case ARCHIVE_ERR_CONNECTOR:
        mcp_call_finish_error(c, "%s", message);
        return;
    case ARCHIVE_ERR_TOO_SLOW:
        mcp_call_finish_error(c,
                              "regex: matching it took too long (%s; search_regex_timeout_ms), "
                              "so the search was stopped. Make it cheaper: anchor it or start "
                              "it with literal text, avoid nested or stacked quantifiers such "
                              "as (a+)+ or .*.*, and narrow the search with query words, "
                              "channelIds or dates.",
                              message);
        return;
    case ARCHIVE_ERR_BUSY:
        mcp_call_finish_error(c, "The archive is busy or unreachable (%s); retry in a moment.",
                              message);
        return;
    default:
        mcp_call_finish_error(c, "The archive could not answer: %s", message);
    }
}

bool sqltool_answered(mcp_call_t *c, int status, archive_err_t err, const char *message)
{
    c->data = NULL;
    c->on_cancel = NULL;
    if (status == 0)
        return true;
    sqltool_fail(c, err, message);
    return false;
}

void sqltool_done(void *data, int status, const char *json, archive_err_t err, const char *message)
{
    mcp_call_t *c = data;
    if (sqltool_answered(c, status, err, message))
        mcp_call_finish_json(c, json, strlen(json));
}

void sqltool_done_text(void *data, int status, const char *json, archive_err_t err,
                       const char *message)
{
    mcp_call_t *c = data;
    if (!sqltool_answered(c, status, err, message))
        return;
    json_t *v = json_loads(json, 0, NULL);
    json_t *text = json_object_get(v, "text");
    if (!json_is_string(text)) {
        json_decref(v);
        mcp_call_finish_json(c, json, strlen(json));
        return;
    }
    json_t *content = json_pack("[{s:s, s:O}]", "type", "text", "text", text);
    json_object_del(v, "text");
    mcp_call_finish_result(c, json_pack("{s:o, s:o}", "content", content, "structuredContent", v));
}

archive_mode_t sqltool_mode(const mcp_call_t *c)
{
    unsigned a = c->tool->def->annotations;
    if (!(a & MCP_TOOL_READ_ONLY))
        return ARCHIVE_WRITE;
    return (a & SQLTOOL_SEARCH) ? ARCHIVE_SEARCH : ARCHIVE_READ;
}

/* Adds the words of s to *words and the longest word's characters to
 * *longest. Words end at white space, '/' and ',' (the separators of the
 * chatwise phrases) and at the quotes and operators of web-search
 * syntax. */
static void count_words(const char *s, int *words, int *longest)
{
    int len = 0;
    for (const unsigned char *p = (const unsigned char *)s;; p++) {
        bool sep = *p == '\0' || strchr(" \t\r\n/,\"()|", *p) != NULL;
        if (!sep) {
            if ((*p & 0xC0) != 0x80)
                len++;
            continue;
        }
        if (len > 0) {
            (*words)++;
            if (len > *longest)
                *longest = len;
        }
        len = 0;
        if (*p == '\0')
            break;
    }
}

bool sqltool_query_bounded(mcp_call_t *c, const char *key, bool fuzzy, bool expand)
{
    const json_t *q = json_object_get(c->args, key);
    int words = 0, longest = 0;
    if (json_is_string(q)) {
        count_words(json_string_value(q), &words, &longest);
    } else if (json_is_array(q)) {
        size_t i;
        const json_t *e;
        json_array_foreach(q, i, e)
        {
            if (json_is_string(e))
                count_words(json_string_value(e), &words, &longest);
        }
    }
    int max = fuzzy && expand     ? SQLTOOL_SEARCH_WORDS_MAX_SLOW2
              : (fuzzy || expand) ? SQLTOOL_SEARCH_WORDS_MAX_SLOW
                                  : SQLTOOL_SEARCH_WORDS_MAX;
    if (longest > SQLTOOL_SEARCH_WORD_CHARS_MAX) {
        mcp_call_finish_error(c,
                              "%s: a word of %d characters; at most %d: shorten it (a run of "
                              "CJK text without spaces counts as one word)",
                              key, longest, SQLTOOL_SEARCH_WORD_CHARS_MAX);
        return false;
    }
    if (words > max) {
        mcp_call_finish_error(c,
                              "%s: %d words in all; this search takes at most %d (%d, %d with "
                              "fuzzy matching or expansion, %d with both): keep the words "
                              "that matter, or split the search over several calls",
                              key, words, max, SQLTOOL_SEARCH_WORDS_MAX,
                              SQLTOOL_SEARCH_WORDS_MAX_SLOW, SQLTOOL_SEARCH_WORDS_MAX_SLOW2);
        return false;
    }
    return true;
}

bool sqltool_regex_allowed(mcp_call_t *c, const char *key)
{
    const char *rx = json_string_value(json_object_get(c->args, key));
    size_t at = 0;
    if (rx == NULL || !archive_regex_has_backref(rx, &at))
        return true;
    mcp_call_finish_error(c,
                          "%s: \\%.1s at character %zu is a back-reference, which the "
                          "archive refuses: PostgreSQL matches it by trying every way to "
                          "split the text, which can take minutes. Write out what it should "
                          "repeat instead (e.g. (ab)\\1 as abab or (ab){2}); for a literal "
                          "digit after a backslash use [1].",
                          key, rx + at + 1, at + 1);
    return false;
}

int sqltool_check_table(const mcp_toolset_t *ts, char *err, size_t errcap)
{
    for (int i = 0; i < ts->ntools; i++) {
        const mcp_tool_def_t *d = &ts->tools[i];
        if (!archive_fn_valid(d->sql_function)) {
            snprintf(err, errcap, "%s: tool %s names no valid SQL function", ts->name, d->name);
            return UV_EINVAL;
        }
    }
    return 0;
}
