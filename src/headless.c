/* headless: `terp -p QUESTION`: one question, answered through the
 * real agent loop and sandbox, printed for a terminal or a script
 * (--json), then the session is torn down. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/agent.h"
#include "terp/cli.h"
#include "terp/jsonout.h"
#include "terp/llm.h"
#include "terp/printer.h"
#include "terp/util.h"

struct headless {
	struct cli	*cli;
	struct agent	*agent;
	struct loop	*loop;
	event_fn	 sink;
	void		*sink_arg;
	int		 asked;
	int		 status;
	int		 answered;
	int		 interrupted;
};

static void
ask(struct headless *h)
{
	char *err = NULL;

	h->asked = 1;
	if (agent_ask(h->agent, h->cli->prompt, &err) < 0) {
		struct event e = { .type = EV_ERROR, .text = err, .len = strlen(err) };
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

	h->sink(h->sink_arg, ev);
	switch (ev->type) {
	case EV_KERNEL:
		/* Ask as soon as the session can take cells: the model's
		 * first reply and the library imports overlap. */
		if ((ev->n == KERNEL_STARTING || ev->n == KERNEL_LOADING ||
		    ev->n == KERNEL_READY) && !h->asked)
			ask(h);
		break;
	case EV_ANSWER:
		h->answered = 1;
		break;
	case EV_ERROR:
		if (h->status == 0)
			h->status = ev->n ? ev->n : 1;
		break;
	case EV_IDLE:
		if (h->asked)
			loop_stop(h->loop);
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
	struct notebook *nb = notebook_new();
	struct llm *m;
	char *err = NULL;
	struct event ev = { .type = EV_SESSION };

	memset(&h, 0, sizeof h);
	h.cli = c;
	h.loop = loop_new();
	m = llm_new(h.loop, &c->llm, &err);
	if (m == NULL) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		notebook_free(nb);
		loop_free(h.loop);
		return 1;
	}
	if (c->json) {
		h.sink = jsonout_event;
		h.sink_arg = jsonout_new(stdout);
	} else {
		h.sink = printer_event;
		h.sink_arg = printer_new(stdout, stderr, PRINTER_PROMPT);
	}
	loop_signal(h.loop, SIGINT, on_sigint, &h);
	loop_signal(h.loop, SIGTERM, on_term, &h);
	loop_signal(h.loop, SIGHUP, on_term, &h);
	signal(SIGPIPE, SIG_IGN);
	h.agent = agent_new(h.loop, nb, &c->kopts, m, &c->aopts, headless_event, &h);
	ev.text = c->session_id;
	ev.name = c->session_dir;
	h.sink(h.sink_arg, &ev);
	if (agent_start(h.agent, &err) < 0) {
		struct event e = { .type = EV_ERROR, .text = err, .len = strlen(err) };
		h.sink(h.sink_arg, &e);
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
	llm_free(m);
	notebook_free(nb);
	free(h.sink_arg);
	loop_free(h.loop);
	return h.status;
}
