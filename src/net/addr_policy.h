/* addr_policy: which network addresses and URLs parley may fetch when the
 * URL comes from a tool argument or from upstream content (DESIGN.md,
 * "Security"): http(s) only (https unless allowed), no credentials in the
 * URL, and never an address that is loopback, private, link-local,
 * reserved, multicast, CGNAT, unique-local or IPv4-mapped — checked on the
 * address actually connected to, so DNS rebinding cannot slip through. An
 * explicit allow-list of addresses exists for tests. */
#ifndef PARLEY_NET_ADDR_POLICY_H
#define PARLEY_NET_ADDR_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define ADDR_POLICY_ALLOW_MAX 16

typedef struct addr_policy_s {
    bool allow_http; /* plain http besides https */
    /* Addresses allowed although they are in a refused range ("127.0.0.1",
     * "::1"), for tests. */
    char allow[ADDR_POLICY_ALLOW_MAX][64];
    int nallow;
} addr_policy_t;

/* True when sa may be connected to; otherwise false with why (e.g.
 * "loopback address 127.0.0.1"). */
__attribute__((warn_unused_result)) bool
addr_policy_allows(const addr_policy_t *p, const struct sockaddr *sa, char *why, size_t cap);

/* True when url may be fetched (scheme, credentials, host given); the
 * address is checked at connect time. */
__attribute__((warn_unused_result)) bool addr_policy_url_ok(const addr_policy_t *p, const char *url,
                                                            char *why, size_t cap);

#endif
