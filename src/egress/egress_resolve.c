/* egress_resolve: the proxy's name lookups (egress_resolve.h).
 *
 * Why getaddrinfo_a: it is in libc since glibc 2.34 (Debian 12 has 2.36:
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
 * reference counted (the resolver and each request in flight hold a
 * reference), so a request abandoned while a lookup runs (the client
 * went away, egress_free) is freed by its own notification, and the
 * write end stays valid until the last request is gone. send() with
 * MSG_NOSIGNAL: no SIGPIPE on a thread terp never sees. */
#include "egress_resolve.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "terp/util.h"

struct egress_wake {
	pthread_mutex_t	 mu;
	int		 wfd;
	int		 refs;
};

struct egress_lookup {
	struct gaicb		 cb;
	struct addrinfo		 hints;
	char			 name[256];
	struct egress_wake	*wake;
	void			*owner;	/* loop thread only; NULL: abandoned */
	int			 notified; /* under wake->mu */
	int			 orphan;   /* under wake->mu */
	struct egress_lookup	*next;	/* the pending list, loop thread */
};

struct egress_resolver {
	struct loop		*l;
	egress_resolved_fn	 done;
	struct egress_wake	*wake;
	int			 rfd;
	struct egress_lookup	*pending;
};

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
lookup_free(struct egress_lookup *q)
{
	if (q->cb.ar_result != NULL)
		freeaddrinfo(q->cb.ar_result);
	wake_unref(q->wake);
	free(q);
}

/* Runs on a glibc thread: no loop, no owner, only the mutex and a byte. */
static void
lookup_notify(union sigval v)
{
	struct egress_lookup *q = v.sival_ptr;
	struct egress_wake *w = q->wake;
	int orphan;

	pthread_mutex_lock(&w->mu);
	q->notified = 1;
	orphan = q->orphan;
	if (!orphan && send(w->wfd, "r", 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* full: the bytes already there wake the loop */
	}
	pthread_mutex_unlock(&w->mu);
	/* Not orphaned: the loop owns q from the unlock on; don't touch it. */
	if (orphan)
		lookup_free(q);
}

/* A lookup not yet started is cancelled and freed here; a running or
 * finished one whose notification has not run yet is left to that
 * notification to free. */
void
egress_resolver_abandon(struct egress_resolver *r, struct egress_lookup *q)
{
	struct egress_lookup **pp;
	int free_now;

	for (pp = &r->pending; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	}
	q->owner = NULL;
	if (gai_cancel(&q->cb) == EAI_CANCELED) {
		lookup_free(q);
		return;
	}
	pthread_mutex_lock(&q->wake->mu);
	free_now = q->notified;
	if (!free_now)
		q->orphan = 1;
	pthread_mutex_unlock(&q->wake->mu);
	if (free_now)
		lookup_free(q);
}

static void
wake_cb(struct loop *l, int fd, int revents, void *arg)
{
	struct egress_resolver *r = arg;
	struct egress_lookup *done = NULL, **pp, *q;
	char junk[64];

	while (recv(fd, junk, sizeof junk, MSG_DONTWAIT) > 0)
		;
	pthread_mutex_lock(&r->wake->mu);
	for (pp = &r->pending; (q = *pp) != NULL;) {
		if (q->notified) {
			*pp = q->next;
			q->next = done;
			done = q;
		} else {
			pp = &q->next;
		}
	}
	pthread_mutex_unlock(&r->wake->mu);
	/* Every finished lookup is off the pending list before the first
	 * report, so a report that abandons another lookup (its owner
	 * closed) finds only the ones still in flight there. */
	while ((q = done) != NULL) {
		done = q->next;
		if (q->owner != NULL)
			r->done(q->owner, gai_error(&q->cb), q->cb.ar_result);
		lookup_free(q);
	}
}

struct egress_lookup *
egress_resolver_start(struct egress_resolver *r, const char *name, void *owner,
    int *rcp)
{
	struct egress_lookup *q = xcalloc(1, sizeof *q);
	struct gaicb *list[1] = { &q->cb };
	struct sigevent sev;
	int rc;

	snprintf(q->name, sizeof q->name, "%s", name);
	q->hints.ai_family = AF_UNSPEC;
	q->hints.ai_socktype = SOCK_STREAM;
	q->hints.ai_protocol = IPPROTO_TCP;
	/* No AI_ADDRCONFIG: the policy must see every answer. */
	q->cb.ar_name = q->name;
	q->cb.ar_request = &q->hints;
	q->wake = r->wake;
	q->owner = owner;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD;
	sev.sigev_notify_function = lookup_notify;
	sev.sigev_value.sival_ptr = q;
	pthread_mutex_lock(&r->wake->mu);
	r->wake->refs++;
	pthread_mutex_unlock(&r->wake->mu);
	rc = getaddrinfo_a(GAI_NOWAIT, list, 1, &sev);
	if (rc != 0) {
		/* glibc may have queued the lookup and then failed to set up
		 * its notification: then q must stay alive (leaked) while the
		 * lookup writes into it. */
		if (gai_cancel(&q->cb) != EAI_NOTCANCELED)
			lookup_free(q);
		*rcp = rc;
		return NULL;
	}
	q->next = r->pending;
	r->pending = q;
	return q;
}

struct egress_resolver *
egress_resolver_new(struct loop *l, egress_resolved_fn done, char **err)
{
	struct egress_resolver *r;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sv) < 0) {
		*err = xasprintf("egress: socketpair: %s", strerror(errno));
		return NULL;
	}
	r = xcalloc(1, sizeof *r);
	r->l = l;
	r->done = done;
	r->wake = xcalloc(1, sizeof *r->wake);
	pthread_mutex_init(&r->wake->mu, NULL);
	r->wake->wfd = sv[1];
	r->wake->refs = 1;
	r->rfd = sv[0];
	loop_watch(l, sv[0], POLLIN, wake_cb, r);
	return r;
}

void
egress_resolver_free(struct egress_resolver *r)
{
	if (r == NULL)
		return;
	while (r->pending != NULL)
		egress_resolver_abandon(r, r->pending);
	loop_unwatch(r->l, r->rfd);
	close(r->rfd);
	wake_unref(r->wake);
	free(r);
}
