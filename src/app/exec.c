/* exec: `terp exec`, the sandbox without a model. One session runs each
 * -c cell (or stdin as one cell) in order, prints what they print, and
 * the run's outcome becomes the exit status of README's "Usage". */
#include <stdio.h>
#include <stdlib.h>

#include "terp/cli.h"
#include "terp/printer.h"
#include "terp/session.h"

/* 0 ok, 1 raised, 3 timeout or interrupted (or --max-session), 4 crashed
 * or no sandbox, 128+N for signal N. */
static int
exit_status(const struct session_outcome *o)
{
	if (o->signo)
		return 128 + o->signo;
	switch (o->end) {
	case SESSION_DONE:
		return o->interrupted ? 3 : 0;
	case SESSION_CELL_STOPPED:
	case SESSION_MAX_SESSION:
		return 3;
	case SESSION_CELL_CRASHED:
	case SESSION_SANDBOX_DEAD:
	case SESSION_REFUSED:
		return 4;
	default:
		return 1;
	}
}

int
exec_run(struct cli *c)
{
	struct session_opts so;
	struct session_outcome out;
	struct session *s;
	char *err = NULL, *warn = NULL;
	void *sink;

	/* no model, no data file: the cells say what they need */
	c->kopts.preload_on_need = c->ndata == 0;
	cli_sessions_opts(c, &so);
	so.cells = c->cells;
	so.ncells = c->ncells;
	so.keep_going = !c->stop_on_error;
	frontend_sink(c->json, PRINTER_EXEC, &so.show, &sink);
	so.arg = sink;
	so.show_flush = frontend_batch(c->json, sink);
	/* cells back to back: shown at most every 2 ms (two writes and a
	 * wake-up of the reader a cell were half the host's cost of one) */
	so.show_hold_us = 2000;
	if ((s = session_new(&so, &warn, &err)) == NULL) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		free(sink);
		return 1;
	}
	if (warn) {
		fprintf(stderr, "terp: warning: %s\n", warn);
		free(warn);
	}
	session_run(s, &out);
	session_free(s);	/* the journal is synced and closed */
	free(sink);
	return exit_status(&out);
}
