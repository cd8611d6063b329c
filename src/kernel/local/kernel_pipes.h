/* kernel_pipes: a local sandbox's stdout and stderr pipes as the host
 * reads them (private to src/kernel/local): bounded reads that never
 * starve the loop, whole UTF-8 characters only (a cut sequence waits
 * for the next read), and, while the sandbox starts, what bwrap or
 * Python complained about kept apart (the start of it) for the error
 * message instead of being shown as output. The fds are the sandbox's
 * (kernel_local.c owns them); the pipes only read them. */
#ifndef TERP_KERNEL_PIPES_H
#define TERP_KERNEL_PIPES_H

#include <stddef.h>

#include "terp/buf.h"
#include "terp/utf8carry.h"

/* Output of stream (0 stdout, 1 stderr), whole characters. */
typedef void (*kpipes_emit_fn)(void *arg, int stream, const char *p, size_t n);

struct kpipes {
	struct utf8carry	 carry[2];	/* cut UTF-8 sequences */
	struct buf		 start_err;	/* before "ready": bwrap's words */
	kpipes_emit_fn		 emit;		/* NULL: output dropped */
	void			*arg;
};

void kpipes_init(struct kpipes *p, kpipes_emit_fn emit, void *arg);
void kpipes_free(struct kpipes *p);

/* A launch: nothing held of the last sandbox's. */
void kpipes_reset(struct kpipes *p);

/* Bytes of stream from the sandbox (or terp's own note after them);
 * starting: the driver is not ready, so they are start-up complaints. */
void kpipes_bytes(struct kpipes *p, int stream, const char *b, size_t n, int starting);

/* What is held back goes out (a sequence never completed). */
void kpipes_flush(struct kpipes *p);

/* Reads fd (stream) as far as it has bytes, in bounded rounds. Returns
 * 0, or -1 at EOF (the caller stops watching it). */
int kpipes_read(struct kpipes *p, int fd, int stream, int starting);

/* Drains both pipes (-1: none) completely: the driver wrote a cell's
 * output before its result frame, so everything of the cell is there. */
void kpipes_drain(struct kpipes *p, int out_fd, int err_fd, int starting);

/* What the sandbox said while it started ("" when nothing). */
const char *kpipes_start_err(const struct kpipes *p);

#endif
