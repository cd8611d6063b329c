/* Unit tests for the egress proxy's address policy: which addresses a
 * name may resolve to (egress_addr_class). The proxy itself is tested
 * through tests/integration/test_egress.py. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/egress.h"

static const char *
cls(const char *text)
{
	struct sockaddr_in s4;
	struct sockaddr_in6 s6;

	memset(&s4, 0, sizeof s4);
	memset(&s6, 0, sizeof s6);
	if (inet_pton(AF_INET, text, &s4.sin_addr) == 1) {
		s4.sin_family = AF_INET;
		return egress_addr_class((struct sockaddr *)&s4);
	}
	cr_assert_eq(inet_pton(AF_INET6, text, &s6.sin6_addr), 1, "%s", text);
	s6.sin6_family = AF_INET6;
	return egress_addr_class((struct sockaddr *)&s6);
}

static void
expect(const char *text, const char *want)
{
	const char *got = cls(text);

	if (want == NULL)
		cr_expect_null(got, "%s: got %s, want public", text, got);
	else
		cr_expect(got != NULL && strcmp(got, want) == 0,
		    "%s: got %s, want %s", text, got ? got : "public", want);
}

Test(egress, ipv4_ranges)
{
	expect("0.0.0.0", "unspecified");
	expect("0.1.2.3", "unspecified");
	expect("10.0.0.1", "private");
	expect("172.16.0.1", "private");
	expect("172.31.255.255", "private");
	expect("172.32.0.1", NULL);
	expect("192.168.1.1", "private");
	expect("100.64.0.1", "cgnat");
	expect("100.127.255.255", "cgnat");
	expect("100.128.0.1", NULL);
	expect("127.0.0.1", "loopback");
	expect("127.255.0.9", "loopback");
	expect("169.254.169.254", "metadata");
	expect("169.254.1.1", "link-local");
	expect("224.0.0.1", "multicast");
	expect("239.255.255.250", "multicast");
	expect("240.0.0.1", "reserved");
	expect("255.255.255.255", "reserved");
	expect("192.0.2.1", "reserved");
	expect("198.18.0.1", "reserved");
	expect("203.0.113.7", "reserved");
	expect("8.8.4.4", NULL);
	expect("1.1.1.1", NULL);
	expect("11.0.0.1", NULL);
}

Test(egress, ipv6_ranges)
{
	expect("::", "unspecified");
	expect("::1", "loopback");
	expect("fe80::1", "link-local");
	expect("febf::1", "link-local");
	expect("fec0::1", "private");
	expect("fc00::1", "private");
	expect("fdff::1", "private");
	expect("fd00:ec2::254", "metadata");
	expect("ff02::1", "multicast");
	expect("2001:db8::1", "reserved");
	expect("2001:0:4136:e378::1", "reserved");	/* Teredo */
	expect("100::1", "reserved");
	expect("2606:4700::1111", NULL);
	expect("2a00:1450::1", NULL);
}

/* The IPv4 inside IPv6 forms are judged by the IPv4 address. */
Test(egress, embedded_ipv4)
{
	expect("::ffff:127.0.0.1", "loopback");
	expect("::ffff:10.1.2.3", "private");
	expect("::ffff:169.254.169.254", "metadata");
	expect("::ffff:8.8.8.8", NULL);
	expect("::127.0.0.1", "loopback");
	expect("::8.8.8.8", "reserved");		/* deprecated form */
	expect("64:ff9b::7f00:1", "loopback");		/* NAT64 of 127.0.0.1 */
	expect("64:ff9b::808:808", NULL);
	expect("64:ff9b:1::1", "private");
	expect("2002:7f00:1::1", "loopback");		/* 6to4 of 127.0.0.1 */
	expect("2002:a9fe:a9fe::1", "metadata");
	expect("2002:808:808::1", NULL);
	expect("::ffff:0:7f00:1", "reserved");
}

Test(egress, other_families)
{
	struct sockaddr sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_family = AF_UNIX;
	cr_expect_str_eq(egress_addr_class(&sa), "reserved");
}

/* The command line's check of --allow-host, and whether the rules cover
 * a host (for the pip index terp offers). */
Test(egress, rule_syntax)
{
	const char *good[] = { "example.invalid", "example.invalid:8080", "*.example.invalid",
		"127.0.0.1", "127.0.0.1:8000", "[::1]:443", "[2001:db8::1]", NULL };
	const char *bad[] = { "", "a b", "example.invalid:0", "example.invalid:70000",
		"127.1", "[::1", "x:y:z:1", NULL };
	char *err = NULL;

	for (int i = 0; good[i]; i++) {
		cr_expect_eq(egress_rule_check(good[i], &err), 0, "%s: %s", good[i], err ? err : "");
		free(err);
		err = NULL;
	}
	for (int i = 0; bad[i]; i++) {
		cr_expect_eq(egress_rule_check(bad[i], &err), -1, "%s accepted", bad[i]);
		cr_expect(err != NULL && strstr(err, "expected HOST") != NULL, "%s: %s",
		    bad[i], err ? err : "(none)");
		free(err);
		err = NULL;
	}
}

Test(egress, rules_cover)
{
	const char *const rules[] = { "idx.example.invalid", "files.example.invalid:8443",
		"*.mirror.example.invalid", "10.0.0.5:3141", "[2001:db8::7]", "not a rule", NULL };

	cr_expect(egress_rules_cover(rules, "idx.example.invalid", 443));
	cr_expect(egress_rules_cover(rules, "IDX.example.invalid", 80));
	cr_expect(!egress_rules_cover(rules, "idx.example.invalid", 8080));
	cr_expect(egress_rules_cover(rules, "files.example.invalid", 8443));
	cr_expect(!egress_rules_cover(rules, "files.example.invalid", 443));
	cr_expect(egress_rules_cover(rules, "a.mirror.example.invalid", 443));
	cr_expect(!egress_rules_cover(rules, "mirror.example.invalid", 443));
	cr_expect(egress_rules_cover(rules, "10.0.0.5", 3141));
	cr_expect(!egress_rules_cover(rules, "10.0.0.5", 443));
	cr_expect(egress_rules_cover(rules, "2001:db8::7", 443));
	cr_expect(!egress_rules_cover(rules, "2001:db8::8", 443));
	cr_expect(!egress_rules_cover(rules, "other.example.invalid", 443));
	cr_expect(!egress_rules_cover(NULL, "idx.example.invalid", 443));
}
