/* http_client: HTTP requests on the daemon's loop with libcurl's multi
 * interface: libcurl's sockets are watched with uv_poll and its timeouts
 * with a uv_timer; parley opens and closes the sockets itself (so a
 * socket is closed only after its poll handle), which is also where the
 * address policy checks the address actually connected to for untrusted
 * requests (and where each redirect's URL is checked again). DNS is asynchronous (the client
 * refuses to start if libcurl lacks it). Connections are capped in total and per host; requests
 * have connect and total timeouts and a size cap; a body can stream to a file through the thread
 * pool, pausing the transfer while the disk catches up. */
#ifndef PARLEY_NET_HTTP_CLIENT_H
#define PARLEY_NET_HTTP_CLIENT_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "net/addr_policy.h"
#include "util/buf.h"
#include "util/queue.h"

#define NET_DEFAULT_MAX_CONNECTIONS 64
#define NET_DEFAULT_MAX_PER_HOST    8
#define NET_DEFAULT_CONNECT_MS      10000
#define NET_DEFAULT_TIMEOUT_MS      60000
#define NET_DEFAULT_MAX_BYTES       (64u << 20)
/* Redirects followed for untrusted requests. Each hop's URL passes the
 * same check as the first (addr_policy_url_ok) before it is fetched, and
 * its address the same check when it connects; the body of a redirect is
 * discarded; extra_headers are not sent to another origin (scheme, host,
 * port). Trusted requests do not follow redirects. */
#define NET_MAX_REDIRECTS 3
/* Largest upload held in memory while it is sent. */
#define NET_UPLOAD_MAX (64u << 20)
/* File downloads: bytes buffered before the transfer pauses. */
#define NET_FILE_BUFFER (1u << 20)

typedef struct net_client_s net_client_t;
typedef struct net_req_s net_req_t;

/* status: 0 (a response arrived: see http_status), UV_EACCES (the address
 * policy refused: see error), UV_E2BIG (larger than max_bytes),
 * UV_ETIMEDOUT, UV_ECANCELED, UV_ECONNREFUSED, UV_EAI_NONAME, UV_EIO. */
typedef void (*net_req_cb)(net_req_t *r, int status);

typedef struct net_config_s {
    int max_connections;
    int max_per_host;
    uint32_t connect_timeout_ms;
    uint32_t timeout_ms;
} net_config_t;

typedef enum {
    NET_REQ_NEW = 0,
    NET_REQ_RUNNING,
    NET_REQ_FLUSHING, /* transfer done, file writes finishing */
    NET_REQ_DONE,
} net_req_state_t;

struct net_req_s {
    /* Set by the caller; borrowed until the callback. */
    const char *url;
    const char *method; /* NULL: GET, or POST when body is set */
    const char *body;   /* request body, or NULL */
    size_t body_len;
    const char *content_type; /* of the body */
    /* More request headers ("Name: value"), NULL-terminated, or NULL. They
     * must not carry anything a log may show: the client never logs them. */
    const char *const *extra_headers;
    /* A response header to keep (e.g. "ratelimit-reset"), or NULL; its
     * value lands in captured ("" when absent). */
    const char *capture_header;
    bool untrusted; /* the URL came from a tool or upstream content */
    /* multipart/form-data instead of body: fields as name, value pairs
     * (NULL-terminated), and a file (at most NET_UPLOAD_MAX bytes) read
     * through the thread pool from upload_fd, from offset 0, before the
     * transfer starts. The file is never named by a path here: the caller
     * opened it (and checked it) once; the descriptor is what is sent.
     * Ownership: when upload is set, the request owns upload_fd from the
     * call of net_request on: it is closed when the request ends, and by
     * net_request itself when that fails. */
    const char *const *form;
    bool upload;
    int upload_fd;
    const char *upload_field; /* e.g. "document" */
    const char *upload_name;  /* the file name sent (NULL: "file") */
    const char *to_file;      /* stream the response body here (else memory) */
    uint64_t max_bytes;       /* 0: NET_DEFAULT_MAX_BYTES */
    /* 0: the client's total timeout applies. Else no total timeout: the
     * transfer fails (UV_ETIMEDOUT) once no byte arrived for stall_ms (at
     * least a second; time paused for the disk does not count). For large
     * downloads whose duration cannot be known. */
    uint32_t stall_ms;
    net_req_cb cb;
    void *data;
    /* Results, valid in the callback. */
    long http_status;
    buf_t body_buf; /* the response body when not to a file */
    uint64_t bytes;
    /* to_file could not be written (disk full, file size limit, ...): the
     * status is the write's error, the partial file is removed. */
    bool file_failed;
    char error[256];
    char captured[64];
    /* Private. */
    net_req_state_t state;
    net_client_t *client;
    CURL *easy;
    struct curl_slist *headers;
    queue_node_t node;
    int fd;
    buf_t pending; /* file: bytes waiting for the writer */
    char *writing; /* file: bytes being written */
    size_t writing_len;
    size_t writing_off; /* of writing, written already (after a short write) */
    uv_fs_t wreq;
    bool paused;
    int result;
    curl_mime *mime;
    uint64_t upload_size, upload_off;
    uv_fs_t rreq;
    char *rchunk; /* the upload, read through the thread pool before sending */
    bool reading;
    int redirects;      /* hops followed (untrusted requests) */
    char *redirect_url; /* the URL of the current hop after a redirect */
};

/* Creates a client. policy (copied) applies to untrusted requests. Returns
 * 0, or a negative code with err (e.g. libcurl without asynchronous DNS). */
int net_client_new(uv_loop_t *loop, const net_config_t *cfg, const addr_policy_t *policy,
                   net_client_t **out, char *err, size_t errcap);

/* Starts r. Returns 0 (the callback runs later, never from inside) or a
 * negative code. */
int net_request(net_client_t *c, net_req_t *r);

/* Stops r; its callback runs with UV_ECANCELED, from inside this call. */
void net_request_cancel(net_req_t *r);

/* Frees what the results hold (after the callback). */
void net_req_release(net_req_t *r);

/* Cancels every request and frees the client once libcurl and the loop
 * let go; cb(data) runs then. */
void net_client_close(net_client_t *c, void (*cb)(void *data), void *data);

#endif
