/* frontend: what terp exec and terp -p share: which event writer
 * prints. */
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

void (*frontend_batch(int json, void *arg))(void *)
{
	if (!json)
		return NULL;	/* the printer shows each event at once */
	jsonout_batch(arg);
	return jsonout_flush;
}
