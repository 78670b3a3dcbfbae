/* fuzz_http_client: the raw HTTP/1.1 client the Streamable HTTP fuzz
 * targets share (fuzz_http, fuzz_http_modern; header only, static
 * functions): a non-blocking connection to the server under test, each
 * from a loopback address of its own, and a pump that runs the server's
 * loop while it writes a request and reads the answer. The server runs on
 * the same thread: every wait also turns its loop. */
#ifndef PARLEY_FUZZ_HTTP_CLIENT_H
#define PARLEY_FUZZ_HTTP_CLIENT_H

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

typedef struct {
    int fd;
    char *resp; /* the answer kept (the caller's buffer) */
    size_t len;
    bool eof;
} fuzz_client_t;

static inline uint64_t fuzz_now_ms(void)
{
    return uv_hrtime() / 1000000;
}

/* Waits (at most 1 ms) until the client's socket or the loop has
 * something to do. */
static inline void fuzz_wait_io(uv_loop_t *loop, int fd)
{
    int t = uv_backend_timeout(loop);
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                          {.fd = uv_backend_fd(loop), .events = POLLIN}};
    poll(p, 2, t == 0 ? 0 : 1);
}

/* True when the server has nothing to do now: no event ready for its
 * loop, no request in flight, and no timer due within idle_ms. */
static inline bool fuzz_server_idle(uv_loop_t *loop, int fd, int idle_ms)
{
    int t = uv_backend_timeout(loop);
    if (t >= 0 && t <= idle_ms)
        return false;
    if (loop->active_reqs.count != 0)
        return false;
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                          {.fd = uv_backend_fd(loop), .events = POLLIN}};
    return poll(p, 2, 0) == 0;
}

/* Connects c to 127.0.0.1:port, its answer kept in buf (the caller's: a
 * static buffer, since a megabyte allocated per connection costs more
 * than the server's work under ASan). Non-blocking (libFuzzer's timer
 * signals would interrupt a blocking connect), and each connection from
 * another loopback address: the half-closed ones end in TIME_WAIT on the
 * client's side, and hundreds a second would use up one address's
 * ephemeral ports. Returns NULL, or what went wrong. */
static inline const char *fuzz_client_open(uv_loop_t *loop, fuzz_client_t *c, char *buf, int port,
                                           uint64_t limit_ms)
{
    memset(c, 0, sizeof *c);
    c->resp = buf;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static uint32_t next;
    struct sockaddr_in from = {.sin_family = AF_INET};
    from.sin_addr.s_addr = htonl(0x7F000002u + next++ % 0xFFFFF0u);
    if (buf == NULL || c->fd < 0 || bind(c->fd, (struct sockaddr *)&from, sizeof from) != 0 ||
        (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS))
        return strerror(errno);
    for (uint64_t start = fuzz_now_ms();;) {
        uv_run(loop, UV_RUN_NOWAIT);
        struct pollfd p = {.fd = c->fd, .events = POLLOUT};
        if (poll(&p, 1, 1) == 1)
            break;
        if (fuzz_now_ms() - start > limit_ms)
            return "connect timed out";
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
        return strerror(err ? err : errno);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return NULL;
}

/* An abortive close (RST): no TIME_WAIT on the server's side. */
static inline void fuzz_client_close(fuzz_client_t *c)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(c->fd);
    c->resp = NULL;
}

/* Runs the loop while writing out[0..n) to c (then half-closing when
 * shut) and reading its answer (at most resp_max bytes kept, the rest read
 * and dropped), until the server closed c or, when quiet_ms > 0,
 * everything was sent and the server is idle (fuzz_server_idle with
 * idle_ms) or nothing arrived for quiet_ms. Returns false when limit_ms
 * passed first. */
static inline bool fuzz_client_pump(uv_loop_t *loop, fuzz_client_t *c, const char *out, size_t n,
                                    bool shut, uint64_t quiet_ms, uint64_t limit_ms,
                                    size_t resp_max, int idle_ms)
{
    size_t sent = 0;
    bool shut_done = false;
    uint64_t start = fuzz_now_ms(), last = start;
    while (!c->eof) {
        uv_run(loop, UV_RUN_NOWAIT);
        bool progress = false;
        if (sent < n) {
            ssize_t w = send(c->fd, out + sent, n - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (w > 0) {
                sent += (size_t)w;
                progress = true;
            } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                sent = n; /* the server closed: read what it said */
            }
        }
        if (sent == n && shut && !shut_done) {
            shutdown(c->fd, SHUT_WR);
            shut_done = true;
        }
        char tmp[16384];
        ssize_t r = recv(c->fd, tmp, sizeof tmp, MSG_DONTWAIT);
        if (r > 0) {
            size_t k = (size_t)r < resp_max - c->len ? (size_t)r : resp_max - c->len;
            memcpy(c->resp + c->len, tmp, k);
            c->len += k;
            progress = true;
        } else if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            c->eof = true;
            break;
        }
        uint64_t t = fuzz_now_ms();
        if (progress) {
            last = t;
            continue;
        }
        if (quiet_ms > 0 && sent == n &&
            (fuzz_server_idle(loop, c->fd, idle_ms) || t - last >= quiet_ms))
            return true;
        if (t - start >= limit_ms)
            return false;
        fuzz_wait_io(loop, c->fd);
    }
    return true;
}

#endif
