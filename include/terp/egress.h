/* egress: the host side of the sandbox's only way out. An HTTP proxy
 * (CONNECT for https, absolute-form forwarding for plain http, no TLS
 * interception) on a Unix socket, driven by terp's one poll loop. It
 * allows host by host, resolves names itself (only allowed ones), refuses
 * addresses in loopback, private, link-local, CGNAT, multicast and cloud
 * metadata ranges unless that very address was allowed, connects to the
 * exact address it checked, caps the bytes sent out per session, and
 * reports every attempt to a ledger callback.
 *
 * How the sandbox reaches it (the in-sandbox side; see src/egress/egress_fwd.py):
 *
 *   host                                  sandbox (own net namespace: lo only)
 *   ----                                  ----------------------------------
 *   egress (this module)                  egress_fwd.py, started by the
 *     listens on <session>/egress.sock  <-- driver, listens on 127.0.0.1:3128
 *     (0600, owned by the session uid)      and relays every accepted
 *                                           connection to the proxy
 *   bwrap --ro-bind <sock> /run/terp/egress.sock   (connect() works on a
 *                                           read-only bind of a socket)
 *
 *   env in the sandbox: HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, PIP_PROXY and
 *   their lower-case forms = http://127.0.0.1:3128, NO_PROXY unset.
 *
 * The relay: the forwarder opens one connection to the Unix socket per
 * connection it accepts and splices the bytes both ways. The proxy never
 * takes a descriptor from a client (a socket handed over by SCM_RIGHTS
 * would share its open file description with the sandbox, which could
 * clear O_NONBLOCK on it and block terp's loop); every descriptor it
 * reads or writes is one it made itself, and every read and write on a
 * client is non-blocking per call (MSG_DONTWAIT) as well.
 *
 * The forwarder is deliberately dumb: it never parses a byte, so whatever
 * the cell does (a relay of its own, a CONNECT inside a CONNECT, a raw
 * socket to the forwarder's port, a descriptor sent along, which the
 * kernel closes unread) arrives here as
 * one more client and is checked like any other. A client that ignores
 * the proxy settings meets the empty namespace and fails, as it should:
 * the namespace, not the proxy variables, is the boundary.
 *
 * Resolution uses glibc's getaddrinfo_a (in libc since 2.34) with a
 * SIGEV_THREAD notification that only writes a byte to a socketpair the
 * loop watches; see the comment at the top of egress_resolve.c. */
#ifndef TERP_EGRESS_H
#define TERP_EGRESS_H

#include <stdint.h>
#include <sys/socket.h>

#include "terp/loop.h"

#define EGRESS_MAX_UP_DEFAULT		(10ull << 20)	/* 10 MiB */
#define EGRESS_CONNECT_TIMEOUT_DEFAULT	10000		/* ms: resolve + connect */
#define EGRESS_IDLE_TIMEOUT_DEFAULT	120000		/* ms without a byte */
#define EGRESS_MAX_CONNS_DEFAULT	64
#define EGRESS_PROGRESS_DEFAULT		1000		/* ms between progress events */
#define EGRESS_HEAD_MAX			16384		/* request head, bytes */

/* Zero means "the default" for every numeric field, so a caller may
 * start from `struct egress_opts o = {0}`. */
struct egress_opts {
	const char	*socket_path;	/* created; NULL: use egress_listen_fd */
	int		 socket_uid;	/* >= 0: chown the socket to it; else keep */
	int		 socket_gid;	/* used with socket_uid (< 0: unchanged) */
	const char *const *allow;	/* NULL-terminated HOST[:PORT] list, or NULL */
	uint64_t	 max_up;	/* bytes-up cap per session; UINT64_MAX: none */
	uint64_t	 sent_before;	/* sent in the session's earlier runs
					 * (--resume): counted against max_up */
	int64_t		 connect_timeout_ms;
	int64_t		 idle_timeout_ms;
	int		 max_conns;	/* concurrent client connections */
	int64_t		 progress_ms;	/* < 0: no progress events */
};

enum egress_phase {
	EGRESS_EV_OPEN,		/* allowed; the upstream connection is up */
	EGRESS_EV_PROGRESS,	/* bytes moved since the last report */
	EGRESS_EV_END,		/* last event of every attempt */
};

enum egress_verdict {
	EGRESS_ALLOWED,		/* the policy allowed it (and it connected) */
	EGRESS_REFUSED,		/* the policy refused it (4xx to the client) */
	EGRESS_FAILED,		/* allowed, but no upstream: 502 or 504 */
};

/* One ledger report. Every attempt gets exactly one EGRESS_EV_END; an
 * allowed one also gets an OPEN first and PROGRESS events in between.
 * The strings are valid during the callback only.
 *
 * code (stable, for programs) and reason (a short phrase for people,
 * e.g. "not allowed", "port 8080 not allowed", "resolves to loopback
 * 127.0.0.1", "does not resolve", "egress cap reached"):
 *   REFUSED: not-allowed, port, ip-literal, address, denied, cap,
 *            bad-request, head-too-big, head-timeout, too-many
 *   FAILED:  no-resolve, connect (refused, unreachable, or the proxy out
 *            of file descriptors), timeout (resolve + connect)
 *   ALLOWED (END only): done, idle, cap, denied, reset, shutdown
 *   ALLOWED OPEN/PROGRESS: ok */
struct egress_event {
	enum egress_phase	 phase;
	enum egress_verdict	 verdict;
	uint64_t		 id;	/* attempt number, from 1, per egress */
	int64_t			 time_ms; /* wall clock (ms since the epoch) at accept */
	int			 cell;	/* egress_set_tag's value at accept */
	const char		*method; /* "CONNECT", "GET", ... or "" */
	const char		*host;	/* lower case, validated, or "" */
	unsigned		 port;	/* 0 when unknown */
	const char		*addr;	/* numeric address connected to, or "" */
	const char		*code;
	const char		*reason;
	uint64_t		 up;	/* bytes sent to the upstream so far */
	uint64_t		 down;	/* bytes received from it so far */
};

struct egress_cbs {
	/* May call egress_allow, egress_deny, egress_set_tag; never
	 * egress_free. */
	void (*event)(void *arg, const struct egress_event *ev);
};

struct egress;

/* Starts a proxy on l. With o->socket_path, creates that Unix socket
 * (mode 0600; failing if the path exists) and removes it in egress_free.
 * o->allow is copied; cb and arg must outlive the egress. Returns NULL
 * with *err (caller frees) on a bad allow entry or socket error.
 * Sets SIGPIPE to SIG_IGN when it is at its default (terp's frontends
 * ignore it already): tunnels splice(2), which cannot pass MSG_NOSIGNAL.
 * Each tunnel holds 6 fds (2 sockets, 2 pipes). */
struct egress *egress_new(struct loop *l, const struct egress_opts *o,
    const struct egress_cbs *cb, void *arg, char **err);

/* Also accepts clients on fd, a bound stream socket (listen() is called;
 * it may already listen). The egress owns fd from now on, even on
 * failure. Returns 0, or -1 with *err. */
int egress_listen_fd(struct egress *e, int fd, char **err);

/* Closes every connection (END events with code "shutdown" are reported
 * first), stops resolutions, removes the socket it created. NULL is a
 * no-op. */
void egress_free(struct egress *e);

/* Adds a rule: "host" (ports 80 and 443), "host:port", "*.example.org"
 * (any subdomain, not example.org itself), an IPv4 address, "[v6]", with
 * ":port" or not. A later egress_allow of a denied host lifts the deny.
 * Returns 0, or -1 with *err for a malformed entry. */
int egress_allow(struct egress *e, const char *spec, char **err);

/* Refuses spec (same syntax; without a port: every port) from now on,
 * drops the allow rules it names and closes open tunnels to it (their
 * END code is "denied"). Returns 0, or -1 with *err. */
int egress_deny(struct egress *e, const char *spec, char **err);

/* The cell attempts are attributed to from now on (0: none). */
void egress_set_tag(struct egress *e, int cell);

/* Changes the bytes-up cap (UINT64_MAX: none). Raising it above what was
 * sent lifts a reached cap for new connections. */
void egress_set_max_up(struct egress *e, uint64_t max_up);

/* Bytes sent to upstreams so far in this session. */
uint64_t egress_bytes_up(const struct egress *e);

/* Checks an allow or deny rule's syntax without a proxy (for the
 * command line). Returns 0, or -1 with *err. Pure. */
/* For an unspecified address (0.0.0.0, ::, written as a host): the
 * loopback address it reaches ("127.0.0.1" or "::1"), which a
 * suggested --allow-host names instead; NULL for anything else. */
const char *egress_unspecified_loopback(const char *host);

int egress_rule_check(const char *spec, char **err);

/* Whether the allow rules (NULL-terminated, or NULL) let a request for
 * host (a name or an address, IPv6 without brackets) on port through,
 * as the proxy would decide by the name alone (before resolving it).
 * Malformed rules count as absent. Pure. */
int egress_rules_cover(const char *const *allow, const char *host, unsigned port);

/* Why an address may not be reached unless allowed by itself: NULL for a
 * public unicast address, else a word: "loopback", "private",
 * "link-local", "cgnat", "multicast", "unspecified", "metadata",
 * "reserved". IPv4-mapped, IPv4-compatible, NAT64 and 6to4 forms are
 * judged by the IPv4 address inside. Pure; exported for the tests. */
const char *egress_addr_class(const struct sockaddr *sa);

#endif
