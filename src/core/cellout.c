/* cellout: a running cell's output coalesced on its way (cellout.h). */
#include "cellout.h"

#include <stdlib.h>

#include "terp/outdisp.h"

struct cellout_piece {
	struct cellout	*co;
	int		 cell, stream;
};

static void
cellout_piece(void *arg, const char *p, size_t len)
{
	struct cellout_piece *o = arg;
	struct event ev = { .type = o->stream ? EV_STDERR : EV_STDOUT,
	    .cell = notebook_cell(o->co->nb, o->cell), .text = p, .len = len };
	char *plain = NULL;

	/* the notebook keeps display marks (outdisp.h), a live reader
	 * gets their content */
	notebook_cell_output(o->co->nb, o->cell, o->stream, p, len);
	if (outdisp_has(p, len)) {
		plain = outdisp_unmark(p, len, &ev.len);
		ev.text = plain;
	}
	if (o->co->emit && ev.len > 0)
		o->co->emit(o->co->arg, &ev);
	free(plain);
}

static void
cellout_flush_stream(struct cellout *co, int s, int final)
{
	struct cellout_piece o = { co, co->cell, s };

	outnorm_flush(&co->norm[s], final, cellout_piece, &o);
}

/* final: the cell ended (or another one's output comes). */
static void
cellout_flush_all(struct cellout *co, int final)
{
	for (int s = 0; s < 2; s++)
		cellout_flush_stream(co, s, final);
	if (final) {
		loop_timer_cancel(co->loop, co->timer);
		co->timer = 0;
	}
}

static void
cellout_on_timer(struct loop *l, void *arg)
{
	struct cellout *co = arg;

	(void)l;
	co->timer = 0;
	cellout_flush_all(co, 0);
}

void
cellout_init(struct cellout *co, struct loop *l, struct notebook *nb,
    event_fn emit, void *arg)
{
	co->loop = l;
	co->nb = nb;
	co->emit = emit;
	co->arg = arg;
	outnorm_init(&co->norm[0], CELLOUT_HOLD);
	outnorm_init(&co->norm[1], CELLOUT_HOLD);
	co->cell = 0;
	co->timer = 0;
}

void
cellout_free(struct cellout *co)
{
	loop_timer_cancel(co->loop, co->timer);
	co->timer = 0;
	outnorm_free(&co->norm[0]);
	outnorm_free(&co->norm[1]);
}

void
cellout_add(struct cellout *co, int n, int stream, const char *p, size_t len)
{
	struct cellout_piece o = { co, n, stream ? 1 : 0 };

	if (co->cell != n)
		cellout_flush_all(co, 1);
	co->cell = n;
	/* What the other stream holds came first: it goes first. */
	if (outnorm_pending(&co->norm[!o.stream]) > 0)
		cellout_flush_stream(co, !o.stream, 0);
	outnorm_add(&co->norm[o.stream], p, len, cellout_piece, &o);
	if (outnorm_pending(&co->norm[o.stream]) > 0 && co->timer == 0)
		co->timer = loop_timer_add(co->loop, CELLOUT_FLUSH_MS,
		    cellout_on_timer, co);
}

void
cellout_flush(struct cellout *co, int n, int final)
{
	if (co->cell != n)
		return;
	cellout_flush_all(co, final);
	if (final)
		co->cell = 0;
}
