/* kernel_chan: the bounded, non-blocking queue of terp's commands to
 * the driver (see kernel_chan.h). */
#include "terp/kernel_chan.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "terp/json_text.h"
#include "terp/util.h"

#define KEEP_MAX	(1u << 20)	/* room kept after a big command went out */

static void chan_on_writable(struct loop *l, int fd, int revents, void *arg);

void
kernel_chan_init(struct kernel_chan *c, struct loop *l, void (*broken)(void *arg),
    void *arg)
{
	memset(c, 0, sizeof *c);
	c->loop = l;
	c->fd = -1;
	c->broken = broken;
	c->arg = arg;
	buf_init(&c->q, KERNEL_CHAN_MAX);
}

void
kernel_chan_free(struct kernel_chan *c)
{
	kernel_chan_detach(c);
	buf_free(&c->q);
}

void
kernel_chan_attach(struct kernel_chan *c, int fd)
{
	kernel_chan_detach(c);
	buf_reset(&c->q);
	c->off = 0;
	c->written = c->queued;
	c->fd = fd;
	/* Paused until a command waits (events 0); see chan_flush. */
	loop_watch(c->loop, fd, 0, chan_on_writable, c);
}

void
kernel_chan_detach(struct kernel_chan *c)
{
	if (c->fd >= 0)
		loop_unwatch(c->loop, c->fd);
	c->fd = -1;
}

size_t
kernel_chan_pending(const struct kernel_chan *c)
{
	assert(c->off <= c->q.len);
	return c->q.len - c->off;
}

/* Writes what the pipe takes now; the rest waits for POLLOUT. */
static void
chan_flush(struct kernel_chan *c)
{
	if (c->fd < 0)
		return;
	while (c->off < c->q.len) {
		ssize_t n = write(c->fd, c->q.data + c->off, c->q.len - c->off);
		if (n > 0) {
			c->off += (size_t)n;
			c->written += (unsigned long long)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			loop_watch(c->loop, c->fd, POLLOUT, chan_on_writable, c);
			return;
		}
		/* EPIPE: the driver is gone. */
		loop_watch(c->loop, c->fd, 0, chan_on_writable, c);
		c->broken(c->arg);
		return;
	}
	if (c->q.cap > KEEP_MAX) {
		buf_free(&c->q);	/* a big cell's room is not kept */
		buf_init(&c->q, KERNEL_CHAN_MAX);
	}
	buf_reset(&c->q);
	c->off = 0;
	loop_watch(c->loop, c->fd, 0, chan_on_writable, c);
}

static void
chan_on_writable(struct loop *l, int fd, int revents, void *arg)
{
	chan_flush(arg);
}

int
kernel_chan_send(struct kernel_chan *c, const struct cJSON *cmd)
{
	struct buf line;
	int rc;

	/* json_text: cJSON_PrintUnformatted's bytes without its printf and
	 * sscanf for every number (a command a cell) */
	buf_init(&line, KERNEL_CHAN_MAX);
	if (json_text(&line, cmd) < 0 || buf_addc(&line, '\n') < 0) {
		buf_free(&line);
		return -1;
	}
	if (c->off > 0) {
		buf_consume(&c->q, c->off);
		c->off = 0;
	}
	rc = buf_add(&c->q, line.data, line.len);
	if (rc == 0)
		c->queued += line.len;
	buf_free(&line);
	if (rc < 0)
		return -1;
	chan_flush(c);
	return 0;
}

unsigned long long
kernel_chan_queued(const struct kernel_chan *c)
{
	return c->queued;
}

int
kernel_chan_out(const struct kernel_chan *c, unsigned long long mark)
{
	return c->written >= mark;
}
