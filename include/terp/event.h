/* event: what the core tells its frontends. The agent and the kernel
 * know nothing of terminals; the TUI, the headless printer and the
 * --json writer are three consumers of this one stream. */
#ifndef TERP_EVENT_H
#define TERP_EVENT_H

#include <stddef.h>

#include "terp/kernel.h"
#include "terp/llm.h"
#include "terp/netlog.h"
#include "terp/notebook.h"

enum event_type {
	EV_SESSION,	/* text = session id, name = workspace path */
	EV_KERNEL,	/* kstate, restarted, state_lost; text = for people */
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
	EV_ERROR,	/* error (llm_err, http_status); text = one line */
	EV_NOTICE,	/* text = informational line (retrying, fallback...) */
	EV_REQUEST,	/* text = what, len = bytes sent to the model */
	EV_IDLE,	/* the question (or the cell run by hand) is over */
	EV_NET,		/* net: an egress attempt opened, moved bytes or
			 * ended (net->open 0: its last report) */
	EV_PACKAGE,	/* cell, name = a package pip installed into the
			 * session's site directory, text = its version */
	EV_REASONING,	/* text/len = a delta of the model's reasoning: shown
			 * apart, never the answer, never traced */
	EV_CODE,	/* text/len = the code of a python_exec call the model
			 * is still writing, all of it so far; n = which part
			 * of the reply (a new n: a new call). Shown only: the
			 * call that runs comes as EV_TOOL_CALL */
	EV_APPROVE,	/* --ask: id, text/len = the code of the model's call
			 * that waits for agent_approve before it runs */
	EV_INPUT,	/* cell asks for a line: text = its prompt (safe to
			 * show), n = 1 for a password; answer with
			 * agent_input_reply (kernel.h: cbs.input) */
};

struct answer_trace;
/* Why an EV_ERROR: the model client's reason, or terp's own. */
enum error_kind {
	ERROR_MODEL,		/* a model request failed: llm_err, http_status */
	ERROR_EMPTY_REPLY,	/* the model's reply held nothing */
	ERROR_TURN_CAP,		/* --max-turns model calls without an answer */
	ERROR_CANCELLED,	/* the user stopped the question */
	ERROR_SANDBOX,		/* the sandbox could not start, or died for good */
	ERROR_USAGE,		/* terp refused the request (busy, no model) */
	ERROR_MAX_SESSION,	/* --max-session ended the session */
	ERROR_MAX_COST,		/* --max-cost stopped the question (cost.h) */
};

struct event {
	enum event_type		 type;
	const struct cell	*cell;
	const struct artifact	*artifact;
	const char		*text;
	size_t			 len;
	const char		*id, *name;
	int			 n;		/* EV_TURN: the turn number */
	const struct usage	*usage, *total;
	/* EV_ANSWER: its numbers traced to the cells (answer_trace.h),
	 * set by the frontend that traced it; NULL when not traced. */
	const struct answer_trace *trace;
	/* EV_SESSION: where the Python session runs (kernel_where) and, for
	 * a remote one, the line on its isolation (else NULL). */
	const char		*where, *isolation;
	/* EV_KERNEL: the state, and kernel_status's typed facts */
	enum kernel_state	 kstate;
	int			 restarted, state_lost;
	/* EV_ERROR */
	enum error_kind		 error;
	enum llm_err		 llm_err;	/* with ERROR_MODEL */
	int			 http_status;	/* 0: no HTTP status came */
	const struct net_attempt *net;	/* EV_NET; valid during the call */
};

/* The name of ev's error kind, for records and scripts: the model
 * client's kind name (llm_err_name: "auth", "rate"...) for ERROR_MODEL,
 * else "empty_reply", "turn_cap", "cancelled", "sandbox", "usage",
 * "max_session". A static string. */
const char *event_error_name(const struct event *ev);

typedef void (*event_fn)(void *arg, const struct event *ev);

#endif
