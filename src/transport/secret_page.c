/* secret_page: the one-time pages of secret_page.h. This file owns the
 * server (an h2o configuration and context on the daemon's loop, the
 * browser connections of every page), the pages (a loopback listener and a
 * timer each, the copied texts, the random path) and the requests (the
 * form, the POST with the secret, the refusals); secret_page_html.c
 * writes what they answer.
 *
 * Lifecycle: a page waits (PAGE_WAITING) until the secret arrives
 * (PAGE_USED: it answers 410 for a while), it expires or it is cancelled
 * (PAGE_DONE); its callback runs once, on leaving PAGE_WAITING. A verify
 * page goes from PAGE_WAITING to PAGE_CHECKING with each secret (the
 * callback runs; "Checking" is served) and from there back to
 * PAGE_WAITING (refused: the form with the owner's message) or to
 * PAGE_USED (its message served to GET, 410 to POST) by
 * secret_page_result; expiry and cancel end either state. Ending a
 * page closes its two handles and shuts down the sockets of the
 * connections it accepted (h2o sees EOF and closes them); the page is
 * freed when both handles closed, the server's close callback runs when
 * every page was freed and every connection closed. Responses are written
 * at once (h2o_send_inline), before any callback runs, so shutting a
 * socket down never cuts a response short. */
#include "transport/secret_page.h"

#include <h2o.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "transport/http_headers.h"
#include "transport/secret_page_html.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/queue.h"

#define SP_TAG "secret-page"

_Static_assert(H2O_USE_LIBUV, "parley needs the libuv flavour of libh2o");

#define PAGE_RANDOM_BYTES   32
#define PAGE_PATH_PREFIX    "/p/"
#define PAGE_PATH_LEN       (sizeof PAGE_PATH_PREFIX - 1 + 43) /* base64url of 32 bytes */
#define PAGE_LISTEN_BACKLOG 16
#define PAGE_HOST_MAX       32 /* "localhost:65535" and the like, with the NUL */

typedef enum {
    PAGE_WAITING = 0, /* serves the form, waits for the secret */
    PAGE_CHECKING,    /* verify: a secret is with the owner; "Checking" until its result */
    PAGE_USED,        /* the secret arrived: answers 410 until the linger ends */
    PAGE_DONE,        /* expired, cancelled, or failed to open */
} page_state_t;

struct secret_page_s {
    queue_node_t node; /* in s->pages until freed */
    secret_page_server_t *s;
    page_state_t state;
    bool closing; /* its handles are closing */
    int handles_open;
    uv_tcp_t listener;
    uv_timer_t timer; /* expiry, then the linger */
    int port;
    uint64_t deadline; /* uv_now() past which the URL serves nothing */
    char path[PAGE_PATH_LEN + 1];
    char *title, *text, *link_url, *link_text;
    bool verify;   /* the owner checks each secret (secret_page_result) */
    char *message; /* verify: the last result's message, or NULL */
    secret_page_cb cb;
    void *data;
};

typedef struct page_conn_s {
    uv_tcp_t tcp; /* data belongs to h2o */
    queue_node_t node;
    secret_page_server_t *s;
    int port;     /* the local port: the page's listener it came through */
    bool dropped; /* shut down to make room; closes soon */
} page_conn_t;

typedef enum {
    SPS_ACTIVE = 0,
    SPS_CLOSING,
    SPS_CLOSED, /* the close callback ran */
    SPS_DISPOSED,
} sps_state_t;

struct secret_page_server_s {
    sps_state_t state;
    uv_loop_t *loop;
    h2o_globalconf_t conf;
    h2o_context_t ctx;
    h2o_accept_ctx_t actx;
    queue_node_t pages;
    int nwaiting; /* pages in PAGE_WAITING or PAGE_CHECKING */
    int nused;    /* pages in PAGE_USED, not closing */
    queue_node_t conns;
    int nconns; /* open connections, dropped ones included */
    int nlive;  /* open connections not dropped */
    void (*close_cb)(void *data);
    void *close_data;
};

static void maybe_closed(secret_page_server_t *s);

/* ---- responses (secret_page_html.c writes them) ---------------------------- */

static secret_page_view_t view_of(const secret_page_t *p)
{
    return (secret_page_view_t){.title = p->title,
                                .text = p->text,
                                .link_url = p->link_url,
                                .link_text = p->link_text,
                                .path = p->path,
                                .verify = p->verify};
}

static void send_message(h2o_req_t *req, int status, const char *reason, const char *title,
                         const char *message)
{
    (void)secret_page__send_message(req, status, reason, title, message);
}

static void send_checking(h2o_req_t *req, const secret_page_t *p, int status, const char *reason)
{
    secret_page_view_t v = view_of(p);
    secret_page__send_checking(req, status, reason, &v);
}

static void send_form(h2o_req_t *req, const secret_page_t *p, int status, const char *reason,
                      const char *error)
{
    secret_page_view_t v = view_of(p);
    secret_page__send_form(req, status, reason, &v, error);
}

/* ---- pages --------------------------------------------------------------- */

static void page_free(secret_page_t *p)
{
    free(p->title);
    free(p->text);
    free(p->link_url);
    free(p->link_text);
    free(p->message);
    OPENSSL_cleanse(p->path, sizeof p->path);
    free(p);
}

static void page_handle_closed(uv_handle_t *h)
{
    secret_page_t *p = h->data;
    if (--p->handles_open > 0)
        return;
    secret_page_server_t *s = p->s;
    queue_remove(&p->node);
    page_free(p);
    maybe_closed(s);
}

static void shutdown_conns(secret_page_server_t *s, int port)
{
    for (queue_node_t *n = s->conns.next; n != &s->conns; n = n->next) {
        page_conn_t *c = queue_entry(n, page_conn_t, node);
        uv_os_fd_t fd;
        if ((port == 0 || c->port == port) && uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
            shutdown(fd, SHUT_RDWR);
    }
}

/* Closes the page's listener and timer and its connections (no callback). */
static void page_end(secret_page_t *p)
{
    if (p->closing)
        return;
    if (p->state == PAGE_USED)
        p->s->nused--;
    p->closing = true;
    uv_close((uv_handle_t *)&p->listener, page_handle_closed);
    uv_close((uv_handle_t *)&p->timer, page_handle_closed);
    if (p->port > 0)
        shutdown_conns(p->s, p->port);
}

/* Leaves PAGE_WAITING and runs the callback. */
static void page_finish(secret_page_t *p, int status, const char *secret)
{
    secret_page_server_t *s = p->s;
    s->nwaiting--;
    p->state = status == 0 ? PAGE_USED : PAGE_DONE;
    if (status == 0)
        s->nused++;
    log_info(SP_TAG, "page on 127.0.0.1:%d (%s): %s", p->port, p->title,
             status == 0              ? "received"
             : status == UV_ETIMEDOUT ? "expired"
                                      : "cancelled");
    p->cb(p, status, secret, p->data);
}

/* Waiting for a secret, or (verify) checking one: the callback is owed. */
static bool page_open(const secret_page_t *p)
{
    return p->state == PAGE_WAITING || p->state == PAGE_CHECKING;
}

static void page_timer_cb(uv_timer_t *t)
{
    secret_page_t *p = t->data;
    if (page_open(p))
        page_finish(p, UV_ETIMEDOUT, NULL);
    page_end(p);
}

/* After the secret arrived: 410 for a while, then the listener closes. At
 * most SECRET_PAGE_MAX pages linger; the oldest one gives way. */
static void page_linger(secret_page_t *p)
{
    secret_page_server_t *s = p->s;
    if (p->state != PAGE_USED || p->closing)
        return;
    for (queue_node_t *n = s->pages.next; n != &s->pages && s->nused > SECRET_PAGE_MAX;) {
        secret_page_t *o = queue_entry(n, secret_page_t, node);
        n = n->next;
        if (o != p && o->state == PAGE_USED && !o->closing)
            page_end(o);
    }
    uint64_t now = uv_now(s->loop);
    uint64_t left = p->deadline > now ? p->deadline - now : 0;
    if (left > SECRET_PAGE_LINGER_MS)
        left = SECRET_PAGE_LINGER_MS;
    if (left == 0)
        page_end(p);
    else
        uv_timer_start(&p->timer, page_timer_cb, left, 0);
}

void secret_page_cancel(secret_page_t *p)
{
    if (p == NULL || !page_open(p))
        return;
    page_finish(p, UV_ECANCELED, NULL);
    page_end(p);
}

/* message, cut to SECRET_PAGE_TEXT_MAX bytes (at a UTF-8 boundary), or
 * fallback when NULL; NULL when out of memory (then the page says
 * nothing more than its state). */
static char *copy_capped(const char *message, const char *fallback)
{
    const char *m = message ? message : fallback;
    size_t n = strlen(m);
    if (n > SECRET_PAGE_TEXT_MAX) {
        n = SECRET_PAGE_TEXT_MAX;
        while (n > 0 && ((unsigned char)m[n] & 0xc0) == 0x80)
            n--;
    }
    char *out = malloc(n + 1);
    if (out) {
        memcpy(out, m, n);
        out[n] = '\0';
    }
    return out;
}

void secret_page_result(secret_page_t *p, bool done, const char *message)
{
    if (p == NULL || !p->verify || p->state != PAGE_CHECKING || p->closing)
        return;
    free(p->message);
    if (!done) {
        p->message = copy_capped(message, "That was not accepted. Try again.");
        p->state = PAGE_WAITING;
        log_info(SP_TAG, "page on 127.0.0.1:%d (%s): refused, waits again", p->port, p->title);
        return;
    }
    p->message = copy_capped(
        message, "Done \xe2\x80\x94 you can close this tab and return to your assistant.");
    p->state = PAGE_USED;
    p->s->nwaiting--;
    p->s->nused++;
    log_info(SP_TAG, "page on 127.0.0.1:%d (%s): done", p->port, p->title);
    page_linger(p);
}

int secret_page_port(const secret_page_t *p)
{
    return p->port;
}

/* ---- requests ------------------------------------------------------------ */

static h2o_iovec_t header_of(h2o_req_t *req, const char *lcname, size_t len)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, lcname, len, -1);
    return i < 0 ? h2o_iovec_init(NULL, 0) : req->headers.entries[i].value;
}

static bool method_is(h2o_req_t *req, const char *m)
{
    return h2o_memis(req->method.base, req->method.len, m, strlen(m));
}

/* The local port the request came in on, or -1. */
static int local_port(h2o_req_t *req)
{
    if (req->conn->callbacks->get_sockname == NULL)
        return -1;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t len = req->conn->callbacks->get_sockname(req->conn, (struct sockaddr *)&ss);
    if (len == 0 || ss.ss_family != AF_INET)
        return -1;
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* v equals prefix + "127.0.0.1:PORT" or prefix + "localhost:PORT" (port 80
 * may go unsaid). */
static bool names_us(h2o_iovec_t v, const char *prefix, int port)
{
    static const char *const hosts[] = {"127.0.0.1", "localhost"};
    for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
        char want[PAGE_HOST_MAX + 8];
        int n = snprintf(want, sizeof want, "%s%s:%d", prefix, hosts[i], port);
        if (n > 0 && v.base != NULL && v.len == (size_t)n && strncasecmp(v.base, want, v.len) == 0)
            return true;
        n = snprintf(want, sizeof want, "%s%s", prefix, hosts[i]);
        if (port == 80 && v.base != NULL && v.len == (size_t)n &&
            strncasecmp(v.base, want, v.len) == 0)
            return true;
    }
    return false;
}

static secret_page_t *page_find(secret_page_server_t *s, h2o_iovec_t path, int port)
{
    if (path.len != PAGE_PATH_LEN)
        return NULL;
    for (queue_node_t *n = s->pages.next; n != &s->pages; n = n->next) {
        secret_page_t *p = queue_entry(n, secret_page_t, node);
        if (p->port == port && CRYPTO_memcmp(p->path, path.base, PAGE_PATH_LEN) == 0)
            return p;
    }
    return NULL;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes an application/x-www-form-urlencoded value of n bytes into out
 * (n + 1 bytes, NUL-terminated): '+' is a space, %XX a byte, a '%' not
 * followed by two hex digits stays. Returns the length, or -1 when the
 * value holds a NUL byte. */
static ssize_t form_decode(const char *v, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%' && i + 2 < n && hex_value(v[i + 1]) >= 0 && hex_value(v[i + 2]) >= 0) {
            c = (char)(hex_value(v[i + 1]) * 16 + hex_value(v[i + 2]));
            i += 2;
            if (c == '\0') {
                OPENSSL_cleanse(out, o);
                return -1;
            }
        }
        out[o++] = c;
    }
    out[o] = '\0';
    return (ssize_t)o;
}

/* The raw (still encoded) value of the first field "secret" in body. */
static bool form_field(h2o_iovec_t body, h2o_iovec_t *value)
{
    static const char name[] = "secret=";
    const char *p = body.base, *end = body.base + body.len;
    while (p != NULL && p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp ? amp : end;
        size_t len = (size_t)(stop - p);
        if (len >= sizeof name - 1 && memcmp(p, name, sizeof name - 1) == 0) {
            *value = h2o_iovec_init(p + sizeof name - 1, len - (sizeof name - 1));
            return true;
        }
        p = amp ? amp + 1 : NULL;
    }
    return false;
}

static bool is_form_type(h2o_iovec_t ct)
{
    static const char type[] = "application/x-www-form-urlencoded";
    size_t n = sizeof type - 1;
    if (ct.base == NULL || ct.len < n || strncasecmp(ct.base, type, n) != 0)
        return false;
    return ct.len == n || ct.base[n] == ';' || ct.base[n] == ' ';
}

static void handle_post(secret_page_t *p, h2o_req_t *req)
{
    h2o_iovec_t origin = header_of(req, H2O_STRLIT("origin"));
    if (origin.base != NULL && !names_us(origin, "http://", p->port)) {
        send_message(req, 403, "Forbidden", "Forbidden",
                     "This form only accepts answers from its own page.");
        return;
    }
    if (!is_form_type(header_of(req, H2O_STRLIT("content-type")))) {
        send_message(req, 415, "Unsupported Media Type", "Unsupported Media Type",
                     "Send the form as application/x-www-form-urlencoded.");
        return;
    }
    h2o_iovec_t body = req->entity;
    if (body.len > SECRET_PAGE_BODY_MAX) {
        send_message(req, 413, "Payload Too Large", "Payload Too Large", "The form is too large.");
        return;
    }
    h2o_iovec_t raw;
    bool found = body.base != NULL && form_field(body, &raw);
    char *secret = found ? malloc(raw.len + 1) : NULL;
    ssize_t len = secret ? form_decode(raw.base, raw.len, secret) : 0;
    /* The body held the secret: h2o's input buffer forgets it now. */
    if (body.base != NULL)
        OPENSSL_cleanse(body.base, body.len);
    if (found && secret == NULL) {
        send_message(req, 500, "Internal Server Error", "Error", "out of memory");
        return;
    }
    if (len <= 0) {
        send_form(req, p, 400, "Bad Request",
                  len < 0 ? "The value cannot contain a NUL character."
                          : "Please enter the value.");
        free(secret);
        return;
    }
    req->http1_is_persistent = 0;
    if (p->verify) {
        /* "Checking" now; its reloads show the owner's result. */
        send_checking(req, p, 200, "OK");
        p->state = PAGE_CHECKING;
        log_info(SP_TAG, "page on 127.0.0.1:%d (%s): received, checking", p->port, p->title);
        p->cb(p, 0, secret, p->data);
        OPENSSL_cleanse(secret, (size_t)len);
        free(secret);
        return;
    }
    /* Not rendered: a 500, and the page still waits. */
    bool rendered = secret_page__send_message(
        req, 200, "OK", p->title,
        "Received \xe2\x80\x94 you can close this tab and return to your assistant.");
    if (rendered)
        page_finish(p, 0, secret);
    OPENSSL_cleanse(secret, (size_t)len);
    free(secret);
    page_linger(p);
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    secret_page_server_t *s = *(secret_page_server_t **)(self + 1);
    char why[96];
    if (!http_headers_single_ok(req, why, sizeof why)) {
        req->http1_is_persistent = 0;
        send_message(req, 400, "Bad Request", "Bad Request", why);
        return 0;
    }
    int port = local_port(req);
    if (port <= 0 || !names_us(req->input.authority, "", port)) {
        send_message(req, 403, "Forbidden", "Forbidden",
                     "Open this page through the address you were given.");
        return 0;
    }
    secret_page_t *p = page_find(s, req->path_normalized, port);
    if (p == NULL) {
        send_message(req, 404, "Not Found", "Not Found", "There is no such page.");
        return 0;
    }
    bool get = method_is(req, "GET"), post = method_is(req, "POST");
    bool shows_result = p->state == PAGE_USED && p->verify && p->message && get;
    if (p->closing || s->state != SPS_ACTIVE || p->state == PAGE_DONE ||
        (p->state == PAGE_USED && !shows_result)) {
        send_message(req, 410, "Gone", "Gone",
                     "This page was used or has expired. Ask your assistant for a new one.");
        return 0;
    }
    if (shows_result) {
        send_message(req, 200, "OK", p->title, p->message);
    } else if (p->state == PAGE_CHECKING && (get || post)) {
        /* A second answer while the first is checked: not taken. */
        send_checking(req, p, get ? 200 : 409, get ? "OK" : "Conflict");
    } else if (get) {
        send_form(req, p, 200, "OK", p->message);
    } else if (post) {
        handle_post(p, req);
    } else {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL,
                       H2O_STRLIT("GET, POST"));
        send_message(req, 405, "Method Not Allowed", "Method Not Allowed", "Use GET or POST.");
    }
    return 0;
}

/* ---- connections ---------------------------------------------------------- */

static void conn_closed(uv_handle_t *h)
{
    page_conn_t *c = H2O_STRUCT_FROM_MEMBER(page_conn_t, tcp, (uv_tcp_t *)h);
    secret_page_server_t *s = c->s;
    queue_remove(&c->node);
    if (!c->dropped)
        s->nlive--;
    free(c);
    s->nconns--;
    maybe_closed(s);
}

static void refused_closed(uv_handle_t *h)
{
    free(H2O_STRUCT_FROM_MEMBER(page_conn_t, tcp, (uv_tcp_t *)h));
}

/* Past SECRET_PAGE_CONNS_MAX connections the oldest is shut down (h2o
 * then closes it): idle or silent connections cannot keep the user's
 * browser out (a browser's keep-alive connections, or a local process
 * holding sockets open). Dropped connections still count against the hard
 * bound of twice the cap until they closed. */
static void drop_oldest(secret_page_server_t *s)
{
    for (queue_node_t *n = s->conns.next; n != &s->conns; n = n->next) {
        page_conn_t *c = queue_entry(n, page_conn_t, node);
        uv_os_fd_t fd;
        if (c->dropped)
            continue;
        c->dropped = true;
        s->nlive--;
        if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
            shutdown(fd, SHUT_RDWR);
        return;
    }
}

static void on_accept(uv_stream_t *listener, int status)
{
    secret_page_t *p = listener->data;
    secret_page_server_t *s = p->s;
    if (status != 0 || p->closing || s->state != SPS_ACTIVE)
        return;
    page_conn_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return;
    c->s = s;
    c->port = p->port;
    uv_tcp_init(s->loop, &c->tcp);
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0 ||
        s->nconns >= 2 * SECRET_PAGE_CONNS_MAX) {
        uv_close((uv_handle_t *)&c->tcp, refused_closed);
        return;
    }
    if (s->nlive >= SECRET_PAGE_CONNS_MAX)
        drop_oldest(s);
    uv_tcp_nodelay(&c->tcp, 1);
    queue_push_tail(&s->conns, &c->node);
    s->nconns++;
    s->nlive++;
    h2o_socket_t *sock = h2o_uv_socket_create((uv_stream_t *)&c->tcp, conn_closed);
    h2o_accept(&s->actx, sock);
}

/* ---- opening pages ------------------------------------------------------- */

static int copy_text(char **dst, const char *src, size_t max)
{
    if (src == NULL)
        return 0;
    if (strlen(src) > max)
        return UV_EINVAL;
    *dst = strdup(src);
    return *dst ? 0 : UV_ENOMEM;
}

static int check_options(const secret_page_options_t *o)
{
    if (o == NULL || o->port < 0 || o->port > 65535 || o->title == NULL || o->title[0] == '\0' ||
        o->text == NULL || o->text[0] == '\0')
        return UV_EINVAL;
    if (o->link_url != NULL && strncasecmp(o->link_url, "https://", 8) != 0 &&
        strncasecmp(o->link_url, "http://", 7) != 0)
        return UV_EINVAL;
    return 0;
}

static int random_path(char *path)
{
    unsigned char rnd[PAGE_RANDOM_BYTES];
    int rc = uv_random(NULL, NULL, rnd, sizeof rnd, 0, NULL);
    if (rc != 0)
        return rc;
    memcpy(path, PAGE_PATH_PREFIX, sizeof PAGE_PATH_PREFIX - 1);
    size_t n = h2o_base64_encode(path + sizeof PAGE_PATH_PREFIX - 1, rnd, sizeof rnd, 1);
    OPENSSL_cleanse(rnd, sizeof rnd);
    return n + sizeof PAGE_PATH_PREFIX - 1 == PAGE_PATH_LEN ? 0 : UV_EINVAL;
}

/* Binds and listens on 127.0.0.1:port; p->port is the port bound. */
static int page_listen(secret_page_t *p, int port)
{
    struct sockaddr_in sa;
    int rc = uv_ip4_addr("127.0.0.1", port, &sa);
    if (rc == 0)
        rc = uv_tcp_bind(&p->listener, (const struct sockaddr *)&sa, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&p->listener, PAGE_LISTEN_BACKLOG, on_accept);
    if (rc != 0)
        return rc;
    struct sockaddr_storage ss;
    int len = sizeof ss;
    rc = uv_tcp_getsockname(&p->listener, (struct sockaddr *)&ss, &len);
    if (rc != 0)
        return rc;
    p->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return 0;
}

int secret_page_open(secret_page_server_t *s, const secret_page_options_t *o, secret_page_cb cb,
                     void *data, char *url, size_t urlcap, secret_page_t **out)
{
    *out = NULL;
    int rc = check_options(o);
    if (rc != 0 || cb == NULL || url == NULL || urlcap < SECRET_PAGE_URL_MAX)
        return UV_EINVAL;
    if (s->state != SPS_ACTIVE)
        return UV_ECANCELED;
    if (s->nwaiting >= SECRET_PAGE_MAX)
        return UV_EBUSY;
    secret_page_t *p = calloc(1, sizeof *p);
    if (p == NULL)
        return UV_ENOMEM;
    p->s = s;
    p->cb = cb;
    p->data = data;
    p->verify = o->verify;
    if ((rc = copy_text(&p->title, o->title, SECRET_PAGE_TITLE_MAX)) != 0 ||
        (rc = copy_text(&p->text, o->text, SECRET_PAGE_TEXT_MAX)) != 0 ||
        (rc = copy_text(&p->link_url, o->link_url, SECRET_PAGE_LINK_MAX)) != 0 ||
        (rc = copy_text(&p->link_text, o->link_url ? o->link_text : NULL, SECRET_PAGE_TITLE_MAX)) !=
            0 ||
        (rc = random_path(p->path)) != 0) {
        page_free(p);
        return rc;
    }
    /* From here the page is in the list and its handles open: a failure
     * closes them (without a callback) and frees it. */
    p->state = PAGE_DONE;
    uv_tcp_init(s->loop, &p->listener);
    uv_timer_init(s->loop, &p->timer);
    p->listener.data = p;
    p->timer.data = p;
    p->handles_open = 2;
    queue_push_tail(&s->pages, &p->node);
    if ((rc = page_listen(p, o->port)) != 0) {
        page_end(p);
        return rc;
    }
    uint32_t ttl = o->ttl_ms ? o->ttl_ms : SECRET_PAGE_TTL_MS;
    p->state = PAGE_WAITING;
    s->nwaiting++;
    p->deadline = uv_now(s->loop) + ttl;
    uv_timer_start(&p->timer, page_timer_cb, ttl, 0);
    snprintf(url, urlcap, "http://127.0.0.1:%d%s", p->port, p->path);
    log_info(SP_TAG, "page on 127.0.0.1:%d (%s) waits for %u s", p->port, p->title, ttl / 1000);
    *out = p;
    return 0;
}

/* ---- the server ----------------------------------------------------------- */

int secret_page_server_new(uv_loop_t *loop, secret_page_server_t **out)
{
    *out = NULL;
    secret_page_server_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return UV_ENOMEM;
    s->loop = loop;
    queue_init(&s->pages);
    queue_init(&s->conns);
    h2o_config_init(&s->conf);
    /* h2o refuses a larger body by closing the connection with the body
     * unread (the browser sees a reset): it reads up to
     * SECRET_PAGE_READ_MAX, and a body past SECRET_PAGE_BODY_MAX gets its
     * 413 from handle_post. */
    s->conf.max_request_entity_size = SECRET_PAGE_READ_MAX;
    s->conf.server_name = h2o_iovec_init(H2O_STRLIT("parley"));
    s->conf.http1.upgrade_to_http2 = 0; /* HTTP/1.1 only */
    h2o_hostconf_t *host =
        h2o_config_register_host(&s->conf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    h2o_handler_t *handler = h2o_create_handler(path, sizeof(*handler) + sizeof(s));
    handler->on_req = on_req;
    *(secret_page_server_t **)(handler + 1) = s;
    h2o_context_init(&s->ctx, loop, &s->conf);
    s->actx.ctx = &s->ctx;
    s->actx.hosts = s->conf.hosts;
    *out = s;
    return 0;
}

static void maybe_closed(secret_page_server_t *s)
{
    if (s->state != SPS_CLOSING || !queue_empty(&s->pages) || s->nconns > 0)
        return;
    s->state = SPS_CLOSED;
    if (s->close_cb)
        s->close_cb(s->close_data);
}

void secret_page_server_close(secret_page_server_t *s, void (*cb)(void *data), void *data)
{
    if (s->state != SPS_ACTIVE)
        return;
    s->state = SPS_CLOSING;
    s->close_cb = cb;
    s->close_data = data;
    /* Pages stay in the list until their handles closed (a later loop
     * turn), whatever the callbacks do: the walk is safe. */
    for (queue_node_t *n = s->pages.next; n != &s->pages; n = n->next) {
        secret_page_t *p = queue_entry(n, secret_page_t, node);
        if (page_open(p))
            page_finish(p, UV_ECANCELED, NULL);
        page_end(p);
    }
    shutdown_conns(s, 0);
    maybe_closed(s);
}

bool secret_page_server_dispose(secret_page_server_t *s)
{
    if (s == NULL || s->state != SPS_CLOSED)
        return false;
    /* h2o_context_request_shutdown is never called here (no HTTP/2; the
     * connections are closed by shutting their sockets down), so no
     * graceful-shutdown timeout is left linked. h2o_context_dispose closes
     * the context's timers and runs the loop once (UV_RUN_NOWAIT) to
     * finish them: hence outside uv_run. */
    h2o_context_dispose(&s->ctx);
    h2o_config_dispose(&s->conf);
    s->state = SPS_DISPOSED;
    return uv_loop_alive(s->loop) != 0;
}

void secret_page_server_free(secret_page_server_t *s)
{
    if (s == NULL)
        return;
    if (s->state != SPS_DISPOSED) {
        /* The loop still refers to the context: leaking beats a crash. */
        log_error(SP_TAG, "secret_page_server_free before dispose: not freed");
        return;
    }
    free(s);
}
