/* kernel_pipes: a local sandbox's output pipes (kernel_pipes.h). */
#include "kernel_pipes.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <unistd.h>

#define START_ERR_KEEP	4096	/* bwrap's own messages, for setup errors */
#define READ_ROUNDS	64	/* reads a wake-up, so a flood cannot starve the loop */
#define DRAIN_ROUNDS	1024	/* reads of one pipe at a cell's end */

struct emit_to {
	struct kpipes	*p;
	int		 stream;
};

static void
emit_one(void *arg, const char *b, size_t n)
{
	struct emit_to *t = arg;

	t->p->emit(t->p->arg, t->stream, b, n);
}

void
kpipes_init(struct kpipes *p, kpipes_emit_fn emit, void *arg)
{
	p->carry[0].n = p->carry[1].n = 0;
	buf_init(&p->start_err, START_ERR_KEEP);
	p->emit = emit;
	p->arg = arg;
}

void
kpipes_free(struct kpipes *p)
{
	buf_free(&p->start_err);
}

void
kpipes_reset(struct kpipes *p)
{
	buf_reset(&p->start_err);
	p->carry[0].n = p->carry[1].n = 0;
}

void
kpipes_bytes(struct kpipes *p, int stream, const char *b, size_t n, int starting)
{
	struct emit_to t = { p, stream };

	if (starting) {
		/* The start of it holds bwrap's message; the rest is dropped. */
		size_t room = p->start_err.max - p->start_err.len;
		int rc = buf_add(&p->start_err, b, n < room ? n : room);
		assert(rc == 0);	/* within max by construction */
		(void)rc;
		return;
	}
	/* A read may end inside a UTF-8 sequence: the cut tail waits for
	 * the next read, so the frontends never see half a character. */
	if (p->emit == NULL || n == 0)
		return;
	utf8carry_feed(&p->carry[stream], b, n, emit_one, &t);
}

void
kpipes_flush(struct kpipes *p)
{
	for (int s = 0; s < 2; s++) {
		struct emit_to t = { p, s };
		if (p->emit)
			utf8carry_flush(&p->carry[s], emit_one, &t);
		p->carry[s].n = 0;
	}
}

int
kpipes_read(struct kpipes *p, int fd, int stream, int starting)
{
	char b[65536];
	int rounds = 0;

	while (rounds++ < READ_ROUNDS) {
		ssize_t n = read(fd, b, sizeof b);
		if (n > 0) {
			kpipes_bytes(p, stream, b, (size_t)n, starting);
			if ((size_t)n < sizeof b)
				return 0;	/* emptied: the poll says when more comes */
			continue;
		}
		if (n == 0)
			return -1;
		if (errno == EINTR)
			continue;
		return 0;
	}
	return 0;
}

void
kpipes_drain(struct kpipes *p, int out_fd, int err_fd, int starting)
{
	/* One look at both (a trivial cell printed nothing: one system
	 * call, not two reads for EAGAIN); negative fds are skipped. */
	struct pollfd pf[2] = { { .fd = out_fd, .events = POLLIN },
	    { .fd = err_fd, .events = POLLIN } };
	int any = poll(pf, 2, 0);

	for (int s = 0; s < 2; s++) {
		if (pf[s].fd < 0 || (any >= 0 && pf[s].revents == 0))
			continue;
		for (int i = 0; i < DRAIN_ROUNDS; i++) {
			char b[65536];
			ssize_t n = read(pf[s].fd, b, sizeof b);
			if (n <= 0)
				break;
			kpipes_bytes(p, s, b, (size_t)n, starting);
			if ((size_t)n < sizeof b)
				break;	/* emptied */
		}
	}
}

const char *
kpipes_start_err(const struct kpipes *p)
{
	return buf_str(&p->start_err);
}
