/* kernel_hold: stream text of a remote kernel held back a moment and
 * passed on together. A server (or a cell) may send one message per
 * byte, and each output callback is a journal line and a redraw;
 * consecutive text of one cell's one stream goes out as one call, at
 * most max bytes and ms milliseconds late. Its owner embeds it and
 * flushes it before reporting anything else (a state, an artifact, a
 * result), so that the order of what the cell did is kept. */
#ifndef TERP_KERNEL_HOLD_H
#define TERP_KERNEL_HOLD_H

#include <stddef.h>
#include <stdint.h>

#include "terp/buf.h"
#include "terp/loop.h"

/* Where held text goes: the owner's output callback. */
typedef void (*khold_out_fn)(void *arg, int cell, int stream, const char *p, size_t n);

struct khold {
	struct loop	*loop;		/* borrowed */
	khold_out_fn	 out;
	void		*arg;
	size_t		 max;		/* bytes held at most */
	int64_t		 ms;		/* and for at most this long */
	struct buf	 b;		/* owned: the text held */
	int		 cell, stream;	/* whose it is */
	uint64_t	 timer;
};

void khold_init(struct khold *h, struct loop *l, size_t max, int64_t ms,
    khold_out_fn out, void *arg);
/* Adds n bytes of cell's stream (p borrowed), passing on what is held
 * first when it is another cell's or stream's or would pass max; text
 * of max bytes or more goes out at once. */
void khold_add(struct khold *h, int cell, int stream, const char *p, size_t n);
/* Passes on what is held, now. */
void khold_flush(struct khold *h);
/* Drops what is held (not passed on) and the timer. */
void khold_free(struct khold *h);

#endif
