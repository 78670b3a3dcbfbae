/* http_client_internal: what the files of the HTTP client share (internal
 * to src/net): http_client.c runs libcurl's multi on the loop (sockets,
 * the timer, requests and their redirects, the client's life);
 * http_client_file.c a request's file I/O on libuv's thread pool (the
 * upload read into memory before its transfer starts, and a response body
 * streamed to to_file through a bounded buffer, the transfer paused while
 * the disk is behind).
 *
 * A read or a write in flight on the thread pool is counted in the
 * client's open_handles (the client is not freed under it) and marked on
 * the request (r->reading, r->writing != NULL); a request whose transfer
 * is over (NET_REQ_FLUSHING) ends, with http_client__req_finish, once
 * neither is in flight. */
#ifndef PARLEY_NET_HTTP_CLIENT_INTERNAL_H
#define PARLEY_NET_HTTP_CLIENT_INTERNAL_H

#include "net/http_client.h"

#define NET_MAX_SOCKS 4096

typedef struct sock_s sock_t;

typedef enum {
    NET_ACTIVE = 0,
    NET_CLOSING,
} net_state_t;

struct net_client_s {
    uv_loop_t *loop;
    net_state_t state;
    net_config_t cfg;
    addr_policy_t policy;
    CURLM *multi;
    uv_timer_t timer;
    queue_node_t reqs;
    int open_handles;             /* timer + poll handles + file reads and writes */
    sock_t *socks[NET_MAX_SOCKS]; /* by descriptor, for close_socket */
    void (*close_cb)(void *data);
    void *close_data;
};

/* ---- http_client.c ---------------------------------------------------------- */

/* Ends r: frees what it holds (closing its files, removing a partial
 * to_file after an error) and calls its callback with r->result. */
void http_client__req_finish(net_req_t *r);

/* Frees a closing client once its requests and handles are gone. */
void http_client__maybe_closed(net_client_t *c);

/* The upload is in memory (r->rchunk): builds the form and starts the
 * transfer; on a failure, ends r. */
void http_client__upload_start_transfer(net_req_t *r);

/* ---- http_client_file.c ----------------------------------------------------- */

/* Takes len bytes of a response body streamed to r->to_file: buffered (at
 * most NET_FILE_BUFFER bytes) and written through the thread pool.
 * Returns len, CURL_WRITEFUNC_PAUSE (the disk is behind: the transfer
 * pauses until the buffer drains) or 0 (out of memory: r->result). */
size_t http_client__file_body(net_req_t *r, const char *p, size_t len);

/* Hands the buffered bytes to the thread pool, one write at a time (none
 * while one is in flight, after an error, or without a file). */
void http_client__file_write_next(net_req_t *r);

/* Checks the upload's descriptor (bounded: at most NET_UPLOAD_MAX bytes
 * are held) and starts reading it; once it is read,
 * http_client__upload_start_transfer runs. Returns 0 or a negative code
 * (with r->error where there is more to say). */
int http_client__upload_prepare(net_req_t *r);

#endif
