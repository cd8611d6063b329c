/* egress_resolve: name lookups for the proxy, in parallel, without
 * blocking the loop. Private to src/egress. A lookup reports to the
 * callback given to egress_resolver_new, on the loop thread, exactly
 * once, unless it was abandoned first. */
#ifndef TERP_EGRESS_RESOLVE_H
#define TERP_EGRESS_RESOLVE_H

#include <netdb.h>

#include "terp/loop.h"

struct egress_resolver;
struct egress_lookup;

/* rc: getaddrinfo's (0 or an EAI_ code); res: its answers, valid during
 * the call only. owner: egress_resolver_start's. */
typedef void (*egress_resolved_fn)(void *owner, int rc, const struct addrinfo *res);

/* Watches a socketpair on l for finished lookups. NULL with *err
 * (caller frees) when it cannot make one. */
struct egress_resolver *egress_resolver_new(struct loop *l, egress_resolved_fn done,
    char **err);
/* Starts looking name up (every family, TCP, no AI_ADDRCONFIG: the
 * policy must see every answer). Returns the lookup, or NULL with *rc
 * (an EAI_ code) when glibc would not start it. */
struct egress_lookup *egress_resolver_start(struct egress_resolver *r,
    const char *name, void *owner, int *rc);
/* Gives up on q (its owner is going away): no report follows. */
void egress_resolver_abandon(struct egress_resolver *r, struct egress_lookup *q);
/* Abandons every lookup in flight and stops watching. NULL: no-op. */
void egress_resolver_free(struct egress_resolver *r);

#endif
