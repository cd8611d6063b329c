/* exec: `terp exec`, the sandbox without a model. Starts one session,
 * runs each -c cell (or stdin as one cell) in order in it, prints what
 * they print, and exits with the status of the first failing cell. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/agent.h"
#include "terp/cli.h"
#include "terp/printer.h"
#include "terp/session.h"
#include "terp/util.h"

struct exec_state {
	struct cli	*cli;
	struct agent	*agent;
	struct loop	*loop;
	struct session	*session;	/* journal, replay, idle */
	event_fn	 sink;
	void		*sink_arg;
	int		 next;		/* index of the next -c to run */
	int		 status;	/* exit status so far */
	int		 started;	/* the kernel reached a usable state */
	int		 dead;
	int		 interrupted;	/* the user asked to stop the run */
	int		 sigints;	/* Ctrl-C presses since the last result */
};

static int
status_exit(enum cell_status s)
{
	switch (s) {
	case CELL_OK: return 0;
	case CELL_ERROR: return 1;
	case CELL_TIMEOUT:
	case CELL_INTERRUPTED: return 3;
	default: return 4;
	}
}

static void
run_next(struct exec_state *x)
{
	char *err = NULL;

	if (x->next >= x->cli->ncells || x->interrupted) {
		loop_stop(x->loop);
		return;
	}
	if (agent_run_cell(x->agent, x->cli->cells[x->next++], &err) < 0) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		if (x->status == 0)
			x->status = 4;
		loop_stop(x->loop);
	}
}

static void
exec_event(void *arg, const struct event *ev)
{
	struct exec_state *x = arg;

	session_record(x->session, ev);	/* saved before it is shown */
	x->sink(x->sink_arg, ev);
	switch (session_event(x->session, ev)) {
	case SESSION_OWN:		/* a replayed cell's */
		return;
	case SESSION_READY:		/* the replay is over */
		if (!x->started) {
			x->started = 1;
			run_next(x);
		}
		return;
	case SESSION_PASS:
		break;
	}
	switch (ev->type) {
	case EV_ERROR:		/* --max-session: a timeout */
		if (x->status == 0)
			x->status = ev->error == ERROR_MAX_SESSION ? 3 : 1;
		break;
	case EV_KERNEL:
		if (ev->kstate == KERNEL_DEAD) {
			x->dead = 1;
			if (x->status == 0)
				x->status = 4;
			loop_stop(x->loop);
		} else if ((ev->kstate == KERNEL_LOADING || ev->kstate == KERNEL_READY) &&
		    !x->started) {
			x->started = 1;
			run_next(x);
		}
		break;
	case EV_RESULT:
		x->sigints = 0;
		if (ev->cell->status != CELL_OK && x->status == 0)
			x->status = status_exit(ev->cell->status);
		break;
	case EV_IDLE:
		if (x->status != 0 && x->cli->stop_on_error) {
			loop_stop(x->loop);
			break;
		}
		run_next(x);
		break;
	default:
		break;
	}
}

/* The first Ctrl-C interrupts the running cell (later cells still run,
 * in the same session); a second one before that cell ends, or one with
 * nothing running, stops the run. */
static void
on_sigint(struct loop *l, int signo, void *arg)
{
	struct exec_state *x = arg;

	if (x->sigints++ > 0 || !agent_busy(x->agent)) {
		x->interrupted = 1;
		loop_stop(l);
		return;
	}
	agent_cancel(x->agent);
}

static void
on_term(struct loop *l, int signo, void *arg)
{
	struct exec_state *x = arg;

	x->status = 128 + signo;
	loop_stop(l);
}

int
exec_run(struct cli *c)
{
	struct exec_state x;
	struct notebook *nb;
	struct session_opts so;
	char *err = NULL, *warn = NULL;
	struct event ev = { .type = EV_SESSION };

	memset(&x, 0, sizeof x);
	x.cli = c;
	x.loop = loop_new();
	if (c->resume) {
		nb = c->res.nb;		/* new cells follow the old ones */
		c->res.nb = NULL;
	} else {
		nb = notebook_new();
	}
	cli_sessions_opts(c, &so);
	so.emit = exec_event;
	so.arg = &x;
	x.session = session_new(x.loop, nb, &so, &warn, &err);
	if (x.session == NULL) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		notebook_free(nb);
		loop_free(x.loop);
		return 1;
	}
	if (warn) {
		fprintf(stderr, "terp: warning: %s\n", warn);
		free(warn);
	}
	frontend_sink(c->json, PRINTER_EXEC, &x.sink, &x.sink_arg);
	frontend_signals(x.loop, on_sigint, on_term, &x);
	x.agent = agent_new(x.loop, nb, &c->kopts, NULL, &c->aopts, exec_event, &x);
	session_attach(x.session, x.agent);
	ev.text = c->session_id;
	ev.name = c->session_dir;
	exec_event(&x, &ev);
	if (session_start(x.session, &err) < 0) {
		if (c->json) {
			struct event e = { .type = EV_ERROR, .text = err, .len = strlen(err),
			    .error = ERROR_SANDBOX };
			x.sink(x.sink_arg, &e);
		} else {
			fprintf(stderr, "terp: %s\n", err);
		}
		free(err);
		x.status = 4;
	} else {
		loop_run(x.loop);
	}
	if (x.interrupted && x.status == 0)
		x.status = 3;
	agent_free(x.agent);
	session_free(x.session);	/* the journal is synced and closed */
	notebook_free(nb);
	free(x.sink_arg);
	loop_free(x.loop);
	return x.status;
}
