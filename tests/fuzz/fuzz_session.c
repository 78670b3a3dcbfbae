/* Fuzz target: a byte stream as a client would send it over stdio: the
 * newline framer, JSON-RPC parsing and the session's dispatch (initialize,
 * pings, tools/list and tools/call with argument validation, responses to
 * requests never made, notifications), on a server with one echo tool and
 * small limits. Each input is a new session on one server and loop: the
 * session must survive every message, then end and be swept when its input
 * ends; at exit the server must close cleanly. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/call.h"
#include "mcp/framer.h"
#include "mcp/server.h"
#include "mcp/session.h"

static void tool_echo(mcp_call_t *c)
{
    mcp_call_finish_result(c, json_pack("{s:[{s:s,s:s}],s:O}", "content", "type", "text", "text",
                                        "ok", "structuredContent", c->args));
}

static const mcp_tool_def_t tools[] = {
    {"echo", "Echo", "Echoes",
     "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":"
     "9},\"s\":{\"type\":\"string\",\"maxLength\":8},\"a\":{\"type\":\"array\",\"items\":{"
     "\"type\":\"string\"}}},\"additionalProperties\":false}",
     NULL, MCP_TOOL_READ_ONLY, tool_echo, NULL},
};
static const mcp_toolset_t set = {"f", "F", tools, 1, NULL, 0, NULL, 0, false, false};
static const mcp_toolset_t *const available[] = {&set, NULL};

typedef struct {
    mcp_session_t *s;
    size_t sent;
    bool closed; /* the session closed its transport */
} sink_t;

static int sink_send(void *t, char *msg, size_t len, const json_t *related, bool final)
{
    sink_t *k = t;
    (void)related;
    (void) final;
    k->sent += len;
    free(msg);
    return 0;
}

static size_t sink_queued(void *t)
{
    (void)t;
    return 0;
}

static void sink_set_reading(void *t, bool on)
{
    (void)t;
    (void)on;
}

static void sink_close(void *t)
{
    sink_t *k = t;
    k->closed = true;
    mcp_session_transport_closed(k->s);
}

static const mcp_transport_ops_t sink_ops = {
    .send = sink_send,
    .queued_bytes = sink_queued,
    .set_reading = sink_set_reading,
    .close = sink_close,
};

static bool on_msg(framer_t *f, const char *msg, size_t len)
{
    sink_t *k = f->data;
    return mcp_session_receive(k->s, msg, len);
}

static void on_oversize(framer_t *f, size_t limit)
{
    sink_t *k = f->data;
    mcp_session_oversize(k->s, limit);
}

static uv_loop_t loop;
static mcp_server_t srv;
static bool closed;
static void server_closed(mcp_server_t *s)
{
    (void)s;
    closed = true;
}

/* At exit: the server, which served every input, closes cleanly. */
static void shutdown_server(void)
{
    closed = false;
    mcp_server_close(&srv, server_closed);
    for (int i = 0; i < 1000 && !closed; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    if (!closed || uv_loop_close(&loop) != 0)
        abort(); /* the server must close cleanly */
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    uv_loop_init(&loop);
    mcp_registry_t r;
    char err[256];
    if (mcp_registry_build(&r, available, "all", false, err, sizeof err) != 0)
        abort();
    mcp_limits_t lim;
    mcp_limits_default(&lim);
    lim.max_message_bytes = 4096;
    mcp_server_init(&srv, &loop, &r, &lim);
    atexit(shutdown_server);
    return 0;
}

/* One session per input on the one server (a server and a registry per
 * input made their setup most of the run's cost). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sink_t k = {0};
    k.s = mcp_session_new(&srv, &sink_ops, &k, "fuzz");
    if (k.s == NULL)
        abort();
    framer_t f;
    framer_init(&f, srv.limits.max_message_bytes, on_msg, on_oversize, &k);
    (void)framer_feed(&f, (const char *)data, size);
    (void)framer_finish(&f);
    uv_run(&loop, UV_RUN_NOWAIT);
    /* "the session always survives a bad message": nothing a client sends
     * here may make the server end it. */
    if (k.closed)
        abort();
    /* The input ended: the session answers what is in flight, closes, and
     * is swept; none may be left for the next input. */
    mcp_session_input_ended(k.s);
    for (int i = 0; i < 1000 && (!k.closed || srv.stats.sessions_open > 0); i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    framer_free(&f);
    if (!k.closed || srv.stats.sessions_open != 0)
        abort();
    return 0;
}
