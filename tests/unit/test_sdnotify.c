/* Tests for sdnotify, the daemon's messages to systemd (Type=notify): the
 * real parleyd serve, started with $NOTIFY_SOCKET and $WATCHDOG_USEC as
 * systemd starts parleyd.service, sends READY=1 once (when its Unix
 * endpoint already accepts connections), WATCHDOG=1 while it serves, and
 * STOPPING=1 on SIGTERM, then exits 0. The module alone: the watchdog
 * pings at half $WATCHDOG_USEC, not when $WATCHDOG_PID names another
 * process nor without $WATCHDOG_USEC; READY and STOPPING are not sent
 * when $SYSTEMD_EXEC_PID names another process, and nothing is sent (and
 * nothing fails) without $NOTIFY_SOCKET. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "util/sdnotify.h"

/* How long any one message may take to come (a failsafe, not a figure the
 * test checks: the daemon's first start applies every migration). */
#define WAIT_MS 120000

/* A datagram socket bound at dir/notify, as systemd's; its path in path. */
static int notify_socket(const char *dir, char *path, size_t cap)
{
    snprintf(path, cap, "%s/notify", dir);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* The next datagram into buf ("" after timeout_ms without one). */
static void next_message(int fd, char *buf, size_t cap, int timeout_ms)
{
    buf[0] = '\0';
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, timeout_ms);
    if (n <= 0)
        return;
    ssize_t got = recv(fd, buf, cap - 1, 0);
    assert_true(got >= 0);
    buf[got] = '\0';
}

static bool can_connect(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    assert_true(len < sizeof sa.sun_path);
    memcpy(sa.sun_path, path, len + 1);
    bool ok = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return ok;
}

static void test_daemon(void **state)
{
    (void)state;
    const char *parleyd = getenv("PARLEYD");
    const char *pgdir = getenv("PARLEY_TEST_PG_DIR");
    if (parleyd == NULL || pgdir == NULL)
        skip();
    char db[64];
    test_pg_create_db(db, sizeof db);
    char url[512], listen[300], path[256], mcp[256];
    snprintf(url, sizeof url, "host=%s port=5432 user=parley dbname=%s", pgdir, db);
    char *dir = test_tmpdir("parley-sdn");
    int fd = notify_socket(dir, path, sizeof path);
    snprintf(mcp, sizeof mcp, "%s/mcp.sock", dir);
    snprintf(listen, sizeof listen, "unix:%s", mcp);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsetenv("SYSTEMD_EXEC_PID"); /* the test may itself run under systemd */
        setenv("NOTIFY_SOCKET", path, 1);
        setenv("WATCHDOG_USEC", "400000", 1);
        execl(parleyd, "parleyd", "serve", "--db", url, "--data-dir", dir, "--listen", listen,
              (char *)NULL);
        _exit(127);
    }
    char msg[512];
    int ready = 0, pings_after_ready = 0;
    /* READY=1 (and the endpoint listens by then), then a ping while it
     * serves. */
    while (ready == 0 || pings_after_ready == 0) {
        next_message(fd, msg, sizeof msg, WAIT_MS);
        assert_true(msg[0] != '\0'); /* the daemon sent nothing more */
        assert_null(strstr(msg, "STOPPING=1"));
        if (strstr(msg, "READY=1")) {
            ready++;
            assert_true(can_connect(mcp));
            assert_non_null(strstr(msg, "STATUS=ready (schema version "));
        } else if (strcmp(msg, "WATCHDOG=1") == 0 && ready) {
            pings_after_ready++;
        }
    }
    assert_int_equal(kill(pid, SIGTERM), 0);
    bool stopping = false;
    while (!stopping) {
        next_message(fd, msg, sizeof msg, WAIT_MS);
        assert_true(msg[0] != '\0');
        assert_null(strstr(msg, "READY=1")); /* READY once */
        stopping = strstr(msg, "STOPPING=1") != NULL;
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    close(fd);
    test_rmdir(dir);
}

static void test_watchdog_module(void **state)
{
    (void)state;
    char path[256], msg[128], pid[32];
    char *dir = test_tmpdir("parley-sdn");
    int fd = notify_socket(dir, path, sizeof path);
    uv_loop_t loop;
    uv_loop_init(&loop);
    sdnotify_watchdog_t w;

    /* Pinged at half of $WATCHDOG_USEC (20 ms: every 10 ms), from the
     * loop. */
    setenv("NOTIFY_SOCKET", path, 1);
    setenv("WATCHDOG_USEC", "20000", 1);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    setenv("WATCHDOG_PID", pid, 1);
    assert_int_equal(sdnotify_watchdog_start(&w, &loop), 0);
    assert_true(w.armed);
    assert_int_equal(w.interval_ms, 10);
    int pings = 0;
    for (int i = 0; i < 1000 && pings < 3; i++) {
        test_run_for(&loop, 10);
        for (next_message(fd, msg, sizeof msg, 0); msg[0]; next_message(fd, msg, sizeof msg, 0)) {
            assert_string_equal(msg, "WATCHDOG=1");
            pings++;
        }
    }
    assert_true(pings >= 3);
    sdnotify_watchdog_close(&w, NULL);
    assert_false(w.armed);
    test_loop_close(&loop);
    uv_loop_init(&loop);

    /* A watchdog meant for another process (systemd names the main pid). */
    setenv("WATCHDOG_PID", "1", 1);
    assert_int_equal(sdnotify_watchdog_start(&w, &loop), 0);
    assert_false(w.armed);
    /* None asked for. */
    unsetenv("WATCHDOG_PID");
    unsetenv("WATCHDOG_USEC");
    assert_int_equal(sdnotify_watchdog_start(&w, &loop), 0);
    assert_false(w.armed);
    sdnotify_watchdog_close(&w, NULL); /* not armed: nothing to close */
    test_loop_close(&loop);

    /* The state messages, to the socket systemd names. */
    unsetenv("SYSTEMD_EXEC_PID");
    assert_int_equal(sdnotify_ready("ready"), 0);
    next_message(fd, msg, sizeof msg, 1000);
    assert_string_equal(msg, "READY=1\nSTATUS=ready");
    assert_int_equal(sdnotify_stopping(), 0);
    next_message(fd, msg, sizeof msg, 1000);
    assert_string_equal(msg, "STOPPING=1\nSTATUS=stopping");

    /* Started by the process systemd started, not by systemd: silent. */
    setenv("SYSTEMD_EXEC_PID", "1", 1);
    assert_int_equal(sdnotify_ready(NULL), 0);
    assert_int_equal(sdnotify_stopping(), 0);
    next_message(fd, msg, sizeof msg, 0);
    assert_string_equal(msg, "");
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    setenv("SYSTEMD_EXEC_PID", pid, 1); /* this process: it speaks */
    assert_int_equal(sdnotify_ready(NULL), 0);
    next_message(fd, msg, sizeof msg, 1000);
    assert_string_equal(msg, "READY=1");
    unsetenv("SYSTEMD_EXEC_PID");

    /* Not started by systemd: no-ops that succeed, nothing sent. */
    unsetenv("NOTIFY_SOCKET");
    assert_int_equal(sdnotify_ready(NULL), 0);
    assert_int_equal(sdnotify_stopping(), 0);
    next_message(fd, msg, sizeof msg, 0);
    assert_string_equal(msg, "");
    close(fd);
    test_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watchdog_module),
        cmocka_unit_test(test_daemon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
