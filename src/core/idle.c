/* idle: two loop timers over the event stream: the quiet time since the
 * session last did something, and the session's whole length. */
#include "terp/idle.h"

#include <stdlib.h>

#include "terp/kernel.h"
#include "terp/util.h"

struct idle {
	struct loop	*loop;
	int64_t		 idle_ms;
	uint64_t	 timer, max_timer;
	int64_t		 deadline;	/* now_ms() when timer fires; 0: unarmed */
	int		 busy;		/* a question or a cell is running */
	int		 stopped;	/* the sandbox is not running */
	idle_fn		 fire;
	void		*arg;
};

static void
on_idle(struct loop *l, void *arg)
{
	struct idle *i = arg;

	i->timer = 0;
	i->deadline = 0;
	if (!i->busy && !i->stopped)
		i->fire(i->arg, IDLE_TIMEOUT);
}

static void
on_max(struct loop *l, void *arg)
{
	struct idle *i = arg;

	i->max_timer = 0;
	i->fire(i->arg, IDLE_MAX_SESSION);
}

static void
disarm(struct idle *i)
{
	if (i->timer != 0)
		loop_timer_cancel(i->loop, i->timer);
	i->timer = 0;
	i->deadline = 0;
}

static void
arm(struct idle *i)
{
	disarm(i);
	if (i->idle_ms > 0 && !i->busy && !i->stopped) {
		i->timer = loop_timer_add(i->loop, i->idle_ms, on_idle, i);
		i->deadline = now_ms() + i->idle_ms;
	}
}

struct idle *
idle_new(struct loop *l, int64_t idle_ms, int64_t max_ms, idle_fn fire,
    void *arg)
{
	struct idle *i = xcalloc(1, sizeof *i);

	i->loop = l;
	i->idle_ms = idle_ms;
	i->fire = fire;
	i->arg = arg;
	i->stopped = 1;		/* armed once the sandbox is up */
	if (max_ms > 0)
		i->max_timer = loop_timer_add(l, max_ms, on_max, i);
	return i;
}

void
idle_free(struct idle *i)
{
	if (i == NULL)
		return;
	disarm(i);
	if (i->max_timer != 0)
		loop_timer_cancel(i->loop, i->max_timer);
	free(i);
}

void
idle_event(struct idle *i, const struct event *ev)
{
	switch (ev->type) {
	case EV_QUESTION:
	case EV_CELL_START:
		i->busy = 1;
		disarm(i);
		break;
	case EV_IDLE:
		i->busy = 0;
		arm(i);
		break;
	case EV_KERNEL:
		if (ev->kstate == KERNEL_STOPPED || ev->kstate == KERNEL_DEAD) {
			i->stopped = 1;
			disarm(i);
		} else if (ev->kstate == KERNEL_READY || ev->kstate == KERNEL_LOADING) {
			int was = i->stopped;
			i->stopped = 0;
			if (was || i->timer == 0)
				arm(i);
		}
		break;
	default:
		break;
	}
}

int64_t
idle_deadline(const struct idle *i)
{
	return i != NULL ? i->deadline : 0;
}
