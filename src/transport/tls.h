/* tls: TLS for parley's own stream connections (tcp:// with a
 * certificate) as an engine over memory buffers, independent of sockets:
 * ciphertext from the peer goes in, plaintext comes out, and whatever must
 * go to the peer (handshake records, encrypted data, alerts) is appended
 * to an output buffer the caller writes. The same module gives h2o the
 * SSL_CTX for https://.
 *
 * Written against the API OpenSSL 3 and BoringSSL share (differences in
 * tls_compat.h); the test suite builds and runs it against both. */
#ifndef PARLEY_TRANSPORT_TLS_H
#define PARLEY_TRANSPORT_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

typedef struct tls_ctx_s tls_ctx_t;
typedef struct tls_conn_s tls_conn_t;

/* Name of the TLS library compiled in ("OpenSSL" or "BoringSSL"). */
const char *tls_library(void);

/* A server context from a PEM certificate chain and key (TLS 1.2 and up).
 * Returns NULL with err naming the file and the library's reason. */
tls_ctx_t *tls_ctx_new_server(const char *cert_file, const char *key_file, char *err,
                              size_t errcap);
/* A client context (for tests and tools): verifies the server against
 * ca_file when given, else does not verify. */
tls_ctx_t *tls_ctx_new_client(const char *ca_file, char *err, size_t errcap);
void tls_ctx_free(tls_ctx_t *ctx);
/* The SSL_CTX * (for h2o). */
void *tls_ctx_native(tls_ctx_t *ctx);

/* A connection. server selects the role; for a client, host (may be NULL)
 * is sent as SNI and checked against the certificate when verifying. */
tls_conn_t *tls_conn_new(tls_ctx_t *ctx, bool server, const char *host);
void tls_conn_free(tls_conn_t *c);

/* Starts the handshake (clients): appends the first flight to out. */
int tls_conn_start(tls_conn_t *c, buf_t *out);

/* Feeds n bytes received from the peer. Plaintext is appended to plain,
 * records for the peer to out. Returns 0, UV_EOF when the peer closed the
 * TLS session, or UV_EPROTO with tls_conn_error() saying why. */
int tls_conn_feed(tls_conn_t *c, const char *p, size_t n, buf_t *plain, buf_t *out);

/* Encrypts n bytes of plaintext into out. Before the handshake completes
 * the bytes are kept and sent once it does. Returns 0, UV_ENOBUFS (more
 * than TLS_PENDING_MAX waiting) or UV_EPROTO. */
int tls_conn_write(tls_conn_t *c, const char *p, size_t n, buf_t *out);

/* Appends a close_notify alert to out. */
void tls_conn_shutdown(tls_conn_t *c, buf_t *out);

__attribute__((warn_unused_result)) bool tls_conn_established(const tls_conn_t *c);
const char *tls_conn_error(const tls_conn_t *c);

/* Plaintext kept while the handshake runs. */
#define TLS_PENDING_MAX (1u << 20)

#endif
