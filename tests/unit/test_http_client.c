/* Tests for net/http_client against a small loopback HTTP server written
 * for the test (libuv): a body into memory, a large body streamed to a file
 * (the transfer pauses while the disk catches up), status codes, the size
 * cap, a timeout, connection refused, the address policy refusing loopback
 * for untrusted URLs (directly and through a redirect), every redirect
 * hop's URL checked as the first (credentials refused), a redirect's body
 * discarded, the caller's headers kept from another origin, the allow-list,
 * an upload sent from a descriptor (the file swapped after it was opened
 * changes nothing; the descriptor is the request's, closed also when the
 * request cannot start),
 * cancellation, a slow body that outlasts the total timeout (fails) but not
 * a stall limit (completes), and a clean close. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/http_client.h"
#include "testutil.h"

#define BIG_BYTES (3u << 20)

static uv_loop_t loop;
static uv_tcp_t server;
static int port;

typedef struct {
    uv_tcp_t tcp;
    char req[4096];
    size_t len;
    bool answered;
} peer_t;

static void peer_closed(uv_handle_t *h)
{
    free(h->data);
}

static void written(uv_write_t *w, int status)
{
    (void)status;
    free(w->data);
    free(w);
}

static void send_text(peer_t *p, const char *head, const char *body, size_t blen)
{
    size_t hl = strlen(head);
    char *b = malloc(hl + blen);
    memcpy(b, head, hl);
    if (blen)
        memcpy(b + hl, body, blen);
    uv_write_t *w = malloc(sizeof *w);
    w->data = b;
    uv_buf_t ub = uv_buf_init(b, (unsigned)(hl + blen));
    uv_write(w, (uv_stream_t *)&p->tcp, &ub, 1, written);
}

/* /trickle: 8 pieces of 100 bytes, 300 ms apart (2.4 s: longer than the
 * client's total timeout of 1.5 s). */
static uv_timer_t trickle_timer;
static peer_t *trickle_peer;
static int trickle_sent;

static void trickle_cb(uv_timer_t *t)
{
    char piece[100];
    memset(piece, 't', sizeof piece);
    if (trickle_peer == NULL) {
        uv_timer_stop(t);
        return;
    }
    send_text(trickle_peer, "", piece, sizeof piece);
    if (++trickle_sent == 8)
        uv_timer_stop(t);
}

static void respond(peer_t *p)
{
    char head[512];
    if (strncmp(p->req, "GET /ok ", 8) == 0) {
        snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
        send_text(p, head, "hello", 5);
    } else if (strncmp(p->req, "POST /echo ", 11) == 0) {
        const char *body = strstr(p->req, "\r\n\r\n") + 4;
        snprintf(head, sizeof head, "HTTP/1.1 201 Created\r\nContent-Length: %zu\r\n\r\n",
                 strlen(body));
        send_text(p, head, body, strlen(body));
    } else if (strncmp(p->req, "GET /big ", 9) == 0) {
        char *body = malloc(BIG_BYTES);
        for (size_t i = 0; i < BIG_BYTES; i++)
            body[i] = (char)('a' + i % 26);
        snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %u\r\n\r\n", BIG_BYTES);
        send_text(p, head, body, BIG_BYTES);
        free(body);
    } else if (strncmp(p->req, "GET /redirect ", 14) == 0) {
        snprintf(head, sizeof head,
                 "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:%d/ok\r\nContent-Length: "
                 "5\r\n\r\n",
                 port);
        send_text(p, head, "MOVED", 5);
    } else if (strncmp(p->req, "GET /to-creds ", 14) == 0) {
        snprintf(head, sizeof head,
                 "HTTP/1.1 302 Found\r\nLocation: http://user:pw@127.0.0.1:%d/ok\r\n"
                 "Content-Length: 0\r\n\r\n",
                 port);
        send_text(p, head, "", 0);
    } else if (strncmp(p->req, "GET /to-same ", 13) == 0) {
        snprintf(head, sizeof head,
                 "HTTP/1.1 307 Temporary Redirect\r\nLocation: /headers\r\nContent-Length: "
                 "0\r\n\r\n");
        send_text(p, head, "", 0);
    } else if (strncmp(p->req, "GET /to-other ", 14) == 0) {
        snprintf(head, sizeof head,
                 "HTTP/1.1 302 Found\r\nLocation: http://localhost:%d/headers\r\n"
                 "Content-Length: 0\r\n\r\n",
                 port);
        send_text(p, head, "", 0);
    } else if (strncmp(p->req, "GET /headers ", 13) == 0) {
        size_t n = (size_t)(strstr(p->req, "\r\n\r\n") - p->req);
        snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", n);
        send_text(p, head, p->req, n);
    } else if (strncmp(p->req, "GET /to-private ", 16) == 0) {
        snprintf(head, sizeof head,
                 "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.2:%d/ok\r\nContent-Length: "
                 "0\r\n\r\n",
                 port);
        send_text(p, head, "", 0);
    } else if (strncmp(p->req, "GET /trickle ", 13) == 0) {
        snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: 800\r\n\r\n");
        send_text(p, head, "", 0);
        trickle_peer = p;
        trickle_sent = 0;
        uv_timer_start(&trickle_timer, trickle_cb, 300, 300);
    } else if (strncmp(p->req, "GET /slow ", 10) == 0) {
        return; /* never answers */
    } else {
        snprintf(head, sizeof head, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        send_text(p, head, "", 0);
    }
    p->answered = true;
}

static void peer_alloc(uv_handle_t *h, size_t s, uv_buf_t *b)
{
    peer_t *p = h->data;
    (void)s;
    b->base = p->req + p->len;
    b->len = sizeof p->req - p->len - 1;
}

static void peer_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    peer_t *p = s->data;
    (void)b;
    if (n < 0) {
        if (p == trickle_peer) {
            uv_timer_stop(&trickle_timer);
            trickle_peer = NULL;
        }
        uv_close((uv_handle_t *)s, peer_closed);
        return;
    }
    p->len += (size_t)n;
    p->req[p->len] = '\0';
    char *end = strstr(p->req, "\r\n\r\n");
    if (end && !p->answered) {
        const char *cl = strstr(p->req, "Content-Length: ");
        size_t want = cl ? (size_t)atoi(cl + 16) : 0;
        if (p->len - (size_t)(end + 4 - p->req) >= want) {
            respond(p);
            p->len = 0;
            p->answered = false;
        }
    }
}

static void on_conn(uv_stream_t *srv, int status)
{
    (void)status;
    peer_t *p = calloc(1, sizeof *p);
    uv_tcp_init(&loop, &p->tcp);
    p->tcp.data = p;
    uv_accept(srv, (uv_stream_t *)&p->tcp);
    uv_read_start((uv_stream_t *)&p->tcp, peer_alloc, peer_read);
}

static net_client_t *client;

static int setup(void **state)
{
    (void)state;
    uv_loop_init(&loop);
    uv_tcp_init(&loop, &server);
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    uv_tcp_bind(&server, (struct sockaddr *)&a, 0);
    uv_listen((uv_stream_t *)&server, 64, on_conn);
    struct sockaddr_storage ss;
    int len = sizeof ss;
    uv_tcp_getsockname(&server, (struct sockaddr *)&ss, &len);
    port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    uv_timer_init(&loop, &trickle_timer);
    net_config_t cfg = {.connect_timeout_ms = 2000, .timeout_ms = 1500};
    addr_policy_t pol = {.allow_http = true};
    char err[256];
    assert_int_equal(net_client_new(&loop, &cfg, &pol, &client, err, sizeof err), 0);
    return 0;
}

static bool client_closed;
static void on_client_closed(void *data)
{
    (void)data;
    client_closed = true;
}

static void close_walk(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, h->data && h != (uv_handle_t *)&server ? peer_closed : NULL);
}

static int teardown(void **state)
{
    (void)state;
    net_client_close(client, on_client_closed, NULL);
    test_run_until(&loop, &client_closed, 5000);
    uv_walk(&loop, close_walk, NULL);
    test_loop_close(&loop);
    return 0;
}

typedef struct {
    net_req_t r;
    bool done;
    int status;
} job_t;

static void on_done(net_req_t *r, int status)
{
    job_t *j = (job_t *)r;
    j->done = true;
    j->status = status;
}

static void run(job_t *j, const char *path, bool untrusted, const char *to_file)
{
    static char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    j->r.url = url;
    j->r.untrusted = untrusted;
    j->r.to_file = to_file;
    j->r.cb = on_done;
    j->done = false;
    int rc = net_request(client, &j->r);
    if (rc != 0) {
        j->done = true;
        j->status = rc;
        return;
    }
    assert_false(j->done);
    test_run_until(&loop, &j->done, 10000);
}

static void test_memory_and_status(void **state)
{
    (void)state;
    job_t j = {0};
    run(&j, "/ok", false, NULL);
    assert_int_equal(j.status, 0);
    assert_int_equal(j.r.http_status, 200);
    assert_int_equal(j.r.body_buf.len, 5);
    assert_memory_equal(j.r.body_buf.data, "hello", 5);
    net_req_release(&j.r);
    job_t p = {.r = {.body = "{\"a\":1}", .body_len = 7, .content_type = "application/json"}};
    p.r.method = NULL;
    run(&p, "/echo", false, NULL);
    assert_int_equal(p.r.http_status, 201);
    assert_memory_equal(p.r.body_buf.data, "{\"a\":1}", 7);
    net_req_release(&p.r);
    job_t n = {0};
    run(&n, "/missing", false, NULL);
    assert_int_equal(n.status, 0);
    assert_int_equal(n.r.http_status, 404);
    net_req_release(&n.r);
}

static void test_file_and_cap(void **state)
{
    (void)state;
    char *dir = test_tmpdir("parley-net");
    char path[256];
    snprintf(path, sizeof path, "%s/big.bin", dir);
    job_t j = {0};
    run(&j, "/big", false, path);
    assert_int_equal(j.status, 0);
    assert_int_equal(j.r.bytes, BIG_BYTES);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, BIG_BYTES);
    net_req_release(&j.r);
    job_t c = {.r = {.max_bytes = 1000}};
    run(&c, "/big", false, NULL);
    assert_int_equal(c.status, UV_E2BIG);
    net_req_release(&c.r);
    test_rmdir(dir);
}

static void test_policy(void **state)
{
    (void)state;
    job_t j = {0};
    run(&j, "/ok", true, NULL);
    assert_int_equal(j.status, UV_EACCES);
    assert_non_null(strstr(j.r.error, "loopback address 127.0.0.1"));
    net_req_release(&j.r);
    /* Allowed for the test: then a redirect to it is re-checked too. */
    addr_policy_t pol = {.allow_http = true};
    strcpy(pol.allow[pol.nallow++], "127.0.0.1");
    strcpy(pol.allow[pol.nallow++], "::1"); /* localhost, which may be tried first */
    net_config_t cfg = {0};
    net_client_t *open_client;
    char err[256];
    assert_int_equal(net_client_new(&loop, &cfg, &pol, &open_client, err, sizeof err), 0);
    net_client_t *saved = client;
    client = open_client;
    job_t k = {0};
    run(&k, "/redirect", true, NULL);
    assert_int_equal(k.status, 0);
    assert_int_equal(k.r.http_status, 200);
    assert_int_equal(k.r.body_buf.len, 5); /* the redirect's own body is not kept */
    assert_memory_equal(k.r.body_buf.data, "hello", 5);
    net_req_release(&k.r);
    /* Every hop passes the URL check of the first: a redirect to a URL
     * with credentials is refused as that URL given directly is. */
    job_t cr = {0};
    run(&cr, "/to-creds", true, NULL);
    assert_int_equal(cr.status, UV_EACCES);
    assert_non_null(strstr(cr.r.error, "redirect refused: credentials in the URL are not allowed"));
    assert_null(strstr(cr.r.error, "pw"));
    net_req_release(&cr.r);
    /* The caller's headers follow a redirect on the same origin only. */
    static const char *const secret[] = {"X-Secret: s3cret", NULL};
    job_t sh = {.r = {.extra_headers = secret}};
    run(&sh, "/to-same", true, NULL);
    assert_int_equal(sh.status, 0);
    assert_int_equal(sh.r.http_status, 200);
    assert_non_null(memmem(sh.r.body_buf.data, sh.r.body_buf.len, "X-Secret: s3cret", 16));
    net_req_release(&sh.r);
    job_t oh = {.r = {.extra_headers = secret}};
    run(&oh, "/to-other", true, NULL);
    assert_int_equal(oh.status, 0);
    assert_int_equal(oh.r.http_status, 200);
    assert_non_null(memmem(oh.r.body_buf.data, oh.r.body_buf.len, "Host: localhost", 15));
    assert_null(memmem(oh.r.body_buf.data, oh.r.body_buf.len, "s3cret", 6));
    net_req_release(&oh.r);
    /* A redirect to an address outside the allow-list is refused when
     * it connects, although the first hop was allowed. */
    job_t x = {0};
    run(&x, "/to-private", true, NULL);
    assert_int_equal(x.status, UV_EACCES);
    assert_non_null(strstr(x.r.error, "loopback address 127.0.0.2"));
    net_req_release(&x.r);
    /* https only unless allowed. */
    addr_policy_t strict = {0};
    strcpy(strict.allow[strict.nallow++], "127.0.0.1");
    net_client_t *strict_client;
    assert_int_equal(net_client_new(&loop, &cfg, &strict, &strict_client, err, sizeof err), 0);
    client = strict_client;
    job_t h = {0};
    run(&h, "/ok", true, NULL);
    assert_int_equal(h.status, UV_EACCES);
    assert_non_null(strstr(h.r.error, "scheme http"));
    net_req_release(&h.r);
    client_closed = false;
    net_client_close(strict_client, on_client_closed, NULL);
    test_run_until(&loop, &client_closed, 5000);
    client_closed = false;
    net_client_close(open_client, on_client_closed, NULL);
    test_run_until(&loop, &client_closed, 5000);
    client = saved;
}

/* A file with text, opened for reading; its path in path. */
static int open_text(const char *dir, const char *name, const char *text, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    return fd;
}

static void test_upload_fd(void **state)
{
    (void)state;
    char *dir = test_tmpdir("parley-net-up");
    char path[256], other[256];
    int fd = open_text(dir, "doc.txt", "ORIGINAL-CONTENT", path, sizeof path);
    /* The path now names other bytes: what was opened is what is sent. */
    int ofd = open_text(dir, "other.txt", "SWAPPED-CONTENT", other, sizeof other);
    close(ofd);
    assert_int_equal(rename(other, path), 0);
    static const char *const form[] = {"chat_id", "42", NULL};
    job_t u = {.r = {.form = form,
                     .upload = true,
                     .upload_fd = fd,
                     .upload_field = "document",
                     .upload_name = "report.txt"}};
    run(&u, "/echo", false, NULL);
    assert_int_equal(u.status, 0);
    assert_int_equal(u.r.http_status, 201);
    const char *b = u.r.body_buf.data;
    size_t n = u.r.body_buf.len;
    assert_non_null(memmem(b, n, "ORIGINAL-CONTENT", 16));
    assert_null(memmem(b, n, "SWAPPED", 7));
    assert_non_null(memmem(b, n, "filename=\"report.txt\"", 21));
    assert_non_null(memmem(b, n, "name=\"document\"", 15));
    /* The request closed the descriptor. */
    assert_int_equal(fcntl(fd, F_GETFD), -1);
    assert_int_equal(errno, EBADF);
    net_req_release(&u.r);
    /* A request that cannot start closes it too. */
    int fd2 = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd2 >= 0);
    job_t refused = {.r = {.url = "http://user:pw@127.0.0.1:1/echo",
                           .untrusted = true,
                           .form = form,
                           .upload = true,
                           .upload_fd = fd2,
                           .cb = on_done}};
    assert_int_equal(net_request(client, &refused.r), UV_EACCES); /* credentials */
    assert_int_equal(fcntl(fd2, F_GETFD), -1);
    net_req_release(&refused.r);
    /* Not a regular file: refused, closed. */
    int fd3 = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    job_t notreg = {.r = {.form = form, .upload = true, .upload_fd = fd3}};
    run(&notreg, "/echo", false, NULL);
    assert_int_equal(notreg.status, UV_EINVAL);
    assert_int_equal(fcntl(fd3, F_GETFD), -1);
    net_req_release(&notreg.r);
    test_rmdir(dir);
}

static void test_timeout_refused_cancel(void **state)
{
    (void)state;
    job_t t = {0};
    run(&t, "/slow", false, NULL);
    assert_int_equal(t.status, UV_ETIMEDOUT);
    net_req_release(&t.r);
    job_t r = {.r = {.url = "http://127.0.0.1:1/", .cb = on_done}};
    assert_int_equal(net_request(client, &r.r), 0);
    test_run_until(&loop, &r.done, 5000);
    assert_int_equal(r.status, UV_ECONNREFUSED);
    net_req_release(&r.r);
    static char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/slow", port);
    job_t c = {.r = {.url = url, .cb = on_done}};
    assert_int_equal(net_request(client, &c.r), 0);
    test_run_for(&loop, 50);
    net_request_cancel(&c.r);
    test_run_until(&loop, &c.done, 5000);
    assert_int_equal(c.status, UV_ECANCELED);
    net_req_release(&c.r);
}

static void test_stall_limit(void **state)
{
    (void)state;
    job_t t = {0};
    run(&t, "/trickle", false, NULL);
    assert_int_equal(t.status, UV_ETIMEDOUT); /* the total timeout */
    net_req_release(&t.r);
    uv_timer_stop(&trickle_timer);
    job_t s = {.r = {.stall_ms = 1000}};
    run(&s, "/trickle", false, NULL);
    assert_int_equal(s.status, 0);
    assert_int_equal(s.r.http_status, 200);
    assert_int_equal(s.r.body_buf.len, 800);
    net_req_release(&s.r);
    job_t z = {.r = {.stall_ms = 1000}};
    run(&z, "/slow", false, NULL); /* nothing at all arrives: stalled */
    assert_int_equal(z.status, UV_ETIMEDOUT);
    net_req_release(&z.r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_and_status),
        cmocka_unit_test(test_file_and_cap),
        cmocka_unit_test(test_policy),
        cmocka_unit_test(test_upload_fd),
        cmocka_unit_test(test_timeout_refused_cancel),
        cmocka_unit_test(test_stall_limit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
