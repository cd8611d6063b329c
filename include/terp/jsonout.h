/* jsonout: the --json frontend: one JSON object per line on a stream,
 * for every core event (documented in terp(1)). Cell output is streamed
 * up to the notebook's head cap, then the tail follows at the result, so
 * a 2 GB flood prints a bounded amount. */
#ifndef TERP_JSONOUT_H
#define TERP_JSONOUT_H

#include <stdio.h>

#include "terp/event.h"

/* fp is borrowed. Free with free(). */
struct jsonout *jsonout_new(FILE *fp);
/* From now on lines wait in memory until jsonout_flush (terp exec: one
 * write for a cell's result and the next cell, not one a line); the
 * session calls it before its loop waits (session_opts.show_flush). */
void jsonout_batch(struct jsonout *j);
/* Writes the lines kept, if any; arg is the jsonout. */
void jsonout_flush(void *arg);
/* An event_fn: arg is the jsonout. */
void jsonout_event(void *arg, const struct event *ev);

#endif
