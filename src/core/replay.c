/* replay: a queue of cells re-run one at a time, each due when the
 * event stream says the previous one is over. It starts nothing itself:
 * the session starts the due cell from the loop, outside any event. */
#include "terp/replay.h"

#include <assert.h>
#include <limits.h>
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

/* ---- /replay's cell list ---- */

/* A cell number at *s (digits only, no sign), advanced past it; -1
 * when there is none or it does not fit an int. */
static int
range_num(const char **s)
{
	long v = 0;

	if (**s < '0' || **s > '9')
		return -1;
	for (; **s >= '0' && **s <= '9'; (*s)++) {
		v = v * 10 + (**s - '0');
		if (v > INT_MAX)
			return -1;
	}
	return (int)v;
}

static void
range_skip_space(const char **s)
{
	while (**s == ' ' || **s == '\t')
		(*s)++;
}

int
replay_parse_range(const char *spec, int max, int **cells, char **err)
{
	char *want = xcalloc((size_t)max + 2, 1);	/* by cell number */
	const char *s = spec;
	int n = 0;

	*cells = NULL;
	range_skip_space(&s);
	if (*s == '\0')
		goto bad;
	for (;;) {
		int a, b;

		range_skip_space(&s);
		if ((a = range_num(&s)) < 0)
			goto bad;
		b = a;
		range_skip_space(&s);
		if (*s == '-') {
			s++;
			range_skip_space(&s);
			if ((b = range_num(&s)) < 0)
				goto bad;
			range_skip_space(&s);
		}
		if (a == 0 || b == 0) {
			*err = xstrdup("cells are numbered from 1");
			goto fail;
		}
		if (b < a) {
			*err = xasprintf("%d-%d: the first cell comes first", a, b);
			goto fail;
		}
		if (b > max) {
			*err = max == 0 ? xstrdup("there is no cell yet") :
			    xasprintf("no cell [%d]: the last is [%d]", b, max);
			goto fail;
		}
		for (int i = a; i <= b; i++)
			want[i] = 1;
		if (*s == '\0')
			break;
		if (*s++ != ',')
			goto bad;
	}
	for (int i = 1; i <= max; i++)
		if (want[i])
			n++;
	*cells = xcalloc((size_t)n + 1, sizeof **cells);
	n = 0;
	for (int i = 1; i <= max; i++)
		if (want[i])
			(*cells)[n++] = i;
	free(want);
	return n;
bad:
	*err = xstrdup("not a cell list: use N, N-M or a list like 2,4-6");
fail:
	free(want);
	return -1;
}
