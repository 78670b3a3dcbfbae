/* inline_internal: what the files of the inline toolset share (internal):
 * its context and handlers. inline.c builds the context and answers the
 * reading tools and resources from SQL; live.c runs the tools that need
 * the connector (sending, creating chats); files.c files_upload and
 * messages_send_media; tools.c is the table. */
#ifndef PARLEY_TOOLSETS_INLINE_INLINE_INTERNAL_H
#define PARLEY_TOOLSETS_INLINE_INLINE_INTERNAL_H

#include "archive/archive.h"
#include "archive/uploads.h"
#include "mcp/call.h"
#include "toolsets/toolset.h"
#include "upstream/connector.h"

/* Sends one batch holds at most. */
#define INLINE_BATCH_MAX 20

typedef struct inline_ctx_s {
    archive_t *archive;
    connector_t *conn; /* the "telegram" connector, or NULL */
    uploads_t *uploads;
    char media_root[TOOLSET_PATH_MAX];
    char *sql_ctx; /* {"timezone": ...}: what the SQL functions get as ctx (owned) */
} inline_ctx_t;

static inline inline_ctx_t *inline_ctx(const mcp_call_t *c)
{
    return mcp_call_context(c);
}

/* Handlers. */
void inline_tool(mcp_call_t *c);           /* the tool's SQL function answers */
void inline_resource_read(mcp_call_t *c);  /* inline://chat/... */
void inline_resource_watch(mcp_call_t *c); /* may the caller watch it */
void inline_messages_send(mcp_call_t *c);
void inline_messages_send_batch(mcp_call_t *c);
void inline_conversations_create(mcp_call_t *c);
void inline_files_upload(mcp_call_t *c);
void inline_messages_send_media(mcp_call_t *c);

/* The message a connector says it sent (its JSON: a Bot API message) as
 * a new object {"chatId", "messageId", "date", "uri"} (the message's
 * inline:// resource), or NULL when out of memory. */
json_t *inline__sent_message(const char *json);

/* The toolset's MCP table (tools.c). */
extern const mcp_toolset_t toolset_inline_mcp;

#endif
