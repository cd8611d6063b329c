/* netlog: the egress ledger's entries, their JSON and their summaries
 * (netlog.h). */
#include "terp/netlog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/json_text.h"
#include "terp/util.h"

#define SUMMARY_ITEMS	8

void
netlog_text(char *dst, size_t len, const char *s)
{
	size_t i = 0;

	for (; s != NULL && s[i] != '\0' && i + 1 < len; i++)
		dst[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	dst[i] = '\0';
}

const char *
netlog_verdict_name(enum netlog_verdict v)
{
	switch (v) {
	case NETLOG_ALLOWED:	return "allowed";
	case NETLOG_REFUSED:	return "refused";
	case NETLOG_FAILED:	return "failed";
	}
	return "?";
}

void
netlog_json_add(cJSON *o, const struct net_attempt *a)
{
	cJSON_AddNumberToObject(o, "cell", a->cell);
	cJSON_AddNumberToObject(o, "time_ms", (double)a->time_ms);
	cJSON_AddStringToObject(o, "method", a->method);
	cJSON_AddStringToObject(o, "host", a->host);
	cJSON_AddNumberToObject(o, "port", a->port);
	cJSON_AddStringToObject(o, "verdict", netlog_verdict_name(a->verdict));
	cJSON_AddStringToObject(o, "code", a->code);
	cJSON_AddStringToObject(o, "reason", a->reason);
	cJSON_AddNumberToObject(o, "up", (double)a->up);
	cJSON_AddNumberToObject(o, "down", (double)a->down);
}

int
netlog_parse(const cJSON *o, struct net_attempt *a)
{
	const char *v = json_str(o, "verdict");

	memset(a, 0, sizeof *a);
	if (json_str(o, "host") == NULL || v == NULL)
		return -1;
	if (strcmp(v, "allowed") == 0)
		a->verdict = NETLOG_ALLOWED;
	else if (strcmp(v, "refused") == 0)
		a->verdict = NETLOG_REFUSED;
	else if (strcmp(v, "failed") == 0)
		a->verdict = NETLOG_FAILED;
	else
		return -1;
	a->cell = (int)json_num_in(o, "cell", 0, 1e9, 0);
	a->time_ms = (int64_t)json_num_in(o, "time_ms", 0, 9e15, 0);
	netlog_text(a->method, sizeof a->method, json_str(o, "method"));
	netlog_text(a->host, sizeof a->host, json_str(o, "host"));
	a->port = (unsigned)json_num_in(o, "port", 0, 65535, 0);
	netlog_text(a->code, sizeof a->code, json_str(o, "code"));
	netlog_text(a->reason, sizeof a->reason, json_str(o, "reason"));
	a->up = (uint64_t)json_num_in(o, "up", 0, 9e15, 0);
	a->down = (uint64_t)json_num_in(o, "down", 0, 9e15, 0);
	return 0;
}

/* Attempts that read as one item: same host, port, verdict, reason. */
static int
same(const struct net_attempt *x, const struct net_attempt *y)
{
	return x->port == y->port && x->verdict == y->verdict &&
	    strcmp(x->host, y->host) == 0 &&
	    (x->verdict == NETLOG_ALLOWED || strcmp(x->reason, y->reason) == 0);
}

static void
item(struct buf *b, const struct net_attempt *a, size_t count, uint64_t up,
    uint64_t down, int open, enum netlog_style style)
{
	char u[32], d[32];
	const char *host = a->host[0] ? a->host : "(no host)";
	int model = style == NETLOG_MODEL;

	fmt_bytes(u, sizeof u, up);
	fmt_bytes(d, sizeof d, down);
	if (model || (a->port != 443 && a->port != 80 && a->port != 0))
		buf_printf(b, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, a->port);
	else
		buf_adds(b, host);
	if (count > 1)
		buf_printf(b, " %zux", count);
	if (a->verdict == NETLOG_ALLOWED) {
		if (model)
			buf_printf(b, " allowed (%s down, %s up%s)", d, u,
			    open ? ", still open" : "");
		else if (style == NETLOG_UTF8)
			buf_printf(b, " \xe2\x9c\x93 %s \xe2\x86\x93 %s \xe2\x86\x91%s", d, u,
			    open ? " (open)" : "");
		else
			buf_printf(b, " ok %s down %s up%s", d, u, open ? " (open)" : "");
		return;
	}
	if (model)
		buf_printf(b, " %s (%s)", netlog_verdict_name(a->verdict), a->reason);
	else
		buf_printf(b, " %s %s", style == NETLOG_UTF8 ? "\xe2\x9c\x97" :
		    netlog_verdict_name(a->verdict), a->reason);
}

/* FNV-1a over what same() compares, so equal attempts hash alike. */
static uint64_t
key_hash(const struct net_attempt *a)
{
	uint64_t h = 1469598103934665603ull;
	const unsigned char *p;

	for (p = (const unsigned char *)a->host; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	h = (h ^ a->port) * 1099511628211ull;
	h = (h ^ (unsigned)a->verdict) * 1099511628211ull;
	if (a->verdict != NETLOG_ALLOWED)
		for (p = (const unsigned char *)a->reason; *p; p++)
			h = (h ^ *p) * 1099511628211ull;
	return h;
}

struct group {
	size_t		 first;		/* index in v of its first attempt */
	size_t		 count;
	uint64_t	 up, down;
	int		 open;
};

/* Linear in n: one pass folds the cell's attempts into groups through
 * an open-addressing table (a quadratic pairing froze the notebook
 * under a flood of attempts to distinct hosts, issue 22). */
char *
netlog_summary(const struct net_attempt *v, size_t n, int cell,
    enum netlog_style style)
{
	struct buf b;
	struct group *g;
	size_t ng = 0, mine = 0, cap = 16, *slot;

	for (size_t i = 0; i < n; i++)
		mine += v[i].cell == cell;
	if (mine == 0)
		return NULL;
	while (cap < 2 * mine)
		cap <<= 1;
	slot = xcalloc(cap, sizeof *slot);	/* group index + 1; 0: empty */
	g = xcalloc(mine, sizeof *g);
	for (size_t i = 0; i < n; i++) {
		size_t h;

		if (v[i].cell != cell)
			continue;
		for (h = (size_t)key_hash(&v[i]) & (cap - 1); slot[h] != 0; h = (h + 1) & (cap - 1))
			if (same(&v[g[slot[h] - 1].first], &v[i]))
				break;
		if (slot[h] == 0) {
			g[ng].first = i;
			slot[h] = ++ng;
		}
		struct group *x = &g[slot[h] - 1];
		x->count++;
		x->up += v[i].up;
		x->down += v[i].down;
		x->open |= v[i].open;
	}
	buf_init(&b, 64 * 1024);
	for (size_t k = 0; k < ng && k < SUMMARY_ITEMS; k++) {
		if (k > 0)
			buf_adds(&b, style == NETLOG_MODEL ? "; " :
			    style == NETLOG_UTF8 ? " \xc2\xb7 " : " - ");
		else if (style == NETLOG_MODEL)
			buf_adds(&b, "network: ");
		item(&b, &v[g[k].first], g[k].count, g[k].up, g[k].down, g[k].open, style);
	}
	if (ng > SUMMARY_ITEMS)
		buf_printf(&b, "%sand %zu more", style == NETLOG_MODEL ? "; " : " ",
		    ng - SUMMARY_ITEMS);
	free(slot);
	free(g);
	return buf_take(&b);
}
