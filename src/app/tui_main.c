/* tui_main: the terminal UI's frontend of the session runner: the
 * session (model client, notebook, agent, sandbox, journal) shows its
 * events through tui_on_event, and tui_run drives it until the user
 * quits. */
#include "terp/tui.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/cli.h"
#include "terp/journal.h"
#include "terp/notebook.h"
#include "terp/session.h"
#include "terp/util.h"

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

/* A resumed notebook whose remote session terp reaches again: whether
 * its state is still there is known once the backend says so (its
 * first state that is not "starting"), so /replay is offered then, and
 * only when the state was lost. One terminal, one session. */
static struct {
	struct session	*s;	/* watching while set */
} remote_resume;

/* The session's events for the terminal (tui_on_event), and the offer
 * of /replay after a remote resume that lost the state. */
static void
tui_show(void *arg, const struct event *ev)
{
	struct session *s = remote_resume.s;
	int *cells = NULL, n;

	tui_on_event(arg, ev);
	if (s == NULL || ev->type != EV_KERNEL)
		return;
	if (!ev->state_lost) {
		if (ev->kstate != KERNEL_STARTING)
			remote_resume.s = NULL;	/* reached with its state */
		return;
	}
	remote_resume.s = NULL;
	/* the journal took the loss before the terminal was shown it */
	n = session_journal(s) ? journal_replay_cells(session_journal(s), &cells) : 0;
	free(cells);
	if (n > 0) {
		char *m = xasprintf("the remote session's state was lost: /replay re-runs "
		    "the %d cell%s that succeeded", n, n == 1 ? "" : "s");
		notice(m);
		free(m);
	}
}

/* A resumed notebook back on screen, then what the user must know: the
 * resume's warnings (changed or vanished data files) and that the
 * sandbox is new, with how to get the variables back (on a remote
 * session reached again: later, if its state was lost). Shown, not
 * journaled: the journal has its own record of the resume. */
static void
resume_show(struct cli *c, struct session *s)
{
	struct notebook *nb = session_notebook(s);
	const char *line = c->res.warnings;
	int *cells = NULL, n;
	struct journal *j = session_journal(s);
	/* the remote session the journal named is reached again (over ssh,
	 * "": the host only) */
	int reach = c->kopts.sandbox_session != NULL && *c->kopts.sandbox_session;
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
	n = j && !reach ? journal_replay_cells(j, &cells) : 0;
	free(cells);
	if (reach && !c->replay)	/* --replay replays it when lost */
		remote_resume.s = s;
	buf_init(&b, 4096);
	buf_printf(&b, "resumed session %s: %d question%s, %d cell%s. %s", c->session_id,
	    c->res.meta.nquestions, c->res.meta.nquestions == 1 ? "" : "s",
	    notebook_ncells(nb), notebook_ncells(nb) == 1 ? "" : "s",
	    reach ? "terp reaches the same remote session again: variables and imports "
	    "from before are kept unless it says they were lost" :
	    "The sandbox is new: variables and imports from before are gone");
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
	struct session_opts so;
	struct tui_opts o;
	struct session *s;
	char *err = NULL, *warn = NULL;
	int rc = 0, sig;

	/* The notebook has someone to answer input(): the user, on the
	 * input line; the model's cells only unless --no-input. */
	c->aopts.input_hand = 1;
	c->aopts.input_model = !c->no_input;
	c->aopts.ask = c->ask;
	cli_sessions_opts(c, &so);
	so.show = tui_show;		/* the one terminal: arg NULL */
	if ((s = session_new(&so, &warn, &err)) == NULL) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		return 1;
	}
	if (c->resume)
		resume_show(c, s);
	if (warn) {
		char *msg = xasprintf("warning: %s", warn);
		notice(msg);
		free(msg);
		free(warn);
	}
	startup_notes(c);
	signal(SIGPIPE, SIG_IGN);
	/* a sandbox that cannot start is shown in the notebook; the UI
	 * still comes up */
	(void)session_start(s);
	tui_opts_default(&o);
	o.theme = c->theme;
	if (c->images)
		tui_gfx_parse(c->images, &o.images);
	o.background = c->background == 2 ? TUI_BG_LIGHT :
	    c->background == 1 ? TUI_BG_DARK : TUI_BG_AUTO;
	o.provider_label = NULL;
	o.out_dir = c->kopts.out_dir;
	if ((sig = tui_run(s, &o, &err)) < 0) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		rc = 1;
	} else if (sig > 0)
		rc = 128 + sig;	/* a hangup is not a clean quit: as -p */
	remote_resume.s = NULL;
	session_free(s);	/* the journal is synced and closed */
	return rc;
}
