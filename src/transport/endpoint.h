/* endpoint: one --listen value parsed: unix:PATH, tcp://HOST:PORT,
 * http://HOST:PORT/PATH or https://HOST:PORT/PATH. HOST is an IP literal
 * (IPv6 in brackets) or "localhost"; no name is resolved, so binding never
 * waits on DNS. */
#ifndef PARLEY_TRANSPORT_ENDPOINT_H
#define PARLEY_TRANSPORT_ENDPOINT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define ENDPOINT_PATH_MAX      108 /* sun_path */
#define ENDPOINT_HTTP_PATH_MAX 256

typedef enum {
    ENDPOINT_UNIX = 0,
    ENDPOINT_TCP,
    ENDPOINT_HTTP,
} endpoint_kind_t;

typedef struct endpoint_s {
    endpoint_kind_t kind;
    bool tls;       /* tcp with --tls-cert, or https:// */
    char text[300]; /* as given, for logs */
    char unix_path[ENDPOINT_PATH_MAX];
    struct sockaddr_storage addr; /* tcp and http */
    char host[64];                /* as written, without brackets */
    int port;
    char http_path[ENDPOINT_HTTP_PATH_MAX]; /* "/mcp" */
} endpoint_t;

/* Parses spec. Returns 0, or UV_EINVAL with err saying what is wrong. */
int endpoint_parse(endpoint_t *ep, const char *spec, char *err, size_t errcap);

/* True when a tcp/http endpoint binds only to loopback (127.0.0.0/8 or
 * ::1). */
__attribute__((warn_unused_result)) bool endpoint_is_loopback(const endpoint_t *ep);

#endif
