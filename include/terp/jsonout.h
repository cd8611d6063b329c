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
/* An event_fn: arg is the jsonout. */
void jsonout_event(void *arg, const struct event *ev);

#endif
