/* sealed: secrets encrypted at rest (upstream sessions in accounts.
 * credentials). AES-256-GCM through OpenSSL's EVP interface (shared by
 * OpenSSL 3 and BoringSSL) with a 32-byte key kept in a file of its own,
 * mode 0600, created on first use. A sealed value is
 *
 *   version (1 byte, 1) | nonce (12 random bytes) | ciphertext | tag (16)
 *
 * and is bound to a context string (associated data, e.g. "bluesky:DID"),
 * so a value copied into another row does not open. */
#ifndef PARLEY_UTIL_SEALED_H
#define PARLEY_UTIL_SEALED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SEALED_KEY_BYTES 32
#define SEALED_OVERHEAD  (1 + 12 + 16)
#define SEALED_MAX_PLAIN (64u << 10)

typedef struct sealed_key_s {
    uint8_t key[SEALED_KEY_BYTES];
} sealed_key_t;

/* Reads the key at path, or creates it (0600, random) when there is none.
 * A key file that is not a regular file (a FIFO is refused at once, never
 * waited on), a symbolic link, one that fails secret_file's mode rule, or
 * one of the wrong size is refused (secret_file.h). Small and bounded: called at start, before
 * serving. Returns 0, or a negative code with err. */
int sealed_key_load(const char *path, sealed_key_t *key, char *err, size_t errcap);

/* Wipes the key. */
void sealed_key_wipe(sealed_key_t *key);

/* Seals len bytes of plain under context into a malloc'd buffer of
 * len + SEALED_OVERHEAD bytes (*out, *outlen). Returns 0, UV_EINVAL (too
 * long) or UV_ENOMEM / UV_EIO. */
int sealed_seal(const sealed_key_t *key, const char *context, const void *plain, size_t len,
                uint8_t **out, size_t *outlen);

/* Opens a sealed value into a malloc'd NUL-terminated buffer (*out,
 * *outlen without the NUL); the caller wipes and frees it. Returns 0, or
 * UV_EINVAL when the value is not one of ours or was sealed under another
 * key or context. */
int sealed_open(const sealed_key_t *key, const char *context, const uint8_t *sealed, size_t len,
                char **out, size_t *outlen);

/* Wipes and frees a buffer sealed_open returned (NULL is fine). */
void sealed_free(char *plain, size_t len);

#endif
