/* Tests for transport/secret_page, with the curl program as the browser
 * (spawned on the loop while the pages serve): the form and its headers
 * with the text escaped, the secret delivered once ('+' and %XX decoded),
 * 410 afterwards, the refusals (Host, Origin, content type, method, size,
 * unknown path), an empty answer that keeps the page open, a verify page
 * (refused, the form again with the message, a second secret, accepted),
 * expiry,
 * cancellation, a port in use and a chosen port, the page limit, and a
 * server closed with pages and an idle connection open (callbacks with
 * UV_ECANCELED, then dispose and a clean loop close). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/secret_page.h"
#include "testutil.h"

#define CURL_OUT_MAX (256u * 1024)

static uv_loop_t loop;
static secret_page_server_t *srv;

typedef struct {
    int calls;
    int status;
    char *secret;
} result_t;

static void page_cb(secret_page_t *p, int status, const char *secret, void *data)
{
    (void)p;
    result_t *r = data;
    r->calls++;
    r->status = status;
    free(r->secret);
    r->secret = secret ? strdup(secret) : NULL;
}

static void result_free(result_t *r)
{
    free(r->secret);
    r->secret = NULL;
}

/* ---- the server around each test ------------------------------------------ */

static void closed_cb(void *data)
{
    *(bool *)data = true;
}

static void setup(void)
{
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(secret_page_server_new(&loop, &srv), 0);
}

static void teardown(void)
{
    bool closed = false;
    secret_page_server_close(srv, closed_cb, &closed);
    test_run_until(&loop, &closed, 5000);
    if (secret_page_server_dispose(srv))
        uv_run(&loop, UV_RUN_DEFAULT);
    secret_page_server_free(srv);
    srv = NULL;
    test_loop_close(&loop);
}

static secret_page_t *open_page(const secret_page_options_t *o, result_t *r, char *url)
{
    secret_page_t *p = NULL;
    assert_int_equal(secret_page_open(srv, o, page_cb, r, url, SECRET_PAGE_URL_MAX, &p), 0);
    assert_non_null(p);
    return p;
}

static const secret_page_options_t basic = {
    .title = "Bluesky app password",
    .text = "Create an app password and paste it here.",
};

/* ---- curl as the browser -------------------------------------------------- */

typedef struct {
    uv_process_t proc;
    uv_pipe_t out;
    char *buf;
    size_t len;
    int64_t exit_status;
    int open;
    bool done;
} curl_t;

static void curl_handle_closed(uv_handle_t *h)
{
    curl_t *c = h->data;
    if (--c->open == 0)
        c->done = true;
}

static void curl_exited(uv_process_t *p, int64_t status, int sig)
{
    (void)sig;
    curl_t *c = p->data;
    c->exit_status = status;
    uv_close((uv_handle_t *)p, curl_handle_closed);
}

static void curl_alloc(uv_handle_t *h, size_t size, uv_buf_t *b)
{
    (void)size;
    curl_t *c = h->data;
    *b = uv_buf_init(c->buf + c->len, (unsigned)(CURL_OUT_MAX - 1 - c->len));
}

static void curl_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    (void)b;
    curl_t *c = s->data;
    if (n > 0)
        c->len += (size_t)n;
    if (n < 0 || c->len == CURL_OUT_MAX - 1)
        uv_close((uv_handle_t *)s, curl_handle_closed);
}

/* Runs curl -si with extra arguments (NULL-terminated) on the loop. Returns
 * the HTTP status with the response (headers and body) in *out (free it),
 * or minus curl's exit code when there was no response. */
static int curl(char **out, ...)
{
    char *argv[32] = {"curl", "-s", "-i", "--max-time", "10", "-H", "Expect:"};
    int argc = 7;
    va_list ap;
    va_start(ap, out);
    for (char *a; (a = va_arg(ap, char *)) != NULL;) {
        assert_true(argc < 31);
        argv[argc++] = a;
    }
    va_end(ap);
    argv[argc] = NULL;

    curl_t *c = calloc(1, sizeof *c);
    c->buf = calloc(1, CURL_OUT_MAX);
    assert_int_equal(uv_pipe_init(&loop, &c->out, 0), 0);
    c->out.data = c;
    c->proc.data = c;
    uv_stdio_container_t stdio[3] = {
        {.flags = UV_IGNORE},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&c->out},
        {.flags = UV_INHERIT_FD, .data.fd = 2},
    };
    uv_process_options_t po = {
        .exit_cb = curl_exited,
        .file = "curl",
        .args = argv,
        .stdio = stdio,
        .stdio_count = 3,
    };
    assert_int_equal(uv_spawn(&loop, &c->proc, &po), 0);
    c->open = 2;
    assert_int_equal(uv_read_start((uv_stream_t *)&c->out, curl_alloc, curl_read), 0);
    test_run_until(&loop, &c->done, 15000);

    int status = -(int)c->exit_status;
    if (c->exit_status == 0 && sscanf(c->buf, "HTTP/%*s %d", &status) != 1)
        status = -1000;
    *out = c->buf;
    free(c);
    return status;
}

static int get(char **out, const char *url)
{
    return curl(out, url, NULL);
}

static int post(char **out, const char *url, const char *body)
{
    return curl(out, "-H", "Content-Type: application/x-www-form-urlencoded", "--data-binary", body,
                url, NULL);
}

static int port_of(const char *url)
{
    int port = 0;
    assert_int_equal(sscanf(url, "http://127.0.0.1:%d/p/", &port), 1);
    return port;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_form_and_secret(void **state)
{
    (void)state;
    setup();
    secret_page_options_t o = {
        .title = "Bluesky app password",
        .text = "Paste <b>\"your\" app password</b> & 'go'",
        .link_url = "https://bsky.app/settings/app-passwords?a=1&b=<2>",
        .link_text = "Create one <here>",
    };
    result_t r = {0};
    char url[SECRET_PAGE_URL_MAX];
    secret_page_t *p = open_page(&o, &r, url);
    int port = port_of(url);
    assert_int_equal(secret_page_port(p), port);
    assert_int_equal(strlen(url), strlen("http://127.0.0.1:") + strlen("/p/") + 43 +
                                      (size_t)snprintf(NULL, 0, "%d", port));
    char *res;

    /* The form, its headers, the texts escaped. */
    assert_int_equal(get(&res, url), 200);
    assert_non_null(strcasestr(res, "\ncache-control: no-store"));
    assert_non_null(strcasestr(res, "\ncontent-security-policy: default-src 'none'; "
                                    "style-src 'unsafe-inline'; form-action 'self'"));
    assert_non_null(strcasestr(res, "\nx-frame-options: DENY"));
    assert_non_null(strcasestr(res, "\nreferrer-policy: "));
    assert_non_null(strcasestr(res, "\ncontent-type: text/html; charset=utf-8"));
    assert_non_null(strstr(res, "Paste &lt;b&gt;&quot;your&quot; app password&lt;/b&gt; &amp; "
                                "&#39;go&#39;"));
    assert_null(strstr(res, "<b>"));
    assert_non_null(
        strstr(res, "href=\"https://bsky.app/settings/app-passwords?a=1&amp;b=&lt;2&gt;\""));
    assert_non_null(strstr(res, "Create one &lt;here&gt;</a>"));
    assert_non_null(strstr(res, "<input type=\"password\" name=\"secret\" autocomplete=\"off\""));
    char action[128];
    snprintf(action, sizeof action, "<form method=\"post\" action=\"%s\">", strstr(url, "/p/"));
    assert_non_null(strstr(res, action));
    assert_null(strstr(res, "http://"));
    free(res);

    /* Host localhost:PORT is fine; any other host is not. */
    char host[64];
    snprintf(host, sizeof host, "Host: localhost:%d", port);
    assert_int_equal(curl(&res, "-H", host, url, NULL), 200);
    free(res);
    snprintf(host, sizeof host, "Host: attacker.example:%d", port);
    assert_int_equal(curl(&res, "-H", host, url, NULL), 403);
    free(res);
    assert_int_equal(curl(&res, "-H", "Host: 127.0.0.1", url, NULL), 403);
    free(res);

    /* Refusals that leave the page open. */
    assert_int_equal(curl(&res, "-H", "Origin: http://attacker.example", "-H",
                          "Content-Type: application/x-www-form-urlencoded", "--data-binary",
                          "secret=stolen", url, NULL),
                     403);
    free(res);
    assert_int_equal(
        curl(&res, "-H", "Content-Type: text/plain", "--data-binary", "secret=x", url, NULL), 415);
    free(res);
    assert_int_equal(post(&res, url, "secret="), 400);
    assert_non_null(strstr(res, "Please enter the value."));
    assert_non_null(strstr(res, "name=\"secret\""));
    free(res);
    assert_int_equal(post(&res, url, "other=1"), 400);
    free(res);
    assert_int_equal(post(&res, url, "secret=a%00b"), 400);
    free(res);
    char big[SECRET_PAGE_BODY_MAX + 200];
    memset(big, 'a', sizeof big - 1);
    memcpy(big, "secret=", 7);
    big[sizeof big - 1] = '\0';
    assert_int_equal(post(&res, url, big), 413);
    free(res);
    assert_int_equal(curl(&res, "-X", "PUT", url, NULL), 405);
    assert_non_null(strcasestr(res, "\nallow: GET, POST"));
    free(res);
    char other[SECRET_PAGE_URL_MAX];
    snprintf(other, sizeof other, "http://127.0.0.1:%d/p/nope", port);
    assert_int_equal(get(&res, other), 404);
    free(res);
    snprintf(other, sizeof other, "http://127.0.0.1:%d/", port);
    assert_int_equal(get(&res, other), 404);
    free(res);
    snprintf(other, sizeof other, "%s", url);
    other[strlen(other) - 1] = other[strlen(other) - 1] == 'A' ? 'B' : 'A';
    assert_int_equal(get(&res, other), 404);
    free(res);
    assert_int_equal(r.calls, 0);

    /* The secret: from the page's own origin, '+' and %XX decoded. */
    char origin[64];
    snprintf(origin, sizeof origin, "Origin: http://127.0.0.1:%d", port);
    assert_int_equal(curl(&res, "-H", origin, "-H",
                          "Content-Type: application/x-www-form-urlencoded; charset=UTF-8",
                          "--data-binary", "x=1&secret=p%40ss+w%2Bord%C3%A9%&y=2", url, NULL),
                     200);
    assert_non_null(strstr(res, "Received \xe2\x80\x94 you can close this tab"));
    free(res);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.secret, "p@ss w+ord\xc3\xa9%");

    /* Used up. */
    assert_int_equal(post(&res, url, "secret=again"), 410);
    free(res);
    assert_int_equal(get(&res, url), 410);
    free(res);
    assert_int_equal(r.calls, 1);

    teardown();
    assert_int_equal(r.calls, 1);
    result_free(&r);
}

/* A verify page: each secret goes to the owner, "Checking" meanwhile;
 * refused, the form again with the owner's message, and a second secret
 * runs the callback again; accepted, the owner's message, then 410 to a
 * POST. Expiry while a secret is checked is the last callback. */
static void test_verify(void **state)
{
    (void)state;
    setup();
    secret_page_options_t o = basic;
    o.verify = true;
    result_t r = {0};
    char url[SECRET_PAGE_URL_MAX];
    secret_page_t *p = open_page(&o, &r, url);
    char *res;
    assert_int_equal(get(&res, url), 200);
    assert_non_null(strstr(res, "name=\"secret\""));
    assert_null(strstr(res, "class=\"error\""));
    free(res);

    /* A wrong secret: "Checking", reloading itself; the owner has it. */
    assert_int_equal(post(&res, url, "secret=wrong"), 200);
    assert_non_null(strstr(res, "Checking"));
    char refresh[128];
    snprintf(refresh, sizeof refresh, "<meta http-equiv=\"refresh\" content=\"1; url=%s\">",
             strstr(url, "/p/"));
    assert_non_null(strstr(res, refresh));
    assert_null(strstr(res, "Received"));
    free(res);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.secret, "wrong");
    assert_int_equal(get(&res, url), 200);
    assert_non_null(strstr(res, "Checking"));
    free(res);
    assert_int_equal(post(&res, url, "secret=meanwhile"), 409); /* not taken */
    free(res);
    assert_int_equal(r.calls, 1);

    /* Refused: the form again, with the owner's message (escaped). */
    secret_page_result(p, false, "Bluesky refused <that> password. Try again.");
    assert_int_equal(get(&res, url), 200);
    assert_non_null(strstr(res, "class=\"error\" role=\"alert\">Bluesky refused &lt;that&gt; "
                                "password. Try again."));
    assert_non_null(strstr(res, "name=\"secret\""));
    assert_null(strstr(res, "Checking"));
    free(res);

    /* The second secret runs the callback again; accepted. */
    assert_int_equal(post(&res, url, "secret=right"), 200);
    assert_non_null(strstr(res, "Checking"));
    free(res);
    assert_int_equal(r.calls, 2);
    assert_string_equal(r.secret, "right");
    secret_page_result(p, true, "Signed in as @alice.test");
    assert_int_equal(get(&res, url), 200);
    assert_non_null(strstr(res, "Signed in as @alice.test"));
    assert_null(strstr(res, "name=\"secret\""));
    assert_null(strstr(res, "http-equiv"));
    free(res);
    assert_int_equal(post(&res, url, "secret=again"), 410);
    free(res);
    assert_int_equal(r.calls, 2);

    /* Expiry while a secret is checked: the last callback. */
    result_t late = {0};
    o.ttl_ms = 1000;
    secret_page_t *q = open_page(&o, &late, url);
    assert_int_equal(post(&res, url, "secret=slow"), 200);
    free(res);
    assert_int_equal(late.calls, 1);
    test_run_for(&loop, 1300);
    assert_int_equal(late.calls, 2);
    assert_int_equal(late.status, UV_ETIMEDOUT);
    (void)q;

    /* secret_page_result on a page without verify does nothing. */
    result_t plain = {0};
    secret_page_t *n = open_page(&basic, &plain, url);
    secret_page_result(n, true, "no");
    assert_int_equal(get(&res, url), 200);
    assert_non_null(strstr(res, "name=\"secret\""));
    free(res);
    assert_int_equal(post(&res, url, "secret=x"), 200);
    assert_non_null(strstr(res, "Received"));
    free(res);
    assert_int_equal(plain.calls, 1);

    teardown();
    assert_int_equal(r.calls, 2);
    assert_int_equal(late.calls, 2);
    result_free(&r);
    result_free(&late);
    result_free(&plain);
}

static void test_expiry(void **state)
{
    (void)state;
    setup();
    secret_page_options_t o = basic;
    o.ttl_ms = 1000; /* room for curl to start, loaded machines included */
    result_t r = {0};
    char url[SECRET_PAGE_URL_MAX];
    open_page(&o, &r, url);
    char *res;
    assert_int_equal(get(&res, url), 200);
    free(res);
    test_run_for(&loop, 1300);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.status, UV_ETIMEDOUT);
    assert_null(r.secret);
    assert_int_equal(get(&res, url), -7); /* connection refused */
    free(res);

    /* A page used near its end answers 410 no longer than its time to live. */
    result_t used = {0};
    open_page(&o, &used, url);
    assert_int_equal(post(&res, url, "secret=x"), 200);
    free(res);
    assert_int_equal(get(&res, url), 410);
    free(res);
    test_run_for(&loop, 1300);
    assert_int_equal(get(&res, url), -7);
    free(res);
    assert_int_equal(used.calls, 1);
    result_free(&used);
    teardown();
    assert_int_equal(r.calls, 1);
}

static void cancel_in_cb(secret_page_t *p, int status, const char *secret, void *data)
{
    page_cb(p, status, secret, data);
    secret_page_cancel(p); /* a no-op from inside the callback */
}

static void test_cancel(void **state)
{
    (void)state;
    setup();
    result_t r = {0};
    char url[SECRET_PAGE_URL_MAX];
    secret_page_t *p = NULL;
    assert_int_equal(secret_page_open(srv, &basic, cancel_in_cb, &r, url, SECRET_PAGE_URL_MAX, &p),
                     0);
    secret_page_cancel(p);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.status, UV_ECANCELED);
    test_run_for(&loop, 50);
    char *res;
    assert_int_equal(get(&res, url), -7);
    free(res);
    teardown();
    assert_int_equal(r.calls, 1);
}

static void blocker_closed(uv_handle_t *h)
{
    *(bool *)h->data = true;
}

static void test_ports_and_options(void **state)
{
    (void)state;
    setup();
    result_t r = {0};
    char url[SECRET_PAGE_URL_MAX];
    secret_page_t *p = NULL;

    /* A port taken by someone else. */
    uv_tcp_t blocker;
    struct sockaddr_in sa;
    uv_ip4_addr("127.0.0.1", 0, &sa);
    uv_tcp_init(&loop, &blocker);
    assert_int_equal(uv_tcp_bind(&blocker, (const struct sockaddr *)&sa, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&blocker, 1, NULL), 0);
    struct sockaddr_in bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&blocker, (struct sockaddr *)&bound, &len);
    secret_page_options_t o = basic;
    o.port = ntohs(bound.sin_port);
    assert_int_equal(secret_page_open(srv, &o, page_cb, &r, url, sizeof url, &p), UV_EADDRINUSE);
    assert_null(p);

    /* Free again: the page takes it. */
    bool closed = false;
    blocker.data = &closed;
    uv_close((uv_handle_t *)&blocker, blocker_closed);
    test_run_until(&loop, &closed, 1000);
    p = open_page(&o, &r, url);
    assert_int_equal(port_of(url), o.port);

    /* And another page cannot have it. */
    secret_page_t *q = NULL;
    assert_int_equal(secret_page_open(srv, &o, page_cb, &r, url, sizeof url, &q), UV_EADDRINUSE);

    /* Options refused. */
    o = basic;
    o.port = 65536;
    assert_int_equal(secret_page_open(srv, &o, page_cb, &r, url, sizeof url, &q), UV_EINVAL);
    o.port = -1;
    assert_int_equal(secret_page_open(srv, &o, page_cb, &r, url, sizeof url, &q), UV_EINVAL);
    o = basic;
    o.link_url = "javascript:alert(1)";
    assert_int_equal(secret_page_open(srv, &o, page_cb, &r, url, sizeof url, &q), UV_EINVAL);
    o = basic;
    o.title = NULL;
    assert_int_equal(secret_page_open(srv, &o, page_cb, &r, url, sizeof url, &q), UV_EINVAL);
    assert_int_equal(secret_page_open(srv, &basic, page_cb, &r, url, 20, &q), UV_EINVAL);
    assert_null(q);

    secret_page_cancel(p);
    assert_int_equal(r.calls, 1);
    teardown();
    assert_int_equal(r.calls, 1);
}

/* A client that connects and stays idle until the server hangs up. */
typedef struct {
    uv_tcp_t tcp;
    uv_connect_t req;
    bool connected, eof, closed;
} idle_client_t;

static void idle_closed(uv_handle_t *h)
{
    ((idle_client_t *)h->data)->closed = true;
}

static void idle_alloc(uv_handle_t *h, size_t size, uv_buf_t *b)
{
    (void)h;
    static char scratch[1024];
    (void)size;
    *b = uv_buf_init(scratch, sizeof scratch);
}

static void idle_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    (void)b;
    idle_client_t *c = s->data;
    if (n < 0) {
        c->eof = true;
        uv_close((uv_handle_t *)s, idle_closed);
    }
}

static void idle_connected(uv_connect_t *req, int status)
{
    idle_client_t *c = req->data;
    assert_int_equal(status, 0);
    c->connected = true;
    uv_read_start((uv_stream_t *)&c->tcp, idle_alloc, idle_read);
}

static void test_limit_and_close(void **state)
{
    (void)state;
    setup();
    result_t r[SECRET_PAGE_MAX] = {0};
    char url[SECRET_PAGE_URL_MAX];
    for (int i = 0; i < SECRET_PAGE_MAX; i++)
        open_page(&basic, &r[i], url);
    result_t extra = {0};
    secret_page_t *q = NULL;
    assert_int_equal(secret_page_open(srv, &basic, page_cb, &extra, url, sizeof url, &q), UV_EBUSY);

    /* An idle connection to the last page. */
    idle_client_t ic = {0};
    struct sockaddr_in sa;
    uv_ip4_addr("127.0.0.1", port_of(url), &sa);
    uv_tcp_init(&loop, &ic.tcp);
    ic.tcp.data = &ic;
    ic.req.data = &ic;
    assert_int_equal(uv_tcp_connect(&ic.req, &ic.tcp, (const struct sockaddr *)&sa, idle_connected),
                     0);
    test_run_until(&loop, &ic.connected, 2000);
    test_run_for(&loop, 50); /* the server accepts it */

    bool closed = false;
    secret_page_server_close(srv, closed_cb, &closed);
    for (int i = 0; i < SECRET_PAGE_MAX; i++) {
        assert_int_equal(r[i].calls, 1);
        assert_int_equal(r[i].status, UV_ECANCELED);
    }
    assert_int_equal(secret_page_open(srv, &basic, page_cb, &extra, url, sizeof url, &q),
                     UV_ECANCELED);
    assert_false(closed);
    test_run_until(&loop, &closed, 5000);
    test_run_until(&loop, &ic.closed, 2000);
    assert_true(ic.eof);
    assert_int_equal(extra.calls, 0);

    /* A second close does nothing; dispose, then the loop closes. */
    secret_page_server_close(srv, closed_cb, NULL);
    if (secret_page_server_dispose(srv))
        uv_run(&loop, UV_RUN_DEFAULT);
    secret_page_server_free(srv);
    srv = NULL;
    test_loop_close(&loop);
    for (int i = 0; i < SECRET_PAGE_MAX; i++)
        assert_int_equal(r[i].calls, 1);
}

/* Idle connections past SECRET_PAGE_CONNS_MAX cannot keep the browser
 * out: the oldest are dropped to make room (they used to hold every slot
 * until h2o's timeout). A form past SECRET_PAGE_BODY_MAX but readable is
 * answered 413 (it used to be a reset); a second Origin, or a body framed
 * two ways, is refused (curl cannot send two Hosts: e2e_http sends them). */
static void test_idle_crowd_and_strict_heads(void **state)
{
    (void)state;
    setup();
    result_t r = {0};
    char url[SECRET_PAGE_URL_MAX];
    open_page(&basic, &r, url);
    enum { CROWD = SECRET_PAGE_CONNS_MAX + 8 };
    idle_client_t *ic = calloc(CROWD, sizeof *ic);
    struct sockaddr_in sa;
    uv_ip4_addr("127.0.0.1", port_of(url), &sa);
    for (int i = 0; i < CROWD; i++) {
        uv_tcp_init(&loop, &ic[i].tcp);
        ic[i].tcp.data = &ic[i];
        ic[i].req.data = &ic[i];
        assert_int_equal(
            uv_tcp_connect(&ic[i].req, &ic[i].tcp, (const struct sockaddr *)&sa, idle_connected),
            0);
        test_run_until(&loop, &ic[i].connected, 2000);
    }
    test_run_for(&loop, 100); /* the server accepts them all */
    char *res;
    assert_int_equal(get(&res, url), 200);
    free(res);
    /* The oldest were dropped, the newest kept. */
    assert_true(ic[0].eof);
    assert_false(ic[CROWD - 1].eof);

    char big[SECRET_PAGE_BODY_MAX * 5];
    memset(big, 'a', sizeof big - 1);
    memcpy(big, "secret=", 7);
    big[sizeof big - 1] = '\0';
    assert_int_equal(post(&res, url, big), 413);
    free(res);

    int port = port_of(url);
    char origin[64];
    snprintf(origin, sizeof origin, "Origin: http://127.0.0.1:%d", port);
    assert_int_equal(curl(&res, "-H", origin, "-H", "Origin: http://attacker.example", "-H",
                          "Content-Type: application/x-www-form-urlencoded", "--data-binary",
                          "secret=stolen", url, NULL),
                     400);
    free(res);
    assert_int_equal(curl(&res, "-H", "Transfer-Encoding: chunked", "-H", "Content-Length: 13",
                          "-H", "Content-Type: application/x-www-form-urlencoded", "--data-binary",
                          "secret=stolen", url, NULL),
                     400);
    free(res);
    assert_int_equal(r.calls, 0);

    for (int i = 0; i < CROWD; i++)
        if (!ic[i].eof)
            uv_close((uv_handle_t *)&ic[i].tcp, idle_closed);
    for (int i = 0; i < CROWD; i++)
        test_run_until(&loop, &ic[i].closed, 2000);
    free(ic);
    teardown();
    result_free(&r);
}

/* A callback that closes the server while the browser's POST is served. */
static bool closed_in_cb;

static void close_in_cb(secret_page_t *p, int status, const char *secret, void *data)
{
    page_cb(p, status, secret, data);
    secret_page_server_close(srv, closed_cb, &closed_in_cb);
}

static void test_close_from_callback(void **state)
{
    (void)state;
    setup();
    result_t r = {0}, other = {0};
    char url[SECRET_PAGE_URL_MAX], url2[SECRET_PAGE_URL_MAX];
    secret_page_t *p = NULL;
    assert_int_equal(secret_page_open(srv, &basic, close_in_cb, &r, url, sizeof url, &p), 0);
    open_page(&basic, &other, url2);
    char *res;
    closed_in_cb = false;
    assert_int_equal(post(&res, url, "secret=s3cret"), 200);
    assert_non_null(strstr(res, "Received"));
    free(res);
    assert_int_equal(r.calls, 1);
    assert_string_equal(r.secret, "s3cret");
    assert_int_equal(other.calls, 1);
    assert_int_equal(other.status, UV_ECANCELED);
    test_run_until(&loop, &closed_in_cb, 5000);
    if (secret_page_server_dispose(srv))
        uv_run(&loop, UV_RUN_DEFAULT);
    secret_page_server_free(srv);
    srv = NULL;
    test_loop_close(&loop);
    result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_form_and_secret),
        cmocka_unit_test(test_verify),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_ports_and_options),
        cmocka_unit_test(test_limit_and_close),
        cmocka_unit_test(test_idle_crowd_and_strict_heads),
        cmocka_unit_test(test_close_from_callback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
