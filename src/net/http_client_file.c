/* http_client_file: the HTTP client's file I/O on libuv's thread pool
 * (see http_client_internal.h). A response body for to_file is buffered
 * (at most NET_FILE_BUFFER bytes; beyond that the transfer pauses) and
 * written one uv_fs_write at a time; a short write writes the rest, and
 * the first error ends the transfer (the partial file is removed when the
 * request ends). An upload (at most NET_UPLOAD_MAX bytes) is read whole
 * into memory with uv_fs_read from the descriptor the caller opened,
 * before its transfer starts. Nothing here waits on the disk on the
 * loop. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "net/http_client_internal.h"

/* A request's read or write through the thread pool ended (counted
 * among the open handles while it ran): its result; req is cleaned up
 * and no longer counted. */
static ssize_t fs_req_done(uv_fs_t *req)
{
    net_req_t *r = req->data;
    ssize_t n = req->result;
    uv_fs_req_cleanup(req);
    r->client->open_handles--;
    return n;
}

/* ---- downloads: the body is written through the thread pool ------------------ */

static void file_written(uv_fs_t *w);

/* Writes what is left of r->writing through the thread pool. */
static int file_write_issue(net_req_t *r)
{
    uv_buf_t b =
        uv_buf_init(r->writing + r->writing_off, (unsigned)(r->writing_len - r->writing_off));
    r->wreq.data = r;
    int rc = uv_fs_write(r->client->loop, &r->wreq, r->fd, &b, 1, -1, file_written);
    if (rc == 0)
        r->client->open_handles++;
    return rc;
}

static void file_written(uv_fs_t *w)
{
    net_req_t *r = w->data;
    net_client_t *c = r->client; /* r may be gone at the end */
    ssize_t n = fs_req_done(w);
    size_t left = r->writing_len - r->writing_off;
    if (n > 0 && (size_t)n < left && r->result == 0) {
        /* A short write (a disk nearly full, a file size limit): write the
         * rest; if the disk cannot take it, that write says why. */
        r->writing_off += (size_t)n;
        if (file_write_issue(r) == 0)
            return;
        n = UV_EIO;
    } else if (n == 0 && left > 0) {
        n = UV_EIO;
    }
    free(r->writing);
    r->writing = NULL;
    if (n < 0 && r->result == 0) {
        snprintf(r->error, sizeof r->error, "writing %s: %s", r->to_file, uv_strerror((int)n));
        r->result = (int)n;
        r->file_failed = true;
    }
    http_client__file_write_next(r);
    if (r->result != 0 && r->paused && r->state == NET_REQ_RUNNING) {
        /* The file takes no more: let libcurl go on, so that on_body ends
         * the transfer (a transfer paused for the disk never times out). */
        r->paused = false;
        curl_easy_pause(r->easy, CURLPAUSE_CONT);
    } else if (r->paused && r->pending.len < NET_FILE_BUFFER / 2 && r->state == NET_REQ_RUNNING) {
        r->paused = false;
        curl_easy_pause(r->easy, CURLPAUSE_CONT);
    }
    if (r->state == NET_REQ_FLUSHING && r->writing == NULL && !r->reading)
        http_client__req_finish(r);
    http_client__maybe_closed(c);
}

/* Hands the buffered bytes to the thread pool, one write at a time. */
void http_client__file_write_next(net_req_t *r)
{
    if (r->writing != NULL || r->pending.len == 0 || r->fd < 0 || r->result != 0)
        return;
    size_t len;
    r->writing = buf_steal(&r->pending, &len);
    r->writing_len = len;
    r->writing_off = 0;
    if (file_write_issue(r) != 0) {
        free(r->writing);
        r->writing = NULL;
        r->result = UV_EIO;
        r->file_failed = true;
        snprintf(r->error, sizeof r->error, "writing %s: cannot queue the write", r->to_file);
    }
}

size_t http_client__file_body(net_req_t *r, const char *p, size_t len)
{
    if (r->pending.len + len > NET_FILE_BUFFER) {
        /* The disk is behind: libcurl keeps the data and waits. */
        r->paused = true;
        http_client__file_write_next(r);
        return CURL_WRITEFUNC_PAUSE;
    }
    if (buf_append(&r->pending, p, len) != 0) {
        r->result = UV_ENOMEM;
        return 0;
    }
    r->bytes += len;
    if (r->pending.len >= NET_FILE_BUFFER / 4)
        http_client__file_write_next(r);
    return len;
}

/* ---- uploads: the file is read through the thread pool first ----------------- */

static void upload_read_done(uv_fs_t *req);

/* Reads what is left of the upload (from upload_off into rchunk) through
 * the thread pool. Returns 0 (r->reading) or uv_fs_read's error. */
static int upload_read_issue(net_req_t *r)
{
    uv_buf_t b = uv_buf_init(r->rchunk + r->upload_off, (unsigned)(r->upload_size - r->upload_off));
    r->rreq.data = r;
    int rc = uv_fs_read(r->client->loop, &r->rreq, r->upload_fd, &b, 1, (int64_t)r->upload_off,
                        upload_read_done);
    if (rc != 0)
        return rc;
    r->reading = true;
    r->client->open_handles++;
    return 0;
}

static void upload_read_done(uv_fs_t *req)
{
    net_req_t *r = req->data;
    net_client_t *c = r->client; /* r may be gone at the end */
    ssize_t n = fs_req_done(req);
    r->reading = false;
    if (n < 0 && r->result == 0) {
        snprintf(r->error, sizeof r->error, "reading the upload: %s", uv_strerror((int)n));
        r->result = (int)n;
    }
    if (n > 0)
        r->upload_off += (uint64_t)n;
    if (r->result != 0 || n == 0 || r->upload_off >= r->upload_size) {
        if (r->result == 0 && r->upload_off < r->upload_size) {
            snprintf(r->error, sizeof r->error, "the upload shrank while it was read");
            r->result = UV_EIO;
        }
        if (r->result != 0) {
            r->state = NET_REQ_FLUSHING;
            http_client__req_finish(r);
        } else {
            http_client__upload_start_transfer(r);
        }
        http_client__maybe_closed(c);
        return;
    }
    if (upload_read_issue(r) != 0) {
        r->result = UV_EIO;
        r->state = NET_REQ_FLUSHING;
        http_client__req_finish(r);
    }
    http_client__maybe_closed(c);
}

/* Checks the upload's descriptor (bounded: at most NET_UPLOAD_MAX bytes
 * are held) and starts reading it. fstat on a descriptor does not wait on
 * anything; the descriptor is never reopened. Returns 0 or a negative
 * code. */
int http_client__upload_prepare(net_req_t *r)
{
    struct stat st;
    if (r->upload_fd < 0 || fstat(r->upload_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(r->error, sizeof r->error, "the upload is not an open regular file");
        return UV_EINVAL;
    }
    if ((uint64_t)st.st_size > NET_UPLOAD_MAX) {
        snprintf(r->error, sizeof r->error, "the upload is larger than %u bytes", NET_UPLOAD_MAX);
        return UV_E2BIG;
    }
    r->upload_size = (uint64_t)st.st_size;
    r->rchunk = malloc(r->upload_size ? r->upload_size : 1);
    if (r->rchunk == NULL)
        return UV_ENOMEM;
    return upload_read_issue(r); /* upload_off is 0 (request_start) */
}
