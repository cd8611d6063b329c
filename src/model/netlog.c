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

/* Attempts that read as one item: same host, port, verdict, and for a
 * refusal or failure the same reason. A group keeps its own copy of
 * that key, so a summary needs no ledger beside it. */
struct netlog_group {
	char			*host;
	char			*reason;	/* NULL for allowed attempts */
	unsigned		 port;
	enum netlog_verdict	 verdict;
	size_t			 count;		/* 0: every attempt left it */
	uint64_t		 up, down;
	size_t			 open;
	uint64_t		 hash;		/* key_hash of the key */
};

static int
group_is(const struct netlog_group *g, const struct net_attempt *a)
{
	return g->port == a->port && g->verdict == a->verdict &&
	    strcmp(g->host, a->host) == 0 &&
	    (a->verdict == NETLOG_ALLOWED || strcmp(g->reason, a->reason) == 0);
}

static void
item(struct buf *b, const struct netlog_group *g, enum netlog_style style)
{
	char u[32], d[32];
	const char *host = g->host[0] ? g->host : "(no host)";
	int model = style == NETLOG_MODEL;

	fmt_bytes(u, sizeof u, g->up);
	fmt_bytes(d, sizeof d, g->down);
	if (model || (g->port != 443 && g->port != 80 && g->port != 0))
		buf_printf(b, strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, g->port);
	else
		buf_adds(b, host);
	if (g->count > 1)
		buf_printf(b, " %zux", g->count);
	if (g->verdict == NETLOG_ALLOWED) {
		if (model)
			buf_printf(b, " allowed (%s down, %s up%s)", d, u,
			    g->open ? ", still open" : "");
		else if (style == NETLOG_UTF8)
			buf_printf(b, " \xe2\x9c\x93 %s \xe2\x86\x93 %s \xe2\x86\x91%s", d, u,
			    g->open ? " (open)" : "");
		else
			buf_printf(b, " ok %s down %s up%s", d, u, g->open ? " (open)" : "");
		return;
	}
	if (model)
		buf_printf(b, " %s (%s)", netlog_verdict_name(g->verdict), g->reason);
	else
		buf_printf(b, " %s %s", style == NETLOG_UTF8 ? "\xe2\x9c\x97" :
		    netlog_verdict_name(g->verdict), g->reason);
}

/* FNV-1a over what group_is compares, so equal attempts hash alike. */
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

struct netlog_sum *
netlog_sum_new(void)
{
	return xcalloc(1, sizeof(struct netlog_sum));
}

void
netlog_sum_free(struct netlog_sum *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->ng; i++) {
		free(s->g[i].host);
		free(s->g[i].reason);
	}
	free(s->g);
	free(s->slot);
	free(s);
}

/* The table holds group indexes + 1 (0: empty), at most half full. */
static void
slot_put(size_t *slot, size_t cap, uint64_t h, size_t gi)
{
	size_t k = (size_t)h & (cap - 1);

	while (slot[k] != 0)
		k = (k + 1) & (cap - 1);
	slot[k] = gi + 1;
}

static void
grow(struct netlog_sum *s)
{
	size_t cap = s->cap ? s->cap * 2 : 16, *slot = xcalloc(cap, sizeof *slot);

	for (size_t i = 0; i < s->ng; i++)
		slot_put(slot, cap, s->g[i].hash, i);
	free(s->slot);
	s->slot = slot;
	s->cap = cap;
}

/* a's group, made when create and there is none yet; NULL otherwise. */
static struct netlog_group *
group_of(struct netlog_sum *s, const struct net_attempt *a, int create)
{
	uint64_t h = key_hash(a);
	struct netlog_group *g;

	if (s->cap > 0) {
		for (size_t k = (size_t)h & (s->cap - 1); s->slot[k] != 0;
		    k = (k + 1) & (s->cap - 1))
			if (s->g[s->slot[k] - 1].hash == h &&
			    group_is(&s->g[s->slot[k] - 1], a))
				return &s->g[s->slot[k] - 1];
	}
	if (!create)
		return NULL;
	if (2 * (s->ng + 1) > s->cap)
		grow(s);
	if (s->ng == s->capg) {
		s->capg = s->capg ? s->capg * 2 : 8;
		s->g = xrealloc(s->g, s->capg * sizeof *s->g);
	}
	g = &s->g[s->ng];
	memset(g, 0, sizeof *g);
	g->host = xstrdup(a->host);
	g->reason = a->verdict == NETLOG_ALLOWED ? NULL : xstrdup(a->reason);
	g->port = a->port;
	g->verdict = a->verdict;
	g->hash = h;
	slot_put(s->slot, s->cap, h, s->ng++);
	return g;
}

/* Adds a's counts to its group (sign 1) or takes them out (-1). */
static void
count(struct netlog_sum *s, const struct net_attempt *a, int sign)
{
	struct netlog_group *g = group_of(s, a, sign > 0);

	if (g == NULL || (sign < 0 && g->count == 0))
		return;		/* never added: nothing to take out */
	s->gen++;
	if (sign > 0) {
		s->live += g->count++ == 0;
		g->up += a->up;
		g->down += a->down;
		g->open += a->open != 0;
		s->attempts++;
		s->bad += a->verdict != NETLOG_ALLOWED;
		s->up += a->up;
		s->down += a->down;
		return;
	}
	s->live -= --g->count == 0;
	g->up -= a->up;
	g->down -= a->down;
	g->open -= a->open != 0 && g->open > 0;
	s->attempts--;
	s->bad -= a->verdict != NETLOG_ALLOWED;
	s->up -= a->up;
	s->down -= a->down;
}

void
netlog_sum_add(struct netlog_sum *s, const struct net_attempt *a)
{
	count(s, a, 1);
}

void
netlog_sum_remove(struct netlog_sum *s, const struct net_attempt *a)
{
	count(s, a, -1);
}

char *
netlog_sum_text(const struct netlog_sum *s, enum netlog_style style)
{
	struct buf b;
	size_t shown = 0;

	if (s == NULL || s->attempts == 0)
		return NULL;
	buf_init(&b, 64 * 1024);
	for (size_t k = 0; k < s->ng && shown < SUMMARY_ITEMS; k++) {
		if (s->g[k].count == 0)
			continue;
		if (shown++ > 0)
			buf_adds(&b, style == NETLOG_MODEL ? "; " :
			    style == NETLOG_UTF8 ? " \xc2\xb7 " : " - ");
		else if (style == NETLOG_MODEL)
			buf_adds(&b, "network: ");
		item(&b, &s->g[k], style);
	}
	if (s->live > SUMMARY_ITEMS)
		buf_printf(&b, "%sand %zu more", style == NETLOG_MODEL ? "; " : " ",
		    s->live - SUMMARY_ITEMS);
	return buf_take(&b);
}

/* Linear in n, through the same groups a notebook keeps as it goes (a
 * quadratic pairing froze the notebook under a flood of attempts to
 * distinct hosts, issue 22). */
char *
netlog_summary(const struct net_attempt *v, size_t n, int cell,
    enum netlog_style style)
{
	struct netlog_sum *s = netlog_sum_new();
	char *t;

	for (size_t i = 0; i < n; i++)
		if (v[i].cell == cell)
			netlog_sum_add(s, &v[i]);
	t = netlog_sum_text(s, style);
	netlog_sum_free(s);
	return t;
}
