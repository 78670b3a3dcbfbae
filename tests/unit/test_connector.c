/* Tests for upstream/connector's wrappers: a verb reaches the connector
 * only when it declares the capability, serves the verb's table and has
 * the function; else UV_ENOTSUP without a callback (and send_file closes
 * the descriptor it was given); a NULL connector is "none". */
#include <fcntl.h>
#include <unistd.h>

#include "testutil.h"
#include "upstream/connector.h"

static unsigned caps;
static int calls;

static unsigned f_caps(void *impl)
{
    (void)impl;
    return caps;
}

static const char *f_why(void *impl, connector_cap_t cap)
{
    (void)impl;
    return cap == CONNECTOR_CAN_READ_HISTORY ? "no history here" : "not this";
}

static int f_send_text(void *impl, int64_t chat, const char *text, int64_t topic, int64_t reply_to,
                       connector_cb cb, void *data)
{
    (void)impl;
    (void)chat;
    (void)text;
    (void)topic;
    (void)reply_to;
    (void)cb;
    (void)data;
    calls++;
    return 0;
}

static int f_send_file(void *impl, int64_t chat, int fd, const char *caption, const char *filename,
                       int64_t topic, int64_t reply_to, connector_cb cb, void *data)
{
    (void)impl;
    (void)chat;
    (void)caption;
    (void)filename;
    (void)topic;
    (void)reply_to;
    (void)cb;
    (void)data;
    calls++;
    close(fd);
    return 0;
}

static int f_search_dialogs(void *impl, const char *query, int limit, connector_cb cb, void *data)
{
    (void)impl;
    (void)query;
    (void)limit;
    (void)cb;
    (void)data;
    calls++;
    return 0;
}

static int f_history(void *impl, int64_t chat, int64_t from, int newer, int limit, connector_cb cb,
                     void *data)
{
    (void)impl;
    (void)chat;
    (void)from;
    (void)newer;
    (void)limit;
    (void)cb;
    (void)data;
    calls++;
    return 0;
}

/* A chat table without chat_info, search_messages, get_message; no
 * accounts table. */
static const connector_chat_ops_t chat = {.send_text = f_send_text,
                                          .send_file = f_send_file,
                                          .search_dialogs = f_search_dialogs,
                                          .history = f_history};
static const connector_ops_t ops = {.caps = f_caps, .why_not = f_why, .chat = &chat};

static void test_wrappers(void **state)
{
    (void)state;
    connector_t c = {.name = "fake", .ops = &ops, .impl = NULL};
    caps = CONNECTOR_CAN_SEND | CONNECTOR_CAN_CHAT_INFO | CONNECTOR_CAN_LOGIN;
    calls = 0;
    assert_int_equal(connector_send_text(&c, 1, "hi", 0, 0, NULL, NULL), 0);
    assert_int_equal(calls, 1);
    /* Declared, but no such function: refused. */
    assert_int_equal(connector_chat_info(&c, 1, CONNECTOR_INFO_CHAT, NULL, NULL), UV_ENOTSUP);
    /* Declared, but no accounts table. */
    assert_int_equal(connector_login(&c, "a", "b", NULL, NULL, NULL), UV_ENOTSUP);
    /* Not declared: refused though the function is there. */
    caps = CONNECTOR_CAN_CHAT_INFO;
    assert_int_equal(connector_send_text(&c, 1, "hi", 0, 0, NULL, NULL), UV_ENOTSUP);
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(connector_send_file(&c, 1, fd, NULL, NULL, 0, 0, NULL, NULL), UV_ENOTSUP);
    assert_int_equal(fcntl(fd, F_GETFD), -1); /* closed by the wrapper */
    assert_int_equal(calls, 1);
    assert_false(connector_realtime(&c));
    assert_int_equal(connector_set_realtime(&c, true), UV_ENOTSUP);
    assert_string_equal(connector_why_not(&c, CONNECTOR_CAN_READ_HISTORY), "no history here");
    assert_null(connector_why_not(&c, CONNECTOR_CAN_CHAT_INFO));
    assert_string_equal(connector_state(&c), "none"); /* no state function */
    const sync_class_t *cls;
    assert_int_equal(connector_job_classes(&c, &cls), 0);
}

/* The live reads: search_dialogs needs CONNECTOR_CAN_SEARCH_DIALOGS, the
 * others CONNECTOR_CAN_READ_HISTORY (the capability backfill jobs also
 * need), and each its function. */
static void test_live_reads(void **state)
{
    (void)state;
    connector_t c = {.name = "fake", .ops = &ops, .impl = NULL};
    caps = CONNECTOR_CAN_READ_HISTORY;
    calls = 0;
    assert_int_equal(connector_search_dialogs(&c, "q", 10, NULL, NULL), UV_ENOTSUP);
    assert_int_equal(connector_history(&c, 1, 0, 0, 10, NULL, NULL), 0);
    assert_int_equal(calls, 1);
    assert_int_equal(connector_search_messages(&c, 1, "q", 0, 0, 10, NULL, NULL), UV_ENOTSUP);
    assert_int_equal(connector_get_message(&c, 1, 2, NULL, NULL), UV_ENOTSUP);
    caps = CONNECTOR_CAN_SEARCH_DIALOGS;
    assert_int_equal(connector_search_dialogs(&c, "q", 10, NULL, NULL), 0);
    assert_int_equal(connector_history(&c, 1, 0, 0, 10, NULL, NULL), UV_ENOTSUP);
    assert_int_equal(calls, 2);
    assert_int_equal(connector_history(NULL, 1, 0, 0, 10, NULL, NULL), UV_ENOTSUP);
}

static void test_none(void **state)
{
    (void)state;
    assert_false(connector_can(NULL, CONNECTOR_CAN_SEND));
    assert_string_equal(connector_state(NULL), "none");
    assert_int_equal(connector_query(NULL, NULL, "m", "{}", NULL, NULL), UV_ENOTSUP);
    assert_int_equal(connector_leave(NULL, 1, NULL, NULL), UV_ENOTSUP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrappers),
        cmocka_unit_test(test_live_reads),
        cmocka_unit_test(test_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
