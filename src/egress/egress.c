/* egress: the host-side egress proxy (see egress.h for the picture).
 * Each client connection is a small state machine driven by the loop:
 *
 *   HEAD -> (policy) -> RESOLVE -> CONNECT -> TUNNEL
 *     \________________\___________\_______-> REPLY -> DRAIN -> closed
 *
 * HEAD reads a bounded request head; the policy decides on the name and
 * port alone; RESOLVE asks getaddrinfo_a and filters the answers by
 * address; CONNECT tries the checked addresses in turn; TUNNEL splices
 * bytes both ways through two bounded pipes (safe: every descriptor
 * spliced is one this proxy made, never one a client handed over, so
 * its O_NONBLOCK holds; see CLIENT_RECV); REPLY writes a refusal or
 * failure response; DRAIN reads and drops what the client still sends
 * so that closing does not reset the connection before it read the
 * reply (Apache's lingering close). */
#include "terp/egress.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "terp/buf.h"
#include "terp/util.h"

#define PIPE_SIZE	(256 * 1024)	/* per direction, per tunnel */
#define MAX_ADDRS	8		/* resolved addresses tried */
#define LINGER_MS	2000		/* REPLY + DRAIN, at most */
#define DRAIN_MAX	(256 * 1024)	/* bytes dropped while lingering */
#define PUMP_ROUNDS	8		/* read/write rounds per callback */
#define MAX_LISTEN	4

/* ---- rules ---------------------------------------------------------- */

enum hp_kind { HP_NAME, HP_SUFFIX, HP_ADDR };

/* A parsed HOST[:PORT]: a name, a "*.suffix" (kept as ".suffix") or an
 * address (IPv4-mapped IPv6 folded to IPv4). port 0: none given. */
struct hostport {
	enum hp_kind	 kind;
	char		 name[256];
	int		 family;
	unsigned char	 addr[16];
	unsigned	 port;
};

struct rule {
	struct hostport	 hp;
	struct rule	*next;
};

/* ---- resolution ----------------------------------------------------- */

/* Why getaddrinfo_a: it is in libc since glibc 2.34 (Debian 12 has 2.36:
 * no -lanl, no new package), runs lookups in parallel on glibc's own
 * worker threads, and obeys nsswitch and /etc/hosts exactly as every
 * other program on the host does. c-ares would be a new build dependency
 * (libc-ares-dev is not in terp's package list) with its own idea of
 * name resolution; a home-made resolver thread would serialise lookups.
 *
 * How it meets the single-threaded loop: the completion notification
 * (SIGEV_THREAD) runs on a glibc thread and does nothing but mark the
 * request done under a mutex and write one byte to a socketpair the loop
 * watches; all the work happens in the loop. The wake object is
 * reference counted (the egress and each request in flight hold a
 * reference), so a request abandoned while a lookup runs (the client
 * went away, egress_free) is freed by its own notification, and the
 * write end stays valid until the last request is gone. send() with
 * MSG_NOSIGNAL: no SIGPIPE on a thread terp never sees. */
struct egress_wake {
	pthread_mutex_t	 mu;
	int		 wfd;
	int		 refs;
};

struct resolve {
	struct gaicb		 cb;
	struct addrinfo		 hints;
	char			 name[256];
	struct egress_wake	*wake;
	struct conn		*c;	/* loop thread only */
	int			 notified; /* under wake->mu */
	int			 orphan;   /* under wake->mu */
	struct resolve		*next;	/* egress's pending list, loop thread */
};

/* ---- connections ---------------------------------------------------- */

enum cstate { CS_HEAD, CS_RESOLVE, CS_CONNECT, CS_TUNNEL, CS_REPLY, CS_DRAIN };

/* One direction of a tunnel: bytes are spliced socket -> pipe -> socket
 * and never copied through user space (on loopback that about doubled
 * the throughput of a copying relay). len counts what is in the pipe;
 * full is set when the pipe took less than len suggests it could (its
 * capacity is in pages, and small segments take a page each). */
struct dir {
	int	 pr, pw;
	size_t	 len, cap;
	int	 full;
};

struct conn {
	struct egress	*e;
	struct conn	*prev, *next;
	enum cstate	 st;
	int		 cfd, ufd;
	uint64_t	 id;
	int64_t		 t_wall;
	int		 cell;
	int		 ended;		/* END reported */
	int		 is_connect;
	const char	*doom;		/* END code when the reaper closes it */
	char		 method[17];
	char		 host[256];
	unsigned	 port;
	char		 addr[INET6_ADDRSTRLEN];
	char		*head;		/* HEAD_MAX bytes while in CS_HEAD */
	size_t		 hlen;
	char		*fwd;		/* plain http: the rewritten head */
	size_t		 fwdlen;
	struct hostport	 req;		/* the host asked for */
	struct dir	 c2u, u2c;	/* client -> upstream, upstream -> client */
	char		 rep[1024];	/* CS_REPLY: the response */
	size_t		 rep_off, rep_len;
	int		 c_eof, u_eof, c_shut, u_shut;
	uint64_t	 up, down, rep_up, rep_down;
	struct resolve	*res;
	struct sockaddr_storage addrs[MAX_ADDRS];
	socklen_t	 alens[MAX_ADDRS];
	int		 naddrs, ai, last_errno;
	int64_t		 deadline;	/* monotonic ms */
	uint64_t	 timer;
	int64_t		 timer_at;
	size_t		 drained;
};

struct egress {
	struct loop		*l;
	struct egress_cbs	 cb;
	void			*arg;
	struct rule		*allow, *deny;
	uint64_t		 max_up, committed;	/* committed: sent + queued */
	uint64_t		 sent;
	int			 capped;
	int64_t			 connect_ms, idle_ms, progress_ms;
	int			 max_conns, nconns;
	int			 cell;
	uint64_t		 next_id;
	struct conn		*conns;
	int			 lfd[MAX_LISTEN];
	int			 nlfd;
	char			*sock_path;
	struct egress_wake	*wake;
	int			 wake_rfd;
	struct resolve		*resolves;
	uint64_t		 reap_timer, prog_timer, accept_timer;
	int			 freeing;
};

static void conn_close(struct conn *c);
static void conn_update(struct conn *c);
static void conn_fd_cb(struct loop *l, int fd, int revents, void *arg);
static void resolve_abandon(struct egress *e, struct resolve *r);

/* ---- address classes -------------------------------------------------- */

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

static int
all_zero(const unsigned char *b, size_t n)
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

	if (all_zero(b, 10) && b[10] == 0xff && b[11] == 0xff)
		return class_v4(v4_at(b + 12));		/* ::ffff:a.b.c.d */
	if (all_zero(b, 12)) {
		if (all_zero(b + 12, 3) && b[15] <= 1)
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
	if (b[0] == 0x01 && all_zero(b + 1, 7))
		return "reserved";			/* 100::/64 discard */
	if (all_zero(b, 8) && b[8] == 0xff && b[9] == 0xff)
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
hp_set_v6(struct hostport *hp, const unsigned char *b)
{
	if (all_zero(b, 10) && b[10] == 0xff && b[11] == 0xff) {
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
hp_unspecified(const struct hostport *hp)
{
	if (hp->kind != HP_ADDR)
		return 0;
	if (hp->family == AF_INET)
		return hp->addr[0] == 0;
	return all_zero(hp->addr, 16);
}

/* What an unspecified address reaches: the loopback of its family. */
static void
hp_to_loopback(struct hostport *hp)
{
	memset(hp->addr, 0, sizeof hp->addr);
	if (hp->family == AF_INET) {
		hp->addr[0] = 127;
		hp->addr[3] = 1;
	} else {
		hp->addr[15] = 1;
	}
}

static int hp_parse_raw(const char *s, size_t n, struct hostport *hp, int rule,
    const char **why);

/* Parses s[0..n) as HOST[:PORT]. rule: "*.x" allowed, odd numeric forms
 * refused (a request's odd numeric host is taken as the address
 * inet_aton sees in it, so it meets the address rules, not the names).
 * An unspecified address is what it reaches, loopback: a request for
 * 0.0.0.0 is checked as one for 127.0.0.1 (so only a loopback address
 * allowed by itself lets it through), and a rule naming it is refused.
 * Returns 0, or -1 with *why set to a static phrase. */
static int
hp_parse(const char *s, size_t n, struct hostport *hp, int rule,
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
hp_parse_raw(const char *s, size_t n, struct hostport *hp, int rule,
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
		hp->kind = HP_ADDR;
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
		hp->kind = HP_ADDR;
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
		hp->kind = HP_ADDR;
		hp->family = AF_INET;
		memcpy(hp->addr, &a4, 4);
		return 0;
	}
	if (hn > 2 && tmp[0] == '*' && tmp[1] == '.') {
		if (!rule) {
			*why = "bad host name";
			return -1;
		}
		hp->kind = HP_SUFFIX;
		hp->name[0] = '.';
		if (name_norm(tmp + 2, hn - 2, hp->name + 1) < 0) {
			*why = "bad host name";
			return -1;
		}
		return 0;
	}
	hp->kind = HP_NAME;
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
	hp->kind = HP_ADDR;
	hp_set_v6(hp, a6.s6_addr);
	return 0;
}

static void
hp_addr_text(const struct hostport *hp, char *out, size_t len)
{
	if (inet_ntop(hp->family, hp->addr, out, (socklen_t)len) == NULL)
		snprintf(out, len, "?");
}

/* Does rule pattern r name host hp (ignoring ports)? */
static int
hp_names(const struct hostport *r, const struct hostport *hp)
{
	size_t rl, hl;

	if (r->kind == HP_ADDR || hp->kind == HP_ADDR)
		return r->kind == HP_ADDR && hp->kind == HP_ADDR &&
		    r->family == hp->family &&
		    memcmp(r->addr, hp->addr, r->family == AF_INET ? 4 : 16) == 0;
	if (r->kind == HP_NAME)
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
hp_same(const struct hostport *a, const struct hostport *b)
{
	return a->kind == b->kind && hp_names(a, b);
}

/* 1 allowed, 0 named on other ports only, -1 not named. */
static int
rules_allow(const struct rule *list, const struct hostport *hp, unsigned port)
{
	int named = 0;

	for (const struct rule *r = list; r != NULL; r = r->next) {
		if (!hp_names(&r->hp, hp))
			continue;
		if (allow_port(r->hp.port, port))
			return 1;
		named = 1;
	}
	return named ? 0 : -1;
}

static int
rules_deny(const struct rule *list, const struct hostport *hp, unsigned port)
{
	for (const struct rule *r = list; r != NULL; r = r->next)
		if (hp_names(&r->hp, hp) && (r->hp.port == 0 || r->hp.port == port))
			return 1;
	return 0;
}

static void
rules_free(struct rule *r)
{
	while (r != NULL) {
		struct rule *n = r->next;
		free(r);
		r = n;
	}
}

/* An address a name resolved to, as the rules see it (an unspecified
 * one as the loopback it reaches, see hp_parse). */
static void
hp_from_sa(struct hostport *hp, const struct sockaddr *sa)
{
	memset(hp, 0, sizeof *hp);
	hp->kind = HP_ADDR;
	if (sa->sa_family == AF_INET) {
		hp->family = AF_INET;
		memcpy(hp->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else {
		hp_set_v6(hp, ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr);
	}
	if (hp_unspecified(hp))
		hp_to_loopback(hp);
}

/* ---- buffers, events --------------------------------------------------- */

static int
dir_open(struct dir *d)
{
	int p[2], cap;

	if (d->pr >= 0)
		return 0;
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -1;
	d->pr = p[0];
	d->pw = p[1];
	/* Bigger than the default 64 KiB where the user's pipe budget
	 * allows; the capacity actually granted bounds what is read. */
	(void)fcntl(d->pw, F_SETPIPE_SZ, PIPE_SIZE);
	cap = fcntl(d->pw, F_GETPIPE_SZ);
	d->cap = cap > 0 ? (size_t)cap : 4096;
	return 0;
}

static void
dir_close(struct dir *d)
{
	if (d->pr >= 0) {
		close(d->pr);
		close(d->pw);
	}
	d->pr = d->pw = -1;
	d->len = 0;
	d->full = 0;
}

/* Queues our own bytes (a head, early data, the 200 line) into an empty
 * pipe: they are small, and the pipe holds at least 16 pages. */
static int
dir_add(struct dir *d, const void *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(d->pw, p, n);
		if (w <= 0)
			return -1;
		d->len += (size_t)w;
		p = (const char *)p + w;
		n -= (size_t)w;
	}
	return 0;
}

static void
emit(struct conn *c, enum egress_phase ph, enum egress_verdict v,
    const char *code, const char *reason)
{
	struct egress_event ev;

	if (ph == EGRESS_EV_END) {
		if (c->ended)
			return;
		c->ended = 1;
	}
	if (c->id == 0)
		c->id = ++c->e->next_id;	/* numbered when first reported */
	memset(&ev, 0, sizeof ev);
	ev.phase = ph;
	ev.verdict = v;
	ev.id = c->id;
	ev.time_ms = c->t_wall;
	ev.cell = c->cell;
	ev.method = c->method;
	ev.host = c->host;
	ev.port = c->port;
	ev.addr = c->addr;
	ev.code = code;
	ev.reason = reason;
	ev.up = c->up;
	ev.down = c->down;
	c->rep_up = c->up;
	c->rep_down = c->down;
	if (c->e->cb.event != NULL)
		c->e->cb.event(c->e->arg, &ev);
}

/* ---- timers ---------------------------------------------------------- */

static void conn_timeout(struct conn *c);

static void
conn_timer_cb(struct loop *l, void *arg)
{
	struct conn *c = arg;
	int64_t now = now_ms();

	c->timer = 0;
	if (now < c->deadline) {
		c->timer = loop_timer_add(l, c->deadline - now, conn_timer_cb, c);
		c->timer_at = c->deadline;
		return;
	}
	conn_timeout(c);
}

/* The deadline moves freely; the timer is re-armed only when it would
 * fire too late, so the idle timer costs nothing per byte moved. */
static void
conn_deadline(struct conn *c, int64_t ms)
{
	c->deadline = now_ms() + ms;
	if (c->timer != 0 && c->timer_at <= c->deadline)
		return;
	loop_timer_cancel(c->e->l, c->timer);
	c->timer = loop_timer_add(c->e->l, ms, conn_timer_cb, c);
	c->timer_at = c->deadline;
}

static void
prog_cb(struct loop *l, void *arg)
{
	struct egress *e = arg;
	int tunnels = 0;

	e->prog_timer = 0;
	for (struct conn *c = e->conns; c != NULL; c = c->next) {
		if (c->st != CS_TUNNEL || c->doom != NULL)
			continue;
		tunnels++;
		if (c->up != c->rep_up || c->down != c->rep_down)
			emit(c, EGRESS_EV_PROGRESS, EGRESS_ALLOWED, "ok", "open");
	}
	if (tunnels > 0 && e->prog_timer == 0)
		e->prog_timer = loop_timer_add(l, e->progress_ms, prog_cb, e);
}

static void
prog_arm(struct egress *e)
{
	if (e->progress_ms > 0 && e->prog_timer == 0)
		e->prog_timer = loop_timer_add(e->l, e->progress_ms, prog_cb, e);
}

/* ---- replies --------------------------------------------------------- */

static const char *
status_text(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

static int
reply_format(char *out, size_t len, int status, const char *code,
    const char *body)
{
	int n = snprintf(out, len,
	    "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n"
	    "X-Terp-Egress: %s\r\n\r\nterp egress: %s\n",
	    status, status_text(status), strlen(body) + 13, code, body);
	return n < 0 || (size_t)n >= len ? -1 : n;
}

/* Ends the attempt with a response of its own: status, the ledger's code
 * and short reason, and a sentence for the body. The connection lingers
 * in REPLY/DRAIN without further events. */
static void
conn_reply(struct conn *c, int status, enum egress_verdict v,
    const char *code, const char *reason, const char *body)
{
	int n;

	emit(c, EGRESS_EV_END, v, code, reason);
	c->doom = NULL;		/* a deny from the callback: already ended */
	if (c->res != NULL)
		resolve_abandon(c->e, c->res);
	if (c->ufd >= 0) {
		loop_unwatch(c->e->l, c->ufd);
		close(c->ufd);
		c->ufd = -1;
	}
	c->e->committed -= c->c2u.len;
	dir_close(&c->c2u);
	dir_close(&c->u2c);
	free(c->head);
	c->head = NULL;
	c->st = CS_REPLY;
	n = reply_format(c->rep, sizeof c->rep, status, code, body);
	c->rep_off = 0;
	c->rep_len = n > 0 ? (size_t)n : 0;
	conn_deadline(c, LINGER_MS);
	conn_update(c);
}

/* ---- resolution ------------------------------------------------------ */

static void
wake_unref(struct egress_wake *w)
{
	int last;

	pthread_mutex_lock(&w->mu);
	last = --w->refs == 0;
	pthread_mutex_unlock(&w->mu);
	if (last) {
		close(w->wfd);
		pthread_mutex_destroy(&w->mu);
		free(w);
	}
}

static void
resolve_free(struct resolve *r)
{
	if (r->cb.ar_result != NULL)
		freeaddrinfo(r->cb.ar_result);
	wake_unref(r->wake);
	free(r);
}

/* Runs on a glibc thread: no loop, no conn, only the mutex and a byte. */
static void
resolve_notify(union sigval v)
{
	struct resolve *r = v.sival_ptr;
	struct egress_wake *w = r->wake;
	int orphan;

	pthread_mutex_lock(&w->mu);
	r->notified = 1;
	orphan = r->orphan;
	if (!orphan && send(w->wfd, "r", 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* full: the bytes already there wake the loop */
	}
	pthread_mutex_unlock(&w->mu);
	/* Not orphaned: the loop owns r from the unlock on; don't touch it. */
	if (orphan)
		resolve_free(r);
}

/* Gives up on r (its connection is going away). A lookup not yet started
 * is cancelled and freed here; a running or finished one whose
 * notification has not run yet is left to that notification to free. */
static void
resolve_abandon(struct egress *e, struct resolve *r)
{
	struct resolve **pp;
	int free_now;

	for (pp = &e->resolves; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	if (r->c != NULL)
		r->c->res = NULL;
	r->c = NULL;
	if (gai_cancel(&r->cb) == EAI_CANCELED) {
		resolve_free(r);
		return;
	}
	pthread_mutex_lock(&r->wake->mu);
	free_now = r->notified;
	if (!free_now)
		r->orphan = 1;
	pthread_mutex_unlock(&r->wake->mu);
	if (free_now)
		resolve_free(r);
}

static void conn_resolved(struct conn *c, struct resolve *r);

static void
wake_cb(struct loop *l, int fd, int revents, void *arg)
{
	struct egress *e = arg;
	struct resolve *done = NULL, **pp, *r;
	char junk[64];

	while (recv(fd, junk, sizeof junk, MSG_DONTWAIT) > 0)
		;
	pthread_mutex_lock(&e->wake->mu);
	for (pp = &e->resolves; (r = *pp) != NULL;) {
		if (r->notified) {
			*pp = r->next;
			r->next = done;
			done = r;
		} else {
			pp = &r->next;
		}
	}
	pthread_mutex_unlock(&e->wake->mu);
	while ((r = done) != NULL) {
		done = r->next;
		if (r->c != NULL) {
			r->c->res = NULL;
			conn_resolved(r->c, r);
		}
		resolve_free(r);
	}
}

static void conn_connect_next(struct conn *c);

static void
resolve_start(struct conn *c)
{
	struct egress *e = c->e;
	struct resolve *r = xcalloc(1, sizeof *r);
	struct gaicb *list[1] = { &r->cb };
	struct sigevent sev;
	int rc;

	snprintf(r->name, sizeof r->name, "%s", c->host);
	r->hints.ai_family = AF_UNSPEC;
	r->hints.ai_socktype = SOCK_STREAM;
	r->hints.ai_protocol = IPPROTO_TCP;
	/* No AI_ADDRCONFIG: the policy must see every answer. */
	r->cb.ar_name = r->name;
	r->cb.ar_request = &r->hints;
	r->wake = e->wake;
	r->c = c;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD;
	sev.sigev_notify_function = resolve_notify;
	sev.sigev_value.sival_ptr = r;
	pthread_mutex_lock(&e->wake->mu);
	e->wake->refs++;
	pthread_mutex_unlock(&e->wake->mu);
	rc = getaddrinfo_a(GAI_NOWAIT, list, 1, &sev);
	if (rc != 0) {
		/* glibc may have queued the lookup and then failed to set up
		 * its notification: then r must stay alive (leaked) while the
		 * lookup writes into it. */
		if (gai_cancel(&r->cb) != EAI_NOTCANCELED)
			resolve_free(r);
		conn_reply(c, 502, EGRESS_FAILED, "no-resolve",
		    "resolver unavailable", gai_strerror(rc));
		return;
	}
	r->next = e->resolves;
	e->resolves = r;
	c->res = r;
	c->st = CS_RESOLVE;
	conn_update(c);
}

static const char *
class_phrase(const char *k)
{
	return strcmp(k, "metadata") == 0 ? "cloud metadata" : k;
}

static void
sa_text(const struct sockaddr *sa, char *out, size_t len)
{
	const void *a = sa->sa_family == AF_INET ?
	    (const void *)&((const struct sockaddr_in *)sa)->sin_addr :
	    (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;

	if (inet_ntop(sa->sa_family, a, out, (socklen_t)len) == NULL)
		snprintf(out, len, "?");
}

/* Keeps the answers the policy lets through (public unicast, or an
 * address allowed by itself for this port, and none denied) and connects
 * to those exact addresses: nothing is resolved twice. */
static void
conn_resolved(struct conn *c, struct resolve *r)
{
	struct egress *e = c->e;
	int rc = gai_error(&r->cb);
	const char *bad = NULL;
	char badaddr[INET6_ADDRSTRLEN] = "", reason[160], body[600];

	if (rc != 0) {
		snprintf(body, sizeof body, "%s does not resolve (%s)", c->host,
		    gai_strerror(rc));
		conn_reply(c, 502, EGRESS_FAILED, "no-resolve",
		    "does not resolve", body);
		return;
	}
	c->naddrs = 0;
	for (struct addrinfo *ai = r->cb.ar_result; ai != NULL; ai = ai->ai_next) {
		struct hostport hp;
		const char *k;
		int dup = 0;

		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    ai->ai_addrlen > sizeof c->addrs[0])
			continue;
		hp_from_sa(&hp, ai->ai_addr);
		k = egress_addr_class(ai->ai_addr);
		if (rules_deny(e->deny, &hp, c->port))
			k = "denied";
		else if (k != NULL && rules_allow(e->allow, &hp, c->port) == 1)
			k = NULL;
		if (k != NULL) {
			if (bad == NULL) {
				bad = k;
				sa_text(ai->ai_addr, badaddr, sizeof badaddr);
			}
			continue;
		}
		for (int i = 0; i < c->naddrs; i++)
			if (c->alens[i] == ai->ai_addrlen &&
			    memcmp(&c->addrs[i], ai->ai_addr, ai->ai_addrlen) == 0)
				dup = 1;
		if (dup || c->naddrs == MAX_ADDRS)
			continue;
		memcpy(&c->addrs[c->naddrs], ai->ai_addr, ai->ai_addrlen);
		if (ai->ai_family == AF_INET)
			((struct sockaddr_in *)&c->addrs[c->naddrs])->sin_port =
			    htons((uint16_t)c->port);
		else
			((struct sockaddr_in6 *)&c->addrs[c->naddrs])->sin6_port =
			    htons((uint16_t)c->port);
		c->alens[c->naddrs++] = ai->ai_addrlen;
	}
	if (c->naddrs == 0 && bad != NULL) {
		snprintf(reason, sizeof reason, "resolves to %s %s",
		    class_phrase(bad), badaddr);
		snprintf(body, sizeof body, "%s resolves to %s, a %s address; "
		    "only an address allowed by itself may be reached there",
		    c->host, badaddr, class_phrase(bad));
		conn_reply(c, 403, EGRESS_REFUSED, "address", reason, body);
		return;
	}
	if (c->naddrs == 0) {
		snprintf(body, sizeof body, "%s has no IPv4 or IPv6 address",
		    c->host);
		conn_reply(c, 502, EGRESS_FAILED, "no-resolve",
		    "does not resolve", body);
		return;
	}
	c->ai = 0;
	conn_connect_next(c);
}

/* ---- connecting, tunnelling ------------------------------------------- */

static void tunnel_io(struct conn *c);

static void
conn_connect_next(struct conn *c)
{
	char reason[128], body[600];

	while (c->ai < c->naddrs) {
		struct sockaddr *sa = (struct sockaddr *)&c->addrs[c->ai];
		socklen_t len = c->alens[c->ai++];
		int fd = socket(sa->sa_family,
		    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (fd < 0) {
			c->last_errno = errno;
			continue;
		}
		sa_text(sa, c->addr, sizeof c->addr);
		if (connect(fd, sa, len) == 0 || errno == EINPROGRESS) {
			c->ufd = fd;
			c->st = CS_CONNECT;
			conn_update(c);
			return;
		}
		c->last_errno = errno;
		close(fd);
	}
	snprintf(reason, sizeof reason, "%s", strerror(c->last_errno));
	reason[0] = (char)tolower((unsigned char)reason[0]);
	snprintf(body, sizeof body, "could not connect to %s port %u (%s): %s",
	    c->host, c->port, c->addr, reason);
	conn_reply(c, 502, EGRESS_FAILED, "connect", reason, body);
}

static void
conn_connected(struct conn *c)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	int err = 0, one = 1;
	socklen_t el = sizeof err;

	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
		err = errno;
	if (err == EINPROGRESS)
		return;		/* a spurious wake-up */
	if (err != 0) {
		loop_unwatch(c->e->l, c->ufd);
		close(c->ufd);
		c->ufd = -1;
		c->last_errno = err;
		conn_connect_next(c);
		return;
	}
	/* The proxy relays what it gets at once; Nagle would hold small
	 * writes back for a delayed ACK. */
	setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (dir_open(&c->u2c) < 0 || (c->is_connect &&
	    dir_add(&c->u2c, ok, sizeof ok - 1) < 0)) {
		conn_reply(c, 503, EGRESS_FAILED, "connect", "out of file "
		    "descriptors", "the proxy is out of file descriptors");
		return;
	}
	c->st = CS_TUNNEL;
	emit(c, EGRESS_EV_OPEN, EGRESS_ALLOWED, "ok", "open");
	if (c->doom != NULL)
		return;		/* the ledger callback denied it */
	conn_deadline(c, c->e->idle_ms);
	prog_arm(c->e);
	tunnel_io(c);
}

static void
conn_end(struct conn *c, const char *code, const char *reason)
{
	emit(c, EGRESS_EV_END, EGRESS_ALLOWED, code, reason);
	conn_close(c);
}

static const char *
end_reason(const char *code)
{
	if (strcmp(code, "cap") == 0)
		return "egress cap reached";
	if (strcmp(code, "denied") == 0)
		return "denied";
	if (strcmp(code, "idle") == 0)
		return "idle timeout";
	return code;
}

static void
reap_cb(struct loop *l, void *arg)
{
	struct egress *e = arg;
	struct conn *c, *next;

	e->reap_timer = 0;
	for (c = e->conns; c != NULL; c = next) {
		const char *code = c->doom;
		char body[400];

		next = c->next;
		if (code == NULL)
			continue;
		c->doom = NULL;
		if (c->st == CS_TUNNEL) {
			conn_end(c, code, end_reason(code));
			continue;
		}
		if (strcmp(code, "cap") == 0)
			snprintf(body, sizeof body, "the session's egress cap was "
			    "reached (--egress-max)");
		else
			snprintf(body, sizeof body, "%s was denied", c->host);
		conn_reply(c, 403, EGRESS_REFUSED, code, end_reason(code), body);
	}
}

/* Marks an open or opening attempt to be closed by the reaper, which
 * runs from its own timer: the caller may be deep inside another
 * connection's callback (or the ledger callback), where freeing a
 * connection would pull the floor from under it. */
static void
conn_doom(struct conn *c, const char *code)
{
	struct egress *e = c->e;

	if (c->doom != NULL || c->ended || e->freeing || (c->st != CS_TUNNEL &&
	    c->st != CS_CONNECT && c->st != CS_RESOLVE))
		return;
	c->doom = code;
	conn_update(c);
	if (e->reap_timer == 0)
		e->reap_timer = loop_timer_add(e->l, 0, reap_cb, e);
}

static void
cap_hit(struct egress *e)
{
	e->capped = 1;
	for (struct conn *c = e->conns; c != NULL; c = c->next)
		conn_doom(c, "cap");
}

/* 1: moved bytes or saw EOF; 0: nothing now; -1: a socket error. */
static int
io_read(struct conn *c, int fd, struct dir *d, int *eof, int client)
{
	struct egress *e = c->e;
	uint64_t left = UINT64_MAX;
	size_t want;
	ssize_t n;

	if (*eof || d->full || d->len >= d->cap)
		return 0;
	want = d->cap - d->len;
	if (client && e->max_up != UINT64_MAX) {
		left = e->max_up > e->committed ? e->max_up - e->committed : 0;
		if (left < want)
			want = (size_t)left + 1;	/* one more tells an overrun */
	}
	n = splice(fd, NULL, d->pw, NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n > 0) {
		if (client) {
			if ((uint64_t)n > left) {
				cap_hit(e);
				return 0;
			}
			e->committed += (uint64_t)n;
		} else {
			c->down += (uint64_t)n;
		}
		d->len += (size_t)n;
		return 1;
	}
	if (n == 0) {
		*eof = 1;
		return 1;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
		/* Either the socket is dry or the pipe's pages are used up;
		 * while the pipe holds data, wait for it to drain either way
		 * (else a full pipe and a readable socket spin the loop). */
		if (d->len > 0)
			d->full = 1;
		return 0;
	}
	return -1;
}

/* splice(2) has no MSG_NOSIGNAL: a peer gone gives EPIPE and SIGPIPE,
 * which egress_new makes sure is ignored. */
static int
io_write(struct conn *c, int fd, struct dir *d, int client)
{
	ssize_t n;

	if (d->len == 0)
		return 0;
	n = splice(d->pr, NULL, fd, NULL, d->len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n > 0) {
		d->len -= (size_t)n;
		d->full = 0;
		if (!client) {
			c->up += (uint64_t)n;
			c->e->sent += (uint64_t)n;
		}
		return 1;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	return -1;
}

/* Moves what can move now, a few rounds at most (fairness), then
 * half-closes each side whose peer has finished and whose buffer is
 * empty. Full buffers stop the reading side (conn_update): backpressure. */
static void
tunnel_io(struct conn *c)
{
	int any = 0;

	for (int i = 0; i < PUMP_ROUNDS; i++) {
		int moved = 0, r;

		r = io_read(c, c->cfd, &c->c2u, &c->c_eof, 1);
		if (c->doom != NULL)
			return;
		if (r < 0)
			goto client_gone;
		moved |= r;
		if ((r = io_write(c, c->ufd, &c->c2u, 0)) < 0)
			goto upstream_gone;
		moved |= r;
		if ((r = io_read(c, c->ufd, &c->u2c, &c->u_eof, 0)) < 0)
			goto upstream_gone;
		moved |= r;
		if ((r = io_write(c, c->cfd, &c->u2c, 1)) < 0)
			goto client_gone;
		moved |= r;
		if (!moved)
			break;
		any = 1;
	}
	if (any)
		c->deadline = now_ms() + c->e->idle_ms;
	if (c->c_eof && c->c2u.len == 0 && !c->u_shut) {
		shutdown(c->ufd, SHUT_WR);
		c->u_shut = 1;
	}
	if (c->u_eof && c->u2c.len == 0 && !c->c_shut) {
		shutdown(c->cfd, SHUT_WR);
		c->c_shut = 1;
	}
	if (c->u_shut && c->c_shut) {
		conn_end(c, "done", "closed");
		return;
	}
	conn_update(c);
	return;
client_gone:
	conn_end(c, "done", "closed");
	return;
upstream_gone:
	conn_end(c, "reset", "upstream reset");
}

static void
conn_update(struct conn *c)
{
	int cev = 0, uev = 0;

	switch (c->st) {
	case CS_HEAD:
	case CS_DRAIN:
		cev = POLLIN;
		break;
	case CS_RESOLVE:
		break;
	case CS_CONNECT:
		uev = POLLOUT;
		break;
	case CS_TUNNEL:
		if (!c->c_eof && !c->c2u.full && c->c2u.len < c->c2u.cap)
			cev |= POLLIN;
		if (c->u2c.len > 0)
			cev |= POLLOUT;
		if (!c->u_eof && !c->u2c.full && c->u2c.len < c->u2c.cap)
			uev |= POLLIN;
		if (c->c2u.len > 0)
			uev |= POLLOUT;
		break;
	case CS_REPLY:
		cev = POLLOUT;
		break;
	}
	if (c->doom != NULL)
		cev = uev = 0;
	loop_watch(c->e->l, c->cfd, cev, conn_fd_cb, c);
	if (c->ufd >= 0)
		loop_watch(c->e->l, c->ufd, uev, conn_fd_cb, c);
}

static void
conn_close(struct conn *c)
{
	struct egress *e = c->e;

	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		e->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	e->nconns--;
	loop_timer_cancel(e->l, c->timer);
	if (c->res != NULL)
		resolve_abandon(e, c->res);
	loop_unwatch(e->l, c->cfd);
	close(c->cfd);
	if (c->ufd >= 0) {
		loop_unwatch(e->l, c->ufd);
		close(c->ufd);
	}
	e->committed -= c->c2u.len;	/* queued, never sent */
	dir_close(&c->c2u);
	dir_close(&c->u2c);
	free(c->head);
	free(c->fwd);
	free(c);
}

/* ---- request heads ----------------------------------------------------- */

/* Where the head ends (past its empty line), or 0 while incomplete. Bare
 * LF line ends are accepted, as most servers do. */
static size_t
head_end(const char *h, size_t from, size_t len)
{
	for (size_t i = from; i < len; i++) {
		if (h[i] != '\n')
			continue;
		if (i + 1 < len && h[i + 1] == '\n')
			return i + 2;
		if (i + 2 < len && h[i + 1] == '\r' && h[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* Hop-by-hop and proxy headers are not forwarded; Host is rebuilt from
 * the URL (RFC 9112 3.2.2: a proxy replaces it). */
static int
header_dropped(const char *name, size_t n)
{
	static const char *const drop[] = { "connection", "proxy-connection",
	    "keep-alive", "proxy-authorization", "proxy-authenticate", "te",
	    "trailer", "upgrade", "host", NULL };

	for (int i = 0; drop[i] != NULL; i++)
		if (strlen(drop[i]) == n && strncasecmp(drop[i], name, n) == 0)
			return 1;
	return 0;
}

static int
is_tchar(unsigned char ch)
{
	return isalnum(ch) || strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

/* Builds the origin-form head for the upstream: request line, Host from
 * the URL, the client's end-to-end headers, Connection: close (one
 * request per connection: a second request on a kept-alive connection
 * could name another host, and would go to this one unchecked). */
static int
fwd_build(struct conn *c, const char *method, const char *path, size_t plen,
    const char *version, const char *hdr, const char *end, const char **why)
{
	struct buf b;
	const char *p = hdr;

	buf_init(&b, EGRESS_HEAD_MAX + 1024);
	buf_printf(&b, "%s ", method);
	if (plen == 0 || path[0] == '?')
		buf_addc(&b, '/');
	buf_add(&b, path, plen);
	buf_printf(&b, " %s\r\nHost: ", version);
	if (c->req.kind == HP_ADDR && c->req.family == AF_INET6)
		buf_printf(&b, "[%s]", c->host);
	else
		buf_adds(&b, c->host);
	if (c->port != 80)
		buf_printf(&b, ":%u", c->port);
	buf_adds(&b, "\r\n");
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol, *colon;
		size_t n;

		if (eol == NULL)
			eol = le = end;
		if (le > p && le[-1] == '\r')
			le--;
		n = (size_t)(le - p);
		if (n == 0)
			break;
		if (p[0] == ' ' || p[0] == '\t') {
			*why = "folded header line";
			goto bad;
		}
		colon = memchr(p, ':', n);
		if (colon == NULL || colon == p) {
			*why = "header line without a name";
			goto bad;
		}
		for (const char *q = p; q < colon; q++)
			if (!is_tchar((unsigned char)*q)) {
				*why = "bad header name";
				goto bad;
			}
		for (const char *q = colon; q < le; q++)
			if (((unsigned char)*q < 0x20 && *q != '\t') || *q == 0x7f) {
				*why = "control character in a header";
				goto bad;
			}
		if (!header_dropped(p, (size_t)(colon - p))) {
			buf_add(&b, p, n);
			buf_adds(&b, "\r\n");
		}
		p = eol + 1;
	}
	if (buf_adds(&b, "Connection: close\r\n\r\n") < 0) {
		*why = "request head too big";
		goto bad;
	}
	c->fwdlen = b.len;
	c->fwd = buf_take(&b);
	return 0;
bad:
	buf_free(&b);
	return -1;
}

/* Parses the request line (and for plain http the headers) of the head
 * c->head[0..end). Fills c->method, c->req, c->host, c->port. */
static int
head_parse(struct conn *c, size_t end, const char **why)
{
	char *h = c->head, *eol, *le, *sp1, *sp2, *target;
	char version[9];
	size_t tlen, mlen;

	*why = "malformed request line";
	eol = memchr(h, '\n', end);
	le = eol;
	if (le > h && le[-1] == '\r')
		le--;
	sp1 = memchr(h, ' ', (size_t)(le - h));
	if (sp1 == NULL)
		return -1;
	mlen = (size_t)(sp1 - h);
	if (mlen == 0 || mlen >= sizeof c->method)
		return -1;
	for (size_t i = 0; i < mlen; i++)
		if (h[i] < 'A' || h[i] > 'Z')
			return -1;
	memcpy(c->method, h, mlen);
	c->method[mlen] = '\0';
	target = sp1 + 1;
	sp2 = memchr(target, ' ', (size_t)(le - target));
	if (sp2 == NULL || sp2 == target || le - sp2 - 1 != 8)
		return -1;
	memcpy(version, sp2 + 1, 8);
	version[8] = '\0';
	if (strcmp(version, "HTTP/1.1") != 0 && strcmp(version, "HTTP/1.0") != 0)
		return -1;
	tlen = (size_t)(sp2 - target);
	for (size_t i = 0; i < tlen; i++)
		if ((unsigned char)target[i] <= 0x20 || target[i] == 0x7f)
			return -1;
	if (strcmp(c->method, "CONNECT") == 0) {
		c->is_connect = 1;
		if (hp_parse(target, tlen, &c->req, 0, why) < 0)
			return -1;
		if (c->req.port == 0) {
			*why = "CONNECT needs host:port";
			return -1;
		}
	} else {
		const char *auth, *rest, *path;
		size_t alen, plen;

		if (tlen >= 8 && strncasecmp(target, "https://", 8) == 0) {
			*why = "https URLs go through CONNECT";
			return -1;
		}
		if (tlen < 7 || strncasecmp(target, "http://", 7) != 0) {
			*why = target[0] == '/' ? "not a proxy request "
			    "(no http:// URL)" : "unsupported URL scheme";
			return -1;
		}
		auth = target + 7;
		rest = auth;
		while (rest < sp2 && *rest != '/' && *rest != '?' && *rest != '#')
			rest++;
		alen = (size_t)(rest - auth);
		if (memchr(auth, '@', alen) != NULL) {
			*why = "credentials in the URL";
			return -1;
		}
		if (hp_parse(auth, alen, &c->req, 0, why) < 0)
			return -1;
		path = rest;
		plen = (size_t)(sp2 - rest);
		for (size_t i = 0; i < plen; i++)
			if (path[i] == '#')
				plen = i;
		if (c->req.port == 0)
			c->req.port = 80;
		c->port = c->req.port;
		if (c->req.kind == HP_ADDR)
			hp_addr_text(&c->req, c->host, sizeof c->host);
		else
			snprintf(c->host, sizeof c->host, "%s", c->req.name);
		*sp2 = '\0';
		return fwd_build(c, c->method, path, plen, version, eol + 1,
		    h + end, why);
	}
	c->port = c->req.port;
	if (c->req.kind == HP_ADDR)
		hp_addr_text(&c->req, c->host, sizeof c->host);
	else
		snprintf(c->host, sizeof c->host, "%s", c->req.name);
	return 0;
}

/* ---- policy ------------------------------------------------------------ */

static int
name_is_invalid(const char *h)
{
	size_t n = strlen(h);

	return strcmp(h, "invalid") == 0 ||
	    (n > 8 && strcmp(h + n - 8, ".invalid") == 0);
}

/* Queues what goes upstream first (the rewritten head, bytes the client
 * sent early) against the cap. Returns 0, -1 over the cap, -2 out of
 * file descriptors. */
static int
conn_stage(struct conn *c, size_t hend)
{
	struct egress *e = c->e;
	size_t early = c->hlen - hend;
	uint64_t n = c->fwdlen + early;

	if (e->max_up != UINT64_MAX && e->committed + n > e->max_up) {
		cap_hit(e);
		return -1;
	}
	if (dir_open(&c->c2u) < 0 || (c->fwd != NULL &&
	    dir_add(&c->c2u, c->fwd, c->fwdlen) < 0) ||
	    dir_add(&c->c2u, c->head + hend, early) < 0) {
		e->committed += c->c2u.len;	/* conn_reply takes it back */
		return -2;
	}
	e->committed += n;
	free(c->fwd);
	c->fwd = NULL;
	free(c->head);
	c->head = NULL;
	return 0;
}

static void
conn_decide(struct conn *c, size_t hend)
{
	struct egress *e = c->e;
	const struct hostport *hp = &c->req;
	char reason[128], body[600];
	int a;

	if (e->capped) {
		snprintf(body, sizeof body, "the session's egress cap was "
		    "reached (--egress-max); nothing more may be sent");
		conn_reply(c, 403, EGRESS_REFUSED, "cap", "egress cap reached",
		    body);
		return;
	}
	if (rules_deny(e->deny, hp, c->port)) {
		snprintf(body, sizeof body, "%s is denied in this session",
		    c->host);
		conn_reply(c, 403, EGRESS_REFUSED, "denied", "denied", body);
		return;
	}
	a = rules_allow(e->allow, hp, c->port);
	if (a == 0) {
		snprintf(reason, sizeof reason, "port %u not allowed", c->port);
		snprintf(body, sizeof body, "%s is allowed on other ports, not "
		    "%u (--allow-host %s%s%s:%u)", c->host, c->port,
		    hp->family == AF_INET6 ? "[" : "", c->host,
		    hp->family == AF_INET6 ? "]" : "", c->port);
		conn_reply(c, 403, EGRESS_REFUSED, "port", reason, body);
		return;
	}
	if (a < 0 && hp->kind == HP_ADDR) {
		snprintf(body, sizeof body, "%s: IP addresses are refused unless "
		    "that address is allowed itself (--allow-host)", c->host);
		conn_reply(c, 403, EGRESS_REFUSED, "ip-literal",
		    "IP address not allowed", body);
		return;
	}
	if (a < 0) {
		snprintf(body, sizeof body, "%s is not allowed "
		    "(--allow-host %s)", c->host, c->host);
		conn_reply(c, 403, EGRESS_REFUSED, "not-allowed", "not allowed",
		    body);
		return;
	}
	if ((a = conn_stage(c, hend)) < 0) {
		if (a == -2)
			conn_reply(c, 503, EGRESS_FAILED, "connect", "out of file "
			    "descriptors", "the proxy is out of file descriptors");
		else
			conn_reply(c, 403, EGRESS_REFUSED, "cap",
			    "egress cap reached", "the session's egress cap was "
			    "reached (--egress-max); nothing more may be sent");
		return;
	}
	if (hp->kind == HP_ADDR) {
		/* Allowed by itself: connect to exactly that address. */
		struct sockaddr_storage *ss = &c->addrs[0];

		memset(ss, 0, sizeof *ss);
		if (hp->family == AF_INET) {
			struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
			s4->sin_family = AF_INET;
			s4->sin_port = htons((uint16_t)c->port);
			memcpy(&s4->sin_addr, hp->addr, 4);
			c->alens[0] = sizeof *s4;
		} else {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
			s6->sin6_family = AF_INET6;
			s6->sin6_port = htons((uint16_t)c->port);
			memcpy(&s6->sin6_addr, hp->addr, 16);
			c->alens[0] = sizeof *s6;
		}
		c->naddrs = 1;
		c->ai = 0;
		conn_connect_next(c);
		return;
	}
	if (name_is_invalid(c->host)) {
		/* RFC 6761 6.4: never sent to a resolver. */
		snprintf(body, sizeof body, "%s does not resolve", c->host);
		conn_reply(c, 502, EGRESS_FAILED, "no-resolve",
		    "does not resolve", body);
		return;
	}
	resolve_start(c);
}

/* The proxy never takes a descriptor from a client. A socket handed
 * over (SCM_RIGHTS) would share its open file description with the
 * sandbox, which keeps a copy: the cell could clear O_NONBLOCK on it,
 * set SO_LINGER for our close, or fill its buffers from its own side,
 * and any of that would block terp's one thread (its timers and
 * signals with it). Every client is therefore a connection accepted
 * here, whose description is ours alone; the in-sandbox forwarder
 * relays bytes (egress_fwd.py). recv() without a control buffer makes
 * the kernel close any descriptor a client sends. Every read and
 * write on a client still says MSG_DONTWAIT: non-blocking per call,
 * whatever the description's flags. */
#define CLIENT_RECV	MSG_DONTWAIT
#define CLIENT_SEND	(MSG_DONTWAIT | MSG_NOSIGNAL)

static void
head_read(struct conn *c)
{
	for (;;) {
		size_t room = EGRESS_HEAD_MAX - c->hlen, from, end;
		const char *why;
		ssize_t n;

		if (room == 0) {
			conn_reply(c, 431, EGRESS_REFUSED, "head-too-big",
			    "request head too big", "the request head is over "
			    "16384 bytes");
			return;
		}
		n = recv(c->cfd, c->head + c->hlen, room, CLIENT_RECV);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR)) {
			conn_close(c);	/* gone before asking: no attempt */
			return;
		}
		if (n < 0)
			return;
		from = c->hlen > 3 ? c->hlen - 3 : 0;
		c->hlen += (size_t)n;
		if ((end = head_end(c->head, from, c->hlen)) == 0)
			continue;
		if (head_parse(c, end, &why) < 0) {
			conn_reply(c, 400, EGRESS_REFUSED, "bad-request",
			    "bad request", why);
			return;
		}
		conn_deadline(c, c->e->connect_ms);
		conn_decide(c, end);
		return;
	}
}

static void
reply_write(struct conn *c)
{
	ssize_t n = send(c->cfd, c->rep + c->rep_off, c->rep_len - c->rep_off,
	    CLIENT_SEND);

	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
		conn_close(c);
		return;
	}
	if (n > 0)
		c->rep_off += (size_t)n;
	if (c->rep_off == c->rep_len) {
		shutdown(c->cfd, SHUT_WR);
		c->st = CS_DRAIN;
	}
	conn_update(c);
}

static void
drain_read(struct conn *c)
{
	char junk[4096];

	for (;;) {
		ssize_t n = recv(c->cfd, junk, sizeof junk, CLIENT_RECV);

		if (n > 0) {
			c->drained += (size_t)n;
			if (c->drained <= DRAIN_MAX)
				continue;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
		    errno == EINTR)) {
			return;
		}
		conn_close(c);
		return;
	}
}

static void
conn_fd_cb(struct loop *l, int fd, int revents, void *arg)
{
	struct conn *c = arg;

	if (c->doom != NULL)
		return;
	switch (c->st) {
	case CS_HEAD:
		head_read(c);
		break;
	case CS_RESOLVE:
		break;
	case CS_CONNECT:
		if (fd == c->ufd)
			conn_connected(c);
		break;
	case CS_TUNNEL:
		tunnel_io(c);
		break;
	case CS_REPLY:
		reply_write(c);
		break;
	case CS_DRAIN:
		drain_read(c);
		break;
	}
}

static void
conn_timeout(struct conn *c)
{
	char body[600];

	switch (c->st) {
	case CS_HEAD:
		if (c->hlen == 0) {
			conn_close(c);
			return;
		}
		conn_reply(c, 408, EGRESS_REFUSED, "head-timeout",
		    "no complete request", "no complete request head in time");
		return;
	case CS_RESOLVE:
	case CS_CONNECT:
		snprintf(body, sizeof body, "no connection to %s port %u within "
		    "%lld ms", c->host, c->port, (long long)c->e->connect_ms);
		conn_reply(c, 504, EGRESS_FAILED, "timeout", "timed out", body);
		return;
	case CS_TUNNEL:
		conn_end(c, "idle", "idle timeout");
		return;
	case CS_REPLY:
	case CS_DRAIN:
		conn_close(c);
		return;
	}
}

/* ---- accepting ----------------------------------------------------------- */

static void
conn_new(struct egress *e, int fd)
{
	struct conn *c = xcalloc(1, sizeof *c);

	c->e = e;
	c->cfd = fd;
	c->ufd = -1;
	c->c2u.pr = c->c2u.pw = c->u2c.pr = c->u2c.pw = -1;
	c->st = CS_HEAD;
	c->head = xmalloc(EGRESS_HEAD_MAX);
	c->t_wall = wall_ms();
	c->cell = e->cell;
	c->next = e->conns;
	if (e->conns != NULL)
		e->conns->prev = c;
	e->conns = c;
	e->nconns++;
	conn_deadline(c, e->connect_ms);
	conn_update(c);
}

/* Over the connection limit: answer 503 at once without a connection
 * state. What the client already sent is read first, so the close does
 * not turn into a reset that hides the answer. */
static void
refuse_busy(struct egress *e, int fd)
{
	struct conn tmp;
	char junk[4096], resp[512];
	int n = reply_format(resp, sizeof resp, 503, "too-many",
	    "too many connections through the egress proxy");

	if (recv(fd, junk, sizeof junk, MSG_DONTWAIT) < 0) {
		/* nothing sent yet */
	}
	if (n > 0 && send(fd, resp, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* the client is gone or not reading: nothing to tell it */
	}
	close(fd);
	memset(&tmp, 0, sizeof tmp);
	tmp.e = e;
	tmp.cell = e->cell;
	tmp.t_wall = wall_ms();
	emit(&tmp, EGRESS_EV_END, EGRESS_REFUSED, "too-many",
	    "too many connections");
}

static void accept_cb(struct loop *l, int fd, int revents, void *arg);

static void
accept_resume(struct loop *l, void *arg)
{
	struct egress *e = arg;

	e->accept_timer = 0;
	for (int i = 0; i < e->nlfd; i++)
		loop_watch(l, e->lfd[i], POLLIN, accept_cb, e);
}

static void
accept_cb(struct loop *l, int fd, int revents, void *arg)
{
	struct egress *e = arg;

	for (int i = 0; i < 16; i++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (cfd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* The pending client keeps the socket readable:
				 * pause instead of spinning the loop. */
				for (int j = 0; j < e->nlfd; j++)
					loop_watch(l, e->lfd[j], 0, accept_cb, e);
				if (e->accept_timer == 0)
					e->accept_timer = loop_timer_add(l, 100,
					    accept_resume, e);
			}
			return;
		}
		if (e->nconns >= e->max_conns)
			refuse_busy(e, cfd);
		else
			conn_new(e, cfd);
	}
}

/* ---- the API ---------------------------------------------------------------- */

static void
set_err(char **err, char *msg)
{
	if (err != NULL)
		*err = msg;
	else
		free(msg);
}

int
egress_listen_fd(struct egress *e, int fd, char **err)
{
	if (e->nlfd == MAX_LISTEN) {
		close(fd);
		set_err(err, xasprintf("egress: too many listening sockets"));
		return -1;
	}
	if (fd_set_nonblock(fd) < 0 || fd_set_cloexec(fd) < 0 ||
	    listen(fd, 128) < 0) {
		set_err(err, xasprintf("egress: listen: %s", strerror(errno)));
		close(fd);
		return -1;
	}
	e->lfd[e->nlfd++] = fd;
	loop_watch(e->l, fd, POLLIN, accept_cb, e);
	return 0;
}

static int
listen_path(struct egress *e, const struct egress_opts *o, char **err)
{
	struct sockaddr_un sun;
	mode_t old;
	int fd, r;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(o->socket_path) >= sizeof sun.sun_path) {
		set_err(err, xasprintf("egress: socket path too long: %s",
		    o->socket_path));
		return -1;
	}
	strcpy(sun.sun_path, o->socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		set_err(err, xasprintf("egress: socket: %s", strerror(errno)));
		return -1;
	}
	/* The socket file is born 0600 (bind has no mode argument). umask
	 * is per process; nothing else in terp creates files meanwhile. */
	old = umask(077);
	r = bind(fd, (struct sockaddr *)&sun, sizeof sun);
	umask(old);
	if (r < 0) {
		set_err(err, xasprintf("egress: %s: %s", o->socket_path,
		    strerror(errno)));
		close(fd);
		return -1;
	}
	e->sock_path = xstrdup(o->socket_path);
	if ((o->socket_uid >= 0 && chown(o->socket_path, (uid_t)o->socket_uid,
	    o->socket_gid >= 0 ? (gid_t)o->socket_gid : (gid_t)-1) < 0) ||
	    chmod(o->socket_path, 0600) < 0) {
		set_err(err, xasprintf("egress: %s: %s", o->socket_path,
		    strerror(errno)));
		close(fd);
		return -1;
	}
	return egress_listen_fd(e, fd, err);
}

struct egress *
egress_new(struct loop *l, const struct egress_opts *o,
    const struct egress_cbs *cb, void *arg, char **err)
{
	struct egress *e = xcalloc(1, sizeof *e);
	struct sigaction sa;
	int sv[2];

	e->l = l;
	if (cb != NULL)
		e->cb = *cb;
	e->arg = arg;
	e->max_up = o->max_up ? o->max_up : EGRESS_MAX_UP_DEFAULT;
	/* The cap is the session's, not one run's: what earlier runs sent
	 * (their journal's ledger) is spent already. */
	e->committed = e->sent = o->sent_before;
	if (e->max_up != UINT64_MAX && e->committed >= e->max_up)
		e->capped = 1;
	e->connect_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms :
	    EGRESS_CONNECT_TIMEOUT_DEFAULT;
	e->idle_ms = o->idle_timeout_ms > 0 ? o->idle_timeout_ms :
	    EGRESS_IDLE_TIMEOUT_DEFAULT;
	e->max_conns = o->max_conns > 0 ? o->max_conns :
	    EGRESS_MAX_CONNS_DEFAULT;
	e->progress_ms = o->progress_ms < 0 ? 0 : o->progress_ms > 0 ?
	    o->progress_ms : EGRESS_PROGRESS_DEFAULT;
	e->wake_rfd = -1;
	if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
		signal(SIGPIPE, SIG_IGN);	/* see io_write */
	for (const char *const *a = o->allow; a != NULL && *a != NULL; a++)
		if (egress_allow(e, *a, err) < 0)
			goto fail;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sv) < 0) {
		set_err(err, xasprintf("egress: socketpair: %s", strerror(errno)));
		goto fail;
	}
	e->wake = xcalloc(1, sizeof *e->wake);
	pthread_mutex_init(&e->wake->mu, NULL);
	e->wake->wfd = sv[1];
	e->wake->refs = 1;
	e->wake_rfd = sv[0];
	loop_watch(l, sv[0], POLLIN, wake_cb, e);
	if (o->socket_path != NULL && listen_path(e, o, err) < 0)
		goto fail;
	return e;
fail:
	egress_free(e);
	return NULL;
}

void
egress_free(struct egress *e)
{
	if (e == NULL)
		return;
	e->freeing = 1;
	while (e->conns != NULL) {
		struct conn *c = e->conns;

		if (c->st == CS_TUNNEL)
			emit(c, EGRESS_EV_END, EGRESS_ALLOWED, "shutdown",
			    "terp stopped");
		else if (c->st == CS_RESOLVE || c->st == CS_CONNECT)
			emit(c, EGRESS_EV_END, EGRESS_FAILED, "shutdown",
			    "terp stopped");
		conn_close(c);
	}
	while (e->resolves != NULL)
		resolve_abandon(e, e->resolves);
	loop_timer_cancel(e->l, e->reap_timer);
	loop_timer_cancel(e->l, e->prog_timer);
	loop_timer_cancel(e->l, e->accept_timer);
	for (int i = 0; i < e->nlfd; i++) {
		loop_unwatch(e->l, e->lfd[i]);
		close(e->lfd[i]);
	}
	if (e->sock_path != NULL) {
		unlink(e->sock_path);
		free(e->sock_path);
	}
	if (e->wake_rfd >= 0) {
		loop_unwatch(e->l, e->wake_rfd);
		close(e->wake_rfd);
	}
	if (e->wake != NULL)
		wake_unref(e->wake);
	rules_free(e->allow);
	rules_free(e->deny);
	free(e);
}

static int
spec_parse(const char *spec, struct hostport *hp, char **err)
{
	const char *why = "missing";

	if (spec == NULL || hp_parse(spec, strlen(spec), hp, 1, &why) < 0) {
		set_err(err, xasprintf("egress: %s: %s (expected HOST, HOST:PORT, "
		    "*.DOMAIN or an address)", spec ? spec : "(null)", why));
		return -1;
	}
	return 0;
}

int
egress_rule_check(const char *spec, char **err)
{
	struct hostport hp;

	return spec_parse(spec, &hp, err);
}

int
egress_rules_cover(const char *const *allow, const char *host, unsigned port)
{
	struct hostport want, r;
	const char *why;
	char tmp[300];
	int n;

	/* A bare IPv6 address goes in brackets, so that hp_parse does not
	 * take its last group for a port. */
	n = snprintf(tmp, sizeof tmp, strchr(host, ':') ? "[%s]" : "%s", host);
	if (n < 0 || (size_t)n >= sizeof tmp || hp_parse(tmp, (size_t)n, &want, 0, &why) < 0)
		return 0;
	for (const char *const *a = allow; a != NULL && *a != NULL; a++) {
		if (hp_parse(*a, strlen(*a), &r, 1, &why) < 0)
			continue;
		if (hp_names(&r, &want) && allow_port(r.port, port))
			return 1;
	}
	return 0;
}

int
egress_allow(struct egress *e, const char *spec, char **err)
{
	struct hostport hp;
	struct rule *r, **pp;

	if (spec_parse(spec, &hp, err) < 0)
		return -1;
	for (pp = &e->deny; (r = *pp) != NULL;) {
		if (hp_same(&r->hp, &hp)) {
			*pp = r->next;
			free(r);
		} else {
			pp = &r->next;
		}
	}
	for (pp = &e->allow; (r = *pp) != NULL; pp = &r->next)
		if (hp_same(&r->hp, &hp) && r->hp.port == hp.port)
			return 0;
	r = xcalloc(1, sizeof *r);
	r->hp = hp;
	*pp = r;
	return 0;
}

int
egress_deny(struct egress *e, const char *spec, char **err)
{
	struct hostport hp;
	struct rule *r, **pp;

	if (spec_parse(spec, &hp, err) < 0)
		return -1;
	for (pp = &e->allow; (r = *pp) != NULL;) {
		if (hp_same(&r->hp, &hp) && (hp.port == 0 || r->hp.port == hp.port)) {
			*pp = r->next;
			free(r);
		} else {
			pp = &r->next;
		}
	}
	for (pp = &e->deny; (r = *pp) != NULL; pp = &r->next)
		if (hp_same(&r->hp, &hp) && r->hp.port == hp.port)
			break;
	if (r == NULL) {
		r = xcalloc(1, sizeof *r);
		r->hp = hp;
		*pp = r;
	}
	for (struct conn *c = e->conns; c != NULL; c = c->next) {
		struct hostport at;
		int hit;

		if (c->st != CS_TUNNEL && c->st != CS_CONNECT &&
		    c->st != CS_RESOLVE)
			continue;
		hit = hp_names(&hp, &c->req) && (hp.port == 0 || hp.port == c->port);
		if (!hit && c->st != CS_RESOLVE && c->ai > 0) {
			hp_from_sa(&at, (struct sockaddr *)&c->addrs[c->ai - 1]);
			hit = hp_names(&hp, &at) &&
			    (hp.port == 0 || hp.port == c->port);
		}
		if (hit)
			conn_doom(c, "denied");
	}
	return 0;
}

void
egress_set_tag(struct egress *e, int cell)
{
	e->cell = cell;
}

void
egress_set_max_up(struct egress *e, uint64_t max_up)
{
	e->max_up = max_up ? max_up : EGRESS_MAX_UP_DEFAULT;
	if (e->committed < e->max_up)
		e->capped = 0;
}

uint64_t
egress_bytes_up(const struct egress *e)
{
	return e->sent;
}

const char *
egress_unspecified_loopback(const char *host)
{
	struct hostport hp;
	const char *why;

	if (host == NULL || hp_parse_raw(host, strlen(host), &hp, 0, &why) < 0 ||
	    !hp_unspecified(&hp))
		return NULL;
	return hp.family == AF_INET ? "127.0.0.1" : "::1";
}
