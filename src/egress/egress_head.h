/* egress_head: the HTTP/1.1 the proxy speaks. Private to src/egress:
 * egress.c reads a request head into a struct egress_req and answers
 * refusals with egress_reply_format. */
#ifndef TERP_EGRESS_HEAD_H
#define TERP_EGRESS_HEAD_H

#include <stddef.h>

#include "egress_rules.h"

/* What a request head asks for. */
struct egress_req {
	char			 method[17];	/* "CONNECT", "GET", ... */
	char			 host[256];	/* lower case, or the address */
	unsigned		 port;
	int			 is_connect;
	struct egress_hp	 hp;		/* the host asked for */
	char			*fwd;		/* plain http: the head rewritten
						 * for the upstream (owned by
						 * whoever holds the struct) */
	size_t			 fwdlen;
};

/* Where the head in h[0..len) ends (past its empty line), looking for
 * it from from on, or 0 while incomplete. Bare LF line ends are
 * accepted, as most servers do. */
size_t egress_head_end(const char *h, size_t from, size_t len);

/* Parses the request line (and for plain http the headers, into q->fwd:
 * origin form, Host from the URL, hop-by-hop headers dropped,
 * Connection: close) of the head h[0..end), which it may write into.
 * Fills q (zeroed by the caller). Returns 0, or -1 with *why a static
 * phrase for the 400 reply. */
int egress_head_parse(char *h, size_t end, struct egress_req *q, const char **why);

/* The proxy's reply: status, X-Terp-Egress: code, and "terp egress:
 * body" as a text/plain body, into out[len]. Returns its length, or -1
 * when it does not fit. */
int egress_reply_format(char *out, size_t len, int status, const char *code,
    const char *body);

#endif
