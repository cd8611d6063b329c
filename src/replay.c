/* replay: a queue of cells re-run one at a time, each due when the
 * event stream says the previous one is over. It starts nothing itself:
 * the session starts the due cell from the loop, outside any event. */
#include "terp/replay.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "terp/util.h"

struct replay {
	int		*cells;
	int		 n, next;
	int		 running;	/* the new cell number in flight, or 0 */
	int		 due;		/* the next cell may start */
	int		 ok;		/* its result was CELL_OK */
	int		 failed;	/* original number of a failed cell */
	int		 over;
};

struct replay *
replay_new(const int *cells, int n)
{
	struct replay *r = xcalloc(1, sizeof *r);

	r->cells = xcalloc((size_t)n + 1, sizeof *r->cells);
	if (n > 0)
		memcpy(r->cells, cells, (size_t)n * sizeof *cells);
	r->n = n;
	r->due = 1;
	r->over = n == 0;
	return r;
}

void
replay_free(struct replay *r)
{
	if (r == NULL)
		return;
	free(r->cells);
	free(r);
}

int
replay_due(const struct replay *r)
{
	if (r->over || !r->due)
		return 0;
	return r->cells[r->next];
}

void
replay_started(struct replay *r, int n)
{
	assert(!r->over && r->due && r->running == 0);
	r->due = 0;
	if (n <= 0) {		/* refused: the replay stops there */
		r->failed = r->cells[r->next++];
		r->over = 1;
		return;
	}
	r->running = n;
	r->ok = 0;
	r->next++;
}

int
replay_event(struct replay *r, const struct event *ev)
{
	if (r->over)
		return 0;
	if (ev->type == EV_RESULT && ev->cell != NULL &&
	    ev->cell->n == r->running) {
		r->ok = ev->cell->status == CELL_OK;
		if (!r->ok)
			r->failed = r->cells[r->next - 1];
		r->running = -r->running;	/* over; wait for EV_IDLE */
		return 1;
	}
	if (ev->type == EV_IDLE && r->running < 0) {
		r->running = 0;
		if (!r->ok || r->next >= r->n) {
			r->over = 1;
			return 0;
		}
		r->due = 1;
	}
	return 1;
}

int
replay_progress(const struct replay *r, int *failed)
{
	if (failed != NULL)
		*failed = r->failed;
	return r->next - (r->running > 0 ? 1 : 0) - (r->failed ? 1 : 0);
}
