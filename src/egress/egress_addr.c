/* egress_addr: what an address reaches, by its class (loopback,
 * private, metadata...), for the policy's check of resolved answers.
 * Pure. */
#include "terp/egress.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "egress_addr.h"

static const char *
class_v4(uint32_t a)
{
	if ((a >> 24) == 0)
		return "unspecified";
	if ((a >> 24) == 10 || (a & 0xfff00000u) == 0xac100000u ||
	    (a & 0xffff0000u) == 0xc0a80000u)
		return "private";
	if ((a & 0xffc00000u) == 0x64400000u)
		return "cgnat";
	if ((a >> 24) == 127)
		return "loopback";
	if (a == 0xa9fea9feu)		/* 169.254.169.254 */
		return "metadata";
	if ((a & 0xffff0000u) == 0xa9fe0000u)
		return "link-local";
	if ((a >> 28) == 0xe)
		return "multicast";
	if ((a >> 28) == 0xf ||				/* 240/4, broadcast */
	    (a & 0xffffff00u) == 0xc0000000u ||		/* 192.0.0/24 */
	    (a & 0xffffff00u) == 0xc0000200u ||		/* 192.0.2/24 */
	    (a & 0xffffff00u) == 0xc0586300u ||		/* 192.88.99/24 */
	    (a & 0xfffe0000u) == 0xc6120000u ||		/* 198.18/15 */
	    (a & 0xffffff00u) == 0xc6336400u ||		/* 198.51.100/24 */
	    (a & 0xffffff00u) == 0xcb007100u)		/* 203.0.113/24 */
		return "reserved";
	return NULL;
}

static uint32_t
v4_at(const unsigned char *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	    (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

int
egress_addr_zero(const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return 0;
	return 1;
}

static const char *
class_v6(const unsigned char *b)
{
	static const unsigned char nat64[12] = { 0, 0x64, 0xff, 0x9b };
	static const unsigned char md[16] = { 0xfd, 0, 0x0e, 0xc2, [15] = 0x54,
	    [14] = 0x02 };	/* fd00:ec2::254 */
	const char *k;

	if (egress_addr_zero(b, 10) && b[10] == 0xff && b[11] == 0xff)
		return class_v4(v4_at(b + 12));		/* ::ffff:a.b.c.d */
	if (egress_addr_zero(b, 12)) {
		if (egress_addr_zero(b + 12, 3) && b[15] <= 1)
			return b[15] ? "loopback" : "unspecified";
		k = class_v4(v4_at(b + 12));		/* ::a.b.c.d */
		return k ? k : "reserved";
	}
	if (memcmp(b, nat64, 12) == 0)			/* 64:ff9b::/96 */
		return class_v4(v4_at(b + 12));
	if (b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b &&
	    b[4] == 0 && b[5] == 1)			/* 64:ff9b:1::/48 */
		return "private";
	if (b[0] == 0x20 && b[1] == 0x02)		/* 6to4 */
		return class_v4(v4_at(b + 2));
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0)
		return "reserved";			/* Teredo */
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8)
		return "reserved";			/* documentation */
	if (b[0] == 0x01 && egress_addr_zero(b + 1, 7))
		return "reserved";			/* 100::/64 discard */
	if (egress_addr_zero(b, 8) && b[8] == 0xff && b[9] == 0xff)
		return "reserved";			/* ::ffff:0:0/96 SIIT */
	if (memcmp(b, md, 16) == 0)
		return "metadata";
	if ((b[0] & 0xfe) == 0xfc)
		return "private";			/* fc00::/7 */
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return "link-local";			/* fe80::/10 */
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
		return "private";			/* fec0::/10 */
	if (b[0] == 0xff)
		return "multicast";
	return NULL;
}

const char *
egress_addr_class(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
		return class_v4(ntohl(s4->sin_addr.s_addr));
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		return class_v6(s6->sin6_addr.s6_addr);
	}
	return "reserved";
}
