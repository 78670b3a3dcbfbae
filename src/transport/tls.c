/* tls: a TLS engine over memory BIOs (see tls.h). */
#include "transport/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "transport/tls_compat.h"

struct tls_ctx_s {
    SSL_CTX *ssl_ctx;
};

struct tls_conn_s {
    SSL *ssl;
    BIO *rbio; /* from the peer */
    BIO *wbio; /* to the peer */
    bool established;
    buf_t pending; /* plaintext written before the handshake completed */
    char error[256];
};

const char *tls_library(void)
{
    return TLS_LIBRARY_NAME;
}

static void lib_error(char *err, size_t cap, const char *what)
{
    unsigned long e = ERR_get_error();
    char reason[200] = "unknown error";
    if (e != 0)
        ERR_error_string_n(e, reason, sizeof reason);
    ERR_clear_error();
    snprintf(err, cap, "%s: %s", what, reason);
}

tls_ctx_t *tls_ctx_new_server(const char *cert_file, const char *key_file, char *err, size_t errcap)
{
    tls_compat_init();
    tls_ctx_t *t = calloc(1, sizeof *t);
    if (t == NULL || (t->ssl_ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
        free(t);
        lib_error(err, errcap, "TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(t->ssl_ctx, TLS1_2_VERSION);
    tls_compat_no_renegotiation(t->ssl_ctx);
    char what[1100];
    if (SSL_CTX_use_certificate_chain_file(t->ssl_ctx, cert_file) != 1) {
        snprintf(what, sizeof what, "certificate %s", cert_file);
        lib_error(err, errcap, what);
    } else if (SSL_CTX_use_PrivateKey_file(t->ssl_ctx, key_file, SSL_FILETYPE_PEM) != 1) {
        snprintf(what, sizeof what, "private key %s", key_file);
        lib_error(err, errcap, what);
    } else if (SSL_CTX_check_private_key(t->ssl_ctx) != 1) {
        snprintf(what, sizeof what, "private key %s does not match certificate %s", key_file,
                 cert_file);
        lib_error(err, errcap, what);
    } else {
        return t;
    }
    tls_ctx_free(t);
    return NULL;
}

tls_ctx_t *tls_ctx_new_client(const char *ca_file, char *err, size_t errcap)
{
    tls_compat_init();
    tls_ctx_t *t = calloc(1, sizeof *t);
    if (t == NULL || (t->ssl_ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
        free(t);
        lib_error(err, errcap, "TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(t->ssl_ctx, TLS1_2_VERSION);
    if (ca_file != NULL) {
        if (SSL_CTX_load_verify_locations(t->ssl_ctx, ca_file, NULL) != 1) {
            char what[1100];
            snprintf(what, sizeof what, "CA file %s", ca_file);
            lib_error(err, errcap, what);
            tls_ctx_free(t);
            return NULL;
        }
        SSL_CTX_set_verify(t->ssl_ctx, SSL_VERIFY_PEER, NULL);
    }
    return t;
}

void tls_ctx_free(tls_ctx_t *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ssl_ctx);
    free(t);
}

void *tls_ctx_native(tls_ctx_t *t)
{
    return t->ssl_ctx;
}

tls_conn_t *tls_conn_new(tls_ctx_t *ctx, bool server, const char *host)
{
    tls_conn_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->ssl = SSL_new(ctx->ssl_ctx);
    c->rbio = BIO_new(BIO_s_mem());
    c->wbio = BIO_new(BIO_s_mem());
    if (c->ssl == NULL || c->rbio == NULL || c->wbio == NULL) {
        BIO_free(c->rbio);
        BIO_free(c->wbio);
        SSL_free(c->ssl);
        free(c);
        return NULL;
    }
    SSL_set_bio(c->ssl, c->rbio, c->wbio); /* the SSL owns them now */
    buf_init(&c->pending, TLS_PENDING_MAX);
    if (server) {
        SSL_set_accept_state(c->ssl);
    } else {
        SSL_set_connect_state(c->ssl);
        if (host != NULL) {
            SSL_set_tlsext_host_name(c->ssl, host);
            X509_VERIFY_PARAM *vp = SSL_get0_param(c->ssl);
            X509_VERIFY_PARAM_set1_host(vp, host, strlen(host));
        }
    }
    return c;
}

void tls_conn_free(tls_conn_t *c)
{
    if (c == NULL)
        return;
    SSL_free(c->ssl);
    buf_free(&c->pending);
    free(c);
}

/* Moves what the engine wants to send into out. */
static int drain_wbio(tls_conn_t *c, buf_t *out)
{
    char tmp[16384];
    int n;
    while ((n = BIO_read(c->wbio, tmp, (int)sizeof tmp)) > 0) {
        int rc = buf_append(out, tmp, (size_t)n);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int fail(tls_conn_t *c, const char *what)
{
    lib_error(c->error, sizeof c->error, what);
    return UV_EPROTO;
}

static int handshake(tls_conn_t *c, buf_t *out)
{
    if (c->established)
        return 0;
    ERR_clear_error(); /* SSL_get_error reads the thread's error queue */
    int r = SSL_do_handshake(c->ssl);
    int rc = drain_wbio(c, out);
    if (rc != 0)
        return rc;
    if (r == 1) {
        c->established = true;
        if (c->pending.len > 0) {
            rc = tls_conn_write(c, c->pending.data, c->pending.len, out);
            buf_reset(&c->pending);
        }
        return rc;
    }
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return 0;
    long v = SSL_get_verify_result(c->ssl);
    if (v != X509_V_OK) {
        char what[160];
        snprintf(what, sizeof what, "TLS handshake (certificate: %s)",
                 X509_verify_cert_error_string(v));
        return fail(c, what);
    }
    return fail(c, "TLS handshake");
}

int tls_conn_start(tls_conn_t *c, buf_t *out)
{
    return handshake(c, out);
}

int tls_conn_feed(tls_conn_t *c, const char *p, size_t n, buf_t *plain, buf_t *out)
{
    if (n > 0 && BIO_write(c->rbio, p, (int)n) != (int)n)
        return fail(c, "TLS input");
    int rc = handshake(c, out);
    if (rc != 0 || !c->established)
        return rc;
    char tmp[16384];
    for (;;) {
        ERR_clear_error();
        int r = SSL_read(c->ssl, tmp, (int)sizeof tmp);
        if (r > 0) {
            if ((rc = buf_append(plain, tmp, (size_t)r)) != 0)
                return rc;
            continue;
        }
        int e = SSL_get_error(c->ssl, r);
        if ((rc = drain_wbio(c, out)) != 0)
            return rc;
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
            return 0;
        if (e == SSL_ERROR_ZERO_RETURN)
            return UV_EOF;
        return fail(c, "TLS read");
    }
}

int tls_conn_write(tls_conn_t *c, const char *p, size_t n, buf_t *out)
{
    if (!c->established)
        return buf_append(&c->pending, p, n);
    while (n > 0) {
        int chunk = n > (1u << 30) ? (1 << 30) : (int)n;
        ERR_clear_error();
        int r = SSL_write(c->ssl, p, chunk);
        if (r <= 0)
            return fail(c, "TLS write");
        p += r;
        n -= (size_t)r;
    }
    return drain_wbio(c, out);
}

void tls_conn_shutdown(tls_conn_t *c, buf_t *out)
{
    if (c->established) {
        SSL_shutdown(c->ssl);
        drain_wbio(c, out);
    }
}

bool tls_conn_established(const tls_conn_t *c)
{
    return c->established;
}

const char *tls_conn_error(const tls_conn_t *c)
{
    return c->error;
}
