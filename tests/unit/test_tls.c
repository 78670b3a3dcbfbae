/* Tests for transport/tls, built twice: against OpenSSL 3 (what parleyd
 * links) and against BoringSSL. A client and a server engine talk through
 * memory buffers: handshake with verification, data both ways, a wrong
 * host name, garbage input, close_notify, and bad certificate files. The
 * certificates come from tests/harness/tls_cert.sh (PARLEY_TEST_TLS_DIR).
 * No event loop is involved. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "transport/tls.h"

static char cert[512], key[512], other[512];

static void paths(void)
{
    const char *dir = getenv("PARLEY_TEST_TLS_DIR");
    if (dir == NULL)
        skip();
    snprintf(cert, sizeof cert, "%s/cert.pem", dir);
    snprintf(key, sizeof key, "%s/key.pem", dir);
    snprintf(other, sizeof other, "%s/other.pem", dir);
}

typedef struct {
    tls_ctx_t *sctx, *cctx;
    tls_conn_t *s, *c;
    buf_t s_plain, c_plain;
} pair_t;

static void pair_open(pair_t *p, const char *ca, const char *host)
{
    char err[512];
    memset(p, 0, sizeof *p);
    p->sctx = tls_ctx_new_server(cert, key, err, sizeof err);
    if (p->sctx == NULL)
        fail_msg("%s", err);
    p->cctx = tls_ctx_new_client(ca, err, sizeof err);
    assert_non_null(p->cctx);
    p->s = tls_conn_new(p->sctx, true, NULL);
    p->c = tls_conn_new(p->cctx, false, host);
    assert_non_null(p->s);
    assert_non_null(p->c);
    buf_init(&p->s_plain, 1u << 20);
    buf_init(&p->c_plain, 1u << 20);
}

static void pair_close(pair_t *p)
{
    tls_conn_free(p->s);
    tls_conn_free(p->c);
    tls_ctx_free(p->sctx);
    tls_ctx_free(p->cctx);
    buf_free(&p->s_plain);
    buf_free(&p->c_plain);
}

/* Moves bytes between the two until neither has anything to say. Returns
 * the first error of either side. */
static int pump(pair_t *p, buf_t *to_server, buf_t *to_client)
{
    for (int round = 0; round < 20 && (to_server->len || to_client->len); round++) {
        buf_t out_s, out_c;
        buf_init(&out_s, 1u << 20);
        buf_init(&out_c, 1u << 20);
        int rc = 0;
        if (to_server->len) {
            rc = tls_conn_feed(p->s, to_server->data, to_server->len, &p->s_plain, &out_c);
            buf_reset(to_server);
        }
        if (rc == 0 && to_client->len) {
            rc = tls_conn_feed(p->c, to_client->data, to_client->len, &p->c_plain, &out_s);
            buf_reset(to_client);
        }
        buf_append(to_server, out_s.data, out_s.len);
        buf_append(to_client, out_c.data, out_c.len);
        buf_free(&out_s);
        buf_free(&out_c);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static void test_handshake_and_data(void **state)
{
    (void)state;
    paths();
    pair_t p;
    pair_open(&p, cert, "localhost");
    buf_t ts, tc;
    buf_init(&ts, 1u << 20);
    buf_init(&tc, 1u << 20);
    /* Written before the handshake: sent once it completes. */
    assert_int_equal(tls_conn_write(p.c, "{\"jsonrpc\":\"2.0\"}\n", 18, &ts), 0);
    assert_int_equal(tls_conn_start(p.c, &ts), 0);
    assert_true(ts.len > 0);
    int rc = pump(&p, &ts, &tc);
    if (rc != 0)
        fail_msg("handshake: client: %s; server: %s", tls_conn_error(p.c), tls_conn_error(p.s));
    assert_true(tls_conn_established(p.c));
    assert_true(tls_conn_established(p.s));
    assert_int_equal(p.s_plain.len, 18);
    assert_memory_equal(p.s_plain.data, "{\"jsonrpc\":\"2.0\"}\n", 18);
    /* A large answer crosses many records. */
    size_t big = 200000;
    char *data = malloc(big);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)('a' + i % 26);
    assert_int_equal(tls_conn_write(p.s, data, big, &tc), 0);
    assert_int_equal(pump(&p, &ts, &tc), 0);
    assert_int_equal(p.c_plain.len, big);
    assert_memory_equal(p.c_plain.data, data, big);
    free(data);
    /* close_notify: the peer sees the end. */
    tls_conn_shutdown(p.c, &ts);
    assert_int_equal(pump(&p, &ts, &tc), UV_EOF);
    buf_free(&ts);
    buf_free(&tc);
    pair_close(&p);
}

static void test_verification_failures(void **state)
{
    (void)state;
    paths();
    /* Wrong name. */
    pair_t p;
    pair_open(&p, cert, "example.org");
    buf_t ts, tc;
    buf_init(&ts, 1u << 20);
    buf_init(&tc, 1u << 20);
    assert_int_equal(tls_conn_start(p.c, &ts), 0);
    assert_int_equal(pump(&p, &ts, &tc), UV_EPROTO);
    assert_false(tls_conn_established(p.c));
    assert_true(strlen(tls_conn_error(p.c)) > 0);
    pair_close(&p);
    /* A CA that did not sign the server's certificate. */
    pair_open(&p, other, "localhost");
    buf_reset(&ts);
    buf_reset(&tc);
    assert_int_equal(tls_conn_start(p.c, &ts), 0);
    assert_int_equal(pump(&p, &ts, &tc), UV_EPROTO);
    assert_non_null(strstr(tls_conn_error(p.c), "handshake"));
    pair_close(&p);
    buf_free(&ts);
    buf_free(&tc);
}

static void test_garbage_input(void **state)
{
    (void)state;
    paths();
    pair_t p;
    pair_open(&p, NULL, NULL);
    buf_t out;
    buf_init(&out, 1u << 20);
    const char *junk = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
    assert_int_equal(tls_conn_feed(p.s, junk, strlen(junk), &p.s_plain, &out), UV_EPROTO);
    assert_non_null(strstr(tls_conn_error(p.s), "TLS"));
    assert_int_equal(p.s_plain.len, 0);
    buf_free(&out);
    pair_close(&p);
}

static void test_bad_files(void **state)
{
    (void)state;
    paths();
    char err[512];
    assert_null(tls_ctx_new_server("/nonexistent/cert.pem", key, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/cert.pem"));
    /* A key that does not belong to the certificate. */
    assert_null(tls_ctx_new_server(other, key, err, sizeof err));
    assert_non_null(strstr(err, "private key"));
    assert_null(tls_ctx_new_server(cert, cert, err, sizeof err));
    assert_non_null(strstr(err, "private key"));
}

static void test_library(void **state)
{
    (void)state;
    const char *want = getenv("PARLEY_EXPECT_TLS_LIBRARY");
    if (want)
        assert_string_equal(tls_library(), want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_library),
        cmocka_unit_test(test_handshake_and_data),
        cmocka_unit_test(test_verification_failures),
        cmocka_unit_test(test_garbage_input),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
