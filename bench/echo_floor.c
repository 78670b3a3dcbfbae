/* echo_floor: the Unix-socket floor of bench/run. A server that does the
 * least a server of newline-delimited requests on a Unix stream socket can
 * do: one libuv loop (as parleyd), and for every newline it reads, it
 * writes one fixed answer line, the bytes parleyd answers the trivial tool
 * call with (captured by the harness). It parses nothing and keeps no
 * state, so its CPU time per request is what one request/answer on a Unix
 * stream socket costs on this kernel with libuv; parleyd's trivial call is
 * read as a ratio to it. The load generator does not check ids, so the
 * answer's id is the captured one on every line.
 *
 *   parley-echo-floor SOCKET_PATH ANSWER_FILE
 *
 * ANSWER_FILE: the answer line (a trailing newline is added when missing).
 * The socket is created at start (removed first if it exists); "ready" on
 * stdout once it listens. Runs until killed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

/* ECHO_READ_CHUNK: the read buffer of a connection; requests are small,
 * and only their newlines are counted, so a request may span reads.
 * ECHO_BATCH: answers written in one call at most (one per request read
 * in one go: a client that pipelines gets them in one write). */
#define ECHO_READ_CHUNK 65536
#define ECHO_BATCH      64
#define ECHO_BACKLOG    1024

static uv_loop_t *echo_loop;
static uv_buf_t echo_answer;              /* the fixed line, newline included */
static uv_buf_t echo_answers[ECHO_BATCH]; /* echo_answer, ECHO_BATCH times */

typedef struct {
    uv_pipe_t pipe;
    char buf[ECHO_READ_CHUNK];
} echo_conn_t;

typedef struct {
    uv_write_t req;
    uv_buf_t bufs[ECHO_BATCH];
} echo_write_t;

static void echo_closed(uv_handle_t *h)
{
    free(h->data);
}

static void echo_alloc(uv_handle_t *h, size_t size, uv_buf_t *b)
{
    echo_conn_t *c = h->data;
    (void)size;
    *b = uv_buf_init(c->buf, sizeof c->buf);
}

static void echo_written(uv_write_t *w, int status)
{
    (void)status; /* a failed write: the read side sees the connection end */
    free(w);
}

/* Writes n answers: as much as the socket takes at once, the rest queued. */
static void echo_send(echo_conn_t *c, unsigned n)
{
    int done = uv_try_write((uv_stream_t *)&c->pipe, echo_answers, n);
    size_t skip = done > 0 ? (size_t)done : 0;
    if (skip == (size_t)n * echo_answer.len)
        return;
    echo_write_t *w = malloc(sizeof *w);
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        if (skip >= echo_answer.len) {
            skip -= echo_answer.len;
            continue;
        }
        w->bufs[k++] = uv_buf_init(echo_answer.base + skip, (unsigned)(echo_answer.len - skip));
        skip = 0;
    }
    if (uv_write(&w->req, (uv_stream_t *)&c->pipe, w->bufs, k, echo_written) != 0)
        free(w);
}

static void echo_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    echo_conn_t *c = s->data;
    if (n < 0) {
        uv_close((uv_handle_t *)s, echo_closed);
        return;
    }
    unsigned lines = 0;
    for (const char *p = b->base, *end = b->base + n; (p = memchr(p, '\n', (size_t)(end - p)));
         p++) {
        if (++lines == ECHO_BATCH) {
            echo_send(c, lines);
            lines = 0;
        }
    }
    if (lines > 0)
        echo_send(c, lines);
}

static void echo_accept(uv_stream_t *server, int status)
{
    if (status != 0)
        return;
    echo_conn_t *c = malloc(sizeof *c);
    uv_pipe_init(echo_loop, &c->pipe, 0);
    c->pipe.data = c;
    if (uv_accept(server, (uv_stream_t *)&c->pipe) != 0) {
        uv_close((uv_handle_t *)&c->pipe, echo_closed);
        return;
    }
    uv_read_start((uv_stream_t *)&c->pipe, echo_alloc, echo_read);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: parley-echo-floor SOCKET_PATH ANSWER_FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (f == NULL) {
        perror(argv[2]);
        return 2;
    }
    static char answer[ECHO_READ_CHUNK];
    size_t len = fread(answer, 1, sizeof answer - 1, f);
    fclose(f);
    if (len == 0) {
        fprintf(stderr, "%s: empty\n", argv[2]);
        return 2;
    }
    if (answer[len - 1] != '\n')
        answer[len++] = '\n';
    echo_answer = uv_buf_init(answer, (unsigned)len);
    for (unsigned i = 0; i < ECHO_BATCH; i++)
        echo_answers[i] = echo_answer;
    echo_loop = uv_default_loop();
    uv_pipe_t server;
    uv_pipe_init(echo_loop, &server, 0);
    remove(argv[1]);
    int rc = uv_pipe_bind(&server, argv[1]);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&server, ECHO_BACKLOG, echo_accept);
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", argv[1], uv_strerror(rc));
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    return uv_run(echo_loop, UV_RUN_DEFAULT);
}
