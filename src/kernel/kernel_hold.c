/* kernel_hold: stream text held back and passed on together (see
 * kernel_hold.h). */
#include "terp/kernel_hold.h"

void
khold_init(struct khold *h, struct loop *l, size_t max, int64_t ms, khold_out_fn out,
    void *arg)
{
	h->loop = l;
	h->max = max;
	h->ms = ms;
	h->out = out;
	h->arg = arg;
	h->cell = h->stream = 0;
	h->timer = 0;
	buf_init(&h->b, max);
}

void
khold_flush(struct khold *h)
{
	loop_timer_cancel(h->loop, h->timer);
	h->timer = 0;
	if (h->b.len == 0)
		return;
	h->out(h->arg, h->cell, h->stream, h->b.data, h->b.len);
	buf_reset(&h->b);
}

static void
on_hold_timer(struct loop *l, void *arg)
{
	struct khold *h = arg;

	(void)l;
	h->timer = 0;
	khold_flush(h);
}

void
khold_add(struct khold *h, int cell, int stream, const char *p, size_t n)
{
	if (n == 0)
		return;
	if (h->b.len > 0 && (cell != h->cell || stream != h->stream || h->b.len + n > h->max))
		khold_flush(h);
	if (n >= h->max) {
		h->out(h->arg, cell, stream, p, n);
		return;
	}
	h->cell = cell;
	h->stream = stream;
	if (buf_add(&h->b, p, n) < 0) {	/* cannot happen: bounded above */
		khold_flush(h);
		h->out(h->arg, cell, stream, p, n);
		return;
	}
	if (h->timer == 0)
		h->timer = loop_timer_add(h->loop, h->ms, on_hold_timer, h);
}

void
khold_free(struct khold *h)
{
	loop_timer_cancel(h->loop, h->timer);
	h->timer = 0;
	buf_free(&h->b);
}
