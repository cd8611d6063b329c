/* egress_pipe: a tunnel's direction, spliced (egress_pipe.h). */
#include "egress_pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int
egress_pipe_open(struct egress_pipe *d)
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
	(void)fcntl(d->pw, F_SETPIPE_SZ, EGRESS_PIPE_SIZE);
	cap = fcntl(d->pw, F_GETPIPE_SZ);
	d->cap = cap > 0 ? (size_t)cap : 4096;
	return 0;
}

void
egress_pipe_close(struct egress_pipe *d)
{
	if (d->pr >= 0) {
		close(d->pr);
		close(d->pw);
	}
	d->pr = d->pw = -1;
	d->len = 0;
	d->full = 0;
}

int
egress_pipe_add(struct egress_pipe *d, const void *p, size_t n)
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

static int
again(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

ssize_t
egress_pipe_in(struct egress_pipe *d, int fd, size_t want)
{
	ssize_t n = splice(fd, NULL, d->pw, NULL, want,
	    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

	if (n > 0)
		d->len += (size_t)n;
	if (n >= 0)
		return n;
	if (!again())
		return -1;
	/* Either the socket is dry or the pipe's pages are used up; while
	 * the pipe holds data, wait for it to drain either way (else a full
	 * pipe and a readable socket spin the loop). */
	if (d->len > 0)
		d->full = 1;
	return EGRESS_PIPE_WAIT;
}

ssize_t
egress_pipe_out(struct egress_pipe *d, int fd)
{
	ssize_t n;

	if (d->len == 0)
		return EGRESS_PIPE_WAIT;
	n = splice(d->pr, NULL, fd, NULL, d->len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n > 0) {
		d->len -= (size_t)n;
		d->full = 0;
		return n;
	}
	return n < 0 && !again() ? -1 : EGRESS_PIPE_WAIT;
}
