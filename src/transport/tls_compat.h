/* tls_compat: the one place where OpenSSL 3 and BoringSSL differ for
 * parley's TLS code. Everything else uses the API the two share. */
#ifndef PARLEY_TRANSPORT_TLS_COMPAT_H
#define PARLEY_TRANSPORT_TLS_COMPAT_H

#include <openssl/err.h>
#include <openssl/ssl.h>

#ifdef OPENSSL_IS_BORINGSSL
#define TLS_LIBRARY_NAME "BoringSSL"
/* BoringSSL initialises itself. */
static inline void tls_compat_init(void)
{
}
/* BoringSSL refuses renegotiation unless asked to allow it. */
static inline void tls_compat_no_renegotiation(SSL_CTX *ctx)
{
    (void)ctx;
}
#else
#define TLS_LIBRARY_NAME "OpenSSL"
static inline void tls_compat_init(void)
{
    OPENSSL_init_ssl(0, NULL);
}
/* A client may not make the server renegotiate (TLS 1.2; a CPU sink). */
static inline void tls_compat_no_renegotiation(SSL_CTX *ctx)
{
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
}
#endif

#endif
