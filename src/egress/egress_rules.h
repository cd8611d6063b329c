/* egress_rules: hosts as the proxy's policy sees them, and its allow and
 * deny lists. Private to src/egress: egress.c decides with these; the
 * pure checks for the command line (egress_rule_check,
 * egress_rules_cover, egress_unspecified_loopback) are in egress.h. */
#ifndef TERP_EGRESS_RULES_H
#define TERP_EGRESS_RULES_H

#include <stddef.h>
#include <sys/socket.h>

enum egress_hp_kind { EGRESS_HP_NAME, EGRESS_HP_SUFFIX, EGRESS_HP_ADDR };

/* A parsed HOST[:PORT]: a name, a "*.suffix" (kept as ".suffix") or an
 * address (IPv4-mapped IPv6 folded to IPv4). port 0: none given. */
struct egress_hp {
	enum egress_hp_kind	 kind;
	char			 name[256];
	int			 family;
	unsigned char		 addr[16];
	unsigned		 port;
};

struct egress_rule {
	struct egress_hp	 hp;
	struct egress_rule	*next;
};

/* The two lists, owned (egress_rules_clear frees them). A zeroed struct
 * is empty. */
struct egress_rules {
	struct egress_rule	*allow, *deny;
};

/* Parses s[0..n) as HOST[:PORT]. rule: "*.x" allowed, odd numeric forms
 * refused (a request's odd numeric host is taken as the address
 * inet_aton sees in it, so it meets the address rules, not the names).
 * An unspecified address is what it reaches, loopback: a request for
 * 0.0.0.0 is checked as one for 127.0.0.1, and a rule naming it is
 * refused. Returns 0, or -1 with *why set to a static phrase. */
int egress_hp_parse(const char *s, size_t n, struct egress_hp *hp, int rule,
    const char **why);
/* An address as text (inet_ntop), "?" when it cannot be. */
void egress_hp_text(const struct egress_hp *hp, char *out, size_t len);
/* Does rule pattern r name host hp (ignoring ports)? */
int egress_hp_names(const struct egress_hp *r, const struct egress_hp *hp);
/* An address a name resolved to, as the rules see it (an unspecified
 * one as the loopback it reaches). */
void egress_hp_from_sa(struct egress_hp *hp, const struct sockaddr *sa);

/* 1 allowed, 0 named on other ports only, -1 not named. An allow rule
 * without a port covers 80 and 443. */
int egress_rules_allows(const struct egress_rules *rs, const struct egress_hp *hp,
    unsigned port);
/* 1 when a deny rule names hp on port (a rule without a port: any). */
int egress_rules_denies(const struct egress_rules *rs, const struct egress_hp *hp,
    unsigned port);

/* Adds an allow rule (lifting the deny rules of the same host). Returns
 * 0, or -1 with *err (when err is not NULL) for a malformed spec. */
int egress_rules_add_allow(struct egress_rules *rs, const char *spec, char **err);
/* Adds a deny rule (dropping the allow rules it names) and puts the
 * host it names in *hp, for closing what is open to it. 0 or -1. */
int egress_rules_add_deny(struct egress_rules *rs, const char *spec,
    struct egress_hp *hp, char **err);
void egress_rules_clear(struct egress_rules *rs);

#endif
