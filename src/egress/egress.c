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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "terp/util.h"

#include "egress_head.h"
#include "egress_pipe.h"
#include "egress_resolve.h"
#include "egress_rules.h"

#define MAX_ADDRS	8		/* resolved addresses tried */
#define LINGER_MS	2000		/* REPLY + DRAIN, at most */
#define DRAIN_MAX	(256 * 1024)	/* bytes dropped while lingering */
#define PUMP_ROUNDS	8		/* read/write rounds per callback */
#define MAX_LISTEN	4

/* ---- connections ---------------------------------------------------- */

enum cstate { CS_HEAD, CS_RESOLVE, CS_CONNECT, CS_TUNNEL, CS_REPLY, CS_DRAIN };


struct conn {
	struct egress	*e;
	struct conn	*prev, *next;
	enum cstate	 st;
	int		 cfd, ufd;
	uint64_t	 id;
	int64_t		 t_wall;
	int		 cell;
	int		 ended;		/* END reported */
	const char	*doom;		/* END code when the reaper closes it */
	struct egress_req rq;		/* what the head asked for */
	char		 addr[INET6_ADDRSTRLEN];
	char		*head;		/* HEAD_MAX bytes while in CS_HEAD */
	size_t		 hlen;
	struct egress_pipe c2u, u2c;	/* client -> upstream, upstream -> client */
	char		 rep[1024];	/* CS_REPLY: the response */
	size_t		 rep_off, rep_len;
	int		 c_eof, u_eof, c_shut, u_shut;
	uint64_t	 up, down, rep_up, rep_down;
	struct egress_lookup *res;
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
	struct egress_rules	 rules;
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
	struct egress_resolver	*resolver;
	uint64_t		 reap_timer, prog_timer, accept_timer;
	int			 freeing;
};

static void conn_close(struct conn *c);
static void conn_update(struct conn *c);
static void conn_fd_cb(struct loop *l, int fd, int revents, void *arg);

/* ---- events --------------------------------------------------------- */

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
	ev.method = c->rq.method;
	ev.host = c->rq.host;
	ev.port = c->rq.port;
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
	if (c->res != NULL) {
		egress_resolver_abandon(c->e->resolver, c->res);
		c->res = NULL;
	}
	if (c->ufd >= 0) {
		loop_unwatch(c->e->l, c->ufd);
		close(c->ufd);
		c->ufd = -1;
	}
	c->e->committed -= c->c2u.len;
	egress_pipe_close(&c->c2u);
	egress_pipe_close(&c->u2c);
	free(c->head);
	c->head = NULL;
	c->st = CS_REPLY;
	n = egress_reply_format(c->rep, sizeof c->rep, status, code, body);
	c->rep_off = 0;
	c->rep_len = n > 0 ? (size_t)n : 0;
	conn_deadline(c, LINGER_MS);
	conn_update(c);
}

/* ---- resolution ------------------------------------------------------ */

static void conn_connect_next(struct conn *c);

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
conn_resolved(struct conn *c, int rc, const struct addrinfo *res)
{
	struct egress *e = c->e;
	const char *bad = NULL;
	char badaddr[INET6_ADDRSTRLEN] = "", reason[160], body[600];

	if (rc != 0) {
		snprintf(body, sizeof body, "%s does not resolve (%s)", c->rq.host,
		    gai_strerror(rc));
		conn_reply(c, 502, EGRESS_FAILED, "no-resolve",
		    "does not resolve", body);
		return;
	}
	c->naddrs = 0;
	for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
		struct egress_hp hp;
		const char *k;
		int dup = 0;

		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    ai->ai_addrlen > sizeof c->addrs[0])
			continue;
		egress_hp_from_sa(&hp, ai->ai_addr);
		k = egress_addr_class(ai->ai_addr);
		if (egress_rules_denies(&e->rules, &hp, c->rq.port))
			k = "denied";
		else if (k != NULL && egress_rules_allows(&e->rules, &hp, c->rq.port) == 1)
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
			    htons((uint16_t)c->rq.port);
		else
			((struct sockaddr_in6 *)&c->addrs[c->naddrs])->sin6_port =
			    htons((uint16_t)c->rq.port);
		c->alens[c->naddrs++] = ai->ai_addrlen;
	}
	if (c->naddrs == 0 && bad != NULL) {
		snprintf(reason, sizeof reason, "resolves to %s %s",
		    class_phrase(bad), badaddr);
		snprintf(body, sizeof body, "%s resolves to %s, a %s address; "
		    "only an address allowed by itself may be reached there",
		    c->rq.host, badaddr, class_phrase(bad));
		conn_reply(c, 403, EGRESS_REFUSED, "address", reason, body);
		return;
	}
	if (c->naddrs == 0) {
		snprintf(body, sizeof body, "%s has no IPv4 or IPv6 address",
		    c->rq.host);
		conn_reply(c, 502, EGRESS_FAILED, "no-resolve",
		    "does not resolve", body);
		return;
	}
	c->ai = 0;
	conn_connect_next(c);
}

/* The resolver's report (egress_resolve.h): the lookup is over. */
static void
lookup_done(void *owner, int rc, const struct addrinfo *res)
{
	struct conn *c = owner;

	c->res = NULL;
	conn_resolved(c, rc, res);
}

static void
resolve_start(struct conn *c)
{
	int rc = 0;

	c->res = egress_resolver_start(c->e->resolver, c->rq.host, c, &rc);
	if (c->res == NULL) {
		conn_reply(c, 502, EGRESS_FAILED, "no-resolve",
		    "resolver unavailable", gai_strerror(rc));
		return;
	}
	c->st = CS_RESOLVE;
	conn_update(c);
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
	    c->rq.host, c->rq.port, c->addr, reason);
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
	if (egress_pipe_open(&c->u2c) < 0 || (c->rq.is_connect &&
	    egress_pipe_add(&c->u2c, ok, sizeof ok - 1) < 0)) {
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
			snprintf(body, sizeof body, "%s was denied", c->rq.host);
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
io_read(struct conn *c, int fd, struct egress_pipe *d, int *eof, int client)
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
	n = egress_pipe_in(d, fd, want);
	if (n == EGRESS_PIPE_WAIT)
		return 0;
	if (n < 0)
		return -1;
	if (n == 0) {
		*eof = 1;
		return 1;
	}
	if (!client) {
		c->down += (uint64_t)n;
	} else if ((uint64_t)n > left) {
		d->len -= (size_t)n;	/* over the cap: never sent */
		cap_hit(e);
		return 0;
	} else {
		e->committed += (uint64_t)n;
	}
	return 1;
}

static int
io_write(struct conn *c, int fd, struct egress_pipe *d, int client)
{
	ssize_t n = egress_pipe_out(d, fd);

	if (n == EGRESS_PIPE_WAIT)
		return 0;
	if (n < 0)
		return -1;
	if (!client) {
		c->up += (uint64_t)n;
		c->e->sent += (uint64_t)n;
	}
	return 1;
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
		egress_resolver_abandon(e->resolver, c->res);
	loop_unwatch(e->l, c->cfd);
	close(c->cfd);
	if (c->ufd >= 0) {
		loop_unwatch(e->l, c->ufd);
		close(c->ufd);
	}
	e->committed -= c->c2u.len;	/* queued, never sent */
	egress_pipe_close(&c->c2u);
	egress_pipe_close(&c->u2c);
	free(c->head);
	free(c->rq.fwd);
	free(c);
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
	uint64_t n = c->rq.fwdlen + early;

	if (e->max_up != UINT64_MAX && e->committed + n > e->max_up) {
		cap_hit(e);
		return -1;
	}
	if (egress_pipe_open(&c->c2u) < 0 || (c->rq.fwd != NULL &&
	    egress_pipe_add(&c->c2u, c->rq.fwd, c->rq.fwdlen) < 0) ||
	    egress_pipe_add(&c->c2u, c->head + hend, early) < 0) {
		e->committed += c->c2u.len;	/* conn_reply takes it back */
		return -2;
	}
	e->committed += n;
	free(c->rq.fwd);
	c->rq.fwd = NULL;
	free(c->head);
	c->head = NULL;
	return 0;
}

static void
conn_decide(struct conn *c, size_t hend)
{
	struct egress *e = c->e;
	const struct egress_hp *hp = &c->rq.hp;
	char reason[128], body[600];
	int a;

	if (e->capped) {
		snprintf(body, sizeof body, "the session's egress cap was "
		    "reached (--egress-max); nothing more may be sent");
		conn_reply(c, 403, EGRESS_REFUSED, "cap", "egress cap reached",
		    body);
		return;
	}
	if (egress_rules_denies(&e->rules, hp, c->rq.port)) {
		snprintf(body, sizeof body, "%s is denied in this session",
		    c->rq.host);
		conn_reply(c, 403, EGRESS_REFUSED, "denied", "denied", body);
		return;
	}
	a = egress_rules_allows(&e->rules, hp, c->rq.port);
	if (a == 0) {
		snprintf(reason, sizeof reason, "port %u not allowed", c->rq.port);
		snprintf(body, sizeof body, "%s is allowed on other ports, not "
		    "%u (--allow-host %s%s%s:%u)", c->rq.host, c->rq.port,
		    hp->family == AF_INET6 ? "[" : "", c->rq.host,
		    hp->family == AF_INET6 ? "]" : "", c->rq.port);
		conn_reply(c, 403, EGRESS_REFUSED, "port", reason, body);
		return;
	}
	if (a < 0 && hp->kind == EGRESS_HP_ADDR) {
		snprintf(body, sizeof body, "%s: IP addresses are refused unless "
		    "that address is allowed itself (--allow-host)", c->rq.host);
		conn_reply(c, 403, EGRESS_REFUSED, "ip-literal",
		    "IP address not allowed", body);
		return;
	}
	if (a < 0) {
		snprintf(body, sizeof body, "%s is not allowed "
		    "(--allow-host %s)", c->rq.host, c->rq.host);
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
	if (hp->kind == EGRESS_HP_ADDR) {
		/* Allowed by itself: connect to exactly that address. */
		struct sockaddr_storage *ss = &c->addrs[0];

		memset(ss, 0, sizeof *ss);
		if (hp->family == AF_INET) {
			struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
			s4->sin_family = AF_INET;
			s4->sin_port = htons((uint16_t)c->rq.port);
			memcpy(&s4->sin_addr, hp->addr, 4);
			c->alens[0] = sizeof *s4;
		} else {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
			s6->sin6_family = AF_INET6;
			s6->sin6_port = htons((uint16_t)c->rq.port);
			memcpy(&s6->sin6_addr, hp->addr, 16);
			c->alens[0] = sizeof *s6;
		}
		c->naddrs = 1;
		c->ai = 0;
		conn_connect_next(c);
		return;
	}
	if (name_is_invalid(c->rq.host)) {
		/* RFC 6761 6.4: never sent to a resolver. */
		snprintf(body, sizeof body, "%s does not resolve", c->rq.host);
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
		if ((end = egress_head_end(c->head, from, c->hlen)) == 0)
			continue;
		if (egress_head_parse(c->head, end, &c->rq, &why) < 0) {
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
		    "%lld ms", c->rq.host, c->rq.port, (long long)c->e->connect_ms);
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
	int n = egress_reply_format(resp, sizeof resp, 503, "too-many",
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
	char *rerr = NULL;

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
	if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
		signal(SIGPIPE, SIG_IGN);	/* see io_write */
	for (const char *const *a = o->allow; a != NULL && *a != NULL; a++)
		if (egress_allow(e, *a, err) < 0)
			goto fail;
	if ((e->resolver = egress_resolver_new(l, lookup_done, &rerr)) == NULL) {
		set_err(err, rerr);
		goto fail;
	}
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
	egress_resolver_free(e->resolver);
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
	egress_rules_clear(&e->rules);
	free(e);
}

int
egress_allow(struct egress *e, const char *spec, char **err)
{
	return egress_rules_add_allow(&e->rules, spec, err);
}

int
egress_deny(struct egress *e, const char *spec, char **err)
{
	struct egress_hp hp;

	if (egress_rules_add_deny(&e->rules, spec, &hp, err) < 0)
		return -1;
	for (struct conn *c = e->conns; c != NULL; c = c->next) {
		struct egress_hp at;
		int hit;

		if (c->st != CS_TUNNEL && c->st != CS_CONNECT &&
		    c->st != CS_RESOLVE)
			continue;
		hit = egress_hp_names(&hp, &c->rq.hp) && (hp.port == 0 || hp.port == c->rq.port);
		if (!hit && c->st != CS_RESOLVE && c->ai > 0) {
			egress_hp_from_sa(&at, (struct sockaddr *)&c->addrs[c->ai - 1]);
			hit = egress_hp_names(&hp, &at) &&
			    (hp.port == 0 || hp.port == c->rq.port);
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
