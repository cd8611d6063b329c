/* cellout: a running cell's output on its way to the notebook and the
 * frontends. Raw output comes in whatever writes the cell made; it goes
 * on coalesced (outnorm.h) in whole lines, or what came within
 * CELLOUT_FLUSH_MS, so that print('IDX', x) is one piece, not four, and
 * a progress bar's rewrites within a flush are one. Each piece is added
 * to the notebook's cell and reported as an EV_STDOUT or EV_STDERR
 * event. One cell's output is held at a time: another cell's flushes
 * it first. Private to src/core; the agent owns one. */
#ifndef TERP_CORE_CELLOUT_H
#define TERP_CORE_CELLOUT_H

#include <stddef.h>
#include <stdint.h>

#include "terp/event.h"
#include "terp/loop.h"
#include "terp/notebook.h"
#include "terp/outnorm.h"

/* ipykernel flushes a cell's streams every 0.2 s. */
#define CELLOUT_FLUSH_MS	200
#define CELLOUT_HOLD		(64 * 1024)	/* of one unfinished line */

/* The loop and the notebook are borrowed; emit (may be NULL) gets
 * the events. */
struct cellout {
	struct loop	*loop;
	struct notebook	*nb;
	event_fn	 emit;
	void		*arg;
	struct outnorm	 norm[2];	/* stdout, stderr */
	int		 cell;		/* whose output is held, or 0 */
	uint64_t	 timer;		/* the flush timer, or 0 */
};

void cellout_init(struct cellout *co, struct loop *l, struct notebook *nb,
    event_fn emit, void *arg);
/* Cancels the timer and frees what is held (nothing is passed on). */
void cellout_free(struct cellout *co);
/* Output of cell n on stream (0 stdout, else stderr). */
void cellout_add(struct cellout *co, int n, int stream, const char *p,
    size_t len);
/* Passes on what cell n holds (nothing when another's is held). final:
 * the cell ended: its streams end and the next output starts afresh;
 * else (it asks for input) what it printed before goes first. */
void cellout_flush(struct cellout *co, int n, int final);

#endif
