/* archive: what the data toolsets get from the daemon: the database pools
 * and directories (set as the MCP server's application context), and one
 * generic operation, a call of an SQL function that answers JSON built by
 * PostgreSQL (parley_tg_tool for the telegram toolset). Toolsets never see
 * libpq: they get the JSON, or an error with its class. */
#ifndef PARLEY_ARCHIVE_ARCHIVE_H
#define PARLEY_ARCHIVE_ARCHIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "archive/search.h"
#include "db/pool.h"

/* The upstream connector, when one is configured (Telegram Bot API). */
typedef void (*archive_sent_cb)(void *data, int status, const char *json, const char *error);
typedef void (*archive_progress_cb)(void *data, uint64_t bytes, uint64_t total);
typedef struct archive_upstream_s {
    void *ctx;
    int (*send_message)(void *ctx, int64_t chat, const char *text, int64_t topic, int64_t reply_to,
                        archive_sent_cb cb, void *data);
    int (*send_file)(void *ctx, int64_t chat, const char *path, const char *caption,
                     const char *filename, int64_t topic, archive_sent_cb cb, void *data);
    bool (*realtime)(void *ctx);
    void (*set_realtime)(void *ctx, bool on);
    const char *(*state)(void *ctx);
    /* Another method of the upstream API (JSON body; cb gets its result). */
    int (*call)(void *ctx, const char *method, const char *body, archive_sent_cb cb, void *data);
    /* What the account cannot do at all (NULL when it can): e.g. a bot
     * cannot add members or join by invite. */
    const char *(*cannot)(void *ctx, const char *tool);
    /* Downloads a message's file into the media store now (done gets the
     * media row as JSON, its state saying how it ended); progress while
     * bytes arrive. Returns 0 with *handle for fetch_cancel (valid until
     * done runs), or a negative code without calling back. */
    int (*fetch_media)(void *ctx, int64_t chat, int64_t message, archive_progress_cb progress,
                       archive_sent_cb done, void *data, void **handle);
    void (*fetch_cancel)(void *ctx, void *handle);
} archive_upstream_t;

typedef struct archive_s {
    pg_pool_t *rw;           /* writes */
    pg_pool_t *ro;           /* reads (a replica, or read-only sessions) */
    const char *media_root;  /* DATA_DIR/media */
    const char *export_root; /* where mediaDownload may write */
    const char *upload_root; /* where messagesSendFile may read */
    /* JSON object describing the daemon for serverStatus (malloc'd), or
     * NULL. */
    char *(*status_json)(void *data);
    void *status_data;
    const archive_upstream_t *upstream; /* NULL: archive only */
} archive_t;

/* Errors a tool reports to the model as its own (isError): */
typedef enum {
    ARCHIVE_ERR_NONE = 0,
    ARCHIVE_ERR_ARGUMENT,  /* the caller's mistake (unknown id, bad date, bad regex) */
    ARCHIVE_ERR_CONNECTOR, /* needs an upstream connector that is not configured */
    ARCHIVE_ERR_BUSY,      /* the database is busy or slow: retry */
    ARCHIVE_ERR_INTERNAL,
} archive_err_t;

typedef struct archive_tool_op_s archive_tool_op_t;

/* json on success; else err and a message. */
typedef void (*archive_tool_cb)(void *data, int status, const char *json, archive_err_t err,
                                const char *message);

/* Runs parley_tg_tool(tool, args, ctx) on the read-only pool, or on the
 * read-write pool when write. Returns 0 with *op (for archive_cancel until
 * the callback), or a negative code (UV_EBUSY, UV_ENOMEM) without calling
 * back. */
int archive_tool(archive_t *ar, bool write, const char *tool, const char *args_json,
                 const char *ctx_json, archive_tool_cb cb, void *data, archive_tool_op_t **op);

/* Cancels the query on the server; the callback still runs. */
void archive_tool_cancel(archive_tool_op_t *op);

#endif
