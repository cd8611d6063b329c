/* headless: `terp -p QUESTION`: one question, answered through the
 * real agent loop and sandbox, printed for a terminal or a script
 * (--json), then the session is torn down. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/agent.h"
#include "terp/cli.h"
#include "terp/llm.h"
#include "terp/printer.h"
#include "terp/session.h"
#include "terp/util.h"

struct headless {
	struct cli	*cli;
	struct agent	*agent;
	struct loop	*loop;
	struct session	*session;	/* journal, replay, idle */
	event_fn	 sink;
	void		*sink_arg;
	int		 asked;		/* questions asked so far */
	int		 status;
	int		 answered;
	int		 interrupted;
};

/* Asks the next question, or ends the run after the last one (or after
 * a failure: a follow-up to a failed question would not make sense). */
static void
ask_next(struct headless *h)
{
	char *err = NULL;

	if (h->asked >= h->cli->nprompts || h->status != 0 || h->interrupted) {
		loop_stop(h->loop);
		return;
	}
	h->answered = 0;
	if (agent_ask(h->agent, h->cli->prompts[h->asked++], &err) < 0) {
		struct event e = { .type = EV_ERROR, .text = err, .len = strlen(err),
		    .error = ERROR_USAGE };
		h->sink(h->sink_arg, &e);
		free(err);
		h->status = 1;
		loop_stop(h->loop);
	}
}

static void
headless_event(void *arg, const struct event *ev)
{
	struct headless *h = arg;

	session_record(h->session, ev);	/* saved before it is shown */
	h->sink(h->sink_arg, ev);
	switch (session_event(h->session, ev)) {
	case SESSION_OWN:		/* a replayed cell's */
		return;
	case SESSION_READY:		/* the replay is over */
		if (!h->asked)
			ask_next(h);
		return;
	case SESSION_PASS:
		break;
	}
	switch (ev->type) {
	case EV_KERNEL:
		/* Ask as soon as the session can take cells: the model's
		 * first reply and the library imports overlap. */
		if ((ev->kstate == KERNEL_STARTING || ev->kstate == KERNEL_LOADING ||
		    ev->kstate == KERNEL_READY) && !h->asked)
			ask_next(h);
		else if (ev->kstate == KERNEL_DEAD && !h->asked) {
			h->status = 1;	/* the printer showed why */
			loop_stop(h->loop);
		}
		break;
	case EV_ANSWER:
		h->answered = 1;
		break;
	case EV_ERROR:
		if (h->status == 0)
			h->status = ev->error == ERROR_TURN_CAP ? 5 :
			    ev->error == ERROR_MAX_SESSION ? 3 : 1;
		break;
	case EV_IDLE:
		if (h->asked) {
			if (!h->answered && h->status == 0)
				h->status = 1;
			ask_next(h);
		}
		break;
	default:
		break;
	}
}

static void
on_sigint(struct loop *l, int signo, void *arg)
{
	struct headless *h = arg;

	if (h->interrupted) {
		loop_stop(l);
		return;
	}
	h->interrupted = 1;
	agent_cancel(h->agent);
	if (!agent_busy(h->agent))
		loop_stop(l);
}

static void
on_term(struct loop *l, int signo, void *arg)
{
	struct headless *h = arg;

	h->status = 128 + signo;
	loop_stop(l);
}

static void
print_usage(struct headless *h)
{
	const struct usage *u = notebook_usage(agent_notebook(h->agent));

	if (h->cli->json || (u->input_tokens == 0 && u->output_tokens == 0))
		return;
	fprintf(stderr, "terp: tokens: %ld in (%ld cached), %ld out\n",
	    u->input_tokens, u->cached_tokens, u->output_tokens);
}

int
headless_run(struct cli *c)
{
	struct headless h;
	struct notebook *nb;
	struct llm *m;
	struct session_opts so;
	char *err = NULL, *warn = NULL;
	struct event ev = { .type = EV_SESSION };

	memset(&h, 0, sizeof h);
	h.cli = c;
	h.loop = loop_new();
	if (c->resume) {
		nb = c->res.nb;		/* the conversation goes on */
		c->res.nb = NULL;
	} else {
		nb = notebook_new();
	}
	m = llm_new(h.loop, &c->llm, &err);
	if (m == NULL) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		notebook_free(nb);
		loop_free(h.loop);
		return 1;
	}
	cli_sessions_opts(c, &so);
	so.emit = headless_event;
	so.arg = &h;
	h.session = session_new(h.loop, nb, &so, &warn, &err);
	if (h.session == NULL) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		llm_free(m);
		notebook_free(nb);
		loop_free(h.loop);
		return 1;
	}
	if (warn) {
		fprintf(stderr, "terp: warning: %s\n", warn);
		free(warn);
	}
	frontend_sink(c->json, PRINTER_PROMPT, &h.sink, &h.sink_arg);
	frontend_signals(h.loop, on_sigint, on_term, &h);
	h.agent = agent_new(h.loop, nb, &c->kopts, m, &c->aopts, headless_event, &h);
	session_attach(h.session, h.agent);
	ev.text = c->session_id;
	ev.name = c->session_dir;
	headless_event(&h, &ev);
	if (session_start(h.session, &err) < 0) {
		struct event e = { .type = EV_ERROR, .text = err, .len = strlen(err),
		    .error = ERROR_SANDBOX };
		headless_event(&h, &e);
		free(err);
		h.status = 1;
	} else {
		loop_run(h.loop);
	}
	if (h.interrupted)
		h.status = 130;
	else if (!h.answered && h.status == 0)
		h.status = 1;
	print_usage(&h);
	agent_free(h.agent);
	session_free(h.session);	/* the journal is synced and closed */
	llm_free(m);
	notebook_free(nb);
	free(h.sink_arg);
	loop_free(h.loop);
	return h.status;
}
