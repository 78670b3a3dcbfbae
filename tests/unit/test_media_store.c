/* Tests for archive/media_store: a file put is copied and named by its
 * SHA-256; a download adopted from inside the store is moved there, not
 * copied, and removed when its content is stored already; a stored file
 * is served only while its content matches its name; partial files of
 * processes that ended are swept. A put never follows a symbolic link or
 * waits on a FIFO. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "archive/media_store.h"
#include "testutil.h"

/* SHA-256 of "hello\n" */
#define HELLO_SHA "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"

static void write_file(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(s, f);
    fclose(f);
}

static void test_put_adopt_get(void **state)
{
    (void)state;
    char *dir = test_tmpdir("parley-media");
    char root[512], src[600], dl[600], dl2[600], out[600], err[512], sha[65];
    char rel[MEDIA_STORE_REL_MAX];
    uint64_t size = 0;
    snprintf(root, sizeof root, "%s/media", dir);
    assert_int_equal(media_store_prepare(root, err, sizeof err), 0);

    /* put copies: the source stays. */
    snprintf(src, sizeof src, "%s/export.txt", dir);
    write_file(src, "hello\n");
    assert_int_equal(media_store_put(root, src, sha, rel, &size, err, sizeof err), 0);
    assert_string_equal(sha, HELLO_SHA);
    assert_int_equal(size, 6);
    assert_int_equal(access(src, F_OK), 0);
    assert_true(media_store_rel_ok(sha, rel));
    /* ...never through a symbolic link, never from a FIFO (at once). */
    char link[600], fifo[600];
    snprintf(link, sizeof link, "%s/link.txt", dir);
    assert_int_equal(symlink(src, link), 0);
    assert_int_equal(media_store_put(root, link, sha, rel, &size, err, sizeof err), -ELOOP);
    assert_non_null(strstr(err, "link.txt"));
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(media_store_put(root, fifo, sha, rel, &size, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "not a regular file"));
    /* put_fd copies what the descriptor reads. */
    int fd = open(src, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(media_store_put_fd(root, fd, "export.txt", sha, rel, &size, err, sizeof err),
                     0);
    close(fd);
    assert_string_equal(sha, HELLO_SHA);

    /* adopt moves a download already inside the store... */
    snprintf(dl, sizeof dl, "%s/.download-1", root);
    write_file(dl, "other\n");
    chmod(dl, 0600);
    assert_int_equal(media_store_adopt(root, dl, sha, rel, &size, err, sizeof err), 0);
    assert_int_equal(access(dl, F_OK), -1);
    char stored[700];
    snprintf(stored, sizeof stored, "%s/%s", root, rel);
    struct stat st;
    assert_int_equal(stat(stored, &st), 0);
    assert_int_equal(st.st_size, 6);
    assert_int_equal(st.st_mode & 0777, 0644);
    /* ...and drops one whose content is stored already. */
    snprintf(dl2, sizeof dl2, "%s/.download-2", root);
    write_file(dl2, "hello\n");
    assert_int_equal(media_store_adopt(root, dl2, sha, rel, &size, err, sizeof err), 0);
    assert_string_equal(sha, HELLO_SHA);
    assert_int_equal(access(dl2, F_OK), -1);
    /* A missing download is an error that names it. */
    assert_int_equal(media_store_adopt(root, dl2, sha, rel, &size, err, sizeof err), -ENOENT);
    assert_non_null(strstr(err, ".download-2"));

    /* get serves a stored file while its content matches its name. */
    snprintf(out, sizeof out, "%s/out.txt", dir);
    assert_int_equal(media_store_get(root, HELLO_SHA, out, &size, err, sizeof err), 0);
    assert_int_equal(size, 6);
    snprintf(stored, sizeof stored, "%s/%.2s/%s", root, HELLO_SHA, HELLO_SHA);
    write_file(stored, "tampered\n");
    unlink(out);
    assert_int_equal(media_store_get(root, HELLO_SHA, out, &size, err, sizeof err), -EBADMSG);
    assert_int_equal(access(out, F_OK), -1);
    test_rmdir(dir);
}

/* Partial files of processes that ended are swept; a live one's are kept. */
static void test_sweep(void **state)
{
    (void)state;
    char *dir = test_tmpdir("parley-media");
    char err[512], path[700];
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    snprintf(path, sizeof path, "%s/.download-%d-1", dir, (int)dead);
    write_file(path, "partial");
    snprintf(path, sizeof path, "%s/.incoming-%d-abc123", dir, (int)dead);
    write_file(path, "partial");
    snprintf(path, sizeof path, "%s/.download-%d-2", dir, (int)getpid());
    write_file(path, "in progress");
    snprintf(path, sizeof path, "%s/.download-notapid", dir);
    write_file(path, "kept");
    int removed = -1;
    assert_int_equal(media_store_sweep(dir, &removed, err, sizeof err), 0);
    assert_int_equal(removed, 2);
    snprintf(path, sizeof path, "%s/.download-%d-2", dir, (int)getpid());
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/.download-notapid", dir);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/.download-%d-1", dir, (int)dead);
    assert_int_equal(access(path, F_OK), -1);
    /* A store not created yet has nothing to sweep. */
    snprintf(path, sizeof path, "%s/none", dir);
    assert_int_equal(media_store_sweep(path, &removed, err, sizeof err), 0);
    assert_int_equal(removed, 0);
    test_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_adopt_get),
        cmocka_unit_test(test_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
