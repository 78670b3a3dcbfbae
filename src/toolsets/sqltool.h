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
 * data. Returns false when it could not start (c is finished then). */
bool sqltool_run(mcp_call_t *c, archive_t *ar, archive_mode_t mode, const char *fn,
                 const char *args_json, const char *ctx_json, archive_call_cb cb, void *data);

/* Finishes c with the archive's failure (err, message) for the model. */
void sqltool_fail(mcp_call_t *c, archive_err_t err, const char *message);

/* An archive_call_cb for data = the call: finishes it with the JSON or
 * the failure. */
void sqltool_done(void *data, int status, const char *json, archive_err_t err, const char *message);

/* Checks at start that every tool of ts names a valid SQL function (the
 * static table cannot). 0, or UV_EINVAL with err naming the tool. */
int sqltool_check_table(const mcp_toolset_t *ts, char *err, size_t errcap);

/* The mode a tool's SQL runs in: the read-only pool for readOnlyHint
 * tools, else the read-write one. */
__attribute__((warn_unused_result)) archive_mode_t sqltool_mode(const mcp_call_t *c);

#endif
