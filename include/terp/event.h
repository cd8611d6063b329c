/* event: what the core tells its frontends. The agent and the kernel
 * know nothing of terminals; the TUI, the headless printer and the
 * --json writer are three consumers of this one stream. */
#ifndef TERP_EVENT_H
#define TERP_EVENT_H

#include <stddef.h>

#include "terp/netlog.h"
#include "terp/notebook.h"

enum event_type {
	EV_SESSION,	/* text = session id, name = workspace path */
	EV_KERNEL,	/* n = enum kernel_state, text = human message */
	EV_CELL_START,	/* cell */
	EV_STDOUT,	/* cell, text/len: raw bytes (frontends sanitize) */
	EV_STDERR,	/* same */
	EV_RESULT,	/* cell: status, value, error, duration are set */
	EV_ARTIFACT,	/* cell, artifact */
	EV_QUESTION,	/* text = the user's question */
	EV_TURN,	/* n = turn number within the question */
	EV_TEXT,	/* text/len = a delta of the model's reply */
	EV_TOOL_CALL,	/* id, name, text = code (or raw arguments) */
	EV_USAGE,	/* usage: this call's; total: the session's */
	EV_ANSWER,	/* text = the final answer of a question */
	EV_ERROR,	/* text = one-line reason */
	EV_NOTICE,	/* text = informational line (retrying, fallback...) */
	EV_REQUEST,	/* text = what, len = bytes sent to the model */
	EV_IDLE,	/* the question (or the cell run by hand) is over */
	EV_NET,		/* net: an egress attempt opened, moved bytes or
			 * ended (net->open 0: its last report) */
	EV_PACKAGE,	/* cell, name = a package pip installed into the
			 * session's site directory, text = its version */
};

struct event {
	enum event_type		 type;
	const struct cell	*cell;
	const struct artifact	*artifact;
	const char		*text;
	size_t			 len;
	const char		*id, *name;
	int			 n;
	const struct usage	*usage, *total;
	const struct net_attempt *net;	/* EV_NET; valid during the call */
};

typedef void (*event_fn)(void *arg, const struct event *ev);

#endif
