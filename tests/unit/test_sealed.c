/* Tests for util/sealed: a key file is created 0600 and read back, a file
 * others can read or of the wrong size is refused, values open under their
 * own key and context only, and tampering is detected. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "util/sealed.h"

static void test_key_file(void **state)
{
    (void)state;
    char *dir = test_tmpdir("sealed");
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/credentials.key", dir);
    sealed_key_t k1, k2;
    assert_int_equal(sealed_key_load(path, &k1, err, sizeof err), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_size, SEALED_KEY_BYTES);
    assert_int_equal(sealed_key_load(path, &k2, err, sizeof err), 0);
    assert_memory_equal(k1.key, k2.key, SEALED_KEY_BYTES);

    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(sealed_key_load(path, &k2, err, sizeof err), UV_EPERM);
    assert_non_null(strstr(err, "chmod 600"));
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(truncate(path, 10), 0);
    assert_int_equal(sealed_key_load(path, &k2, err, sizeof err), UV_EINVAL);
    unlink(path);
    /* a FIFO is refused at once, not waited on; a symbolic link too */
    alarm(10);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(sealed_key_load(path, &k2, err, sizeof err), UV_EINVAL);
    assert_non_null(strstr(err, "credentials.key: a FIFO, not a regular file"));
    alarm(0);
    unlink(path);
    assert_int_equal(symlink("/dev/null", path), 0);
    assert_int_equal(sealed_key_load(path, &k2, err, sizeof err), -ELOOP);
    unlink(path);
    test_rmdir(dir);
}

static void test_seal_open(void **state)
{
    (void)state;
    sealed_key_t k, other;
    memset(k.key, 7, sizeof k.key);
    memset(other.key, 8, sizeof other.key);
    const char *secret = "{\"access\":\"a.b.c\",\"refresh\":\"d.e.f\"}";
    uint8_t *s;
    size_t n;
    assert_int_equal(sealed_seal(&k, "bluesky:did:plc:a", secret, strlen(secret), &s, &n), 0);
    assert_int_equal(n, strlen(secret) + SEALED_OVERHEAD);
    assert_null(memmem(s, n, "refresh", 7)); /* not in the clear */
    char *p;
    size_t plen;
    assert_int_equal(sealed_open(&k, "bluesky:did:plc:a", s, n, &p, &plen), 0);
    assert_string_equal(p, secret);
    assert_int_equal(plen, strlen(secret));
    sealed_free(p, plen);
    /* another context (another row), another key, a flipped bit, a cut */
    assert_int_equal(sealed_open(&k, "bluesky:did:plc:b", s, n, &p, &plen), UV_EINVAL);
    assert_int_equal(sealed_open(&other, "bluesky:did:plc:a", s, n, &p, &plen), UV_EINVAL);
    s[n / 2] ^= 1;
    assert_int_equal(sealed_open(&k, "bluesky:did:plc:a", s, n, &p, &plen), UV_EINVAL);
    s[n / 2] ^= 1;
    assert_int_equal(sealed_open(&k, "bluesky:did:plc:a", s, n - 1, &p, &plen), UV_EINVAL);
    assert_int_equal(sealed_open(&k, "bluesky:did:plc:a", s, 3, &p, &plen), UV_EINVAL);
    /* two seals of one value differ (random nonce) */
    uint8_t *s2;
    size_t n2;
    assert_int_equal(sealed_seal(&k, "x", secret, strlen(secret), &s2, &n2), 0);
    assert_int_equal(sealed_open(&k, "x", s2, n2, &p, &plen), 0);
    sealed_free(p, plen);
    assert_memory_not_equal(s + 1, s2 + 1, 12);
    free(s);
    free(s2);
    assert_int_equal(sealed_seal(&k, "x", secret, SEALED_MAX_PLAIN + 1, &s2, &n2), UV_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_file),
        cmocka_unit_test(test_seal_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
