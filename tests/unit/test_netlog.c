/* Unit tests of netlog: the egress ledger's summaries (under a cell and
 * for the model), its JSON both ways, and what it keeps of odd input. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/netlog.h"

static struct net_attempt
att(int cell, const char *host, unsigned port, enum netlog_verdict v,
    const char *reason, uint64_t up, uint64_t down)
{
	struct net_attempt a = { .cell = cell, .verdict = v, .port = port,
	    .up = up, .down = down };
	strcpy(a.host, host);
	strcpy(a.reason, reason);
	strcpy(a.code, v == NETLOG_ALLOWED ? "done" : "not-allowed");
	return a;
}

Test(netlog, summary_groups_by_host_and_verdict)
{
	struct net_attempt v[] = {
		att(1, "index.example.invalid", 443, NETLOG_ALLOWED, "", 1000, 1048576),
		att(2, "other.example.invalid", 443, NETLOG_ALLOWED, "", 1, 1),
		att(1, "index.example.invalid", 443, NETLOG_ALLOWED, "", 1048, 1153434),
		att(1, "evil.example.invalid", 443, NETLOG_REFUSED, "not allowed", 0, 0),
		att(1, "10.0.0.1", 8080, NETLOG_FAILED, "does not resolve", 0, 0),
	};
	char *s = netlog_summary(v, 5, 1, NETLOG_UTF8);

	cr_assert_str_eq(s, "index.example.invalid 2x \xe2\x9c\x93 2.1 MiB \xe2\x86\x93 "
	    "2 KiB \xe2\x86\x91 \xc2\xb7 evil.example.invalid \xe2\x9c\x97 not allowed "
	    "\xc2\xb7 10.0.0.1:8080 \xe2\x9c\x97 does not resolve");
	free(s);
	s = netlog_summary(v, 5, 1, NETLOG_MODEL);
	cr_assert_str_eq(s, "network: index.example.invalid:443 2x allowed (2.1 MiB down, "
	    "2 KiB up); evil.example.invalid:443 refused (not allowed); "
	    "10.0.0.1:8080 failed (does not resolve)");
	free(s);
	s = netlog_summary(v, 5, 1, NETLOG_ASCII);
	cr_assert_str_eq(s, "index.example.invalid 2x ok 2.1 MiB down 2 KiB up - "
	    "evil.example.invalid refused not allowed - 10.0.0.1:8080 failed does not resolve");
	free(s);
	cr_assert_null(netlog_summary(v, 5, 3, NETLOG_UTF8));
}

Test(netlog, summary_bounded_to_eight_items)
{
	struct net_attempt v[20];
	char host[32], *s;

	for (int i = 0; i < 20; i++) {
		snprintf(host, sizeof host, "h%d.example.invalid", i);
		v[i] = att(1, host, 443, NETLOG_REFUSED, "not allowed", 0, 0);
	}
	s = netlog_summary(v, 20, 1, NETLOG_MODEL);
	cr_assert(strstr(s, "h7.example.invalid") != NULL);
	cr_assert(strstr(s, "h8.example.invalid") == NULL);
	cr_assert(strstr(s, "; and 12 more") != NULL, "%s", s);
	free(s);
}

Test(netlog, json_both_ways)
{
	struct net_attempt a = att(2, "evil.example.invalid", 80, NETLOG_REFUSED,
	    "not allowed", 0, 0), b;
	cJSON *o = cJSON_CreateObject();

	strcpy(a.method, "GET");
	a.time_ms = 1795956977468;
	netlog_json_add(o, &a);
	cr_assert_eq(netlog_parse(o, &b), 0);
	cr_assert_eq(memcmp(&a, &b, sizeof a), 0);
	cJSON_ReplaceItemInObject(o, "verdict", cJSON_CreateString("maybe"));
	cr_assert_eq(netlog_parse(o, &b), -1);
	cJSON_DeleteItemFromObject(o, "verdict");
	cr_assert_eq(netlog_parse(o, &b), -1);
	cJSON_Delete(o);
	/* numbers out of range read as 0, not as garbage */
	o = cJSON_Parse("{\"host\":\"x\",\"verdict\":\"allowed\",\"port\":1e12,"
	    "\"up\":-5,\"cell\":\"3\"}");
	cr_assert_eq(netlog_parse(o, &b), 0);
	cr_assert_eq(b.port, 0);
	cr_assert_eq(b.up, 0);
	cr_assert_eq(b.cell, 0);
	cJSON_Delete(o);
}

/* A flood: 20,000 refused attempts to 10,000 distinct hosts (each twice,
 * interleaved) and some to another cell. Grouped as before, and in one
 * pass (the pairing loop this replaced took seconds on this input; the
 * figure is in the commit, not asserted). */
Test(netlog, summary_of_a_flood_to_distinct_hosts)
{
	size_t n = 20000;
	struct net_attempt *v = calloc(n, sizeof *v);
	char h[64], *s;

	for (size_t i = 0; i < n; i++) {
		snprintf(h, sizeof h, "h%zu.example.invalid", (i % 10000));
		v[i] = att(i % 7 == 0 ? 2 : 1, h, 443, NETLOG_REFUSED, "not allowed", 0, 0);
	}
	s = netlog_summary(v, n, 1, NETLOG_ASCII);
	cr_assert(strncmp(s, "h1.example.invalid 2x refused not allowed - ", 44) == 0, "%s", s);
	/* cell 1 holds every host (i and i + 10000 are never both cell 2) */
	cr_assert(strstr(s, " and 9992 more") != NULL, "%s", s);
	free(s);
	free(v);
}

/* A sum kept as attempts come reads as the summary of what it holds,
 * also after an attempt's updates (bytes moved, ended) and removals. */
Test(netlog, sum_kept_incrementally_reads_as_the_summary)
{
	struct net_attempt v[] = {
		att(1, "index.example.invalid", 443, NETLOG_ALLOWED, "", 1000, 1048576),
		att(1, "index.example.invalid", 443, NETLOG_ALLOWED, "", 1048, 1153434),
		att(1, "evil.example.invalid", 443, NETLOG_REFUSED, "not allowed", 0, 0),
		att(1, "10.0.0.1", 8080, NETLOG_FAILED, "does not resolve", 0, 0),
	};
	struct net_attempt open = v[1];
	struct netlog_sum *s = netlog_sum_new();
	char *t;

	cr_assert_null(netlog_sum_text(s, NETLOG_UTF8));
	cr_assert_null(netlog_sum_text(NULL, NETLOG_UTF8));
	/* the second download first seen open with nothing moved yet */
	open.open = 1;
	open.up = open.down = 0;
	netlog_sum_add(s, &v[0]);
	netlog_sum_add(s, &open);
	netlog_sum_add(s, &v[2]);
	t = netlog_sum_text(s, NETLOG_ASCII);
	cr_assert_str_eq(t, "index.example.invalid 2x ok 1 MiB down 1000 B up (open) - "
	    "evil.example.invalid refused not allowed");
	free(t);
	netlog_sum_remove(s, &open);
	netlog_sum_add(s, &v[1]);
	netlog_sum_add(s, &v[3]);
	t = netlog_sum_text(s, NETLOG_ASCII);
	cr_assert_str_eq(t, "index.example.invalid 2x ok 2.1 MiB down 2 KiB up - "
	    "evil.example.invalid refused not allowed - 10.0.0.1:8080 failed does not resolve");
	free(t);
	cr_assert_eq(s->attempts, 4);
	cr_assert_eq(s->bad, 2);
	cr_assert_eq(s->up, 2048);
	/* every change moves gen; taking out what was never in does not */
	uint64_t g = s->gen;
	netlog_sum_remove(s, &v[2]);
	cr_assert_gt(s->gen, g);
	g = s->gen;
	netlog_sum_remove(s, &v[2]);
	cr_assert_eq(s->gen, g);
	t = netlog_sum_text(s, NETLOG_MODEL);
	cr_assert_str_eq(t, "network: index.example.invalid:443 2x allowed (2.1 MiB down, "
	    "2 KiB up); 10.0.0.1:8080 failed (does not resolve)");
	free(t);
	netlog_sum_free(s);
}

/* 20,000 distinct hosts: every group found again by its hash (the table
 * grows), the items bounded, the count of the rest exact. */
Test(netlog, sum_of_a_flood_of_distinct_hosts)
{
	struct netlog_sum *s = netlog_sum_new();
	char h[64], *t;

	for (int i = 0; i < 20000; i++) {
		snprintf(h, sizeof h, "h%d.example.invalid", i);
		struct net_attempt a = att(1, h, 443, NETLOG_REFUSED, "not allowed", 0, 0);
		netlog_sum_add(s, &a);
		netlog_sum_add(s, &a);
	}
	t = netlog_sum_text(s, NETLOG_ASCII);
	cr_assert(strncmp(t, "h0.example.invalid 2x refused not allowed - ", 44) == 0, "%s", t);
	cr_assert(strstr(t, " and 19992 more") != NULL, "%s", t);
	cr_assert_eq(s->attempts, 40000);
	free(t);
	netlog_sum_free(s);
}
