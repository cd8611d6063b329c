/* frontend: the set-up that terp exec and terp -p share: which event
 * writer prints, and which signals reach the loop. */
#include <signal.h>
#include <stdio.h>

#include "terp/cli.h"
#include "terp/jsonout.h"
#include "terp/printer.h"

void
frontend_sink(int json, enum printer_mode mode, event_fn *fn, void **arg)
{
	if (json) {
		*fn = jsonout_event;
		*arg = jsonout_new(stdout);
	} else {
		*fn = printer_event;
		*arg = printer_new(stdout, stderr, mode);
	}
}

void
frontend_signals(struct loop *l, loop_signal_cb on_sigint, loop_signal_cb on_term,
    void *arg)
{
	loop_signal(l, SIGINT, on_sigint, arg);
	loop_signal(l, SIGTERM, on_term, arg);
	loop_signal(l, SIGHUP, on_term, arg);
	signal(SIGPIPE, SIG_IGN);
}
