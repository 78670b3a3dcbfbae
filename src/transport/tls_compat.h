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
#else
#define TLS_LIBRARY_NAME "OpenSSL"
static inline void tls_compat_init(void)
{
    OPENSSL_init_ssl(0, NULL);
}
#endif

#endif
