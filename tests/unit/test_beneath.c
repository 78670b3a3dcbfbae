/* Tests for util/beneath: a regular file under the root opens (relative,
 * absolute inside the root, through the root's own symbolic link); a
 * symbolic link anywhere on the way, "..", an absolute path elsewhere, a
 * FIFO (without waiting for a writer), a directory and a file over the cap
 * are refused with their codes; the descriptor still reads the bytes opened
 * after the path was swapped; the thread-pool variant hands the descriptor
 * to its callback. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "util/beneath.h"

static char *dir;
static char root[512], outside[512];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    dir = test_tmpdir("parley-beneath");
    char p[1024], q[1024];
    snprintf(root, sizeof root, "%s/root", dir);
    snprintf(outside, sizeof outside, "%s/outside", dir);
    assert_int_equal(mkdir(root, 0755), 0);
    assert_int_equal(mkdir(outside, 0755), 0);
    snprintf(p, sizeof p, "%s/secret.txt", outside);
    write_file(p, "SECRET");
    snprintf(p, sizeof p, "%s/a.txt", root);
    write_file(p, "hello");
    snprintf(p, sizeof p, "%s/sub", root);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/sub/b.txt", root);
    write_file(p, "nested");
    snprintf(p, sizeof p, "%s/link.txt", root);
    snprintf(q, sizeof q, "%s/a.txt", root);
    assert_int_equal(symlink(q, p), 0);
    snprintf(p, sizeof p, "%s/out", root);
    assert_int_equal(symlink(outside, p), 0);
    snprintf(p, sizeof p, "%s/pipe", root);
    assert_int_equal(mkfifo(p, 0600), 0);
    snprintf(p, sizeof p, "%s/rootlink", dir);
    assert_int_equal(symlink(root, p), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_rmdir(dir);
    return 0;
}

static void assert_reads(int fd, const char *want)
{
    assert_true(fd >= 0);
    char buf[64] = {0};
    assert_int_equal(pread(fd, buf, sizeof buf - 1, 0), (ssize_t)strlen(want));
    assert_string_equal(buf, want);
    assert_false(fcntl(fd, F_GETFL) & O_NONBLOCK);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
}

static void test_opens(void **state)
{
    (void)state;
    uint64_t size = 0;
    assert_reads(beneath_open_read(root, "a.txt", 0, &size), "hello");
    assert_int_equal(size, 5);
    assert_reads(beneath_open_read(root, "./sub//b.txt", 0, &size), "nested");
    char abs[1024];
    snprintf(abs, sizeof abs, "%s/sub/b.txt", root);
    assert_reads(beneath_open_read(root, abs, 0, &size), "nested");
    /* The root itself may be a symbolic link (the operator's setting);
     * absolute paths through its target or through it are inside. */
    char rl[1024];
    snprintf(rl, sizeof rl, "%s/rootlink", dir);
    assert_reads(beneath_open_read(rl, "a.txt", 0, &size), "hello");
    assert_reads(beneath_open_read(rl, abs, 0, &size), "nested");
}

static void test_refusals(void **state)
{
    (void)state;
    uint64_t size = 0;
    assert_int_equal(beneath_open_read(root, "link.txt", 0, &size), -ELOOP);
    int rc = beneath_open_read(root, "out/secret.txt", 0, &size);
    assert_true(rc == -ELOOP || rc == -ENOTDIR);
    assert_int_equal(beneath_open_read(root, "sub/../a.txt", 0, &size), -EPERM);
    assert_int_equal(beneath_open_read(root, "../outside/secret.txt", 0, &size), -EPERM);
    char abs[1024];
    snprintf(abs, sizeof abs, "%s/secret.txt", outside);
    assert_int_equal(beneath_open_read(root, abs, 0, &size), -EXDEV);
    assert_int_equal(beneath_open_read(root, "missing", 0, &size), -ENOENT);
    assert_int_equal(beneath_open_read(root, "a.txt/x", 0, &size), -ENOTDIR);
    assert_int_equal(beneath_open_read(root, "pipe", 0, &size), -EINVAL); /* never waits */
    assert_int_equal(beneath_open_read(root, "sub", 0, &size), -EINVAL);
    assert_int_equal(beneath_open_read(root, ".", 0, &size), -EISDIR);
    assert_int_equal(beneath_open_read(root, "a.txt", 4, &size), -EFBIG);
    char missing[1024];
    snprintf(missing, sizeof missing, "%s/nope", dir);
    assert_int_equal(beneath_open_read(missing, "a.txt", 0, &size), -ENXIO);
}

static void test_swap_after_open(void **state)
{
    (void)state;
    char p[1024], q[1024];
    snprintf(p, sizeof p, "%s/swap.txt", root);
    write_file(p, "ORIGINAL");
    uint64_t size = 0;
    int fd = beneath_open_read(root, "swap.txt", 0, &size);
    assert_true(fd >= 0);
    assert_int_equal(unlink(p), 0);
    snprintf(q, sizeof q, "%s/secret.txt", outside);
    assert_int_equal(symlink(q, p), 0);
    assert_reads(fd, "ORIGINAL");
    assert_int_equal(beneath_open_read(root, "swap.txt", 0, &size), -ELOOP);
}

static bool async_done;
static int async_status;
static uint64_t async_size;

static void on_open(void *data, int status, uint64_t size)
{
    (void)data;
    async_done = true;
    async_status = status;
    async_size = size;
}

static void test_async(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    async_done = false;
    assert_int_equal(beneath_open_read_async(&loop, root, "sub/b.txt", 0, on_open, NULL), 0);
    assert_false(async_done);
    test_run_until(&loop, &async_done, 5000);
    assert_int_equal(async_size, 6);
    assert_reads(async_status, "nested");
    async_done = false;
    assert_int_equal(beneath_open_read_async(&loop, root, "pipe", 0, on_open, NULL), 0);
    test_run_until(&loop, &async_done, 5000);
    assert_int_equal(async_status, UV_EINVAL);
    test_loop_close(&loop);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opens),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_swap_after_open),
        cmocka_unit_test(test_async),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
