/* sqltool: what most tools of every toolset do: the tool's SQL function
 * answers (archive_call) with the call's arguments and a context the
 * toolset builds, and a failure becomes an isError in words for the model.
 * The call can be cancelled while the query runs. */
#ifndef PARLEY_TOOLSETS_SQLTOOL_H
#define PARLEY_TOOLSETS_SQLTOOL_H

#include <stdbool.h>

#include "archive/archive.h"
#include "mcp/call.h"
#include "mcp/registry.h"

/* Runs fn (args_json NULL: the call's own arguments) in mode; cb gets
 * data. A SQLTOOL_SEARCH tool's "query" (with its "fuzzy" flag) must pass
 * sqltool_query_bounded first, and any tool's "regex" sqltool_regex_allowed;
 * a call with a regex runs under the archive's regex time limit, and its
 * search waits its principal's turn (mcp_call_principal). Returns false when it could not start (c
 * is finished then). */
bool sqltool_run(mcp_call_t *c, archive_t *ar, archive_mode_t mode, const char *fn,
                 const char *args_json, const char *ctx_json, archive_call_cb cb, void *data);

/* Finishes c with the archive's failure (err, message) for the model. */
void sqltool_fail(mcp_call_t *c, archive_err_t err, const char *message);
/* The archive answered c: the call's in-flight pointers (data,
 * on_cancel) cleared; true when it succeeded, false after a failure (c
 * finished with it, as sqltool_fail does). */
__attribute__((warn_unused_result)) bool sqltool_answered(mcp_call_t *c, int status,
                                                          archive_err_t err, const char *message);

/* An archive_call_cb for data = the call: finishes it with the JSON or
 * the failure. */
void sqltool_done(void *data, int status, const char *json, archive_err_t err, const char *message);

/* As sqltool_done, for a SQL function that adds "text" (a string: the
 * answer to read) to its JSON: the text becomes the content, the rest the
 * structured content. JSON without a string "text" is answered as is. */
void sqltool_done_text(void *data, int status, const char *json, archive_err_t err,
                       const char *message);

/* Checks the regex argument key of c (absent passes) before any SQL
 * runs: one holding a back-reference (archive/regex_guard.h) finishes c
 * with an isError saying what to write instead, and false is returned. */
__attribute__((warn_unused_result)) bool sqltool_regex_allowed(mcp_call_t *c, const char *key);

/* Checks at start that every tool of ts names a valid SQL function (the
 * static table cannot). 0, or UV_EINVAL with err naming the tool. */
int sqltool_check_table(const mcp_toolset_t *ts, char *err, size_t errcap);

/* Not an MCP annotation (the registry lists only the four hints): a tool
 * of a toolset's table marked so runs a full-text search; sqltool_mode
 * runs it in ARCHIVE_SEARCH, where at most search_max_conns searches hold
 * a read-only connection at once. */
#define SQLTOOL_SEARCH 0x100u

/* The mode a tool's SQL runs in: the read-only pool for readOnlyHint
 * tools (its search class for SQLTOOL_SEARCH ones), else the read-write
 * one. */
__attribute__((warn_unused_result)) archive_mode_t sqltool_mode(const mcp_call_t *c);

/* What one search may ask for, counted before it reaches the database
 * (words of every phrase together; a CJK run without spaces is one word):
 * every word costs a lookup in the indexes, and fuzzy matching and
 * expansion multiply it. */
#define SQLTOOL_SEARCH_WORDS_MAX       32 /* words of a query */
#define SQLTOOL_SEARCH_WORDS_MAX_SLOW  12 /* with fuzzy matching or expansion */
#define SQLTOOL_SEARCH_WORDS_MAX_SLOW2 6  /* with both */
#define SQLTOOL_SEARCH_WORD_CHARS_MAX  64 /* characters of one word */

/* Checks the query argument key of c (a string, or an array of strings)
 * against the limits above for a search with fuzzy matching and/or
 * expansion. Returns true, or finishes c with an isError that says what
 * to shorten and returns false. An absent query passes. */
__attribute__((warn_unused_result)) bool sqltool_query_bounded(mcp_call_t *c, const char *key,
                                                               bool fuzzy, bool expand);

#endif
