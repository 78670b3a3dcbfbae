/* files: files_upload (bytes in base64 or a data: URL, or a URL fetched
 * under the address policy, stored by archive/uploads) and
 * messages_send_media (a stored file sent through the connector). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolsets/inline/inline_internal.h"
#include "toolsets/sqltool.h"
#include "util/beneath.h"

static void upload_cancel(mcp_call_t *c)
{
    uploads_op_t *op = c->data;
    c->data = NULL;
    if (op)
        uploads_cancel(op); /* uploaded() runs with UV_ECANCELED */
}

static void uploaded(void *data, int status, const char *json, const char *error)
{
    mcp_call_t *c = data;
    c->data = NULL;
    c->on_cancel = NULL;
    if (status != 0)
        mcp_call_finish_error(c, "files_upload: %s", error ? error : uv_strerror(status));
    else
        mcp_call_finish_json(c, json, strlen(json));
}

void inline_files_upload(mcp_call_t *c)
{
    inline_ctx_t *ic = inline_ctx(c);
    /* A NUL inside a string would cut it short where C reads it: the rest
     * would be dropped silently. */
    static const char *const texts[] = {"base64", "url", "fileName", "mimeType"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        json_t *v = json_object_get(c->args, texts[i]);
        if (json_is_string(v) && strlen(json_string_value(v)) != json_string_length(v)) {
            mcp_call_finish_error(
                c, "files_upload: %s contains a NUL character (U+0000); remove it", texts[i]);
            return;
        }
    }
    const char *b64 = json_string_value(json_object_get(c->args, "base64"));
    const char *url = json_string_value(json_object_get(c->args, "url"));
    if ((b64 == NULL) == (url == NULL)) {
        mcp_call_finish_error(c, "give exactly one of base64 (the bytes, or a data: URL) and url "
                                 "(https)");
        return;
    }
    if (ic->uploads == NULL) {
        mcp_call_finish_error(c, "files_upload is off in this daemon");
        return;
    }
    char err[512];
    uploads_op_t *op = NULL;
    int rc = uploads_put(ic->uploads, url ? url : b64, url != NULL,
                         json_string_value(json_object_get(c->args, "fileName")),
                         json_string_value(json_object_get(c->args, "mimeType")), uploaded, c, &op,
                         err, sizeof err);
    if (rc != 0) {
        mcp_call_finish_error(c, "files_upload: %s", err);
        return;
    }
    c->data = op;
    c->on_cancel = upload_cancel;
}

/* ---- messages_send_media ------------------------------------------------------ */

static void media_sent(void *data, int status, const char *json, const char *error)
{
    mcp_call_t *c = data;
    if (status != 0) {
        mcp_call_finish_error(c, "messages_send_media failed: %s",
                              error ? error : uv_strerror(status));
        return;
    }
    json_t *out = inline__sent_message(json);
    char *text = out ? json_dumps(out, JSON_COMPACT) : NULL;
    json_decref(out);
    if (text == NULL) {
        mcp_call_finish_error(c, "out of memory");
        return;
    }
    mcp_call_finish_json(c, text, strlen(text));
    free(text);
}

/* The stored file being opened for a call: t is the target record. */
typedef struct media_open_s {
    mcp_call_t *call;
    json_t *t;
} media_open_t;

/* The stored file was opened (on the thread pool, under the media store,
 * no symbolic link followed, a regular file): the descriptor goes to the
 * connector. */
static void media_opened(void *data, int status, uint64_t size)
{
    media_open_t *mo = data;
    mcp_call_t *c = mo->call;
    json_t *t = mo->t;
    free(mo);
    (void)size;
    if (status < 0) {
        mcp_call_finish_error(c,
                              "messages_send_media failed: the stored file %s cannot be read (%s); "
                              "upload it again with files_upload",
                              json_string_value(json_object_get(t, "localPath")),
                              uv_strerror(status));
        json_decref(t);
        return;
    }
    inline_ctx_t *ic = inline_ctx(c);
    connector_t *conn = ic->conn;
    /* The connector owns the descriptor from here on. */
    int rc = connector_send_file(conn, json_integer_value(json_object_get(t, "chatId")), status,
                                 json_string_value(json_object_get(c->args, "caption")),
                                 json_string_value(json_object_get(t, "fileName")), 0,
                                 json_integer_value(json_object_get(c->args, "replyToMessageId")),
                                 media_sent, c);
    json_decref(t);
    if (rc == UV_EBUSY)
        mcp_call_finish_error(c, "Too many messages are waiting to be sent; retry in a moment.");
    else if (rc != 0)
        mcp_call_finish_error(c, "messages_send_media failed: %s", uv_strerror(rc));
}

static void target_found(void *data, int status, const char *json, archive_err_t err,
                         const char *message)
{
    mcp_call_t *c = data;
    if (!sqltool_answered(c, status, err, message))
        return;
    inline_ctx_t *ic = inline_ctx(c);
    json_error_t je;
    json_t *t = json_loads(json, 0, &je);
    const char *local = json_string_value(json_object_get(t, "localPath"));
    if (local == NULL) {
        json_decref(t);
        mcp_call_finish_error(c, "messages_send_media failed: the file has no stored copy");
        return;
    }
    media_open_t *mo = malloc(sizeof *mo);
    int rc = UV_ENOMEM;
    if (mo != NULL) {
        *mo = (media_open_t){.call = c, .t = t};
        rc = beneath_open_read_async(mcp_call_loop(c), ic->media_root, local, 0, media_opened, mo);
    }
    if (rc != 0) {
        free(mo);
        json_decref(t);
        mcp_call_finish_error(c, "messages_send_media failed: %s", uv_strerror(rc));
    }
}

void inline_messages_send_media(mcp_call_t *c)
{
    inline_ctx_t *ic = inline_ctx(c);
    if (ic->conn == NULL) {
        inline_tool(c); /* the SQL function checks the chat and the file, then says why not */
        return;
    }
    const char *why = connector_why_not(ic->conn, CONNECTOR_CAN_SEND);
    if (why != NULL) {
        mcp_call_finish_error(c, "%s", why);
        return;
    }
    sqltool_run(c, ic->archive, ARCHIVE_READ, "parley_inline_media_target", NULL, ic->sql_ctx,
                target_found, c);
}
