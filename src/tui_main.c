/* tui_main: sets up a notebook session (model client, notebook, agent,
 * sandbox) for the terminal UI and tears it down after it, as
 * headless.c does for -p. */
#include "terp/tui.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/agent.h"
#include "terp/cli.h"
#include "terp/export.h"
#include "terp/llm.h"
#include "terp/loop.h"
#include "terp/notebook.h"
#include "terp/util.h"

static int
save_notebook(void *arg, const struct notebook *nb, const char *path,
    char **err)
{
	(void)arg;
	return export_file(nb, path, err);
}

int
tui_session_run(struct cli *c)
{
	struct loop *l = loop_new();
	struct notebook *nb = notebook_new();
	char *err = NULL;
	struct llm *m = llm_new(l, &c->llm, &err);
	int rc = 0;

	if (!m) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		notebook_free(nb);
		loop_free(l);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	struct agent *a = agent_new(l, nb, &c->kopts, m, &c->aopts, tui_on_event,
	    NULL);
	struct event ev = { .type = EV_SESSION, .text = c->session_id,
		.name = c->session_dir };
	tui_on_event(NULL, &ev);
	if (agent_start(a, &err) < 0) {
		/* shown in the notebook; the UI still comes up */
		struct event e = { .type = EV_ERROR, .text = err, .len = strlen(err) };
		tui_on_event(NULL, &e);
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
	o.save = save_notebook;
	if (tui_run(l, a, &o, &err) < 0) {
		fprintf(stderr, "terp: %s\n", err);
		free(err);
		rc = 1;
	}
	agent_free(a);
	llm_free(m);
	notebook_free(nb);
	loop_free(l);
	return rc;
}
