/* sqltool: a tool answered by its SQL function (see sqltool.h). */
#include "toolsets/sqltool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void run_cancel(mcp_call_t *c)
{
    if (c->data)
        archive_call_cancel(c->data);
}

bool sqltool_run(mcp_call_t *c, archive_t *ar, archive_mode_t mode, const char *fn,
                 const char *args_json, const char *ctx_json, archive_call_cb cb, void *data)
{
    char *args = args_json ? strdup(args_json) : json_dumps(c->args, JSON_COMPACT);
    archive_call_t *op = NULL;
    int rc = args ? archive_call(ar, mode, fn, args, ctx_json, cb, data, &op) : UV_ENOMEM;
    free(args);
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
    case ARCHIVE_ERR_BUSY:
        mcp_call_finish_error(c, "The archive is busy or unreachable (%s); retry in a moment.",
                              message);
        return;
    default:
        mcp_call_finish_error(c, "The archive could not answer: %s", message);
    }
}

void sqltool_done(void *data, int status, const char *json, archive_err_t err, const char *message)
{
    mcp_call_t *c = data;
    c->data = NULL;
    c->on_cancel = NULL;
    if (status != 0)
        sqltool_fail(c, err, message);
    else
        mcp_call_finish_json(c, json, strlen(json));
}

archive_mode_t sqltool_mode(const mcp_call_t *c)
{
    return (c->tool->def->annotations & MCP_TOOL_READ_ONLY) ? ARCHIVE_READ : ARCHIVE_WRITE;
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
