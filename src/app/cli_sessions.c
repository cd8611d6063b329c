/* cli_sessions: the session-management commands of the command line:
 * `terp --list`, `--delete ID`, `--export ID FILE`, and the preparation
 * of `--resume [ID]` before a frontend runs. A frontend of its own:
 * it prints, main only dispatches. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terp/cli.h"
#include "terp/export.h"
#include "terp/journal.h"
#include "terp/netlog.h"
#include "terp/notebook.h"
#include "terp/resume.h"
#include "terp/sanitize.h"
#include "terp/session.h"
#include "terp/store.h"
#include "terp/util.h"

/* Where the sandbox-facing folders of a session live when the session
 * folder is out of the sandbox user's reach (kernel.c's sandbox_base). */
#define SANDBOX_SESSIONS	"/var/lib/terp/sessions"

static int
fail(char *err)
{
	fprintf(stderr, "terp: %s\n", err);
	free(err);
	return 1;
}

int
cli_sessions_list(struct cli *c)
{
	struct journal_meta *l;
	char *err = NULL, *text;
	int n;

	struct store_entry *all;
	int nall = 0;

	if (resume_list(c->sessions_dir, &l, &n, &err) < 0)
		return fail(err);
	if (c->list == 2) {
		/* the ids alone, newest first, and not a word more: the
		 * shell completions read them */
		for (int i = 0; i < n; i++)
			printf("%s\n", l[i].id);
		resume_list_free(l, n);
		return fflush(stdout) == 0 ? 0 : 1;
	}
	/* the folders left out (unreadable, damaged, or with nothing in
	 * them) are counted, not hidden without a word */
	if (store_list(c->sessions_dir, &all, &nall, &err) == 0)
		store_list_free(all, nall);
	else
		free(err);
	if (n == 0 && nall == 0) {
		fprintf(stderr, "terp: no sessions yet (%s)\n", c->sessions_dir);
		resume_list_free(l, n);
		return 0;
	}
	text = resume_list_text(l, n);
	fputs(text, stdout);
	free(text);
	resume_list_free(l, n);
	if (nall > n)
		fprintf(stderr, "terp: %d session folder%s not listed: unreadable, damaged "
		    "or with nothing in %s (%s)\n", nall - n, nall - n == 1 ? "" : "s",
		    nall - n == 1 ? "it" : "them", c->sessions_dir);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* The session's sandbox folder under /var/lib/terp, when the kernel
 * made one: the link "sandbox" in the session folder says so. */
static int
has_sandbox_base(const char *sessions_dir, const char *id)
{
	char *link = xasprintf("%s/%s/sandbox", sessions_dir, id);
	char *want = xasprintf("%s/%s", SANDBOX_SESSIONS, id);
	char target[4096];
	ssize_t n = readlink(link, target, sizeof target - 1);
	int yes = 0;

	if (n > 0) {
		target[n] = '\0';
		yes = strcmp(target, want) == 0;
	}
	free(link);
	free(want);
	return yes;
}

/* Removes session id's folder and its sandbox folder, if any. */
static int
delete_session(const char *sessions_dir, const char *id, char **err)
{
	int base = store_id_valid(id) == 0 && has_sandbox_base(sessions_dir, id);

	if (store_delete(sessions_dir, id, err) < 0)
		return -1;
	if (base && store_delete(SANDBOX_SESSIONS, id, err) < 0) {
		fprintf(stderr, "terp: warning: %s\n", *err);
		free(*err);
		*err = NULL;
	}
	return 0;
}

int
cli_sessions_delete(struct cli *c)
{
	char *err = NULL, *id;

	if ((id = resume_find_id(c->sessions_dir, c->delete_id, &err)) == NULL)
		return fail(err);
	/* a prefix is enough to read a session, not to delete one */
	if (strcmp(id, c->delete_id) != 0) {
		err = xasprintf("no session %s; --delete takes the whole id: "
		    "did you mean %s?", c->delete_id, id);
		free(id);
		return fail(err);
	}
	free(id);
	if (delete_session(c->sessions_dir, c->delete_id, &err) < 0)
		return fail(err);
	fprintf(stderr, "terp: deleted session %s\n", c->delete_id);
	return 0;
}

int
cli_sessions_end(struct cli *c)
{
	struct journal_meta meta;
	char *path, *err = NULL;
	int read, empty;

	if (c->session_id == NULL ||
	    (path = store_journal_path(c->sessions_dir, c->session_id)) == NULL)
		return 0;
	read = journal_read_meta(path, &meta, &err) == 0;
	empty = read && resume_meta_empty(&meta);
	free(err);
	err = NULL;
	journal_meta_free(&meta);
	free(path);
	if (!read)
		return 0;	/* no journal: nothing to resume, nothing to judge */
	/* a resumed session holds what its earlier runs did */
	if (!c->no_save && (!empty || c->resume))
		return 1;
	if (delete_session(c->sessions_dir, c->session_id, &err) < 0) {
		fprintf(stderr, "terp: warning: %s\n", err);
		free(err);
	}
	return 0;
}

int
cli_sessions_export(struct cli *c)
{
	struct notebook *nb;
	struct journal_meta meta;
	char *path, *err = NULL, *id;
	int rc = 0;

	if ((id = resume_find_id(c->sessions_dir, c->export_id, &err)) == NULL)
		return fail(err);
	path = store_journal_path(c->sessions_dir, id);
	memset(&meta, 0, sizeof meta);
	nb = notebook_new();
	if (journal_load(path, nb, &meta, &err) < 0 ||
	    export_file(nb, c->export_file, &err) < 0) {
		rc = fail(err);
	} else {
		if (meta.torn || meta.skipped)
			fprintf(stderr, "terp: warning: the journal was damaged (%s); "
			    "the export holds what could be read\n", meta.torn ?
			    "its last line was cut short" : "lines were skipped");
		fprintf(stderr, "terp: wrote %s (session %s: %d cell%s, %d "
		    "question%s)\n", c->export_file, id, notebook_ncells(nb),
		    notebook_ncells(nb) == 1 ? "" : "s", meta.nquestions,
		    meta.nquestions == 1 ? "" : "s");
	}
	journal_meta_free(&meta);
	notebook_free(nb);
	free(path);
	free(id);
	return rc;
}

int
cli_sessions_resume(struct cli *c)
{
	char *err = NULL;

	if (resume_prepare(c->sessions_dir, c->resume_id, &c->res, &err) < 0) {
		resume_free(&c->res);
		fail(err);
		return -1;
	}
	/* the session's /allow and /deny, over this run's --allow-host */
	c->kopts.egress_ops = (const char *const *)c->res.meta.egress;
	/* --egress-max is the session's: what its ledger says earlier runs
	 * sent is spent (each attempt's journal line has its bytes up) */
	{
		size_t n;
		const struct net_attempt *v = notebook_nets(c->res.nb, &n, NULL);
		c->kopts.egress_sent = 0;
		for (size_t i = 0; i < n; i++)
			c->kopts.egress_sent += v[i].up;
	}
	/* Resumed without --sandbox (nor sandbox = in the config): where it
	 * ran last, a Jupyter server, pool or ssh host the journal names. */
	if (c->kopts.sandbox == NULL && c->res.meta.remote_sandbox != NULL &&
	    strcmp(c->res.meta.remote_sandbox, "local") != 0) {
		char *shown = sanitize_str(c->res.meta.remote_sandbox,
		    strnlen(c->res.meta.remote_sandbox, 200), 0);
		c->kopts.sandbox = c->res.meta.remote_sandbox;
		if (c->res.meta.remote_session != NULL &&
		    c->res.meta.remote_session[0] == '\0')	/* ssh */
			fprintf(stderr, "terp: the session ran on %s; resuming it there in "
			    "a new session: the variables of earlier cells are gone and the "
			    "data files are sent again (--sandbox local runs it here)\n",
			    shown);
		else
			fprintf(stderr, "terp: the session ran on %s; resuming it there "
			    "(--sandbox local runs it here)\n", shown);
		free(shown);
	}
	/* the remote session it ran in, when resumed on the same remote */
	c->kopts.sandbox_session = resume_remote(&c->res, c->kopts.sandbox);
	/* after resume_remote: it knows of files on an ssh host */
	if (c->res.warnings) {
		char *line = c->res.warnings, *nl;
		while (*line) {
			nl = strchr(line, '\n');
			fprintf(stderr, "terp: warning: %.*s\n",
			    nl ? (int)(nl - line) : (int)strlen(line), line);
			if (nl == NULL)
				break;
			line = nl + 1;
		}
	}
	c->session_id = xstrdup(c->res.id);
	fprintf(stderr, "terp: resuming session %s (%d cell%s, %d question%s)\n",
	    c->session_id, notebook_ncells(c->res.nb),
	    notebook_ncells(c->res.nb) == 1 ? "" : "s", c->res.meta.nquestions,
	    c->res.meta.nquestions == 1 ? "" : "s");
	return 0;
}

void
cli_sessions_opts(struct cli *c, struct session_opts *o)
{
	memset(o, 0, sizeof *o);
	o->sessions_dir = c->sessions_dir;
	o->id = c->session_id;
	if (c->mode != CLI_EXEC) {
		o->provider = c->llm.provider;
		o->model = c->llm.model;
	}
	o->data_files = c->data_files;
	o->ndata = c->ndata;
	o->resume = c->resume ? &c->res : NULL;
	o->replay = c->replay;
	o->idle_ms = c->idle_ms;
	o->max_ms = c->max_ms;
	o->kopts = &c->kopts;
	o->aopts = &c->aopts;
	/* no provider: no model configured; the notebook opens without */
	o->llm = c->mode != CLI_EXEC && c->llm.provider ? &c->llm : NULL;
	/* the TUI's terminal is its own */
	o->signals = c->mode != CLI_TUI;
}
