/* Tests for transport/conn over a Unix socket pair, as the Unix-socket
 * listener accepts it: an answer the socket takes whole is written at
 * once, leaving no write request for the loop (no callback, no epoll_ctl
 * re-arming the socket's poll); an answer larger than the socket takes arrives
 * whole and in order, the part left over written by a write request. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mcp/call.h"
#include "mcp/server.h"
#include "mcp/session.h"
#include "transport/conn.h"
#include "testutil.h"

#define BIG_TEXT ((size_t)2 << 20) /* well above a Unix socket's buffer */

static void tool_big(mcp_call_t *c)
{
    char *text = malloc(BIG_TEXT + 1);
    assert_non_null(text);
    memset(text, 'x', BIG_TEXT);
    text[BIG_TEXT] = '\0';
    json_t *o = json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text", text);
    char *s = json_dumps(o, JSON_COMPACT);
    mcp_call_finish_json(c, s, strlen(s));
    free(s);
    free(text);
    json_decref(o);
}

static const mcp_tool_def_t tools[] = {
    {"big", "Big", "A large answer.", "{\"type\":\"object\"}", NULL, MCP_TOOL_READ_ONLY, tool_big,
     NULL},
};
static const mcp_toolset_t set = {"t", "T", tools, 1, NULL, 0, NULL, 0, false, false};
static const mcp_toolset_t *const available[] = {&set, NULL};

static uv_loop_t loop;
static mcp_server_t srv;
static conn_t conn;
static int client = -1; /* the other end of the pair */
static bool conn_closed;

static void on_close(conn_t *c)
{
    conn_free(c);
    conn_closed = true;
}

static void setup(void)
{
    uv_loop_init(&loop);
    mcp_registry_t r;
    char err[256];
    assert_int_equal(mcp_registry_build(&r, available, "all", false, err, sizeof err), 0);
    mcp_limits_t lim;
    mcp_limits_default(&lim);
    lim.output_hard_limit = 4 * BIG_TEXT;
    lim.output_high_water = 4 * BIG_TEXT;
    mcp_server_init(&srv, &loop, &r, &lim);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    client = sv[1];
    conn_closed = false;
    assert_int_equal(conn_init(&conn, &loop, &srv, "unix", on_close, NULL), 0);
    assert_int_equal(uv_pipe_init(&loop, &conn.in.h.pipe, 0), 0);
    assert_int_equal(uv_pipe_open(&conn.in.h.pipe, sv[0]), 0);
    conn_open_accepted(&conn, (uv_stream_t *)&conn.in.h.pipe);
    assert_int_equal(conn_start(&conn), 0);
}

static bool server_closed_flag;
static void server_closed(mcp_server_t *s)
{
    (void)s;
    server_closed_flag = true;
}

static void teardown(void)
{
    close(client);
    conn_close(&conn);
    test_run_until(&loop, &conn_closed, 5000);
    server_closed_flag = false;
    mcp_server_close(&srv, server_closed);
    test_run_until(&loop, &server_closed_flag, 5000);
    test_loop_close(&loop);
}

/* True when no watcher of the loop waits to be re-armed: libuv queues a
 * stream's watcher after each write request it completes, and re-arms it
 * with an epoll_ctl on the next turn (libuv 1.44's unix loop: an empty
 * queue points to itself). */
static bool nothing_to_rearm(void)
{
    return loop.watcher_queue[0] == (void *)&loop.watcher_queue;
}

static void send_line(const char *text)
{
    size_t n = strlen(text);
    assert_int_equal(write(client, text, n), (ssize_t)n);
    assert_int_equal(write(client, "\n", 1), 1);
}

/* Runs the loop one non-blocking turn at a time until the client has read
 * one whole line; returns it (without its newline; the caller frees). */
static char *read_line(void)
{
    size_t cap = 4 * BIG_TEXT, len = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    uint64_t deadline = uv_hrtime() + (uint64_t)10 * 1000 * 1000 * 1000;
    for (;;) {
        uv_run(&loop, UV_RUN_NOWAIT);
        ssize_t n = recv(client, buf + len, cap - len, MSG_DONTWAIT);
        if (n > 0) {
            len += (size_t)n;
            char *nl = memchr(buf, '\n', len);
            if (nl != NULL) {
                assert_ptr_equal(nl, buf + len - 1); /* one answer at a time */
                *nl = '\0';
                return buf;
            }
        } else {
            assert_true(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
        }
        assert_true(uv_hrtime() < deadline);
    }
}

static void expect_result(const char *line)
{
    json_error_t je;
    json_t *j = json_loads(line, 0, &je);
    assert_non_null(j);
    assert_non_null(json_object_get(j, "result"));
    json_decref(j);
}

static void initialize(void)
{
    send_line("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
              "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{"
              "\"name\":\"t\",\"version\":\"1\"}}}");
    char *line = read_line();
    expect_result(line);
    free(line);
    send_line("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

/* The answer is on the client's side as soon as the turn that read the
 * request returns, and nothing of it is left for the loop. */
static void test_small_answer_written_at_once(void **state)
{
    (void)state;
    setup();
    initialize();
    for (int i = 1; i <= 3; i++) {
        send_line("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
        char *line = read_line();
        assert_string_equal(line, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
        free(line);
        assert_true(nothing_to_rearm()); /* no write request was needed */
        assert_int_equal(conn.pending, 0);
        assert_int_equal(conn.queued, 0);
    }
    teardown();
}

/* What the socket does not take at once follows, whole and in order. */
static void test_large_answer_whole(void **state)
{
    (void)state;
    setup();
    initialize();
    send_line("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
              "\"name\":\"big\",\"arguments\":{}}}");
    char *line = read_line();
    json_error_t je;
    json_t *j = json_loads(line, 0, &je);
    free(line);
    assert_non_null(j);
    const char *text = json_string_value(json_object_get(
        json_array_get(json_object_get(json_object_get(j, "result"), "content"), 0), "text"));
    assert_non_null(text); /* the tool's JSON, as text: the run of x whole */
    const char *x = strstr(text, "xxxx");
    assert_non_null(x);
    assert_int_equal(strspn(x, "x"), BIG_TEXT);
    json_decref(j);
    /* The write request's callback ran: the count is back to nothing. */
    for (int i = 0; i < 100 && (conn.queued != 0 || conn.pending != 0); i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(conn.queued, 0);
    /* And the next small answer is written at once again. */
    send_line("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
    line = read_line();
    assert_string_equal(line, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}");
    free(line);
    assert_true(nothing_to_rearm());
    assert_int_equal(conn.pending, 0);
    teardown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_answer_written_at_once),
        cmocka_unit_test(test_large_answer_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
