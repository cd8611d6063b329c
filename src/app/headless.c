/* headless: `terp -p QUESTION`: the questions asked in order in one
 * session, through the real agent loop and sandbox, printed for a
 * terminal or a script (--json); the run's outcome becomes the exit
 * status of README's "Usage". Each answer's numbers are traced to the
 * session's cells on the way to the printer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/answer_trace.h"
#include "terp/buf.h"
#include "terp/cli.h"
#include "terp/cost.h"
#include "terp/loop.h"
#include "terp/printer.h"
#include "terp/session.h"
#include "terp/util.h"

/* Between the session and the printer: traces each answer. */
struct headless {
	event_fn		 sink;
	void			*sink_arg;
	struct session		*session;	/* NULL until session_new returns */
	struct answer_tracer	*tracer;
	char			*question;	/* the one being answered */
	int			 json;
	int			 untraced;	/* answers with an untraced number */
	uint64_t		 tick;		/* the printer's next tick */
	void			(*flush)(void *);	/* the sink's, or NULL */
};

/* --json: what the sink holds, out before the loop waits (one write a
 * wait, not one an event: a tool-call turn was 13 writes of the
 * journal's and the sink's lines, the reader woken for six of them;
 * bench/agent.py's overhead per turn fell by about a third). */
static void
headless_flush(void *arg)
{
	struct headless *h = arg;

	h->flush(h->sink_arg);
}

#define TICK_MS	250	/* the live line under a running cell: 4 redraws a second */

/* The printer redraws the line under a running cell (stderr a terminal,
 * not --json). */
static void
on_tick(struct loop *l, void *arg)
{
	struct headless *h = arg;

	printer_tick(h->sink_arg);
	h->tick = loop_timer_add(l, TICK_MS, on_tick, h);
}

/* 0 answered, 1 could not answer, 3 --max-session, 5 turn cap, 6 an
 * untraced number with --strict-numbers, 7 --max-cost, 130 Ctrl-C,
 * 128+N for signal N. */
static int
exit_status(const struct session_outcome *o)
{
	if (o->cancelled || o->interrupted)
		return 130;
	if (o->signo)
		return 128 + o->signo;
	switch (o->end) {
	case SESSION_DONE:
		return o->finished ? 0 : 1;
	case SESSION_TURN_CAP:
		return 5;
	case SESSION_MAX_SESSION:
		return 3;
	case SESSION_MAX_COST:
		return COST_EXIT;
	default:
		return 1;
	}
}

/* On a terminal, under the summary: where each number came from, as a
 * footnote list ("  - 2,748,435.15: cell [1], line 2"); the answer's
 * words are never changed. */
static void
print_footnotes(const struct answer_trace *tr)
{
	struct buf b;
	const char *p, *nl;

	buf_init(&b, 1 << 20);
	answer_trace_footnotes(tr, &b);
	for (p = buf_str(&b); *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (nl == NULL)
			nl = p + strlen(p) - 1;
		if (p[0] == '-')
			fprintf(stderr, "  %.*s\n", (int)(nl - p), p);
	}
	buf_free(&b);
}

/* The answer's numbers traced to the session's cells (the model's and
 * the hand-run ones, all finished by now), leaving out the question's:
 * the event goes on with them, and -p says how many were found. */
static void
headless_show(void *arg, const struct event *ev)
{
	struct headless *h = arg;
	struct answer_trace tr;
	struct event tev;
	char *sum;

	if (ev->type == EV_QUESTION) {
		free(h->question);
		h->question = xstrdup(ev->text ? ev->text : "");
	}
	if (ev->type != EV_ANSWER || ev->trace != NULL || h->session == NULL) {
		h->sink(h->sink_arg, ev);
		return;
	}
	answer_tracer_sync(h->tracer, session_notebook(h->session), 0);
	answer_tracer_trace(h->tracer, ev->text, h->question, &tr);
	tev = *ev;
	tev.trace = &tr;
	h->sink(h->sink_arg, &tev);
	if (tr.traced < tr.n)
		h->untraced++;
	if (!h->json && (sum = answer_trace_summary(&tr)) != NULL) {
		fprintf(stderr, "terp: %s\n", sum);
		free(sum);
		if (isatty(STDERR_FILENO))
			print_footnotes(&tr);
	}
	answer_trace_free(&tr);
}

static void
print_usage(struct cli *c, const struct notebook *nb)
{
	const struct usage *u = notebook_usage(nb);
	char cost[32];

	if (c->json || (u->input_tokens == 0 && u->output_tokens == 0))
		return;
	fprintf(stderr, "terp: tokens: %ld in (%ld cached), %ld out%s%s\n",
	    u->input_tokens, u->cached_tokens, u->output_tokens,
	    u->priced ? "; cost " : "", u->priced ? cost_fmt(u->cost, cost, sizeof cost) : "");
}

int
headless_run(struct cli *c)
{
	struct session_opts so;
	struct session_outcome out;
	struct headless h = { .json = c->json };
	char *err = NULL, *warn = NULL;
	int rc;

	cli_sessions_opts(c, &so);
	so.questions = c->prompts;
	so.nquestions = c->nprompts;
	frontend_sink(c->json, PRINTER_PROMPT, &h.sink, &h.sink_arg);
	if (!c->json && c->llm.show_reasoning)
		printer_show_reasoning(h.sink_arg, 1);
	so.show = headless_show;
	so.arg = &h;
	if ((h.flush = frontend_batch(c->json, h.sink_arg)) != NULL) {
		so.show_flush = headless_flush;
		so.show_hold_us = 0;	/* each wait: nothing shown later */
	}
	h.tracer = answer_tracer_new();
	if ((h.session = session_new(&so, &warn, &err)) == NULL) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		free(h.sink_arg);
		answer_tracer_free(h.tracer);
		return 1;
	}
	if (warn) {
		fprintf(stderr, "terp: warning: %s\n", warn);
		free(warn);
	}
	if (!c->json && isatty(STDERR_FILENO))
		h.tick = loop_timer_add(session_loop(h.session), TICK_MS, on_tick, &h);
	session_run(h.session, &out);
	if (!c->json) {
		loop_timer_cancel(session_loop(h.session), h.tick);
		printer_done(h.sink_arg);
	}
	rc = exit_status(&out);
	if (rc == 0 && h.untraced > 0 && c->strict_numbers) {
		fprintf(stderr, "terp: --strict-numbers: %d answer%s a number "
		    "not in any output\n", h.untraced, h.untraced == 1 ? " has" : "s have");
		rc = HEADLESS_UNTRACED;
	}
	print_usage(c, session_notebook(h.session));
	session_free(h.session);	/* the journal is synced and closed */
	free(h.sink_arg);
	answer_tracer_free(h.tracer);
	free(h.question);
	return rc;
}
