/* sealed: AES-256-GCM sealing of secrets under a key file (see sealed.h). */
#include "util/sealed.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "util/secret_file.h"

#define SEALED_VERSION   1
#define SEALED_NONCE_LEN 12
#define SEALED_TAG_LEN   16

static int key_create(const char *path, sealed_key_t *key, char *err, size_t errcap)
{
    if (RAND_bytes(key->key, SEALED_KEY_BYTES) != 1) {
        snprintf(err, errcap, "no random bytes for the credentials key");
        return UV_EIO;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errcap, "%s: %s", path, strerror(e));
        return -e;
    }
    ssize_t n = write(fd, key->key, SEALED_KEY_BYTES);
    int rc = n == SEALED_KEY_BYTES && fsync(fd) == 0 ? 0 : UV_EIO;
    close(fd);
    if (rc != 0) {
        unlink(path);
        snprintf(err, errcap, "%s: could not write the credentials key", path);
    }
    return rc;
}

int sealed_key_load(const char *path, sealed_key_t *key, char *err, size_t errcap)
{
    const unsigned flags = SECRET_FILE_PRIVATE | SECRET_FILE_NOFOLLOW;
    size_t n = 0;
    int rc = secret_file_read(path, flags, NULL, key->key, SEALED_KEY_BYTES, &n, err, errcap);
    if (rc == UV_ENOENT) {
        rc = key_create(path, key, err, errcap);
        if (rc != UV_EEXIST)
            return rc;
        /* created meanwhile */
        rc = secret_file_read(path, flags, NULL, key->key, SEALED_KEY_BYTES, &n, err, errcap);
    }
    if ((rc == 0 && n != SEALED_KEY_BYTES) || rc == UV_E2BIG) {
        snprintf(err, errcap, "%s: not a credentials key (%d bytes expected)", path,
                 SEALED_KEY_BYTES);
        rc = UV_EINVAL;
    }
    if (rc != 0)
        sealed_key_wipe(key);
    return rc;
}

void sealed_key_wipe(sealed_key_t *key)
{
    OPENSSL_cleanse(key->key, sizeof key->key);
}

int sealed_seal(const sealed_key_t *key, const char *context, const void *plain, size_t len,
                uint8_t **out, size_t *outlen)
{
    if (len > SEALED_MAX_PLAIN)
        return UV_EINVAL;
    uint8_t *b = malloc(len + SEALED_OVERHEAD);
    if (b == NULL)
        return UV_ENOMEM;
    b[0] = SEALED_VERSION;
    uint8_t *nonce = b + 1, *ct = b + 1 + SEALED_NONCE_LEN, *tag = ct + len;
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    int n = 0,
        ok = x != NULL && RAND_bytes(nonce, SEALED_NONCE_LEN) == 1 &&
             EVP_EncryptInit_ex(x, EVP_aes_256_gcm(), NULL, key->key, nonce) == 1 &&
             EVP_EncryptUpdate(x, NULL, &n, (const uint8_t *)context, (int)strlen(context)) == 1 &&
             EVP_EncryptUpdate(x, ct, &n, plain, (int)len) == 1 &&
             EVP_EncryptFinal_ex(x, ct + n, &n) == 1 &&
             EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, SEALED_TAG_LEN, tag) == 1;
    EVP_CIPHER_CTX_free(x);
    if (!ok) {
        free(b);
        return UV_EIO;
    }
    *out = b;
    *outlen = len + SEALED_OVERHEAD;
    return 0;
}

int sealed_open(const sealed_key_t *key, const char *context, const uint8_t *sealed, size_t len,
                char **out, size_t *outlen)
{
    if (len < SEALED_OVERHEAD || sealed[0] != SEALED_VERSION)
        return UV_EINVAL;
    size_t plen = len - SEALED_OVERHEAD;
    char *p = malloc(plen + 1);
    if (p == NULL)
        return UV_ENOMEM;
    const uint8_t *nonce = sealed + 1, *ct = sealed + 1 + SEALED_NONCE_LEN, *tag = ct + plen;
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    int n = 0,
        ok = x != NULL && EVP_DecryptInit_ex(x, EVP_aes_256_gcm(), NULL, key->key, nonce) == 1 &&
             EVP_DecryptUpdate(x, NULL, &n, (const uint8_t *)context, (int)strlen(context)) == 1 &&
             EVP_DecryptUpdate(x, (uint8_t *)p, &n, ct, (int)plen) == 1 &&
             EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, SEALED_TAG_LEN, (void *)tag) == 1 &&
             EVP_DecryptFinal_ex(x, (uint8_t *)p + n, &n) == 1;
    EVP_CIPHER_CTX_free(x);
    if (!ok) {
        sealed_free(p, plen);
        return UV_EINVAL;
    }
    p[plen] = '\0';
    *out = p;
    *outlen = plen;
    return 0;
}

void sealed_free(char *plain, size_t len)
{
    if (plain == NULL)
        return;
    OPENSSL_cleanse(plain, len);
    free(plain);
}
