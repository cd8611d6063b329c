/* replay: a queue of cells re-run one at a time through the core, each
 * started when the event stream says the previous one is over. */
#include "terp/replay.h"

#include <stdlib.h>
#include <string.h>

#include "terp/util.h"

struct replay {
	int		*cells;
	int		 n, next;
	int		 running;	/* the new cell number in flight, or 0 */
	int		 ok;		/* its result was CELL_OK */
	int		 failed;	/* original number of a failed cell */
	int		 over;
	replay_run_fn	 run;
	void		*arg;
};

struct replay *
replay_new(const int *cells, int n, replay_run_fn run, void *arg)
{
	struct replay *r = xcalloc(1, sizeof *r);

	r->cells = xcalloc((size_t)n + 1, sizeof *r->cells);
	if (n > 0)
		memcpy(r->cells, cells, (size_t)n * sizeof *cells);
	r->n = n;
	r->run = run;
	r->arg = arg;
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

/* Starts the next cell; ends the replay when none is left or the run
 * is refused. */
static int
step(struct replay *r, char **err)
{
	int c;

	if (r->next >= r->n) {
		r->over = 1;
		return 0;
	}
	c = r->run(r->arg, r->cells[r->next], err);
	if (c < 0) {
		r->failed = r->cells[r->next];
		r->over = 1;
		return -1;
	}
	r->running = c;
	r->ok = 0;
	r->next++;
	return 0;
}

int
replay_start(struct replay *r, char **err)
{
	if (r->n == 0) {
		*err = xstrdup("nothing to replay: no cell that succeeded has "
		    "lost its state");
		r->over = 1;
		return -1;
	}
	return step(r, err);
}

int
replay_event(struct replay *r, const struct event *ev)
{
	char *err = NULL;

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
		if (!r->ok) {
			r->over = 1;
			return 0;
		}
		if (step(r, &err) < 0)
			free(err);
		return !r->over;
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
