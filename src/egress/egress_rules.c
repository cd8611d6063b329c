/* egress_rules: the proxy's vocabulary of hosts (HOST[:PORT], "*.suffix",
 * addresses, parsed and normalised) and the allow and deny lists the
 * policy in egress.c consults (egress_rules.h). Pure: no I/O. */
#include "terp/egress.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/util.h"

#include "egress_addr.h"
#include "egress_rules.h"

/* ---- HOST[:PORT] parsing ----------------------------------------------- */

/* Copies a host name lower-cased into out, dropping one trailing dot.
 * Labels of [a-z0-9_-], 1..63 bytes; at most 253 in all. */
static int
name_norm(const char *s, size_t n, char *out)
{
	size_t label = 0;

	if (n > 0 && s[n - 1] == '.')
		n--;
	if (n == 0 || n > 253)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '.') {
			if (label == 0)
				return -1;
			label = 0;
		} else if (isalnum(ch) || ch == '-' || ch == '_') {
			if (++label > 63)
				return -1;
		} else {
			return -1;
		}
		out[i] = (char)tolower(ch);
	}
	if (label == 0)
		return -1;
	out[n] = '\0';
	return 0;
}

static int
port_parse(const char *s, size_t n, unsigned *port)
{
	unsigned v = 0;

	if (n == 0 || n > 5)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*port = v;
	return 0;
}

static void
hp_set_v6(struct egress_hp *hp, const unsigned char *b)
{
	if (egress_addr_zero(b, 10) && b[10] == 0xff && b[11] == 0xff) {
		hp->family = AF_INET;
		memcpy(hp->addr, b + 12, 4);
	} else {
		hp->family = AF_INET6;
		memcpy(hp->addr, b, 16);
	}
}

/* An unspecified address (0.0.0.0/8, ::, ::ffff:0.0.0.0): connecting
 * there reaches this machine's own loopback. */
static int
hp_unspecified(const struct egress_hp *hp)
{
	if (hp->kind != EGRESS_HP_ADDR)
		return 0;
	if (hp->family == AF_INET)
		return hp->addr[0] == 0;
	return egress_addr_zero(hp->addr, 16);
}

/* What an unspecified address reaches: the loopback of its family. */
static void
hp_to_loopback(struct egress_hp *hp)
{
	memset(hp->addr, 0, sizeof hp->addr);
	if (hp->family == AF_INET) {
		hp->addr[0] = 127;
		hp->addr[3] = 1;
	} else {
		hp->addr[15] = 1;
	}
}

static int hp_parse_raw(const char *s, size_t n, struct egress_hp *hp, int rule,
    const char **why);

/* Parses s[0..n) as HOST[:PORT]. rule: "*.x" allowed, odd numeric forms
 * refused (a request's odd numeric host is taken as the address
 * inet_aton sees in it, so it meets the address rules, not the names).
 * An unspecified address is what it reaches, loopback: a request for
 * 0.0.0.0 is checked as one for 127.0.0.1 (so only a loopback address
 * allowed by itself lets it through), and a rule naming it is refused.
 * Returns 0, or -1 with *why set to a static phrase. */
int
egress_hp_parse(const char *s, size_t n, struct egress_hp *hp, int rule,
    const char **why)
{
	if (hp_parse_raw(s, n, hp, rule, why) < 0)
		return -1;
	if (hp_unspecified(hp)) {
		if (rule) {
			*why = "an unspecified address reaches this machine's own "
			    "services, as loopback does; allow 127.0.0.1:PORT or "
			    "[::1]:PORT for those";
			return -1;
		}
		hp_to_loopback(hp);
	}
	return 0;
}

static int
hp_parse_raw(const char *s, size_t n, struct egress_hp *hp, int rule,
    const char **why)
{
	char tmp[256];
	const char *host = s, *colon = NULL;
	size_t hn = n;
	struct in_addr a4;
	struct in6_addr a6;

	memset(hp, 0, sizeof *hp);
	*why = "not HOST[:PORT]";
	if (n == 0 || n > 300)
		return -1;
	if (s[0] == '[') {
		const char *rb = memchr(s, ']', n);
		if (rb == NULL || (size_t)(rb - s) - 1 >= sizeof tmp)
			return -1;
		memcpy(tmp, s + 1, (size_t)(rb - s) - 1);
		tmp[rb - s - 1] = '\0';
		if (inet_pton(AF_INET6, tmp, &a6) != 1) {
			*why = "not an IPv6 address";
			return -1;
		}
		hp->kind = EGRESS_HP_ADDR;
		hp_set_v6(hp, a6.s6_addr);
		if (rb + 1 == s + n)
			return 0;
		if (rb[1] != ':' || port_parse(rb + 2, (size_t)(s + n - rb - 2),
		    &hp->port) < 0) {
			*why = "bad port";
			return -1;
		}
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ':') {
			if (colon != NULL) {
				colon = NULL;	/* two colons: bare IPv6 */
				hn = n;
				goto v6;
			}
			colon = s + i;
		}
	}
	if (colon != NULL) {
		hn = (size_t)(colon - s);
		if (port_parse(colon + 1, n - hn - 1, &hp->port) < 0) {
			*why = "bad port";
			return -1;
		}
	}
	if (hn == 0 || hn >= sizeof tmp)
		return -1;
	memcpy(tmp, host, hn);
	tmp[hn] = '\0';
	if (inet_pton(AF_INET, tmp, &a4) == 1) {
		hp->kind = EGRESS_HP_ADDR;
		hp->family = AF_INET;
		memcpy(hp->addr, &a4, 4);
		return 0;
	}
	if (strspn(tmp, "0123456789abcdefxABCDEFX.") == hn &&
	    inet_aton(tmp, &a4) == 1) {
		if (rule) {
			*why = "write the address as four decimal numbers";
			return -1;
		}
		hp->kind = EGRESS_HP_ADDR;
		hp->family = AF_INET;
		memcpy(hp->addr, &a4, 4);
		return 0;
	}
	if (hn > 2 && tmp[0] == '*' && tmp[1] == '.') {
		if (!rule) {
			*why = "bad host name";
			return -1;
		}
		hp->kind = EGRESS_HP_SUFFIX;
		hp->name[0] = '.';
		if (name_norm(tmp + 2, hn - 2, hp->name + 1) < 0) {
			*why = "bad host name";
			return -1;
		}
		return 0;
	}
	hp->kind = EGRESS_HP_NAME;
	if (name_norm(tmp, hn, hp->name) < 0) {
		*why = "bad host name";
		return -1;
	}
	return 0;
v6:
	if (n >= sizeof tmp)
		return -1;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	if (inet_pton(AF_INET6, tmp, &a6) != 1) {
		*why = "not an IPv6 address (write [addr]:port)";
		return -1;
	}
	hp->kind = EGRESS_HP_ADDR;
	hp_set_v6(hp, a6.s6_addr);
	return 0;
}

void
egress_hp_text(const struct egress_hp *hp, char *out, size_t len)
{
	if (inet_ntop(hp->family, hp->addr, out, (socklen_t)len) == NULL)
		snprintf(out, len, "?");
}

/* Does rule pattern r name host hp (ignoring ports)? */
int
egress_hp_names(const struct egress_hp *r, const struct egress_hp *hp)
{
	size_t rl, hl;

	if (r->kind == EGRESS_HP_ADDR || hp->kind == EGRESS_HP_ADDR)
		return r->kind == EGRESS_HP_ADDR && hp->kind == EGRESS_HP_ADDR &&
		    r->family == hp->family &&
		    memcmp(r->addr, hp->addr, r->family == AF_INET ? 4 : 16) == 0;
	if (r->kind == EGRESS_HP_NAME)
		return strcmp(r->name, hp->name) == 0;
	rl = strlen(r->name);
	hl = strlen(hp->name);
	return hl > rl && strcmp(hp->name + hl - rl, r->name) == 0;
}

/* An allow rule's ports: its own, or 80 and 443. */
static int
allow_port(unsigned rule_port, unsigned port)
{
	return rule_port ? rule_port == port : (port == 80 || port == 443);
}

static int
hp_same(const struct egress_hp *a, const struct egress_hp *b)
{
	return a->kind == b->kind && egress_hp_names(a, b);
}

/* 1 allowed, 0 named on other ports only, -1 not named. */
int
egress_rules_allows(const struct egress_rules *rs, const struct egress_hp *hp, unsigned port)
{
	int named = 0;

	for (const struct egress_rule *r = rs->allow; r != NULL; r = r->next) {
		if (!egress_hp_names(&r->hp, hp))
			continue;
		if (allow_port(r->hp.port, port))
			return 1;
		named = 1;
	}
	return named ? 0 : -1;
}

int
egress_rules_denies(const struct egress_rules *rs, const struct egress_hp *hp, unsigned port)
{
	for (const struct egress_rule *r = rs->deny; r != NULL; r = r->next)
		if (egress_hp_names(&r->hp, hp) && (r->hp.port == 0 || r->hp.port == port))
			return 1;
	return 0;
}

static void
rule_list_free(struct egress_rule *r)
{
	while (r != NULL) {
		struct egress_rule *n = r->next;
		free(r);
		r = n;
	}
}

/* An address a name resolved to, as the rules see it (an unspecified
 * one as the loopback it reaches, see hp_parse). */
void
egress_hp_from_sa(struct egress_hp *hp, const struct sockaddr *sa)
{
	memset(hp, 0, sizeof *hp);
	hp->kind = EGRESS_HP_ADDR;
	if (sa->sa_family == AF_INET) {
		hp->family = AF_INET;
		memcpy(hp->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else {
		hp_set_v6(hp, ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr);
	}
	if (hp_unspecified(hp))
		hp_to_loopback(hp);
}

static int
spec_parse(const char *spec, struct egress_hp *hp, char **err)
{
	const char *why = "missing";

	if (spec == NULL || egress_hp_parse(spec, strlen(spec), hp, 1, &why) < 0) {
		if (err != NULL)
			*err = xasprintf("egress: %s: %s (expected HOST, HOST:PORT, "
			    "*.DOMAIN or an address)", spec ? spec : "(null)", why);
		return -1;
	}
	return 0;
}

int
egress_rule_check(const char *spec, char **err)
{
	struct egress_hp hp;

	return spec_parse(spec, &hp, err);
}

int
egress_rules_cover(const char *const *allow, const char *host, unsigned port)
{
	struct egress_hp want, r;
	const char *why;
	char tmp[300];
	int n;

	/* A bare IPv6 address goes in brackets, so that hp_parse does not
	 * take its last group for a port. */
	n = snprintf(tmp, sizeof tmp, strchr(host, ':') ? "[%s]" : "%s", host);
	if (n < 0 || (size_t)n >= sizeof tmp || egress_hp_parse(tmp, (size_t)n, &want, 0, &why) < 0)
		return 0;
	for (const char *const *a = allow; a != NULL && *a != NULL; a++) {
		if (egress_hp_parse(*a, strlen(*a), &r, 1, &why) < 0)
			continue;
		if (egress_hp_names(&r, &want) && allow_port(r.port, port))
			return 1;
	}
	return 0;
}


const char *
egress_unspecified_loopback(const char *host)
{
	struct egress_hp hp;
	const char *why;

	if (host == NULL || hp_parse_raw(host, strlen(host), &hp, 0, &why) < 0 ||
	    !hp_unspecified(&hp))
		return NULL;
	return hp.family == AF_INET ? "127.0.0.1" : "::1";
}

void
egress_rules_clear(struct egress_rules *rs)
{
	rule_list_free(rs->allow);
	rule_list_free(rs->deny);
	rs->allow = rs->deny = NULL;
}

int
egress_rules_add_allow(struct egress_rules *rs, const char *spec, char **err)
{
	struct egress_hp hp;
	struct egress_rule *r, **pp;

	if (spec_parse(spec, &hp, err) < 0)
		return -1;
	for (pp = &rs->deny; (r = *pp) != NULL;) {
		if (hp_same(&r->hp, &hp)) {
			*pp = r->next;
			free(r);
		} else {
			pp = &r->next;
		}
	}
	for (pp = &rs->allow; (r = *pp) != NULL; pp = &r->next)
		if (hp_same(&r->hp, &hp) && r->hp.port == hp.port)
			return 0;
	r = xcalloc(1, sizeof *r);
	r->hp = hp;
	*pp = r;
	return 0;
}

int
egress_rules_add_deny(struct egress_rules *rs, const char *spec,
    struct egress_hp *out, char **err)
{
	struct egress_hp hp;
	struct egress_rule *r, **pp;

	if (spec_parse(spec, &hp, err) < 0)
		return -1;
	for (pp = &rs->allow; (r = *pp) != NULL;) {
		if (hp_same(&r->hp, &hp) && (hp.port == 0 || r->hp.port == hp.port)) {
			*pp = r->next;
			free(r);
		} else {
			pp = &r->next;
		}
	}
	for (pp = &rs->deny; (r = *pp) != NULL; pp = &r->next)
		if (hp_same(&r->hp, &hp) && r->hp.port == hp.port)
			break;
	if (r == NULL) {
		r = xcalloc(1, sizeof *r);
		r->hp = hp;
		*pp = r;
	}
	*out = hp;
	return 0;
}
