/* loop: poll(2) over a small fd table, one-shot timers in a sorted list,
 * and signals through a self-pipe. terp watches a handful of fds, so
 * linear scans beat anything cleverer. */
#include "terp/loop.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/util.h"

struct watch {
	int		 fd;
	int		 events;
	loop_fd_cb	 cb;
	void		*arg;
	int		 dead;
};

struct timer {
	uint64_t	 id;
	int64_t		 when_us;
	loop_timer_cb	 cb;
	void		*arg;
	struct timer	*next;
};

#define LOOP_NSIG 65

struct loop {
	struct watch	*w;
	size_t		 nw, capw;
	struct timer	*timers;	/* sorted by when_us */
	uint64_t	 next_id;
	int		 stop;
	int		 sigpipe[2];
	int64_t		(*before)(void *arg);	/* loop_before_wait's */
	void		*before_arg;
	loop_signal_cb	 sigcb[LOOP_NSIG];
	void		*sigarg[LOOP_NSIG];
};

static int sig_write_fd = -1;
static int sig_routed[LOOP_NSIG];

static void
sig_handler(int signo)
{
	int e = errno;
	unsigned char c = (unsigned char)signo;
	if (sig_write_fd >= 0 && write(sig_write_fd, &c, 1) < 0) {
		/* the pipe is full: signals already pending will wake the loop */
	}
	errno = e;
}

struct loop *
loop_new(void)
{
	struct loop *l = xcalloc(1, sizeof *l);
	l->sigpipe[0] = l->sigpipe[1] = -1;
	l->next_id = 1;
	return l;
}

void
loop_free(struct loop *l)
{
	struct timer *t, *n;

	if (l == NULL)
		return;
	for (int s = 1; s < LOOP_NSIG; s++) {
		if (l->sigcb[s] != NULL) {
			signal(s, SIG_DFL);
			sig_routed[s] = 0;
		}
	}
	if (l->sigpipe[0] >= 0) {
		sig_write_fd = -1;
		close(l->sigpipe[0]);
		close(l->sigpipe[1]);
	}
	for (t = l->timers; t != NULL; t = n) {
		n = t->next;
		free(t);
	}
	free(l->w);
	free(l);
}

static struct watch *
find_watch(struct loop *l, int fd)
{
	for (size_t i = 0; i < l->nw; i++)
		if (l->w[i].fd == fd && !l->w[i].dead)
			return &l->w[i];
	return NULL;
}

void
loop_watch(struct loop *l, int fd, int events, loop_fd_cb cb, void *arg)
{
	struct watch *w = find_watch(l, fd);

	if (w == NULL) {
		if (l->nw == l->capw) {
			l->capw = l->capw ? l->capw * 2 : 16;
			l->w = xrealloc(l->w, l->capw * sizeof *l->w);
		}
		w = &l->w[l->nw++];
	}
	w->fd = fd;
	w->events = events;
	w->cb = cb;
	w->arg = arg;
	w->dead = 0;
}

void
loop_unwatch(struct loop *l, int fd)
{
	struct watch *w = find_watch(l, fd);
	/* Marked, not removed: loop_run_once may be iterating the table. */
	if (w != NULL)
		w->dead = 1;
}

static void
compact(struct loop *l)
{
	size_t j = 0;
	for (size_t i = 0; i < l->nw; i++)
		if (!l->w[i].dead)
			l->w[j++] = l->w[i];
	l->nw = j;
}

uint64_t
loop_timer_add(struct loop *l, int64_t ms, loop_timer_cb cb, void *arg)
{
	struct timer *t = xcalloc(1, sizeof *t), **pp;

	t->id = l->next_id++;
	t->when_us = now_us() + ms * 1000;
	t->cb = cb;
	t->arg = arg;
	for (pp = &l->timers; *pp != NULL && (*pp)->when_us <= t->when_us;
	    pp = &(*pp)->next)
		;
	t->next = *pp;
	*pp = t;
	return t->id;
}

void
loop_timer_cancel(struct loop *l, uint64_t id)
{
	struct timer **pp, *t;

	if (id == 0)
		return;
	for (pp = &l->timers; (t = *pp) != NULL; pp = &t->next) {
		if (t->id == id) {
			*pp = t->next;
			free(t);
			return;
		}
	}
}

static void
sig_readable(struct loop *l, int fd, int revents, void *arg)
{
	unsigned char c[64];
	ssize_t n;
	(void)revents;
	(void)arg;

	while ((n = read(fd, c, sizeof c)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			int s = c[i];
			if (s > 0 && s < LOOP_NSIG && l->sigcb[s] != NULL)
				l->sigcb[s](l, s, l->sigarg[s]);
		}
	}
}

int
loop_signal(struct loop *l, int signo, loop_signal_cb cb, void *arg)
{
	struct sigaction sa;

	if (signo <= 0 || signo >= LOOP_NSIG)
		return -1;
	if (l->sigpipe[0] < 0) {
		if (pipe2(l->sigpipe, O_CLOEXEC | O_NONBLOCK) < 0)
			return -1;
		sig_write_fd = l->sigpipe[1];
		loop_watch(l, l->sigpipe[0], POLLIN, sig_readable, NULL);
	}
	l->sigcb[signo] = cb;
	l->sigarg[signo] = arg;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = sig_handler;
	sigemptyset(&sa.sa_mask);
	sig_routed[signo] = 1;
	return sigaction(signo, &sa, NULL);
}

void
loop_signal_reset_child(void)
{
	for (int s = 1; s < LOOP_NSIG; s++)
		if (sig_routed[s])
			signal(s, SIG_DFL);
}

static int
run_timers(struct loop *l)
{
	int ran = 0;
	int64_t now = now_us();

	/* Only timers due now: a callback adding a 0 ms timer waits a turn. */
	while (l->timers != NULL && l->timers->when_us <= now) {
		struct timer *t = l->timers;
		l->timers = t->next;
		t->cb(l, t->arg);
		free(t);
		ran++;
	}
	return ran;
}

void
loop_before_wait(struct loop *l, int64_t (*cb)(void *arg), void *arg)
{
	l->before = cb;
	l->before_arg = arg;
}

int
loop_run_once(struct loop *l, int64_t max_wait_ms)
{
	struct pollfd pfd_small[32], *pfd = pfd_small;
	size_t n = 0, nw;
	int64_t wait = max_wait_ms;
	int r, ran = 0;

	if (l->before != NULL) {
		int64_t hold = l->before(l->before_arg);
		if (hold >= 0 && (wait < 0 || hold < wait))
			wait = hold;
	}
	compact(l);
	nw = l->nw;
	if (nw > 32) {
		pfd = xmalloc(nw * sizeof *pfd);
	}
	for (size_t i = 0; i < nw; i++) {
		if (l->w[i].events == 0)
			continue;
		pfd[n].fd = l->w[i].fd;
		pfd[n].events = (short)l->w[i].events;
		pfd[n].revents = 0;
		n++;
	}
	if (l->timers != NULL) {
		int64_t due = (l->timers->when_us - now_us() + 999) / 1000;
		if (due < 0)
			due = 0;
		if (wait < 0 || due < wait)
			wait = due;
	}
	if (wait > 1000000)
		wait = 1000000;
	r = poll(pfd, n, (int)wait);
	if (r < 0 && errno != EINTR) {
		ran = -1;
		goto out;
	}
	for (size_t i = 0; r > 0 && i < n; i++) {
		struct watch *w;
		if (pfd[i].revents == 0)
			continue;
		/* Look the watch up again: an earlier callback may have
		 * removed or replaced it. */
		w = find_watch(l, pfd[i].fd);
		if (w == NULL || w->events == 0)
			continue;
		w->cb(l, pfd[i].fd, pfd[i].revents, w->arg);
		ran++;
	}
	ran += run_timers(l);
out:
	if (pfd != pfd_small)
		free(pfd);
	return ran;
}

void
loop_run(struct loop *l)
{
	l->stop = 0;
	while (!l->stop)
		if (loop_run_once(l, -1) < 0)
			break;
}

void
loop_stop(struct loop *l)
{
	l->stop = 1;
}

int
loop_stopped(const struct loop *l)
{
	return l->stop;
}
