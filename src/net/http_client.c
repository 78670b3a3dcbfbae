/* http_client: libcurl multi on libuv (see http_client.h and
 * http_client_internal.h; a request's file I/O is http_client_file.c's).
 *
 * Sockets: opened by open_socket (the address policy is applied there for
 * untrusted requests), watched by a sock_t (uv_poll) that libcurl assigns
 * with curl_multi_assign, and closed by close_socket: if a poll handle
 * watches the descriptor, the descriptor is closed in the handle's close
 * callback, so libuv never polls a closed (or reused) descriptor. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/http_client_internal.h"

struct sock_s {
    uv_poll_t poll;
    curl_socket_t fd;
    net_client_t *client;
    bool close_fd; /* close fd once the handle is closed */
    bool closing;
};

static void check_done(net_client_t *c);

/* ---- sockets --------------------------------------------------------------- */

static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    net_req_t *r = clientp;
    (void)purpose;
    if (r->untrusted) {
        char why[160];
        if (!addr_policy_allows(&r->client->policy, &a->addr, why, sizeof why)) {
            snprintf(r->error, sizeof r->error, "refused to connect to %s", why);
            r->result = UV_EACCES;
            return CURL_SOCKET_BAD;
        }
    }
    int fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    if (fd < 0)
        return CURL_SOCKET_BAD;
    if (fd >= NET_MAX_SOCKS) {
        close(fd);
        return CURL_SOCKET_BAD;
    }
    return fd;
}

static void sock_closed(uv_handle_t *h)
{
    sock_t *s = h->data;
    net_client_t *c = s->client;
    if (s->close_fd)
        close(s->fd);
    if (s->fd >= 0 && s->fd < NET_MAX_SOCKS && c->socks[s->fd] == s)
        c->socks[s->fd] = NULL;
    free(s);
    c->open_handles--;
    http_client__maybe_closed(c);
}

static void sock_release(net_client_t *c, sock_t *s, bool close_fd)
{
    if (s->closing) {
        s->close_fd |= close_fd;
        return;
    }
    s->closing = true;
    s->close_fd = close_fd;
    uv_poll_stop(&s->poll);
    (void)c;
    uv_close((uv_handle_t *)&s->poll, sock_closed);
}

static int close_socket(void *clientp, curl_socket_t fd)
{
    net_client_t *c = clientp;
    sock_t *s = fd >= 0 && fd < NET_MAX_SOCKS ? c->socks[fd] : NULL;
    if (s != NULL) {
        c->socks[fd] = NULL; /* the number may be reused at once */
        sock_release(c, s, true);
    } else {
        close(fd);
    }
    return 0;
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    sock_t *s = h->data;
    net_client_t *c = s->client;
    int flags = 0;
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    int running;
    curl_multi_socket_action(c->multi, s->fd, flags, &running);
    check_done(c);
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
    net_client_t *c = userp;
    sock_t *s = socketp;
    (void)e;
    if (what == CURL_POLL_REMOVE) {
        if (s != NULL) {
            curl_multi_assign(c->multi, fd, NULL);
            /* The descriptor stays libcurl's: close_socket closes it. */
            if (fd >= 0 && fd < NET_MAX_SOCKS && c->socks[fd] == s)
                c->socks[fd] = NULL;
            sock_release(c, s, false);
        }
        return 0;
    }
    if (s == NULL) {
        s = calloc(1, sizeof *s);
        if (s == NULL)
            return -1;
        s->fd = fd;
        s->client = c;
        if (uv_poll_init_socket(c->loop, &s->poll, fd) != 0) {
            free(s);
            return -1;
        }
        s->poll.data = s;
        c->open_handles++;
        curl_multi_assign(c->multi, fd, s);
        if (fd >= 0 && fd < NET_MAX_SOCKS)
            c->socks[fd] = s;
    }
    int ev = (what & CURL_POLL_IN ? UV_READABLE : 0) | (what & CURL_POLL_OUT ? UV_WRITABLE : 0);
    uv_poll_start(&s->poll, ev, on_poll);
    return 0;
}

static void on_timeout(uv_timer_t *t)
{
    net_client_t *c = t->data;
    int running;
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(c);
}

static int on_timer(CURLM *m, long ms, void *userp)
{
    net_client_t *c = userp;
    (void)m;
    if (ms < 0)
        uv_timer_stop(&c->timer);
    else
        uv_timer_start(&c->timer, on_timeout, (uint64_t)ms, 0);
    return 0;
}

/* ---- bodies ------------------------------------------------------------------ */

/* True when r's current response is a redirect that is followed. */
static bool is_redirect(net_req_t *r)
{
    long code = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    return code == 301 || code == 302 || code == 303 || code == 307 || code == 308;
}

static size_t on_body(char *p, size_t size, size_t n, void *userp)
{
    net_req_t *r = userp;
    size_t len = size * n;
    if (r->result != 0)
        return 0; /* the file could not be written: abort */
    if (r->untrusted && is_redirect(r))
        return len; /* a redirect's body: followed, never kept */
    uint64_t cap = r->max_bytes ? r->max_bytes : NET_DEFAULT_MAX_BYTES;
    if (r->bytes + len > cap) {
        snprintf(r->error, sizeof r->error, "response larger than %llu bytes",
                 (unsigned long long)cap);
        r->result = UV_E2BIG;
        return 0; /* aborts the transfer */
    }
    if (r->to_file == NULL) {
        if (buf_append(&r->body_buf, p, len) != 0) {
            r->result = UV_ENOMEM;
            return 0;
        }
        r->bytes += len;
        return len;
    }
    return http_client__file_body(r, p, len);
}

/* ---- uploads: the file is read first (http_client_file.c) --------------------- */

void http_client__upload_start_transfer(net_req_t *r)
{
    net_client_t *c = r->client;
    r->mime = curl_mime_init(r->easy);
    if (r->mime == NULL) {
        r->result = UV_ENOMEM;
        r->state = NET_REQ_FLUSHING;
        http_client__req_finish(r);
        return;
    }
    for (const char *const *f = r->form; f && f[0] && f[1]; f += 2) {
        curl_mimepart *p = curl_mime_addpart(r->mime);
        curl_mime_name(p, f[0]);
        curl_mime_data(p, f[1], CURL_ZERO_TERMINATED);
    }
    curl_mimepart *p = curl_mime_addpart(r->mime);
    curl_mime_name(p, r->upload_field ? r->upload_field : "file");
    curl_mime_filename(p, r->upload_name ? r->upload_name : "file");
    curl_mime_data(p, r->rchunk, (size_t)r->upload_size);
    curl_easy_setopt(r->easy, CURLOPT_MIMEPOST, r->mime);
    if (curl_multi_add_handle(c->multi, r->easy) != CURLM_OK) {
        r->result = UV_EIO;
        r->state = NET_REQ_FLUSHING;
        http_client__req_finish(r);
    }
}

/* ---- requests ------------------------------------------------------------------ */

static int status_of(CURLcode rc)
{
    switch (rc) {
    case CURLE_OK:
        return 0;
    case CURLE_OPERATION_TIMEDOUT:
        return UV_ETIMEDOUT;
    case CURLE_COULDNT_RESOLVE_HOST:
        return UV_EAI_NONAME;
    case CURLE_COULDNT_CONNECT:
        return UV_ECONNREFUSED;
    case CURLE_FILESIZE_EXCEEDED:
        return UV_E2BIG;
    default:
        return UV_EIO;
    }
}

/* Frees the request headers, wiping them (they may carry a token). */
static void headers_free(net_req_t *r)
{
    for (struct curl_slist *l = r->headers; l; l = l->next)
        explicit_bzero(l->data, strlen(l->data));
    curl_slist_free_all(r->headers);
    r->headers = NULL;
}

void http_client__req_finish(net_req_t *r)
{
    net_client_t *c = r->client;
    if (r->fd >= 0) {
        close(r->fd); /* bounded: the data was written by the thread pool */
        r->fd = -1;
        if (r->result != 0 && r->to_file)
            unlink(r->to_file);
    }
    r->state = NET_REQ_DONE;
    queue_remove(&r->node);
    curl_easy_cleanup(r->easy);
    r->easy = NULL;
    if (r->mime) {
        curl_mime_free(r->mime);
        r->mime = NULL;
    }
    if (r->upload_fd >= 0) {
        close(r->upload_fd);
        r->upload_fd = -1;
    }
    free(r->rchunk);
    r->rchunk = NULL;
    free(r->redirect_url);
    r->redirect_url = NULL;
    headers_free(r);
    buf_free(&r->pending);
    r->cb(r, r->result);
    http_client__maybe_closed(c);
}

/* The origin (scheme://host:port) of url in out, or "" when it has none. */
static void origin_of(const char *url, char *out, size_t cap)
{
    out[0] = '\0';
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL;
    if (u != NULL && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK) {
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
        curl_url_get(u, CURLUPART_HOST, &host, 0);
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
        if (scheme && host && port)
            snprintf(out, cap, "%s://%s:%s", scheme, host, port);
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
}

/* An untrusted request got a redirect to follow: checks the next URL as
 * the first was checked (addr_policy_url_ok; its address is checked when it
 * connects) and starts the next hop on the same handle. Returns true when
 * the request goes on, false (with r->result and r->error) when it ends. */
static bool redirect_follow(net_req_t *r)
{
    net_client_t *c = r->client;
    char *next = NULL;
    curl_easy_getinfo(r->easy, CURLINFO_REDIRECT_URL, &next);
    if (next == NULL)
        return false; /* no Location: the answer is the 3xx itself */
    if (r->redirects >= NET_MAX_REDIRECTS) {
        snprintf(r->error, sizeof r->error, "more than %d redirects", NET_MAX_REDIRECTS);
        r->result = UV_EIO;
        return false;
    }
    char why[200];
    if (!addr_policy_url_ok(&c->policy, next, why, sizeof why)) {
        snprintf(r->error, sizeof r->error, "redirect refused: %s", why);
        r->result = UV_EACCES;
        return false;
    }
    char *url = strdup(next);
    if (url == NULL) {
        r->result = UV_ENOMEM;
        return false;
    }
    char from[300], to[300];
    origin_of(r->redirect_url ? r->redirect_url : r->url, from, sizeof from);
    origin_of(url, to, sizeof to);
    free(r->redirect_url);
    r->redirect_url = url;
    r->redirects++;
    if (strcmp(from, to) != 0 || from[0] == '\0') {
        /* Another origin: the caller's headers (a token, say) stay behind. */
        curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, NULL);
        headers_free(r);
    }
    long code = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code == 303 || ((code == 301 || code == 302) && (r->body || r->method))) {
        /* As browsers and libcurl do: the next hop is a GET. */
        curl_easy_setopt(r->easy, CURLOPT_CUSTOMREQUEST, NULL);
        curl_easy_setopt(r->easy, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(r->easy, CURLOPT_URL, url);
    if (curl_multi_add_handle(c->multi, r->easy) != CURLM_OK) {
        snprintf(r->error, sizeof r->error, "cannot follow the redirect");
        r->result = UV_EIO;
        return false;
    }
    return true;
}

/* A transfer ended: follow a redirect, or flush the file, then call back. */
static void transfer_done(net_req_t *r, CURLcode rc)
{
    net_client_t *c = r->client;
    curl_multi_remove_handle(c->multi, r->easy);
    if (rc == CURLE_OK && r->result == 0 && r->untrusted && c->state == NET_ACTIVE &&
        is_redirect(r)) {
        if (redirect_follow(r))
            return;
    }
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->http_status);
    struct curl_header *h;
    r->captured[0] = '\0';
    if (r->capture_header &&
        curl_easy_header(r->easy, r->capture_header, 0, CURLH_HEADER, -1, &h) == CURLHE_OK)
        snprintf(r->captured, sizeof r->captured, "%s", h->value);
    if (r->result == 0 && rc != CURLE_OK) {
        r->result = status_of(rc);
        if (r->error[0] == '\0')
            snprintf(r->error, sizeof r->error, "%s", curl_easy_strerror(rc));
    }
    r->state = NET_REQ_FLUSHING;
    if (r->result == 0)
        http_client__file_write_next(r);
    if (r->writing == NULL && !r->reading)
        http_client__req_finish(r);
}

static void check_done(net_client_t *c)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left)) != NULL) {
        if (m->msg != CURLMSG_DONE)
            continue;
        net_req_t *r = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        transfer_done(r, m->data.result);
    }
}

static int request_start(net_client_t *c, net_req_t *r)
{
    if (c->state != NET_ACTIVE)
        return UV_ECANCELED;
    r->client = c;
    r->http_status = 0;
    r->bytes = 0;
    r->error[0] = '\0';
    r->result = 0;
    r->file_failed = false;
    r->fd = -1;
    r->paused = false;
    r->writing = NULL;
    r->mime = NULL;
    if (!r->upload)
        r->upload_fd = -1;
    r->rchunk = NULL;
    r->redirects = 0;
    r->redirect_url = NULL;
    r->reading = false;
    r->upload_off = 0;
    buf_init(&r->body_buf, r->max_bytes ? r->max_bytes : NET_DEFAULT_MAX_BYTES);
    buf_init(&r->pending, NET_FILE_BUFFER + CURL_MAX_WRITE_SIZE);
    if (r->untrusted && !addr_policy_url_ok(&c->policy, r->url, r->error, sizeof r->error))
        return UV_EACCES;
    if (r->to_file) {
        r->fd = open(r->to_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (r->fd < 0) {
            int e = errno;
            snprintf(r->error, sizeof r->error, "%s: %s", r->to_file, strerror(e));
            r->file_failed = true;
            return -e;
        }
    }
    CURL *e = curl_easy_init();
    if (e == NULL) {
        if (r->fd >= 0)
            close(r->fd);
        return UV_ENOMEM;
    }
    r->easy = e;
    curl_easy_setopt(e, CURLOPT_URL, r->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, r);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, r);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, close_socket);
    curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, c);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)c->cfg.connect_timeout_ms);
    if (r->stall_ms > 0) {
        /* Less than a byte a second over stall_ms: stalled. */
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 0L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                         (long)(r->stall_ms < 1000 ? 1 : r->stall_ms / 1000));
    } else {
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)c->cfg.timeout_ms);
    }
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE,
                     (curl_off_t)(r->max_bytes ? r->max_bytes : NET_DEFAULT_MAX_BYTES));
    curl_easy_setopt(e, CURLOPT_USERAGENT, "parley/" PARLEY_VERSION);
    if (r->untrusted) {
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, c->policy.allow_http ? "http,https" : "https");
        /* Redirects are followed by redirect_follow, which checks each
         * hop's URL as the first was (libcurl's own following would not). */
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    } else {
        curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    }
    r->headers = NULL;
    if (r->content_type) {
        char h[160];
        snprintf(h, sizeof h, "Content-Type: %s", r->content_type);
        if ((r->headers = curl_slist_append(NULL, h)) == NULL) {
            curl_easy_cleanup(e);
            r->easy = NULL;
            if (r->fd >= 0)
                close(r->fd);
            return UV_ENOMEM;
        }
    }
    for (const char *const *h = r->extra_headers; h && *h; h++) {
        struct curl_slist *l = curl_slist_append(r->headers, *h);
        if (l == NULL) {
            headers_free(r);
            curl_easy_cleanup(e);
            r->easy = NULL;
            if (r->fd >= 0)
                close(r->fd);
            return UV_ENOMEM;
        }
        r->headers = l;
    }
    if (r->headers)
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
    if (r->upload) {
        int urc = http_client__upload_prepare(r);
        if (urc != 0) {
            curl_easy_cleanup(e);
            r->easy = NULL;
            if (r->mime)
                curl_mime_free(r->mime);
            r->mime = NULL;
            if (r->upload_fd >= 0)
                close(r->upload_fd);
            r->upload_fd = -1;
            free(r->rchunk);
            r->rchunk = NULL;
            headers_free(r);
            if (r->fd >= 0)
                close(r->fd);
            return urc;
        }
    } else if (r->body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
    }
    if (r->method)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
    r->state = NET_REQ_RUNNING;
    queue_push_tail(&c->reqs, &r->node);
    if (r->upload)
        return 0; /* the handle is added once the file is read */
    if (curl_multi_add_handle(c->multi, e) != CURLM_OK) {
        queue_remove(&r->node);
        curl_easy_cleanup(e);
        r->easy = NULL;
        headers_free(r);
        if (r->fd >= 0)
            close(r->fd);
        return UV_EIO;
    }
    return 0;
}

int net_request(net_client_t *c, net_req_t *r)
{
    int rc = request_start(c, r);
    if (rc != 0 && r->upload && r->upload_fd >= 0) {
        close(r->upload_fd); /* the request owned it */
        r->upload_fd = -1;
    }
    return rc;
}

void net_request_cancel(net_req_t *r)
{
    if (r->state != NET_REQ_RUNNING)
        return;
    r->result = UV_ECANCELED;
    snprintf(r->error, sizeof r->error, "cancelled");
    if (r->reading && r->mime == NULL) {
        /* Still reading the upload: it finishes when the read returns. */
        r->state = NET_REQ_FLUSHING;
        return;
    }
    transfer_done(r, CURLE_ABORTED_BY_CALLBACK);
}

void net_req_release(net_req_t *r)
{
    buf_free(&r->body_buf);
    buf_free(&r->pending);
}

/* ---- client ---------------------------------------------------------------------- */

int net_client_new(uv_loop_t *loop, const net_config_t *cfg, const addr_policy_t *policy,
                   net_client_t **out, char *err, size_t errcap)
{
    static bool global_done;
    if (!global_done) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            snprintf(err, errcap, "libcurl failed to initialise");
            return UV_EIO;
        }
        global_done = true;
    }
    const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    if (!(v->features & CURL_VERSION_ASYNCHDNS)) {
        snprintf(err, errcap,
                 "libcurl %s resolves names synchronously, which would block the event loop; "
                 "install a libcurl built with the threaded or c-ares resolver",
                 v->version);
        return UV_ENOTSUP;
    }
    net_client_t *c = calloc(1, sizeof *c);
    if (c == NULL || (c->multi = curl_multi_init()) == NULL) {
        free(c);
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    c->loop = loop;
    c->cfg = *cfg;
    if (c->cfg.max_connections <= 0)
        c->cfg.max_connections = NET_DEFAULT_MAX_CONNECTIONS;
    if (c->cfg.max_per_host <= 0)
        c->cfg.max_per_host = NET_DEFAULT_MAX_PER_HOST;
    if (c->cfg.connect_timeout_ms == 0)
        c->cfg.connect_timeout_ms = NET_DEFAULT_CONNECT_MS;
    if (c->cfg.timeout_ms == 0)
        c->cfg.timeout_ms = NET_DEFAULT_TIMEOUT_MS;
    if (policy)
        c->policy = *policy;
    queue_init(&c->reqs);
    uv_timer_init(loop, &c->timer);
    c->timer.data = c;
    c->open_handles = 1;
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)c->cfg.max_connections);
    curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)c->cfg.max_per_host);
    *out = c;
    return 0;
}

static void timer_closed(uv_handle_t *h)
{
    net_client_t *c = h->data;
    c->open_handles--;
    http_client__maybe_closed(c);
}

void http_client__maybe_closed(net_client_t *c)
{
    if (c->state != NET_CLOSING || !queue_empty(&c->reqs))
        return;
    if (c->multi != NULL) {
        /* Closes the cached connections (through close_socket). */
        curl_multi_cleanup(c->multi);
        c->multi = NULL;
        uv_close((uv_handle_t *)&c->timer, timer_closed);
        return;
    }
    if (c->open_handles > 0)
        return;
    void (*cb)(void *) = c->close_cb;
    void *data = c->close_data;
    c->close_cb = NULL;
    free(c);
    if (cb)
        cb(data);
}

void net_client_close(net_client_t *c, void (*cb)(void *data), void *data)
{
    if (c->state == NET_CLOSING)
        return;
    c->state = NET_CLOSING;
    c->close_cb = cb;
    c->close_data = data;
    for (queue_node_t *n = c->reqs.next; n != &c->reqs;) {
        queue_node_t *next = n->next;
        net_request_cancel(queue_entry(n, net_req_t, node));
        n = next;
    }
    http_client__maybe_closed(c);
}
