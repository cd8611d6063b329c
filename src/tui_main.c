/* tui_main: sets up a notebook session (model client, notebook, agent,
 * sandbox) for the terminal UI and tears it down after it, as
 * headless.c does for -p. */
#include "terp/tui.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/agent.h"
#include "terp/buf.h"
#include "terp/cli.h"
#include "terp/journal.h"
#include "terp/llm.h"
#include "terp/loop.h"
#include "terp/notebook.h"
#include "terp/session.h"
#include "terp/util.h"

/* The journal, resume, replay and idle timers around the TUI's sink
 * (the TUI's state is one static instance; so is this). */
static struct session *tui_sess;

static void
tui_session_event(void *arg, const struct event *ev)
{
	session_record(tui_sess, ev);	/* saved before it is shown */
	tui_on_event(arg, ev);
	/* The user drives the TUI: replayed cells are shown like any
	 * other, and nothing waits for the replay to end. */
	(void)session_event(tui_sess, ev);
}

static void
notice(const char *text)
{
	struct event e = { .type = EV_NOTICE, .text = text, .len = strlen(text) };

	tui_on_event(NULL, &e);
}

/* What main.c would have printed on stderr before the session (the pip
 * index offered), one notice per line. */
static void
startup_notes(const struct cli *c)
{
	const char *line = c->startup_notes;

	while (line != NULL && *line) {
		const char *nl = strchr(line, '\n');
		char *msg = xstrndup(line, nl ? (size_t)(nl - line) : strlen(line));
		notice(msg);
		free(msg);
		line = nl ? nl + 1 : NULL;
	}
}

/* A resumed notebook back on screen, then what the user must know: the
 * resume's warnings (changed or vanished data files) and that the
 * sandbox is new, with how to get the variables back. Shown, not
 * journaled: the journal has its own record of the resume. */
static void
resume_show(struct cli *c, struct notebook *nb)
{
	const char *line = c->res.warnings;
	int *cells = NULL, n;
	struct journal *j = session_journal(tui_sess);
	struct buf b;
	char *msg;

	tui_restore(nb);
	while (line != NULL && *line) {
		const char *nl = strchr(line, '\n');
		msg = xasprintf("warning: %.*s", nl ? (int)(nl - line) : (int)strlen(line),
		    line);
		notice(msg);
		free(msg);
		line = nl ? nl + 1 : NULL;
	}
	n = j ? journal_replay_cells(j, &cells) : 0;
	free(cells);
	buf_init(&b, 4096);
	buf_printf(&b, "resumed session %s: %d question%s, %d cell%s. The sandbox "
	    "is new: variables and imports from before are gone", c->session_id,
	    c->res.meta.nquestions, c->res.meta.nquestions == 1 ? "" : "s",
	    notebook_ncells(nb), notebook_ncells(nb) == 1 ? "" : "s");
	if (n > 0)
		buf_printf(&b, "; %s the %d cell%s that succeeded",
		    c->replay ? "--replay re-runs now" : "/replay re-runs", n,
		    n == 1 ? "" : "s");
	buf_adds(&b, ".");
	notice(buf_str(&b));
	buf_free(&b);
}

int
tui_session_run(struct cli *c)
{
	struct loop *l = loop_new();
	struct notebook *nb;
	char *err = NULL, *warn = NULL;
	struct llm *m = llm_new(l, &c->llm, &err);
	struct session_opts so;
	int rc = 0;

	if (!m) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		loop_free(l);
		return 1;
	}
	if (c->resume) {
		nb = c->res.nb;
		c->res.nb = NULL;
	} else {
		nb = notebook_new();
	}
	cli_sessions_opts(c, &so);
	so.emit = tui_session_event;
	tui_sess = session_new(l, nb, &so, &warn, &err);
	if (tui_sess == NULL) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		llm_free(m);
		notebook_free(nb);
		loop_free(l);
		return 1;
	}
	if (c->resume)
		resume_show(c, nb);
	if (warn) {
		char *msg = xasprintf("warning: %s", warn);
		notice(msg);
		free(msg);
		free(warn);
	}
	startup_notes(c);
	signal(SIGPIPE, SIG_IGN);
	struct agent *a = agent_new(l, nb, &c->kopts, m, &c->aopts, tui_session_event,
	    NULL);
	session_attach(tui_sess, a);
	struct event ev = { .type = EV_SESSION, .text = c->session_id,
		.name = c->session_dir };
	tui_session_event(NULL, &ev);
	if (agent_start(a, &err) < 0) {
		/* shown in the notebook; the UI still comes up */
		struct event e = { .type = EV_ERROR, .text = err, .len = strlen(err) };
		tui_session_event(NULL, &e);
		free(err);
		err = NULL;
	}

	struct tui_opts o;
	tui_opts_default(&o);
	o.theme = c->theme;
	o.provider_label = NULL;
	o.out_dir = c->kopts.out_dir;
	o.data_files = c->kopts.data_files;
	o.ndata = c->kopts.ndata;
	o.session = tui_sess;
	if (tui_run(l, a, &o, &err) < 0) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		rc = 1;
	}
	agent_free(a);
	session_free(tui_sess);		/* the journal is synced and closed */
	tui_sess = NULL;
	llm_free(m);
	notebook_free(nb);
	loop_free(l);
	return rc;
}
