/* secret_page: one-time web pages on loopback through which the user types
 * a secret (e.g. a Bluesky app password) into a browser, for MCP URL-mode
 * elicitation (revision 2025-11-25: a secret is never asked for through
 * form-mode elicitation; the server hands the client a URL to open).
 *
 * A secret_page_server_t owns one h2o context on the daemon's loop; each
 * page is a listener of its own on 127.0.0.1 (never any other address)
 * serving a single unguessable path, http://127.0.0.1:PORT/p/<43 chars of
 * base64url: 256 random bits>:
 *
 *   GET    an HTML form (one password field) with the page's title, text
 *          and optional link; strict CSP, no-store, frames denied,
 *          Referrer-Policy same-origin (no-referrer would make browsers
 *          send "Origin: null" with the form's POST).
 *   POST   application/x-www-form-urlencoded, at most
 *          SECRET_PAGE_BODY_MAX bytes (else 413): a non-empty "secret"
 *          is answered "Received" and handed to the callback, once; an
 *          empty one re-shows the form (400) and the page stays open.
 *
 * A verify page (options.verify: its owner checks the secret, e.g. by
 * logging in with it) answers a secret "Checking" instead, a page that
 * GETs itself again every second (a meta refresh; no script), and hands
 * the secret to the callback; the owner tells the outcome by
 * secret_page_result: accepted (done), GET shows the owner's message and
 * POST answers 410 (the linger below); refused, GET shows the form again
 * with the owner's message above the field, and the next secret runs the
 * callback again. While a secret is checked a second POST answers 409
 * (not taken).
 *
 * A request with a second Host, Origin or Content-Type header, or framed
 * both by Content-Length and Transfer-Encoding, is refused (400, the
 * connection closed). Every request must name Host 127.0.0.1:PORT or
 * localhost:PORT (403 otherwise: DNS rebinding); a POST that carries an
 * Origin other than
 * http://127.0.0.1:PORT or http://localhost:PORT is refused (403: CSRF).
 * Other paths: 404; other methods: 405; wrong Content-Type: 415. After the
 * secret arrived, the page answers 410 for SECRET_PAGE_LINGER_MS (within
 * its time to live) so that a second submit gets a clear answer, then its
 * listener closes. A page not used within its time to live expires.
 *
 * The secret is never logged; every copy this module holds (the decoded
 * value and the request body in h2o's input buffer) is wiped after the
 * callback. */
#ifndef PARLEY_TRANSPORT_SECRET_PAGE_H
#define PARLEY_TRANSPORT_SECRET_PAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define SECRET_PAGE_TTL_MS    (10u * 60 * 1000) /* default time to live */
#define SECRET_PAGE_LINGER_MS (60u * 1000)      /* answering 410 after use */
#define SECRET_PAGE_MAX       16                /* pages waiting for a secret, at once */
#define SECRET_PAGE_CONNS_MAX                                                                      \
    64                            /* browser connections, all pages; past it the oldest is dropped \
                                   */
#define SECRET_PAGE_BODY_MAX 4096 /* POST body (413 past it) */
#define SECRET_PAGE_READ_MAX                                                                       \
    (64u * 1024)                   /* a body read to answer 413; larger: connection closed         \
                                    */
#define SECRET_PAGE_TITLE_MAX 200  /* bytes of title, link text */
#define SECRET_PAGE_TEXT_MAX  4000 /* bytes of text */
#define SECRET_PAGE_LINK_MAX  2000 /* bytes of link_url */
#define SECRET_PAGE_URL_MAX   80   /* the page's URL, with its NUL */

typedef struct secret_page_server_s secret_page_server_t;
typedef struct secret_page_s secret_page_t;

/* Runs once per page: status 0 with the secret (NUL-terminated, valid
 * during the call only, wiped after it; never NULL or empty), or
 * UV_ETIMEDOUT (expired), or UV_ECANCELED (secret_page_cancel, server
 * closing) with secret NULL. The page handle is dead once the callback
 * returns (do not cancel it then). The callback may open and cancel pages
 * and close the server.
 *
 * On a verify page it runs once per submitted secret (status 0) until
 * secret_page_result(p, true, ...), and then never again; or until expiry
 * or cancel (UV_ETIMEDOUT, UV_ECANCELED: the last call, also while a
 * secret is being checked). After a status 0 call the handle stays alive
 * until secret_page_result(p, true, ...) returns or that last call
 * returned; the owner must answer each secret with secret_page_result
 * (else the page says "Checking" until it expires). */
typedef void (*secret_page_cb)(secret_page_t *p, int status, const char *secret, void *data);

typedef struct secret_page_options_s {
    int port;              /* 0: any free port */
    uint32_t ttl_ms;       /* 0: SECRET_PAGE_TTL_MS */
    const char *title;     /* e.g. "Bluesky app password"; required */
    const char *text;      /* the explanation shown above the field; required; newlines kept */
    const char *link_url;  /* optional: http:// or https:// only */
    const char *link_text; /* optional: the link's text (default: link_url) */
    bool verify;           /* the owner checks each secret: see secret_page_result */
} secret_page_options_t;

/* A server with its h2o context on loop. From here until
 * secret_page_server_dispose, h2o's handles keep the loop alive: uv_run
 * (UV_RUN_DEFAULT) does not return on its own, so stop the loop (uv_stop)
 * once secret_page_server_close's callback ran. Returns 0 or UV_ENOMEM. */
int secret_page_server_new(uv_loop_t *loop, secret_page_server_t **out);

/* Opens a page: binds 127.0.0.1:port and writes its URL
 * ("http://127.0.0.1:PORT/p/...", at most SECRET_PAGE_URL_MAX bytes with
 * the NUL) into url. The options' strings are copied. Returns 0 with *out
 * (cb runs later, exactly once), or without a callback ever: UV_EINVAL
 * (port outside 0..65535, a missing title, text or cb, a string too long,
 * a link that is not http(s), urlcap below SECRET_PAGE_URL_MAX),
 * UV_EADDRINUSE, another bind error, UV_EBUSY (SECRET_PAGE_MAX pages wait
 * already), UV_ECANCELED (the server is closing), UV_ENOMEM. */
int secret_page_open(secret_page_server_t *s, const secret_page_options_t *o, secret_page_cb cb,
                     void *data, char *url, size_t urlcap, secret_page_t **out);

/* The port p listens on. */
int secret_page_port(const secret_page_t *p);

/* Withdraws a page that still waits (or, verify, checks a secret): its
 * callback runs with UV_ECANCELED from inside this call, then its listener
 * and connections close. Only before the page's last callback ran (a no-op
 * from inside it). */
void secret_page_cancel(secret_page_t *p);

/* A verify page's owner tells the outcome of the secret it was handed
 * (only while that secret is checked: otherwise, and on other pages, a
 * no-op). done: the page's work is over (the secret worked, or nothing
 * more can come of another try): GET shows message (plain text, cut to
 * SECRET_PAGE_TEXT_MAX bytes; NULL: a generic "Done") for the linger, POST
 * answers 410, no callback runs again and p is dead once this returns.
 * Not done: the secret was refused: the form is shown again with message
 * above the field (NULL: "That was not accepted. Try again.") and the next
 * secret runs the callback again. May be called from inside the
 * callback. */
void secret_page_result(secret_page_t *p, bool done, const char *message);

/* Cancels every waiting page (their callbacks run with UV_ECANCELED from
 * inside this call), refuses new pages, closes every listener and
 * connection; cb(data) runs once all are closed (from inside this call
 * when nothing was open). A second call does nothing. */
void secret_page_server_close(secret_page_server_t *s, void (*cb)(void *data), void *data);

/* After the close callback, outside uv_run (h2o runs the loop itself for
 * a moment): releases the h2o context. Returns true when the loop must
 * run once more (uv_run UV_RUN_DEFAULT) before secret_page_server_free,
 * to finish closes still pending on it. */
__attribute__((warn_unused_result)) bool secret_page_server_dispose(secret_page_server_t *s);

/* Frees s (NULL is fine): after secret_page_server_dispose and the loop
 * run it asked for. */
void secret_page_server_free(secret_page_server_t *s);

#endif
