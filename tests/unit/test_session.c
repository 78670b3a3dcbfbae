/* Tests for mcp/session through an in-memory transport: every JSON-RPC
 * error path (-32700, -32600, -32601, -32602), version negotiation, the
 * busy error, backpressure on in-flight calls and queued output, the hard
 * output limit, and that the session answers a ping after each fault. */
#include <string.h>

#include "mcp/call.h"
#include "mcp/envelope.h"
#include "mcp/jsonrpc.h"
#include "mcp/session.h"
#include "testutil.h"

static mcp_call_t *parked; /* a call the "hang" tool never finishes */

static void tool_echo(mcp_call_t *c)
{
    json_t *o = json_pack("{s:O}", "args", c->args);
    char *s = json_dumps(o, JSON_COMPACT);
    mcp_call_finish_json(c, s, strlen(s));
    free(s);
    json_decref(o);
}

/* JSON as PostgreSQL may print it, with line breaks between tokens. */
static void tool_lines(mcp_call_t *c)
{
    const char *j = "{\n  \"a\": \"x\\ny\",\r\n  \"b\": [1,\n2]\n}";
    mcp_call_finish_json(c, j, strlen(j));
}

static void tool_hang(mcp_call_t *c)
{
    parked = c;
}

static const mcp_tool_def_t tools[] = {
    {"echo", "Echo", "Echoes.",
     "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"},\"s\":{\"type\":"
     "\"string\"},\"ns\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}},\"x\":{"
     "\"type\":\"number\"},\"o\":{\"type\":\"object\",\"properties\":{\"k\":{\"type\":"
     "\"integer\"}}}}}",
     NULL, MCP_TOOL_READ_ONLY, tool_echo, NULL},
    {"hang", "Hang", "Never returns by itself.", "{\"type\":\"object\"}", NULL, MCP_TOOL_READ_ONLY,
     tool_hang, NULL},
};
static const mcp_tool_def_t more_tools[] = {
    {"lines", "Lines", "JSON with line breaks.", "{\"type\":\"object\"}", NULL, MCP_TOOL_READ_ONLY,
     tool_lines, NULL},
    {"poke", "Poke", "Changes something.", "{\"type\":\"object\"}", NULL, MCP_TOOL_DESTRUCTIVE,
     tool_echo, NULL},
};
/* A resource read: answers with its name, so a test sees which ran, as a
 * resource's contents (the object a read's result is). */
static void read_any(mcp_call_t *c)
{
    mcp_call_finish_result(
        c, json_pack("{s:[{s:s, s:s}]}", "contents", "uri", c->name, "text", "secret"));
}

static void prompt_any(mcp_call_t *c)
{
    const char *j = "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\","
                    "\"text\":\"hi\"}}]}";
    mcp_call_finish_json(c, j, strlen(j));
}

/* Whether a v://chat/{id} may be watched: not "hidden" (not found, as a
 * read of a chat of another source says); "later" waits in
 * parked_watch for the test to answer. */
static mcp_call_t *parked_watch;
static void watch_chat(mcp_call_t *c)
{
    const char *id = json_string_value(json_object_get(json_object_get(c->args, "vars"), "id"));
    if (strcmp(id, "hidden") == 0)
        mcp_call_finish_rpc_error(c, MCP_ERROR_RESOURCE_NOT_FOUND, "Resource not found",
                                  json_pack("{s:O}", "uri", json_object_get(c->args, "uri")));
    else if (strcmp(id, "later") == 0)
        parked_watch = c;
    else
        mcp_call_finish_result(c, json_pack("{s:[]}", "contents"));
}

static const mcp_resource_def_t more_resources[] = {
    {"v://fixed", "fixed", "Fixed", "A fixed resource.", "text/plain", read_any, NULL},
    {"v://chat/{id}", "chat", "Chat", "A template.", "text/plain", read_any, watch_chat},
};
static const mcp_prompt_def_t more_prompts[] = {
    {"v_prompt", "V prompt", "A prompt of v.",
     "[{\"name\":\"a\",\"description\":\"A\",\"required\":false}]", prompt_any},
};
static const mcp_toolset_t set = {"t", "T", tools, 2, NULL, 0, NULL, 0, false, false};
static const mcp_toolset_t set2 = {"u", "U", more_tools, 2, NULL, 0, NULL, 0, false, false};
/* Resources and prompts, selected by name only (test_error_paths needs a
 * server that offers none). */
static const mcp_toolset_t set3 = {"v", "V",          NULL, 0,    more_resources,
                                   2,   more_prompts, 1,    true, false};
static const mcp_toolset_t *const available[] = {&set, &set2, &set3, NULL};

/* A 2026-07-28 multi round-trip tool: asks the client first (its state
 * holds the arguments it saw), then echoes. */
static void tool_ask(mcp_call_t *c)
{
    if (mcp_call_request_state(c) == NULL) {
        mcp_call_finish_input_required(c,
                                       json_pack("{s:{s:s, s:{s:s}}}", "q", "method",
                                                 "elicitation/create", "params", "message", "n?"),
                                       json_pack("{s:O}", "seen", c->args));
        return;
    }
    tool_echo(c);
}
static const mcp_tool_def_t ask_tools[] = {
    {"ask", "Ask", "Asks, then echoes.",
     "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}}}", NULL,
     MCP_TOOL_READ_ONLY, tool_ask, NULL},
};
static const mcp_toolset_t set4 = {"w", "W", ask_tools, 1, NULL, 0, NULL, 0, false, false};
static const mcp_toolset_t *const with_ask[] = {&set4, NULL};

/* Results given as text (mcp_call_finish_result_text): argument v names
 * which. */
static void tool_rtext(mcp_call_t *c)
{
    static const struct {
        const char *v, *text;
    } texts[] = {
        {"plain", "{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}"},
        {"empty", " { \n } \n"},
        {"lines", "{\n \"content\": [{\"type\": \"text\", \"text\": \"a\\nb\"}],\r\n"
                  " \"structuredContent\": {\"k\": [1,\n2]}\n}\n"},
        {"array", "[{\"content\":[]}]"},
        {"cut", "{\"content\":["},
        {"meta", "{\"content\":[],\"_meta\":{\"x\":1}}"},
    };
    const char *v = json_string_value(json_object_get(c->args, "v"));
    for (size_t i = 0; v && i < sizeof texts / sizeof texts[0]; i++)
        if (strcmp(v, texts[i].v) == 0) {
            mcp_call_finish_result_text(c, texts[i].text, strlen(texts[i].text));
            return;
        }
    mcp_call_finish_error(c, "no such text");
}

static void read_text(mcp_call_t *c)
{
    const char *j = "{\"contents\":[{\"uri\":\"x://text\",\"text\":\"t\"}]}";
    mcp_call_finish_result_text(c, j, strlen(j));
}

static const mcp_tool_def_t text_tools[] = {
    {"rtext", "Result text", "Answers a result given as text.",
     "{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"string\"}}}", NULL, MCP_TOOL_READ_ONLY,
     tool_rtext, NULL},
};
static const mcp_resource_def_t text_resources[] = {
    {"x://text", "text", "Text", "A read answered as text.", "text/plain", read_text, NULL},
};
static const mcp_toolset_t set5 = {"x", "X",  text_tools, 1,     text_resources,
                                   1,   NULL, 0,          false, false};
static const mcp_toolset_t *const with_text[] = {&set5, NULL};
static const mcp_toolset_t *const *toolsets = available; /* what setup_server offers */
static const char *selected = "all";                     /* the toolsets setup_server serves */

typedef struct {
    json_t *out[64];
    int n;
    size_t queued;
    bool reading;
    int closes;
    mcp_session_t *s;
} mem_t;

static char *raw_last; /* the text of the last message sent */

static int mem_send(void *t, char *msg, size_t len, const json_t *related, bool final)
{
    mem_t *m = t;
    (void)related;
    (void) final;
    json_error_t je;
    assert_true(m->n < 64);
    /* One line each: the newline-delimited transports frame by lines. */
    assert_null(memchr(msg, '\n', len));
    assert_null(memchr(msg, '\r', len));
    free(raw_last);
    raw_last = strndup(msg, len);
    m->out[m->n] = json_loadb(msg, len, 0, &je);
    assert_non_null(m->out[m->n]);
    m->n++;
    free(msg);
    return 0;
}

static size_t mem_queued(void *t)
{
    return ((mem_t *)t)->queued;
}

static void mem_set_reading(void *t, bool on)
{
    ((mem_t *)t)->reading = on;
}

static void mem_close(void *t)
{
    mem_t *m = t;
    m->closes++;
    mcp_session_transport_closed(m->s);
}

static const mcp_transport_ops_t mem_ops = {
    .send = mem_send,
    .queued_bytes = mem_queued,
    .set_reading = mem_set_reading,
    .close = mem_close,
};

static uv_loop_t loop;
static mcp_server_t srv;
static mem_t mem;

static void setup_server(int max_active_calls)
{
    uv_loop_init(&loop);
    mcp_registry_t r;
    char err[256];
    assert_int_equal(mcp_registry_build(&r, toolsets, selected, false, err, sizeof err), 0);
    mcp_limits_t lim;
    mcp_limits_default(&lim);
    lim.max_message_bytes = 1024;
    lim.max_active_calls = max_active_calls;
    lim.session_max_inflight = 2;
    lim.output_high_water = 1000;
    lim.output_low_water = 100;
    lim.output_hard_limit = 5000;
    mcp_server_init(&srv, &loop, &r, &lim);
    memset(&mem, 0, sizeof mem);
    mem.reading = true;
    mem.s = mcp_session_new(&srv, &mem_ops, &mem, "mem");
    assert_non_null(mem.s);
}

static bool closed_flag;
static void server_closed(mcp_server_t *s)
{
    (void)s;
    closed_flag = true;
}

static void teardown_server(void)
{
    for (int i = 0; i < mem.n; i++)
        json_decref(mem.out[i]);
    free(raw_last);
    raw_last = NULL;
    closed_flag = false;
    mcp_server_close(&srv, server_closed);
    test_run_until(&loop, &closed_flag, 5000);
    test_loop_close(&loop);
}

static void send_msg(const char *text)
{
    mcp_session_receive(mem.s, text, strlen(text));
}

/* The error code of the last output, and its id (NULL for null). */
static void expect_error(int code, const char *id_text)
{
    assert_true(mem.n > 0);
    json_t *last = mem.out[mem.n - 1];
    json_t *err = json_object_get(last, "error");
    if (err == NULL)
        fail_msg("expected error %d, got %s", code, json_dumps(last, 0));
    assert_int_equal(json_integer_value(json_object_get(err, "code")), code);
    assert_non_null(json_string_value(json_object_get(err, "message")));
    json_t *id = json_object_get(last, "id");
    if (id_text == NULL)
        assert_true(json_is_null(id));
    else {
        char *s = json_dumps(id, JSON_ENCODE_ANY);
        assert_string_equal(s, id_text);
        free(s);
    }
}

static void expect_ping_ok(void)
{
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}");
    json_t *last = mem.out[mem.n - 1];
    json_t *res = json_object_get(last, "result");
    assert_true(json_is_object(res) && json_object_size(res) == 0);
}

static void initialize(const char *version, const char *expect)
{
    char msg[256];
    snprintf(msg, sizeof msg,
             "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\","
             "\"version\":\"1\"}}}",
             version);
    send_msg(msg);
    json_t *res = json_object_get(mem.out[mem.n - 1], "result");
    assert_string_equal(json_string_value(json_object_get(res, "protocolVersion")), expect);
}

static void test_error_paths(void **state)
{
    (void)state;
    setup_server(100);
    initialize("2024-11-05", "2024-11-05");
    send_msg("{not json");
    expect_error(-32700, NULL);
    send_msg("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
    expect_error(-32600, NULL);
    send_msg("42");
    expect_error(-32600, NULL);
    send_msg("{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"ping\"}");
    expect_error(-32600, "7");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":8}");
    expect_error(-32600, "8");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":5}");
    expect_error(-32600, "9");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}");
    expect_error(-32600, NULL);
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\",\"params\":[1]}");
    expect_error(-32602, "10");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"nope/nope\"}");
    expect_error(-32601, "11");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/call\",\"params\":{}}");
    expect_error(-32602, "12");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"missing\"}}");
    expect_error(-32602, "13");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":[]}}");
    expect_error(-32602, "14");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"tools/list\",\"params\":{\"cursor\":"
             "\"zz\"}}");
    expect_error(-32602, "15");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"2025-11-25\"}}");
    expect_error(-32600, "\"s\"");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":16,\"method\":\"resources/list\"}");
    expect_error(-32601, "16"); /* no toolset offers resources */
    /* A method or tool name quoted cut by bytes inside a character: the
     * error still goes out (half a character repaired), the session lives. */
    for (int pad = 96; pad < 102; pad++) {
        char msg[512];
        int n = snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"", pad);
        memset(msg + n, 'm', (size_t)pad);
        snprintf(msg + n + pad, sizeof msg - (size_t)(n + pad), "\xc3\xa9x\"}");
        send_msg(msg);
        char id[8];
        snprintf(id, sizeof id, "%d", pad);
        expect_error(-32601, id);
        n = snprintf(msg, sizeof msg,
                     "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
                     "\"name\":\"",
                     pad);
        memset(msg + n, 't', (size_t)pad);
        snprintf(msg + n + pad, sizeof msg - (size_t)(n + pad), "\xe2\x82\xacx\"}}");
        send_msg(msg);
        expect_error(-32602, id);
    }
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":17,\"method\":\"logging/setLevel\",\"params\":{"
             "\"level\":\"loud\"}}");
    expect_error(-32602, "17");
    /* A NUL inside a name does not run the part before it. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"ping\\u0000evil\"}");
    expect_error(-32600, "20");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\\u0000x\",\"arguments\":{\"n\":1}}}");
    expect_error(-32602, "21");
    /* An integer past 64 bits is an argument out of range, named, not a
     * message nobody can answer. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":23,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":{\"n\":100000000000000000000}}}");
    json_t *big = json_object_get(mem.out[mem.n - 1], "result");
    assert_int_equal(json_integer_value(json_object_get(mem.out[mem.n - 1], "id")), 23);
    assert_true(json_is_true(json_object_get(big, "isError")));
    assert_non_null(strstr(json_string_value(json_object_get(
                               json_array_get(json_object_get(big, "content"), 0), "text")),
                           "n: expected an integer between"));
    /* A nested property is named by its path. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":24,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":{\"o\":{\"k\":\"x\"}}}}");
    json_t *nested = json_object_get(mem.out[mem.n - 1], "result");
    assert_true(json_is_true(json_object_get(nested, "isError")));
    assert_non_null(strstr(json_string_value(json_object_get(
                               json_array_get(json_object_get(nested, "content"), 0), "text")),
                           "Invalid arguments for echo: o.k: expected an integer"));
    /* A parse error quoting half a UTF-8 sequence (a bad \\u escape) is
     * still answered, and the session lives on (found by fuzz_session). */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\\u000\xd0\x85\"}");
    expect_error(-32700, NULL);
    expect_ping_ok();
    mcp_session_oversize(mem.s, 1024);
    expect_error(-32600, NULL);
    /* Notifications and stray responses get no answer. */
    int before = mem.n;
    send_msg("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    send_msg("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\",\"params\":{}}");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":999,\"result\":{}}");
    assert_int_equal(mem.n, before);
    /* Invalid arguments are a tool result with isError, naming the field. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":18,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":{\"n\":\"x\"}}}");
    json_t *res = json_object_get(mem.out[mem.n - 1], "result");
    assert_true(json_is_true(json_object_get(res, "isError")));
    const char *text = json_string_value(
        json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
    assert_non_null(strstr(text, "n: expected an integer"));
    /* A good call: structuredContent and the same JSON as text. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":19,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":{\"n\":3}}}");
    res = json_object_get(mem.out[mem.n - 1], "result");
    json_t *sc = json_object_get(res, "structuredContent");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(sc, "args"), "n")), 3);
    text = json_string_value(
        json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
    json_error_t je;
    json_t *parsed = json_loads(text, 0, &je);
    assert_true(json_equal(parsed, sc));
    json_decref(parsed);
    expect_ping_ok();
    teardown_server();
}

static void test_version_negotiation(void **state)
{
    (void)state;
    setup_server(100);
    initialize("1999-01-01", "2025-11-25");
    teardown_server();
    setup_server(100);
    initialize("2025-06-18", "2025-06-18");
    teardown_server();
}

static void test_busy_and_backpressure(void **state)
{
    (void)state;
    setup_server(1);
    initialize("2025-11-25", "2025-11-25");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"hang\"}}");
    assert_non_null(parked);
    /* The global cap is reached: busy with retryAfterMs. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\"}}");
    expect_error(-32000, "2");
    json_t *data = json_object_get(json_object_get(mem.out[mem.n - 1], "error"), "data");
    assert_true(json_integer_value(json_object_get(data, "retryAfterMs")) > 0);
    /* Cancelling the parked call: no response is sent for it. */
    int before = mem.n;
    mcp_call_t *c = parked;
    send_msg("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
             "\"requestId\":1}}");
    assert_true(c->cancelled);
    mcp_call_finish_error(c, "stopped");
    parked = NULL;
    assert_int_equal(mem.n, before);
    expect_ping_ok();
    /* Queued output above the high-water mark pauses input; below the low
     * one resumes it. */
    mem.queued = 2000;
    expect_ping_ok();
    assert_false(mem.reading);
    mem.queued = 50;
    mcp_session_drained(mem.s);
    assert_true(mem.reading);
    /* Past the hard limit the session is closed. */
    mem.queued = 6000;
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
    assert_int_equal(mem.closes, 1);
    teardown_server();
}

static void test_inflight_cap(void **state)
{
    (void)state;
    setup_server(100);
    initialize("2025-11-25", "2025-11-25");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"hang\"}}");
    mcp_call_t *first = parked;
    assert_true(mem.reading);
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"hang\"}}");
    assert_false(mem.reading); /* session_max_inflight = 2 */
    mcp_call_finish_error(first, "done");
    assert_true(mem.reading);
    mcp_call_finish_error(parked, "done");
    parked = NULL;
    teardown_server();
}

static int listed_tools(void)
{
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":50,\"method\":\"tools/list\"}");
    json_t *res = json_object_get(mem.out[mem.n - 1], "result");
    return (int)json_array_size(json_object_get(res, "tools"));
}

static void test_policy(void **state)
{
    (void)state;
    setup_server(100);
    assert_int_equal(listed_tools(), 4);
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":52,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"lines\"}}");
    json_t *sc =
        json_object_get(json_object_get(mem.out[mem.n - 1], "result"), "structuredContent");
    assert_string_equal(json_string_value(json_object_get(sc, "a")), "x\ny");
    assert_int_equal(json_array_size(json_object_get(sc, "b")), 2);
    mcp_policy_t ro = {.toolset_mask = ~0u, .read_only = true};
    mcp_session_set_policy(mem.s, &ro);
    assert_int_equal(listed_tools(), 3);
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":51,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"poke\"}}");
    expect_error(-32602, "51");
    mcp_policy_t only_u = {.toolset_mask = 2u, .read_only = false};
    mcp_session_set_policy(mem.s, &only_u);
    assert_int_equal(listed_tools(), 2);
    teardown_server();
}

/* The args the echo tool saw for the last call (borrowed). */
static json_t *echoed(void)
{
    json_t *res = json_object_get(mem.out[mem.n - 1], "result");
    if (res == NULL || json_is_true(json_object_get(res, "isError")))
        fail_msg("expected a result, got %s", json_dumps(mem.out[mem.n - 1], 0));
    return json_object_get(json_object_get(res, "structuredContent"), "args");
}

/* Arguments as the store will see them: a key given twice is a parse
 * error (which one counts is not defined), a whole real where an integer
 * is wanted becomes that integer ("-0.0" failed in PostgreSQL), a NUL
 * inside a string is refused by name. */
static void test_strict_arguments(void **state)
{
    (void)state;
    setup_server(100);
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"method\":\"tools/list\"}");
    expect_error(-32700, NULL);
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":{\"n\":1,\"n\":2}}}");
    expect_error(-32700, NULL);
    expect_ping_ok();
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":{\"n\":-0.0,\"ns\":[2.0,1e3],\"x\":2.0}}}");
    json_t *a = echoed();
    assert_true(json_is_integer(json_object_get(a, "n")));
    assert_int_equal(json_integer_value(json_object_get(a, "n")), 0);
    assert_true(json_is_integer(json_array_get(json_object_get(a, "ns"), 0)));
    assert_int_equal(json_integer_value(json_array_get(json_object_get(a, "ns"), 1)), 1000);
    assert_true(json_is_real(json_object_get(a, "x"))); /* a number stays one */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":{\"n\":1.5}}}");
    json_t *res = json_object_get(mem.out[mem.n - 1], "result");
    assert_true(json_is_true(json_object_get(res, "isError")));
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":{\"s\":\"a\\u0000b\"}}}");
    res = json_object_get(mem.out[mem.n - 1], "result");
    assert_true(json_is_true(json_object_get(res, "isError")));
    const char *text = json_string_value(
        json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
    assert_non_null(strstr(text, "s: a string without NUL"));
    expect_ping_ok();
    teardown_server();
}

/* The number of entries of key in the result of the last output. */
static int listed(const char *method, const char *key)
{
    char msg[160];
    snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":60,\"method\":\"%s\"}", method);
    send_msg(msg);
    json_t *res = json_object_get(mem.out[mem.n - 1], "result");
    assert_non_null(res);
    return (int)json_array_size(json_object_get(res, key));
}

/* The last output is a result (not an error). */
static void expect_result(void)
{
    json_t *last = mem.out[mem.n - 1];
    if (json_object_get(last, "result") == NULL)
        fail_msg("expected a result, got %s", json_dumps(last, 0));
}

/* A token's toolsets bound resources, templates, prompts, subscriptions
 * and completions as they bound tools: a session limited to toolset "t"
 * cannot see or read anything of "v" by any method. */
static void test_policy_bounds_every_method(void **state)
{
    (void)state;
    selected = "t,u,v";
    setup_server(100);
    selected = "all";
    static const char *const reqs[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":61,\"method\":\"resources/read\",\"params\":{\"uri\":"
        "\"v://chat/7\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":61,\"method\":\"resources/read\",\"params\":{\"uri\":"
        "\"v://fixed\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":61,\"method\":\"resources/subscribe\",\"params\":{"
        "\"uri\":\"v://chat/7\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":61,\"method\":\"prompts/get\",\"params\":{\"name\":"
        "\"v_prompt\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":61,\"method\":\"completion/complete\",\"params\":{"
        "\"ref\":{\"type\":\"ref/prompt\",\"name\":\"v_prompt\"},\"argument\":{\"name\":"
        "\"a\",\"value\":\"x\"}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":61,\"method\":\"completion/complete\",\"params\":{"
        "\"ref\":{\"type\":\"ref/resource\",\"uri\":\"v://chat/{id}\"},\"argument\":{"
        "\"name\":\"id\",\"value\":\"1\"}}}",
    };
    static const int denied[] = {-32002, -32002, -32002, -32602, -32602, -32002};
    /* Everything is there for a session of every toolset. */
    assert_int_equal(listed("resources/list", "resources"), 1);
    assert_int_equal(listed("resources/templates/list", "resourceTemplates"), 1);
    assert_int_equal(listed("prompts/list", "prompts"), 1);
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        send_msg(reqs[i]);
        expect_result();
    }
    /* Read-only does not hide reads. */
    mcp_policy_t ro = {.toolset_mask = ~0u, .read_only = true};
    mcp_session_set_policy(mem.s, &ro);
    assert_int_equal(listed("resources/templates/list", "resourceTemplates"), 1);
    send_msg(reqs[0]);
    expect_result();
    /* Toolset t alone: u's resources, templates and prompts are gone. */
    mcp_policy_t only_t = {.toolset_mask = 1u, .read_only = false};
    mcp_session_set_policy(mem.s, &only_t);
    assert_int_equal(listed("resources/list", "resources"), 0);
    assert_int_equal(listed("resources/templates/list", "resourceTemplates"), 0);
    assert_int_equal(listed("prompts/list", "prompts"), 0);
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        send_msg(reqs[i]);
        expect_error(denied[i], "61");
    }
    /* A reference of neither kind is refused too. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":62,\"method\":\"completion/complete\",\"params\":{"
             "\"ref\":{\"type\":\"ref/x\"},\"argument\":{\"name\":\"a\",\"value\":\"x\"}}}");
    expect_error(-32602, "62");
    expect_ping_ok();
    teardown_server();
}

#define ENV_META                                                                                   \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}"

/* The last output's result, which must be one. */
static json_t *last_result(void)
{
    expect_result();
    return json_object_get(mem.out[mem.n - 1], "result");
}

/* A 2026-07-28 result completed: resultType "complete" and the server's
 * identity in _meta. */
static void assert_complete(const json_t *r)
{
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "complete");
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(r, "_meta"), "io.modelcontextprotocol/serverInfo"),
            "name")),
        "parley");
}

/* 2026-07-28 requests: the envelope decides, results carry resultType,
 * the server's identity and cache hints, the revision's error codes, and
 * a connection that began modern refuses requests without the envelope. */
static void test_modern_requests(void **state)
{
    (void)state;
    selected = "t,u,v";
    setup_server(100);
    selected = "all";
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" ENV_META
             "}}");
    json_t *r = last_result();
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(r, "supportedVersions"), 0)),
        "2026-07-28");
    assert_complete(r);
    assert_string_equal(json_string_value(json_object_get(r, "cacheScope")), "public");
    /* Resource updates reach subscriptions/listen. */
    assert_true(json_is_true(json_object_get(
        json_object_get(json_object_get(r, "capabilities"), "resources"), "subscribe")));

    send_msg("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{" ENV_META "}}");
    r = last_result();
    assert_int_equal(json_integer_value(json_object_get(r, "ttlMs")), 300000);
    assert_int_equal((int)json_array_size(json_object_get(r, "tools")), 4);

    /* A result built as text gets the same fields, and stays valid JSON. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"lines\"," ENV_META "}}");
    r = last_result();
    assert_complete(r);
    assert_non_null(json_object_get(r, "structuredContent"));
    /* So does a result built as an object (a tool's error): the envelope
     * spliced into its text. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":31,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":{\"n\":\"x\"}," ENV_META "}}");
    r = last_result();
    assert_true(json_is_true(json_object_get(r, "isError")));
    assert_complete(r);

    /* Reads: private, immediately stale; not found is -32602. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/read\",\"params\":{\"uri\":"
             "\"v://fixed\"," ENV_META "}}");
    r = last_result();
    assert_complete(r);
    assert_non_null(json_object_get(r, "ttlMs"));
    assert_int_equal(json_integer_value(json_object_get(r, "ttlMs")), MCP_CACHE_READ_TTL_MS);
    assert_string_equal(json_string_value(json_object_get(r, "cacheScope")), "private");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"resources/read\",\"params\":{\"uri\":"
             "\"v://nope\"," ENV_META "}}");
    expect_error(-32602, "5");

    /* Methods 2026-07-28 does not have. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"params\":{" ENV_META "}}");
    expect_error(-32601, "6");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"resources/subscribe\",\"params\":{"
             "\"uri\":\"v://fixed\"," ENV_META "}}");
    expect_error(-32601, "7");

    /* Envelope faults. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
             "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}");
    expect_error(-32602, "8");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
             "\"io.modelcontextprotocol/protocolVersion\":\"2031-01-01\","
             "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
    expect_error(-32022, "9");
    json_t *data = json_object_get(json_object_get(mem.out[mem.n - 1], "error"), "data");
    assert_string_equal(json_string_value(json_object_get(data, "requested")), "2031-01-01");
    assert_true(json_array_size(json_object_get(data, "supported")) >= 2);
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"server/discover\"}");
    expect_error(-32602, "10");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
             "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
             "\"io.modelcontextprotocol/clientCapabilities\":{},"
             "\"io.modelcontextprotocol/logLevel\":\"loud\"}}}");
    expect_error(-32602, "11");

    /* This connection began modern: no envelope, no answer but -32602. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/list\"}");
    expect_error(-32602, "12");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}");
    expect_error(-32602, "13");

    /* Under a token's policy, lists are private. */
    mcp_policy_t only_t = {.toolset_mask = 1u, .read_only = false};
    mcp_session_set_policy(mem.s, &only_t);
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":14,\"method\":\"tools/list\",\"params\":{" ENV_META "}}");
    r = last_result();
    assert_string_equal(json_string_value(json_object_get(r, "cacheScope")), "private");
    assert_int_equal((int)json_array_size(json_object_get(r, "tools")), 2);
    teardown_server();
}

/* A requestState opens only for the request it was sealed for: the same
 * arguments as they came, a whole real where an integer is wanted
 * included (the digest is made before normalising turns 7.0 into 7, and
 * otherwise only when a state is sealed or opened); other arguments are
 * refused. */
static void test_modern_state_binding(void **state)
{
    (void)state;
    toolsets = with_ask;
    setup_server(100);
    toolsets = available;
#define ASK_META                                                                                   \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{}}}"
    static const char *const forms[] = {"7", "7.0"};
    for (int f = 0; f < 2; f++) {
        char msg[512];
        snprintf(msg, sizeof msg,
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"ask\",\"arguments\":{\"n\":%s}," ASK_META "}}",
                 forms[f]);
        send_msg(msg);
        json_t *r = last_result();
        assert_string_equal(json_string_value(json_object_get(r, "resultType")), "input_required");
        const char *st = json_string_value(json_object_get(r, "requestState"));
        assert_non_null(st);
        char *sealed = strdup(st);
        /* Again with the state: the same arguments as sent, then others. */
        const char *const again[] = {forms[f], "8"};
        for (int a = 0; a < 2; a++) {
            snprintf(msg, sizeof msg,
                     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
                     "\"name\":\"ask\",\"arguments\":{\"n\":%s},\"inputResponses\":{\"q\":{"
                     "\"action\":\"accept\"}},\"requestState\":\"%s\"," ASK_META "}}",
                     again[a], sealed);
            send_msg(msg);
            if (a == 0)
                assert_int_equal(json_integer_value(json_object_get(echoed(), "n")), 7);
            else
                expect_error(-32602, "2");
        }
        free(sealed);
    }
#undef ASK_META
    teardown_server();
}

/* Sessions without a token are bound by their transport and endpoint: a
 * requestState sealed on stdio opens neither on HTTP nor on a Unix
 * socket, one of a socket not on another socket, and each opens again
 * under its own label (as on another daemon serving the same endpoint). */
static void test_anonymous_principals(void **state)
{
    (void)state;
    toolsets = with_ask;
    setup_server(100);
    toolsets = available;
#define ASK_META                                                                                   \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{\"elicitation\":{}}}"
    static const char *const sealed_on[] = {"stdio", "unix:/run/a.sock", "http"};
    static const char *const opened_on[][2] = {
        {"http", "unix:/run/a.sock"}, {"unix:/run/b.sock", "stdio"}, {"stdio", "tcp"}};
    for (int i = 0; i < 3; i++) {
        mcp_session_set_anonymous(mem.s, sealed_on[i]);
        send_msg("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"ask\",\"arguments\":{\"n\":7}," ASK_META "}}");
        json_t *r = last_result();
        char *sealed = strdup(json_string_value(json_object_get(r, "requestState")));
        char msg[1024];
        snprintf(msg, sizeof msg,
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
                 "\"name\":\"ask\",\"arguments\":{\"n\":7},\"inputResponses\":{\"q\":{"
                 "\"action\":\"accept\"}},\"requestState\":\"%s\"," ASK_META "}}",
                 sealed);
        for (int j = 0; j < 2; j++) {
            mcp_session_set_anonymous(mem.s, opened_on[i][j]);
            send_msg(msg);
            expect_error(-32602, "2");
        }
        /* A token's principal is another one again. */
        mcp_session_set_principal(
            mem.s, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
        send_msg(msg);
        expect_error(-32602, "2");
        mcp_session_set_anonymous(mem.s, sealed_on[i]);
        send_msg(msg);
        assert_int_equal(json_integer_value(json_object_get(echoed(), "n")), 7);
        free(sealed);
    }
#undef ASK_META
    teardown_server();
}

/* subscriptions/listen: the acknowledgement with the honoured filter,
 * resources/updated tagged with the subscription id for what it watches
 * alone, nothing after notifications/cancelled, a complete result when
 * the server ends it. */
static void test_listen(void **state)
{
    (void)state;
    selected = "t,u,v";
    setup_server(100);
    selected = "all";
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":\"L1\",\"method\":\"subscriptions/listen\",\"params\":{"
             "\"notifications\":{\"toolsListChanged\":true,\"resourceSubscriptions\":["
             "\"v://fixed\",\"v://nope\"]}," ENV_META "}}");
    json_t *ack = mem.out[mem.n - 1];
    assert_string_equal(json_string_value(json_object_get(ack, "method")),
                        "notifications/subscriptions/acknowledged");
    json_t *p = json_object_get(ack, "params");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(p, "_meta"), "io.modelcontextprotocol/subscriptionId")),
                        "L1");
    /* The lists of t, u, v never change; v://nope is no resource. */
    char *f = json_dumps(json_object_get(p, "notifications"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(f, "{\"resourceSubscriptions\":[\"v://fixed\"]}");
    free(f);
    int n = mem.n;
    mcp_server_resource_updated(&srv, "v://other");
    assert_int_equal(mem.n, n);
    mcp_server_resource_updated(&srv, "v://fixed");
    assert_int_equal(mem.n, n + 1);
    json_t *u = mem.out[mem.n - 1];
    assert_string_equal(json_string_value(json_object_get(u, "method")),
                        "notifications/resources/updated");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_object_get(u, "params"), "_meta"),
                                          "io.modelcontextprotocol/subscriptionId")),
        "L1");
    /* A second listen; the first cancelled hears nothing more. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"subscriptions/listen\",\"params\":{"
             "\"notifications\":{\"resourceSubscriptions\":[\"v://chat/9\"]}," ENV_META "}}");
    send_msg("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
             "\"requestId\":\"L1\"}}");
    n = mem.n;
    mcp_server_resource_updated(&srv, "v://fixed");
    assert_int_equal(mem.n, n);
    /* Bad filters. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"subscriptions/listen\",\"params\":{"
             "\"notifications\":{\"toolsListChanged\":\"yes\"}," ENV_META "}}");
    expect_error(-32602, "8");
    send_msg(
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"subscriptions/listen\",\"params\":{" ENV_META
        "}}");
    expect_error(-32600, "7");
    /* The server ends the open one with a complete result. */
    n = mem.n;
    mcp_session_close(mem.s);
    assert_int_equal(mem.n, n + 1);
    json_t *end = mem.out[mem.n - 1];
    assert_int_equal(json_integer_value(json_object_get(end, "id")), 7);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(end, "result"), "resultType")),
        "complete");
    teardown_server();
}

/* A watch is what the resource's toolset allows the caller to read, not
 * whatever matches a template: resources/subscribe answers the watch's
 * error (resources/read's not found), a listen leaves the resource out of
 * its acknowledgement and its updates are never sent; a watch that
 * answers later holds the acknowledgement until it does, and a listen
 * cancelled meanwhile hears nothing. */
static void test_watch_checked(void **state)
{
    (void)state;
    selected = "t,u,v";
    setup_server(100);
    selected = "all";
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/subscribe\",\"params\":{"
             "\"uri\":\"v://chat/hidden\"}}");
    expect_error(-32002, "1");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/subscribe\",\"params\":{"
             "\"uri\":\"v://chat/7\"}}");
    expect_result();
    int n = mem.n;
    mcp_server_resource_updated(&srv, "v://chat/hidden");
    assert_int_equal(mem.n, n);
    mcp_server_resource_updated(&srv, "v://chat/7");
    assert_int_equal(mem.n, n + 1);

    send_msg("{\"jsonrpc\":\"2.0\",\"id\":\"L\",\"method\":\"subscriptions/listen\",\"params\":{"
             "\"notifications\":{\"resourceSubscriptions\":[\"v://chat/hidden\",\"v://chat/8\"]"
             "}," ENV_META "}}");
    json_t *p = json_object_get(mem.out[mem.n - 1], "params");
    char *f = json_dumps(json_object_get(p, "notifications"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(f, "{\"resourceSubscriptions\":[\"v://chat/8\"]}");
    free(f);
    n = mem.n;
    mcp_server_resource_updated(&srv, "v://chat/hidden");
    assert_int_equal(mem.n, n);
    mcp_server_resource_updated(&srv, "v://chat/8");
    assert_int_equal(mem.n, n + 1);

    /* A watch that answers later: no acknowledgement (nor update) before. */
    n = mem.n;
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":\"M\",\"method\":\"subscriptions/listen\",\"params\":{"
             "\"notifications\":{\"resourceSubscriptions\":[\"v://chat/later\",\"v://chat/9\"]"
             "}," ENV_META "}}");
    assert_int_equal(mem.n, n);
    assert_non_null(parked_watch);
    mcp_server_resource_updated(&srv, "v://chat/9");
    assert_int_equal(mem.n, n);
    mcp_call_t *c = parked_watch;
    parked_watch = NULL;
    mcp_call_finish_result(c, json_pack("{s:[]}", "contents"));
    assert_int_equal(mem.n, n + 1);
    p = json_object_get(mem.out[mem.n - 1], "params");
    f = json_dumps(json_object_get(p, "notifications"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(f, "{\"resourceSubscriptions\":[\"v://chat/later\",\"v://chat/9\"]}");
    free(f);

    /* Cancelled before its watch answered: nothing is ever sent for it. */
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":\"N\",\"method\":\"subscriptions/listen\",\"params\":{"
             "\"notifications\":{\"resourceSubscriptions\":[\"v://chat/later\"]}," ENV_META "}}");
    send_msg("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
             "\"requestId\":\"N\"}}");
    n = mem.n;
    c = parked_watch;
    parked_watch = NULL;
    assert_non_null(c);
    assert_true(c->cancelled);
    mcp_call_finish_result(c, json_pack("{s:[]}", "contents"));
    assert_int_equal(mem.n, n);
    assert_int_equal(mcp_session_inflight(mem.s), 0);
    mcp_session_close(mem.s); /* the open listens end, answered */
    teardown_server();
}

/* A notification to a listener that pushes the output past the hard
 * limit closes the session once, without looping over the graceful ends
 * of its listens (each of which would pass the limit again). */
static void test_listen_close_past_limit(void **state)
{
    (void)state;
    selected = "t,u,v";
    setup_server(100);
    selected = "all";
    for (int i = 0; i < 3; i++) {
        char msg[400];
        snprintf(msg, sizeof msg,
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"subscriptions/listen\",\"params\":{"
                 "\"notifications\":{\"resourceSubscriptions\":[\"v://fixed\"]}," ENV_META "}}",
                 i);
        send_msg(msg);
    }
    mem.queued = 100000; /* past output_hard_limit (5000) */
    mcp_server_resource_updated(&srv, "v://fixed");
    assert_int_equal(mem.closes, 1);
    assert_int_equal(mcp_session_state(mem.s), MCP_SESSION_CLOSED);
    teardown_server();
}

/* A 2025-11-25 session serves an enveloped request statelessly beside its
 * own, and keeps -32002 for its own reads. */
/* A server identity too long for the prebuilt envelope text: a result
 * built as an object is completed as an object, serverInfo included; one
 * built as text still goes, with its resultType. */
static void test_modern_long_identity(void **state)
{
    (void)state;
    selected = "t,u,v";
    setup_server(100);
    selected = "all";
    static char long_version[300];
    memset(long_version, '9', sizeof long_version - 1);
    srv.version = long_version;
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":{\"n\":\"x\"}," ENV_META "}}");
    json_t *r = last_result();
    assert_true(json_is_true(json_object_get(r, "isError")));
    assert_complete(r);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(r, "_meta"), "io.modelcontextprotocol/serverInfo"),
            "version")),
        long_version);
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"lines\"," ENV_META "}}");
    r = last_result();
    assert_string_equal(json_string_value(json_object_get(r, "resultType")), "complete");
    assert_non_null(json_object_get(r, "structuredContent"));
    teardown_server();
}

static void test_legacy_then_modern(void **state)
{
    (void)state;
    selected = "t,u,v";
    setup_server(100);
    selected = "all";
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}");
    expect_result();
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/read\",\"params\":{\"uri\":"
             "\"v://nope\"}}");
    expect_error(-32002, "2");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\",\"params\":{\"uri\":"
             "\"v://nope\"," ENV_META "}}");
    expect_error(-32602, "3");
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}");
    json_t *r = last_result();
    assert_null(json_object_get(r, "resultType"));
    assert_null(json_object_get(r, "ttlMs"));
    expect_ping_ok();
    teardown_server();
}

/* The rtext tool's result for v, in 2025-11-25 or (modern) 2026-07-28. */
static json_t *rtext(const char *v, bool modern)
{
    char m[512];
    snprintf(m, sizeof m,
             "{\"jsonrpc\":\"2.0\",\"id\":\"r-%s\",\"method\":\"tools/call\",\"params\":{"
             "\"name\":\"rtext\",\"arguments\":{\"v\":\"%s\"}%s}}",
             v, v, modern ? "," ENV_META : "");
    send_msg(m);
    return json_object_get(mem.out[mem.n - 1], "result");
}

/* True when the last message's text holds s (a result given as text goes
 * out as it is: jansson would have written it compact). */
static bool raw_has(const char *s)
{
    return raw_last != NULL && strstr(raw_last, s) != NULL;
}

/* A result given as text goes out as it is, with 2026-07-28's envelope
 * spliced in before its closing brace (an empty object's first member
 * without a comma), its line breaks blanked; a read's is completed as an
 * object (cache hints), one with a _meta of its own gets the server's
 * merged in, and a text that is not a JSON object is an internal error the
 * session survives. */
static void test_result_text(void **state)
{
    (void)state;
    toolsets = with_text;
    setup_server(100);
    toolsets = available;
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}");
    expect_result();

    json_t *r = rtext("plain", false);
    assert_non_null(r);
    assert_true(raw_has("\"id\":\"r-plain\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
                        "\"hi\"}]}}"));
    assert_string_equal(json_string_value(json_object_get(mem.out[mem.n - 1], "id")), "r-plain");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "content"), 0), "text")),
                        "hi");
    assert_int_equal(json_object_size(r), 1);
    r = rtext("empty", false);
    assert_true(json_is_object(r));
    assert_int_equal(json_object_size(r), 0);
    assert_true(raw_has("\"result\":{   }}"));

    r = rtext("plain", true);
    assert_complete(r);
    assert_true(raw_has("\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],"
                        "\"resultType\":\"complete\",\"_meta\":"));
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "content"), 0), "text")),
                        "hi");
    assert_int_equal(json_object_size(r), 3);
    r = rtext("empty", true);
    assert_complete(r);
    assert_int_equal(json_object_size(r), 2);
    assert_true(raw_has("\"result\":{   \"resultType\":\"complete\","));
    r = rtext("lines", true);
    assert_complete(r);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r, "content"), 0), "text")),
                        "a\nb");
    assert_int_equal(json_array_size(json_object_get(json_object_get(r, "structuredContent"), "k")),
                     2);
    assert_true(raw_has("\"k\": [1, 2]} ,\"resultType\""));
    r = rtext("meta", true);
    assert_complete(r);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "_meta"), "x")), 1);
    assert_non_null(json_object_get(r, "content"));
    rtext("array", true);
    expect_error(-32603, "\"r-array\"");
    rtext("cut", false);
    expect_error(-32603, "\"r-cut\"");
    assert_true(raw_has("not valid JSON"));
    rtext("array", false);
    expect_error(-32603, "\"r-array\"");
    assert_true(raw_has("not a JSON object"));
    expect_ping_ok();

    send_msg("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/read\",\"params\":{\"uri\":"
             "\"x://text\"}}");
    r = last_result();
    assert_null(json_object_get(r, "ttlMs"));
    assert_int_equal(json_array_size(json_object_get(r, "contents")), 1);
    send_msg("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\",\"params\":{\"uri\":"
             "\"x://text\"," ENV_META "}}");
    r = last_result();
    assert_complete(r);
    assert_int_equal(json_integer_value(json_object_get(r, "ttlMs")), MCP_CACHE_READ_TTL_MS);
    assert_string_equal(json_string_value(json_object_get(r, "cacheScope")), "private");
    assert_int_equal(json_array_size(json_object_get(r, "contents")), 1);
    teardown_server();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_paths),
        cmocka_unit_test(test_version_negotiation),
        cmocka_unit_test(test_busy_and_backpressure),
        cmocka_unit_test(test_inflight_cap),
        cmocka_unit_test(test_policy),
        cmocka_unit_test(test_policy_bounds_every_method),
        cmocka_unit_test(test_modern_requests),
        cmocka_unit_test(test_modern_state_binding),
        cmocka_unit_test(test_anonymous_principals),
        cmocka_unit_test(test_modern_long_identity),
        cmocka_unit_test(test_legacy_then_modern),
        cmocka_unit_test(test_result_text),
        cmocka_unit_test(test_listen),
        cmocka_unit_test(test_watch_checked),
        cmocka_unit_test(test_listen_close_past_limit),
        cmocka_unit_test(test_strict_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
