/* Tests for backup_manifest: a manifest written is read back field for
 * field; a missing one, one of another format or version, one with a
 * field missing, and one too large are refused with what to do; the
 * counts of a tree (files and bytes, symbolic links not followed, a
 * missing tree empty) and of a media store's copy (its partial files at
 * the top removed, not counted). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/backup_manifest.h"
#include "testutil.h"

static void write_file(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(s, f);
    fclose(f);
}

static void test_round_trip(void **state)
{
    (void)state;
    char *dir = test_tmpdir("parley-bkm");
    char err[BACKUP_ERR_MAX];
    backup_manifest_t m = {.version = BACKUP_FORMAT_VERSION,
                           .parleyd = "0.1.0",
                           .created = "2026-11-29T10:00:00Z",
                           .pg_version = "15",
                           .data_dir = "/var/lib/parley",
                           .has = {true, true, false, true},
                           .pg = {1401, 49982208},
                           .media = {3, 375000}};
    assert_int_equal(backup_manifest_write(dir, &m, err, sizeof err), 0);
    backup_manifest_t r;
    assert_int_equal(backup_manifest_read(dir, &r, err, sizeof err), 0);
    assert_int_equal(r.version, BACKUP_FORMAT_VERSION);
    assert_string_equal(r.parleyd, "0.1.0");
    assert_string_equal(r.created, "2026-11-29T10:00:00Z");
    assert_string_equal(r.pg_version, "15");
    assert_string_equal(r.data_dir, "/var/lib/parley");
    assert_true(r.has[0] && r.has[1] && !r.has[2] && r.has[3]);
    assert_int_equal(r.pg.files, 1401);
    assert_int_equal(r.pg.bytes, 49982208);
    assert_int_equal(r.media.files, 3);
    assert_int_equal(r.media.bytes, 375000);
    char path[600];
    snprintf(path, sizeof path, "%s/" BACKUP_MANIFEST_NAME, dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    snprintf(path, sizeof path, "%s/" BACKUP_MANIFEST_NAME ".tmp", dir);
    assert_int_equal(access(path, F_OK), -1); /* renamed into place */
    test_rmdir(dir);
}

static void expect_refused(const char *dir, const char *body, int code, const char *needle)
{
    char path[600], err[BACKUP_ERR_MAX];
    snprintf(path, sizeof path, "%s/" BACKUP_MANIFEST_NAME, dir);
    if (body)
        write_file(path, body);
    else
        unlink(path);
    backup_manifest_t r;
    assert_int_equal(backup_manifest_read(dir, &r, err, sizeof err), code);
    if (strstr(err, needle) == NULL)
        fail_msg("error '%s' does not mention '%s'", err, needle);
}

static void test_refused(void **state)
{
    (void)state;
    char *dir = test_tmpdir("parley-bkm");
    expect_refused(dir, NULL, UV_ENOENT, "not a backup of parleyd backup, or one that did not");
    expect_refused(dir, "{\"format\": \"other\", \"version\": 1}", UV_EINVAL,
                   "not a manifest of parleyd backup");
    expect_refused(dir, "{\"format\": \"parley-backup\", \"version\": 2}", UV_EINVAL,
                   "of version 2; this parleyd reads version 1");
    expect_refused(dir, "{\"format\": \"parley-backup\", \"version\": 1, \"parleyd\": \"x\"}",
                   UV_EINVAL, "lacks a field");
    expect_refused(dir, "not json", UV_EINVAL, "is not JSON");
    char big[BACKUP_MANIFEST_MAX + 16];
    memset(big, ' ', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    expect_refused(dir, big, UV_EINVAL, "at most");
    test_rmdir(dir);
}

static void test_counts(void **state)
{
    (void)state;
    char *dir = test_tmpdir("parley-bkm");
    char p[600], err[BACKUP_ERR_MAX];
    backup_count_t c;
    snprintf(p, sizeof p, "%s/none", dir);
    assert_int_equal(backup_count_tree(p, false, &c, err, sizeof err), 0);
    assert_int_equal(c.files, 0);
    snprintf(p, sizeof p, "%s/ab", dir);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/ab/abcd", dir);
    write_file(p, "12345");
    snprintf(p, sizeof p, "%s/.incoming-1-x", dir);
    write_file(p, "half");
    snprintf(p, sizeof p, "%s/ab/link", dir);
    assert_int_equal(symlink("/etc/passwd", p), 0);
    assert_int_equal(backup_count_tree(dir, false, &c, err, sizeof err), 0);
    assert_int_equal(c.files, 2); /* the link is no file */
    assert_int_equal(c.bytes, 9);
    assert_int_equal(backup_count_tree(dir, true, &c, err, sizeof err), 0);
    assert_int_equal(c.files, 1);
    assert_int_equal(c.bytes, 5);
    snprintf(p, sizeof p, "%s/.incoming-1-x", dir);
    assert_int_equal(access(p, F_OK), -1); /* removed from the copy */
    test_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
