/* netlog: the egress ledger as the notebook keeps it. One entry per
 * attempt the session's proxy saw (the core turns the proxy's events
 * into these, ledger.h: an open attempt's first report makes it, later
 * ones update it), its JSON for the journal and
 * --json, and the one-line summaries shown under a cell ("pypi.org ✓
 * 2.1 MB ↓ · evil.example ✗ not allowed") and sent to the model in the
 * cell's tool result. Pure: no I/O. Knows nothing of the proxy: the
 * model layer does not depend on egress/. */
#ifndef TERP_NETLOG_H
#define TERP_NETLOG_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

enum netlog_verdict { NETLOG_ALLOWED, NETLOG_REFUSED, NETLOG_FAILED };

/* Every string is bounded, NUL-terminated, printable ASCII (the proxy
 * validates host names; a journal's are checked again on load). */
struct net_attempt {
	int			 cell;		/* 0: before any cell */
	uint64_t		 id;		/* the proxy's number, per terp run */
	int64_t			 time_ms;	/* wall clock at accept */
	enum netlog_verdict	 verdict;
	int			 open;		/* allowed and not ended yet */
	char			 method[16];	/* "CONNECT", "GET" or "" */
	char			 host[256];	/* "" when the request named none */
	unsigned		 port;
	char			 code[24];	/* the proxy's codes: "not-allowed" */
	char			 reason[128];	/* "not allowed", "resolves to loopback" */
	uint64_t		 up, down;	/* bytes so far */
};

/* Copies s (NULL: "") into dst[len] as struct net_attempt's strings
 * must be: cut to fit, every byte outside printable ASCII as '?'. */
void netlog_text(char *dst, size_t len, const char *s);

/* Adds "cell":N,"time_ms":T,"method":S,"host":S,"port":N,"verdict":S,
 * "code":S,"reason":S,"up":N,"down":N to o: what --json prints as a
 * "net" event and the journal keeps as a "net" line. */
void netlog_json_add(cJSON *o, const struct net_attempt *a);
/* The reverse, for a journal's line: 0, or -1 when o is not one (no
 * host member, an unknown verdict). */
int netlog_parse(const cJSON *o, struct net_attempt *a);

const char *netlog_verdict_name(enum netlog_verdict v);

enum netlog_style {
	NETLOG_UTF8,	/* "host ✓ 2.1 MiB ↓ 3 KiB ↑ · evil ✗ not allowed" */
	NETLOG_ASCII,	/* the same with "ok", "refused", "down", "up" */
	NETLOG_MODEL	/* "network: evil:443 refused (not allowed); ..." */
};

/* One line (no newline) summing up the attempts of cell among v[0..n):
 * attempts to the same host and port with the same verdict and reason
 * are one item (their bytes added, "3x" when more than one); at most
 * 8 items, then "and N more". A new string, or NULL when the cell made
 * no attempt. Linear in n: netlog_sum_text of a sum of them. */
char *netlog_summary(const struct net_attempt *v, size_t n, int cell,
    enum netlog_style style);

/* A summary kept as attempts come (a cell's, or a session's): the same
 * items as netlog_summary, each new attempt or update in O(1)
 * amortised, its text in O(items shown). The counters are to read; the
 * rest is netlog's. */
struct netlog_group;
struct netlog_sum {
	size_t			 attempts;	/* in the sum now */
	size_t			 bad;		/* of them refused or failed */
	uint64_t		 up, down;	/* bytes, added */
	uint64_t		 gen;		/* changes on every change */
	/* netlog's: the groups in order of their first attempt, and a
	 * hash table of their indexes */
	struct netlog_group	*g;
	size_t			 ng, capg, live;
	size_t			*slot;
	size_t			 cap;
};

struct netlog_sum *netlog_sum_new(void);
void netlog_sum_free(struct netlog_sum *s);	/* NULL: no-op */
/* A new attempt. Copies what it needs of a. */
void netlog_sum_add(struct netlog_sum *s, const struct net_attempt *a);
/* Takes out an attempt added before, as it was added (an update is its
 * old self removed, its new self added). */
void netlog_sum_remove(struct netlog_sum *s, const struct net_attempt *a);
/* The line netlog_summary would make of the attempts in s; NULL when s
 * is NULL or holds none. New string. */
char *netlog_sum_text(const struct netlog_sum *s, enum netlog_style style);

#endif
