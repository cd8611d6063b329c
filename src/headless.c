/* headless: `terp -p QUESTION`: the questions asked in order in one
 * session, through the real agent loop and sandbox, printed for a
 * terminal or a script (--json); the run's outcome becomes the exit
 * status of README's "Usage". */
#include <stdio.h>
#include <stdlib.h>

#include "terp/cli.h"
#include "terp/printer.h"
#include "terp/session.h"

/* 0 answered, 1 could not answer, 3 --max-session, 5 turn cap, 130
 * Ctrl-C, 128+N for signal N. */
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
	default:
		return 1;
	}
}

static void
print_usage(struct cli *c, const struct notebook *nb)
{
	const struct usage *u = notebook_usage(nb);

	if (c->json || (u->input_tokens == 0 && u->output_tokens == 0))
		return;
	fprintf(stderr, "terp: tokens: %ld in (%ld cached), %ld out\n",
	    u->input_tokens, u->cached_tokens, u->output_tokens);
}

int
headless_run(struct cli *c)
{
	struct session_opts so;
	struct session_outcome out;
	struct session *s;
	char *err = NULL, *warn = NULL;
	void *sink;

	cli_sessions_opts(c, &so);
	so.questions = c->prompts;
	so.nquestions = c->nprompts;
	frontend_sink(c->json, PRINTER_PROMPT, &so.show, &sink);
	so.arg = sink;
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
	print_usage(c, session_notebook(s));
	session_free(s);	/* the journal is synced and closed */
	free(sink);
	return exit_status(&out);
}
