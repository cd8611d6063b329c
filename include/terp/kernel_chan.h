/* kernel_chan: terp's commands to the driver, one JSON object a line,
 * written through a bounded queue that the loop drains on POLLOUT. The
 * sandbox may stop reading its command pipe (a cell that forged its
 * result and sleeps) or shrink it, so a write must never block terp:
 * what the pipe does not take now waits, up to KERNEL_CHAN_MAX bytes.
 * Knows nothing of what the commands mean (kernel.c does). */
#ifndef TERP_KERNEL_CHAN_H
#define TERP_KERNEL_CHAN_H

#include <stddef.h>

#include "terp/buf.h"
#include "terp/loop.h"

#define KERNEL_CHAN_MAX	(512u << 20)	/* bytes waiting (a cell's JSON may be 6x its code) */

struct cJSON;

struct kernel_chan {
	struct loop	*loop;
	int		 fd;		/* the command pipe (not owned); -1: none */
	struct buf	 q;		/* commands not written yet... */
	size_t		 off;		/* ...from q.data + off */
	/* Bytes ever queued and ever written (since the last attach: what
	 * was queued for an earlier pipe counts as written). */
	unsigned long long queued, written;
	/* Called once the pipe is broken (EPIPE: the driver is gone). */
	void		(*broken)(void *arg);
	void		*arg;
};

/* An empty channel with no pipe yet. */
void kernel_chan_init(struct kernel_chan *c, struct loop *l,
    void (*broken)(void *arg), void *arg);
/* Frees the queue; the pipe is the caller's to close. */
void kernel_chan_free(struct kernel_chan *c);

/* Uses fd (non-blocking; the caller keeps owning it) from now on, with
 * an empty queue: nothing of an earlier pipe is pending on it. */
void kernel_chan_attach(struct kernel_chan *c, int fd);
/* Stops writing and watching: the pipe is about to close or the
 * session is dying. What is queued stays until the next attach. */
void kernel_chan_detach(struct kernel_chan *c);

/* Queues cmd as one line and writes what the pipe takes now. Returns
 * 0, or -1 when the queue is full (the driver has not read for
 * KERNEL_CHAN_MAX bytes); nothing is queued then. */
int kernel_chan_send(struct kernel_chan *c, const struct cJSON *cmd);

/* Bytes queued and not written yet. */
size_t kernel_chan_pending(const struct kernel_chan *c);
/* Whether every byte queued up to mark (a kernel_chan_queued value) has
 * been written: a command is out even when later ones still wait. */
unsigned long long kernel_chan_queued(const struct kernel_chan *c);
int kernel_chan_out(const struct kernel_chan *c, unsigned long long mark);

#endif
