/* Fuzz target: the Streamable HTTP transport above libh2o (transport/
 * http.c, http_stream.c, http_auth.c): the Host and Origin checks,
 * Content-Type and Accept, Mcp-Session-Id lookups, Last-Event-ID, POST
 * bodies, GET streams and DELETE, with the conformance toolset (logging,
 * progress, sampling and elicitation requests, a stream cut for
 * resumption) behind them.
 *
 * One server on 127.0.0.1 (an ephemeral port) and one loop serve every
 * input; they are closed at exit, which must end cleanly. Per input: a
 * fresh session is initialized on its own connection; the input is then
 * written as raw bytes (one or more HTTP/1.1 requests) on a new connection,
 * with every "$S" in it replaced by that session's id, and the client
 * half-closes; after the server has gone quiet (idle: nothing to read on
 * either side and no timer due within IDLE_TIMER_MS, so a stepping tool
 * is waited for but the once-a-second ticker is not), every session (that one
 * and any the input opened) is deleted, and the input's connection must
 * then be closed by the server. The server must answer each of these
 * well-formed requests: the next input's initialize is the check that the
 * previous one left it able to serve. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "fuzz_http_client.h"
#include "mcp/server.h"
#include "toolsets/conformance.h"
#include "transport/endpoint.h"
#include "transport/http.h"
#include "util/log.h"

#define RESP_MAX      (1u << 20) /* bytes of an answer kept (the rest is read and dropped) */
#define QUIET_MS      30         /* fallback: no bytes for this long, whatever else is pending */
#define IDLE_TIMER_MS 200        /* a timer due later than this does not keep the server busy */
#define CLOSE_MS      5000       /* the server must close it within this after cleanup */
#define MAX_SESSIONS  64         /* ids collected from one input's answers */
#define SESSION_ID    64         /* hex characters */

static uv_loop_t loop;
static mcp_server_t srv;
static http_server_t *hs;
static int port;

typedef fuzz_client_t client_t;

static void fail(const char *what, const client_t *c)
{
    fprintf(stderr, "fuzz_http: %s\n", what);
    if (c && c->len)
        fprintf(stderr, "answer: %.*s\n", (int)(c->len < 2000 ? c->len : 2000), c->resp);
    abort();
}

static uint64_t now_ms(void)
{
    return fuzz_now_ms();
}

static void client_open(client_t *c, char *buf)
{
    const char *why = fuzz_client_open(&loop, c, buf, port, CLOSE_MS);
    if (why != NULL)
        fail(why, NULL);
}

static void client_close(client_t *c)
{
    fuzz_client_close(c);
}

/* See fuzz_client_pump: quiet_ms 0 waits for the server's close. */
static bool pump(client_t *c, const char *out, size_t n, bool shut, uint64_t quiet_ms,
                 uint64_t limit_ms)
{
    return fuzz_client_pump(&loop, c, out, n, shut, quiet_ms, limit_ms, RESP_MAX, IDLE_TIMER_MS);
}

/* One request on its own connection ("Connection: close"); the answer's
 * status, or 0 when none came. */
static int request(const char *method, const char *sid, const char *body, client_t *c)
{
    char req[2048];
    int n = snprintf(req, sizeof req,
                     "%s /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                     "Accept: application/json, text/event-stream\r\n"
                     "Content-Type: application/json\r\n%s%s%sContent-Length: %zu\r\n\r\n%s",
                     method, sid ? "Mcp-Session-Id: " : "", sid ? sid : "", sid ? "\r\n" : "",
                     strlen(body), body);
    static char buf[RESP_MAX];
    client_open(c, buf);
    if (!pump(c, req, (size_t)n, false, 0, CLOSE_MS))
        fail("a well-formed request got no complete answer", c);
    int status = 0;
    if (c->len > 12 && memcmp(c->resp, "HTTP/1.1 ", 9) == 0)
        status = atoi(c->resp + 9);
    return status;
}

/* The session ids in answers (mcp-session-id headers) into ids[n..cap);
 * returns the new count. */
static int session_ids(const client_t *c, char ids[][SESSION_ID + 1], int n, int cap)
{
    static const char h[] = "\r\nmcp-session-id: ";
    for (size_t i = 0; i + sizeof h - 1 + SESSION_ID <= c->len && n < cap; i++) {
        if (strncasecmp(c->resp + i, h, sizeof h - 1) != 0)
            continue;
        const char *id = c->resp + i + sizeof h - 1;
        bool dup = false;
        for (int k = 0; k < n; k++)
            dup |= memcmp(ids[k], id, SESSION_ID) == 0;
        if (!dup) {
            memcpy(ids[n], id, SESSION_ID);
            ids[n++][SESSION_ID] = '\0';
        }
    }
    return n;
}

/* Opens a session ready for calls; its id into id. */
static void session_open(char id[SESSION_ID + 1])
{
    client_t c;
    char ids[1][SESSION_ID + 1];
    int st = request("POST", NULL,
                     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                     "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"sampling\":{},"
                     "\"elicitation\":{}},\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"1\"}}}",
                     &c);
    if (st != 200 || session_ids(&c, ids, 0, 1) != 1)
        fail("initialize was not answered with a session", &c);
    memcpy(id, ids[0], SESSION_ID + 1);
    client_close(&c);
    st = request("POST", id, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &c);
    if (st != 202)
        fail("notifications/initialized was not accepted", &c);
    client_close(&c);
}

static void session_delete(const char *id)
{
    client_t c;
    int st = request("DELETE", id, "", &c);
    if (st != 200 && st != 404)
        fail("DELETE got neither 200 nor 404", &c);
    client_close(&c);
}

static bool closed;
static void server_closed(mcp_server_t *s)
{
    (void)s;
    closed = true;
}

static bool http_closed;
static void on_http_closed(http_server_t *h)
{
    (void)h;
    http_closed = true;
}

/* At exit: the last input left the server able to serve, and it closes
 * cleanly with every handle. */
static void shutdown_server(void)
{
    char id[SESSION_ID + 1];
    session_open(id);
    session_delete(id);
    http_server_close(hs, on_http_closed);
    for (uint64_t start = now_ms(); !http_closed && now_ms() - start < 10000;)
        uv_run(&loop, UV_RUN_ONCE);
    mcp_server_close(&srv, server_closed);
    for (uint64_t start = now_ms(); !closed && now_ms() - start < 10000;)
        uv_run(&loop, UV_RUN_ONCE);
    if (!http_closed || !closed)
        fail("the server did not close", NULL);
    http_server_dispose(hs);
    uv_run(&loop, UV_RUN_NOWAIT);
    if (uv_loop_close(&loop) != 0)
        fail("a handle was left open", NULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_set_level(LOG_OFF);
    uv_loop_init(&loop);
    static const mcp_toolset_t *const available[] = {&toolset_conformance, NULL};
    mcp_registry_t r;
    char err[256];
    if (mcp_registry_build(&r, available, "conformance", false, err, sizeof err) != 0)
        fail(err, NULL);
    mcp_limits_t lim;
    mcp_limits_default(&lim);
    lim.max_message_bytes = 16384;
    mcp_server_init(&srv, &loop, &r, &lim);
    endpoint_t ep;
    if (endpoint_parse(&ep, "http://127.0.0.1:0/mcp", err, sizeof err) != 0)
        fail(err, NULL);
    http_options_t opt = {.allowed_origins = "https://app.example"};
    if (http_server_start(&loop, &srv, &ep, &opt, &hs, err, sizeof err) != 0)
        fail(err, NULL);
    port = http_server_port(hs);
    atexit(shutdown_server);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char ids[MAX_SESSIONS][SESSION_ID + 1];
    session_open(ids[0]);
    /* The input with "$S" as the session's id. */
    char *in = malloc(size * (SESSION_ID / 2) + 1);
    size_t n = 0;
    for (size_t i = 0; i < size; i++) {
        if (data[i] == '$' && i + 1 < size && data[i + 1] == 'S') {
            memcpy(in + n, ids[0], SESSION_ID);
            n += SESSION_ID;
            i++;
        } else {
            in[n++] = (char)data[i];
        }
    }
    static char buf[RESP_MAX]; /* the input's connection, open beside request()'s */
    client_t c;
    client_open(&c, buf);
    (void)pump(&c, in, n, true, QUIET_MS, CLOSE_MS);
    free(in);
    int nids = session_ids(&c, ids, 1, MAX_SESSIONS);
    for (int i = 0; i < nids; i++)
        session_delete(ids[i]);
    /* Every session is gone and the client sent all it will: the server
     * ends what it still writes and closes the connection. */
    if (!pump(&c, NULL, 0, false, 0, CLOSE_MS))
        fail("the server kept a finished connection open", &c);
    client_close(&c);
    return 0;
}
