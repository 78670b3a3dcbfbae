/* Tests for util/secret_file: a FIFO, a directory, a device or a symbolic
 * link (when refused) is refused at once, naming the file, never waited on;
 * the mode rule for secrets (nothing for others; group read only when
 * root owns the file); reads are bounded. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "testutil.h"
#include "util/secret_file.h"

static void write_text(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(chmod(path, mode), 0);
}

static void test_not_regular(void **state)
{
    (void)state;
    alarm(10); /* a blocking open fails the test instead of hanging it */
    char *dir = test_tmpdir("secret_file");
    char fifo[512], err[512];
    snprintf(fifo, sizeof fifo, "%s/key.fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    int fd = -1;
    struct stat st;
    assert_int_equal(
        secret_file_open(fifo, SECRET_FILE_PRIVATE, "token file", &fd, &st, err, sizeof err),
        UV_EINVAL);
    assert_int_equal(fd, -1);
    assert_non_null(strstr(err, "token file "));
    assert_non_null(strstr(err, "key.fifo: a FIFO, not a regular file"));
    uint8_t buf[64];
    size_t n;
    assert_int_equal(secret_file_read(fifo, 0, NULL, buf, sizeof buf, &n, err, sizeof err),
                     UV_EINVAL);
    assert_int_equal(secret_file_open(dir, 0, NULL, &fd, &st, err, sizeof err), UV_EINVAL);
    assert_non_null(strstr(err, "a directory, not a regular file"));
    assert_int_equal(secret_file_open("/dev/null", 0, NULL, &fd, &st, err, sizeof err), UV_EINVAL);
    assert_non_null(strstr(err, "/dev/null: a character device"));
    /* a symbolic link: followed, unless SECRET_FILE_NOFOLLOW */
    char file[512], link[512];
    snprintf(file, sizeof file, "%s/real", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    write_text(file, "abc", 0600);
    assert_int_equal(symlink(file, link), 0);
    assert_int_equal(secret_file_read(link, 0, NULL, buf, sizeof buf, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    assert_int_equal(
        secret_file_read(link, SECRET_FILE_NOFOLLOW, NULL, buf, sizeof buf, &n, err, sizeof err),
        -ELOOP);
    assert_non_null(strstr(err, "link: a symbolic link"));
    unlink(link);
    unlink(file);
    unlink(fifo);
    test_rmdir(dir);
    alarm(0);
}

static void test_mode_rule(void **state)
{
    (void)state;
    struct stat st = {0};
    st.st_mode = S_IFREG | 0600;
    st.st_uid = 1000;
    assert_true(secret_file_mode_ok(&st));
    st.st_mode = S_IFREG | 0400;
    assert_true(secret_file_mode_ok(&st));
    st.st_mode = S_IFREG | 0640; /* group read: only when root owns it */
    assert_false(secret_file_mode_ok(&st));
    st.st_uid = 0;
    assert_true(secret_file_mode_ok(&st));
    st.st_mode = S_IFREG | 0660; /* group write: never */
    assert_false(secret_file_mode_ok(&st));
    st.st_mode = S_IFREG | 0604; /* others: never */
    assert_false(secret_file_mode_ok(&st));
    st.st_mode = S_IFREG | 0644;
    assert_false(secret_file_mode_ok(&st));
    st.st_uid = 1000;
    assert_false(secret_file_mode_ok(&st));

    char *dir = test_tmpdir("secret_file");
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/tokens", dir);
    write_text(path, "secret-token\n", 0644);
    int fd = -1;
    assert_int_equal(
        secret_file_open(path, SECRET_FILE_PRIVATE, "token file", &fd, &st, err, sizeof err),
        UV_EPERM);
    assert_non_null(strstr(err, "token file "));
    assert_non_null(strstr(err, "tokens: holds a secret and others can read it (mode 0644); "
                                "chmod 600 it"));
    /* not a secret: the mode does not matter */
    assert_int_equal(secret_file_open(path, 0, "config file", &fd, &st, err, sizeof err), 0);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(
        secret_file_open(path, SECRET_FILE_PRIVATE, "token file", &fd, &st, err, sizeof err), 0);
    close(fd);
    unlink(path);
    test_rmdir(dir);
}

static void test_bounded_read(void **state)
{
    (void)state;
    char *dir = test_tmpdir("secret_file");
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/key", dir);
    write_text(path, "0123456789", 0600);
    char buf[16];
    size_t n = 0;
    assert_int_equal(secret_file_read(path, 0, NULL, buf, 10, &n, err, sizeof err), 0);
    assert_int_equal(n, 10);
    assert_memory_equal(buf, "0123456789", 10);
    assert_int_equal(secret_file_read(path, 0, "key", buf, 9, &n, err, sizeof err), UV_E2BIG);
    assert_non_null(strstr(err, "larger than 9 bytes"));
    assert_int_equal(secret_file_read("/nonexistent/key", 0, "key", buf, 9, &n, err, sizeof err),
                     UV_ENOENT);
    assert_non_null(strstr(err, "key /nonexistent/key: No such file"));
    unlink(path);
    test_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_regular),
        cmocka_unit_test(test_mode_rule),
        cmocka_unit_test(test_bounded_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
