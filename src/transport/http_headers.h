/* http_headers: the checks of a request's head that every HTTP server of
 * parley makes before any part reads a header's value (the MCP endpoint
 * and the one-time secret pages, both on libh2o 2.2.5).
 *
 * Framing (Content-Length, Transfer-Encoding) and Host are consumed by
 * libh2o while it parses the head and never reach a handler: with both
 * Content-Length and Transfer-Encoding it lets the latter win, with two
 * Content-Lengths the first, with two Hosts the last, and a body framed
 * two ways can hide a second request (request smuggling). So parley
 * checks them where the head is parsed: this module defines
 * phr_parse_request, the parser libh2o calls through its PLT, calls
 * libh2o's own (dlsym RTLD_NEXT) and refuses a parsed head that carries
 * Content-Length with Transfer-Encoding, either of them twice, a
 * Content-Length that is not digits, or two Hosts; libh2o answers a head
 * it cannot parse with 400 and closes the connection, before reading any
 * body (RFC 9112 6.3: "the server MUST close the connection after
 * responding to such a request"). http_headers_guarded says whether the
 * running process calls this check (it does when libh2o is a shared
 * library, as Debian ships it).
 *
 * The other headers a check reads reach the handler, and a second one of
 * them is refused there (http_headers_single_ok). */
#ifndef PARLEY_TRANSPORT_HTTP_HEADERS_H
#define PARLEY_TRANSPORT_HTTP_HEADERS_H

#include <stdbool.h>
#include <stddef.h>

#include <h2o.h>

/* True when req carries each of Origin, Authorization, Mcp-Session-Id,
 * Content-Type, MCP-Protocol-Version and Last-Event-ID at most once;
 * otherwise false with why ("Bad Request: more than one origin header").
 * A server that refuses a request for this closes the connection too. */
__attribute__((warn_unused_result)) bool http_headers_single_ok(h2o_req_t *req, char *why,
                                                                size_t cap);

/* True when libh2o's head parser runs through the framing check above. */
__attribute__((warn_unused_result)) bool http_headers_guarded(void);

#endif
