/* tui_cmd: the notebook UI's slash commands (/load, /py, /replay,
 * /export, /save...), the lines held while a replay runs, Tab
 * completion of the commands, and the help overlay that lists them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <readline/readline.h>

#include "terp/export.h"
#include "terp/kernel.h"
#include "terp/llm.h"
#include "terp/sanitize.h"
#include "terp/session.h"
#include "terp/util.h"

#include "tui_priv.h"
#include "tui_cmd.h"
#include "tui_act.h"
#include "tui_draw.h"
#include "tui_items.h"

/* ---- help ---- */

struct keyhelp {
	const char	*keys, *what;
};

static const struct keyhelp key_help[] = {
	{ "Enter", "ask the question typed on the input line" },
	{ "Alt-Enter", "new line inside the input (multi-line questions)" },
	{ "Ctrl-C", "cancel the model request or interrupt the running cell; else clear the input" },
	{ "Ctrl-D", "on an empty line: quit (asks first when something runs)" },
	{ "Tab / Shift-Tab", "next / previous pane (input, conversation, cells, files); completes /commands" },
	{ "Up / Down", "input: history; panes: select the previous / next cell or file, scroll" },
	{ "j / k", "in a pane: next / previous cell or file (scroll in the conversation)" },
	{ "PgUp / PgDn", "scroll the focused pane (the conversation from the input line)" },
	{ "Home g / End G", "top / bottom of the pane; End resumes following new output" },
	{ "Enter (cell)", "expand / collapse the cell's full code and output" },
	{ "e (cell)", "edit the cell's code in $VISUAL / $EDITOR and run the edited code" },
	{ "r (cell)", "re-run the cell" },
	{ "y (cell)", "copy the cell's code (clipboard, else a file in the session folder)" },
	{ "Enter (file)", "preview the file full-screen (charts as block thumbnails)" },
	{ "o (file)", "open the file with xdg-open" },
	{ "s (file)", "save a copy under a name you give" },
	{ "Esc / i", "back to the input line" },
	{ "Ctrl-L", "redraw the screen" },
	{ "? / F1", "this help (q or Esc closes)" },
	{ "mouse", "click focuses a pane and selects; the wheel scrolls" },
	{ NULL, NULL }
};

static const struct keyhelp cmd_help[] = {
	{ "/help", "the commands and keys" },
	{ "/load PATH", "stage another data file into the sandbox" },
	{ "/files", "the data files and the artifacts" },
	{ "/py CODE", "run your own Python as a new cell" },
	{ "/rerun N", "re-run cell N" },
	{ "/reset", "fresh Python namespace (same process)" },
	{ "/restart", "restart the sandbox (state is lost)" },
	{ "/replay", "re-run the cells that succeeded before the state was lost (after a resume, restart or idle stop)" },
	{ "/model NAME", "switch the model" },
	{ "/sent [N]", "what left the machine for the model; N shows request N in full" },
	{ "/clear", "clear the conversation pane (the notebook keeps everything)" },
	{ "/export FILE", "write the notebook as FILE: Jupyter (.ipynb) or Markdown (.md)" },
	{ "/save", "write both, as terp-SESSION.ipynb and .md in the output folder" },
	{ "/quit", "quit (asks first when something runs)" },
	{ NULL, NULL }
};


static void
help_table(struct tui *t, const struct keyhelp *h, int w)
{
	for (; h->keys; h++) {
		struct tline *l = tlines_add(&t->ov.lines, 0);
		char k[32];
		snprintf(k, sizeof k, "  %-18s", h->keys);
		tline_adds(l, R_LINK, k);
		int kw = tlines_width(k, strlen(k));
		struct tlines tmp;
		tlines_init(&tmp);
		tlines_wrap(&tmp, h->what, strlen(h->what), w - kw, R_TEXT, NULL, 0, 0);
		for (int i = 0; i < tmp.n; i++) {
			if (i > 0) {
				l = tlines_add(&t->ov.lines, 0);
				tline_add(l, R_TEXT, "                                ", (size_t)kw < 32 ? (size_t)kw : 32);
			}
			for (int j = 0; j < tmp.v[i].nseg; j++)
				tline_adds(l, R_TEXT, tmp.v[i].seg[j].text);
		}
		tlines_free(&tmp);
	}
}

void
tui_cmd_help(struct tui *t)
{
	tui_overlay_open(t, "terp: keys and commands");
	int w = COLS > 20 ? COLS : 80;
	tline_adds(tlines_add(&t->ov.lines, 0), R_HEADING, " Keys");
	help_table(t, key_help, w);
	tlines_add(&t->ov.lines, 0);
	tline_adds(tlines_add(&t->ov.lines, 0), R_HEADING, " Commands (Tab completes)");
	help_table(t, cmd_help, w);
	tlines_add(&t->ov.lines, 0);
	tline_adds(tlines_add(&t->ov.lines, 0), R_DIM,
	    "  The input line is GNU readline: your ~/.inputrc applies (emacs or vi mode).");
	tline_adds(tlines_add(&t->ov.lines, 0), R_DIM,
	    "  History is kept in $XDG_STATE_HOME/terp/history.");
}


/* ---- slash commands ---- */

static struct {
	char	**host, **box;
	int	  n;
} loaded;

void
tui_cmd_quit(struct tui *t)
{
	if (t->agent && agent_busy(t->agent)) {
		t->in.modal = M_CONFIRM_QUIT;
		t->focus = P_INPUT;
		tui_mark(t);
		return;
	}
	t->quit = 1;
}

static void
cmd_files(struct tui *t)
{
	struct buf b;
	buf_init(&b, 256 * 1024);
	buf_adds(&b, "Data files:\n");
	for (int i = 0; i < t->o.ndata; i++) {
		const char *slash = strrchr(t->o.data_files[i], '/');
		buf_printf(&b, "  %s → /workspace/data/%s\n", t->o.data_files[i],
		    slash ? slash + 1 : t->o.data_files[i]);
	}
	for (int i = 0; i < loaded.n; i++)
		buf_printf(&b, "  %s → %s\n", loaded.host[i], loaded.box[i]);
	if (t->o.ndata == 0 && loaded.n == 0)
		buf_adds(&b, "  (none; /load PATH stages one)\n");
	int na = notebook_nartifacts(t->nb);
	buf_printf(&b, "Artifacts%s%s%s:\n", t->o.out_dir ? " (in " : "",
	    t->o.out_dir ? t->o.out_dir : "", t->o.out_dir ? ")" : "");
	for (int i = 0; i < na; i++) {
		const struct artifact *a = notebook_artifact(t->nb, i);
		char sz[32];
		fmt_bytes(sz, sizeof sz, a->bytes);
		char *nm = sanitize_str(a->name, strlen(a->name), 0);	/* one line */
		buf_printf(&b, "  %s  %s  cell [%d]\n", nm, sz, a->cell);
		free(nm);
	}
	if (na == 0)
		buf_adds(&b, "  (none yet)\n");
	tui_item_text(t, IT_INFO, buf_str(&b));
	buf_free(&b);
	t->v[P_CONV].follow = 1;
}

static void
cmd_sent(struct tui *t, const char *arg)
{
	int n = notebook_nsent(t->nb);
	if (arg && *arg) {
		int i = atoi(arg);
		const char *what;
		size_t len;
		if (i < 1 || i > n) {
			tui_flash(t, "no request %s (there are %d)", arg, n);
			return;
		}
		const char *body = notebook_sent(t->nb, i - 1, &what, &len);
		char *title = xasprintf("request %d of %d: %s (%zu bytes)", i, n,
		    what ? what : "", len);
		tui_overlay_open(t, title);
		free(title);
		char *s = sanitize_str(body ? body : "", body ? len : 0,
		    SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS);
		tlines_wrap(&t->ov.lines, s, strlen(s), COLS, R_TEXT, " ", R_TEXT, 0);
		free(s);
		return;
	}
	struct buf b;
	buf_init(&b, 256 * 1024);
	size_t total = 0;
	for (int i = 0; i < n; i++) {
		size_t len;
		notebook_sent(t->nb, i, NULL, &len);
		total += len;
	}
	buf_printf(&b, "What left this machine for the model: %d request%s, %zu bytes.\n",
	    n, n == 1 ? "" : "s", total);
	for (int i = 0; i < n; i++) {
		const char *what;
		size_t len;
		notebook_sent(t->nb, i, &what, &len);
		buf_printf(&b, "  %d. %s  %zu bytes\n", i + 1, what ? what : "request", len);
	}
	if (n)
		buf_adds(&b, "/sent N shows request N exactly as sent.\n");
	tui_item_text(t, IT_INFO, buf_str(&b));
	buf_free(&b);
	t->v[P_CONV].follow = 1;
}

static void
cmd_export(struct tui *t, const char *path)
{
	char *err = NULL;

	if (!*path) {
		tui_flash(t, "usage: /export FILE.ipynb or FILE.md");
		return;
	}
	if (export_file(t->nb, path, &err) < 0) {
		tui_show_err(t, "export", err);
		return;
	}
	char *m = xasprintf("exported the notebook to %s", path);
	tui_item_text(t, IT_NOTICE, m);
	tui_flash(t, "%s", m);
	free(m);
}

/* /save: the notebook as both a Jupyter notebook and Markdown, named
 * after the session, in the output folder (next to the charts the
 * Markdown links to). /save PATH is /export PATH. */
static void
cmd_save(struct tui *t, const char *arg)
{
	if (*arg) {
		cmd_export(t, arg);
		return;
	}
	const char *dir = t->o.out_dir ? t->o.out_dir : "out";
	char *id = t->st.session_id ? xstrdup(t->st.session_id) : NULL, *err = NULL;
	if (id == NULL) {
		time_t now = time(NULL);
		struct tm tm;
		char d[32];
		localtime_r(&now, &tm);
		strftime(d, sizeof d, "%Y%m%d-%H%M%S", &tm);
		id = xstrdup(d);
	}
	char *nbp = xasprintf("%s/terp-%s.ipynb", dir, id);
	char *mdp = xasprintf("%s/terp-%s.md", dir, id);
	if (mkdir_p(dir, 0755) < 0)
		tui_show_err(t, "save", xasprintf("cannot create %s: %s", dir, strerror(errno)));
	else if (export_ipynb(t->nb, nbp, &err) < 0)
		tui_show_err(t, "save", err);
	else if (export_markdown(t->nb, mdp, &err) < 0)
		tui_show_err(t, "save", err);
	else {
		char *m = xasprintf("saved the notebook as %s and %s", nbp, mdp);
		tui_item_text(t, IT_NOTICE, m);
		tui_flash(t, "saved %s and .md", nbp);
		free(m);
	}
	free(nbp);
	free(mdp);
	free(id);
}

static const char *
skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static void
run_command(struct tui *t, const char *line)
{
	char name[32];
	size_t k = 0;
	const char *p = line + 1;
	while (*p && *p != ' ' && *p != '\t' && k < sizeof name - 1)
		name[k++] = *p++;
	name[k] = 0;
	const char *arg = skip_ws(p);
	char *err = NULL;

	if (!strcmp(name, "help") || !strcmp(name, "h") || !strcmp(name, "?"))
		tui_cmd_help(t);
	else if (!strcmp(name, "quit") || !strcmp(name, "q") || !strcmp(name, "exit"))
		tui_cmd_quit(t);
	else if (!strcmp(name, "load")) {
		if (!*arg) {
			tui_flash(t, "usage: /load PATH");
			return;
		}
		char *box = t->o.session ? session_load(t->o.session, arg, &err) :
		    agent_load(t->agent, arg, &err);
		if (!box)
			tui_show_err(t, "load", err);
		else {
			loaded.host = xrealloc(loaded.host, (size_t)(loaded.n + 1) * sizeof *loaded.host);
			loaded.box = xrealloc(loaded.box, (size_t)(loaded.n + 1) * sizeof *loaded.box);
			loaded.host[loaded.n] = xstrdup(arg);
			loaded.box[loaded.n++] = xstrdup(box);
			char *m = xasprintf("loaded %s as %s", arg, box);
			tui_item_text(t, IT_NOTICE, m);
			free(m);
			free(box);
		}
	} else if (!strcmp(name, "files"))
		cmd_files(t);
	else if (!strcmp(name, "py")) {
		if (!*arg) {
			tui_flash(t, "usage: /py CODE");
			return;
		}
		if (agent_run_cell(t->agent, arg, &err) < 0)
			tui_show_err(t, "py", err);
		else
			t->v[P_CELLS].follow = 1;
	} else if (!strcmp(name, "rerun")) {
		int n = atoi(arg);
		if (n <= 0)
			tui_flash(t, "usage: /rerun N");
		else
			tui_act_rerun(t, n);
	} else if (!strcmp(name, "reset")) {
		if ((t->o.session ? session_reset(t->o.session, &err) :
		    agent_reset(t->agent, &err)) < 0)
			tui_show_err(t, "reset", err);
		else
			tui_item_text(t, IT_NOTICE, "the Python namespace was reset");
	} else if (!strcmp(name, "restart")) {
		if ((t->o.session ? session_restart(t->o.session, &err) :
		    agent_restart(t->agent, &err)) < 0)
			tui_show_err(t, "restart", err);
		else
			tui_item_text(t, IT_NOTICE, t->o.session ? "restarting the sandbox: "
			    "variables are gone (/replay re-runs the cells that succeeded)" :
			    "restarting the sandbox: variables are gone");
	} else if (!strcmp(name, "replay")) {
		if (!t->o.session)
			tui_flash(t, "/replay needs a saved session");
		else if (session_replay(t->o.session, &err) < 0)
			tui_show_err(t, "replay", err);
		else {
			t->v[P_CELLS].follow = 1;
			t->v[P_CONV].follow = 1;
		}
	} else if (!strcmp(name, "model")) {
		if (!*arg) {
			struct llm *m = agent_llm(t->agent);
			tui_flash(t, "model: %s", m && llm_model(m) ? llm_model(m) : "none");
		} else if (agent_set_model(t->agent, arg, &err) < 0)
			tui_show_err(t, "model", err);
		else {
			char *m = xasprintf("model set to %s", arg);
			tui_item_text(t, IT_NOTICE, m);
			free(m);
		}
	} else if (!strcmp(name, "sent"))
		cmd_sent(t, arg);
	else if (!strcmp(name, "clear"))
		tui_items_clear(t);
	else if (!strcmp(name, "save"))
		cmd_save(t, arg);
	else if (!strcmp(name, "export"))
		cmd_export(t, arg);
	else
		tui_flash(t, "unknown command /%s (try /help)", name);
}


/* A line typed at the prompt: a command or a question. */
void
tui_cmd_line(struct tui *t, const char *s)
{
	if (*s == '/')
		run_command(t, s);
	else if (*s) {
		char *err = NULL;
		if (agent_ask(t->agent, s, &err) < 0)
			tui_show_err(t, "ask", err);
		t->v[P_CONV].follow = 1;
	}
}

/* Whether the line must wait for the running replay: questions and
 * the commands that run code or change the sandbox's state (the others,
 * /help, /files, /export..., do not disturb it). Lines already held
 * keep their order behind the first. */
int
tui_cmd_holds(struct tui *t, const char *s)
{
	static const char *const waits[] = { "py", "rerun", "reset", "restart",
		"replay", "load", NULL };
	int runs = *s != '/';

	for (int i = 0; waits[i] && !runs; i++) {
		size_t n = strlen(waits[i]);
		runs = strncmp(s + 1, waits[i], n) == 0 && (s[1 + n] == 0 ||
		    s[1 + n] == ' ' || s[1 + n] == '\t');
	}
	if (!runs)
		return 0;
	if (t->cmd.nheld > 0)
		return 1;
	return t->o.session && session_busy(t->o.session) && t->st.kstate != KERNEL_DEAD;
}


/* Runs the oldest held line once the replay is over and the agent is
 * free (one per call: a question keeps the agent busy until EV_IDLE). */
void
tui_cmd_held_run(struct tui *t)
{
	if (t->cmd.nheld == 0 || (t->agent && agent_busy(t->agent)))
		return;
	if (t->o.session && session_busy(t->o.session) && t->st.kstate != KERNEL_DEAD)
		return;
	char *s = t->cmd.held[0];
	memmove(t->cmd.held, t->cmd.held + 1, (size_t)(t->cmd.nheld - 1) * sizeof *t->cmd.held);
	t->cmd.nheld--;
	tui_cmd_line(t, s);
	free(s);
	tui_mark(t);
}


static const char *cmd_names[] = { "/help", "/load", "/files", "/py", "/rerun",
	"/reset", "/restart", "/replay", "/model", "/sent", "/clear", "/export",
	"/save", "/quit", NULL };

static char *
cmd_generator(const char *text, int state)
{
	static int i;
	static size_t len;
	if (!state) {
		i = 0;
		len = strlen(text);
	}
	while (cmd_names[i]) {
		const char *n = cmd_names[i++];
		if (strncmp(n, text, len) == 0)
			return xstrdup(n);
	}
	return NULL;
}

char **
tui_cmd_complete(const char *text, int start, int end)
{
	(void)end;
	if (start == 0 && text[0] == '/') {
		rl_attempted_completion_over = 1;
		return rl_completion_matches(text, cmd_generator);
	}
	if (strncmp(rl_line_buffer, "/load ", 6) == 0 ||
	    strncmp(rl_line_buffer, "/export ", 8) == 0 ||
	    strncmp(rl_line_buffer, "/save ", 6) == 0)
		return NULL;	/* file names */
	rl_attempted_completion_over = 1;
	return NULL;
}

/* Readline would print the list; it goes to the status bar instead. */
void
tui_cmd_show_matches(struct tui *t, char **matches, int num, int max)
{
	(void)max;
	struct buf b;
	buf_init(&b, 1024);
	for (int i = 1; i <= num && b.len < 900; i++) {
		const char *m = matches[i];
		const char *slash = strrchr(m, '/');
		buf_printf(&b, "%s%s", i > 1 ? "  " : "",
		    slash && slash[1] && m[0] != '/' ? slash + 1 : m);
	}
	tui_flash(t, "%s", buf_str(&b));
	buf_free(&b);
}

void
tui_cmd_free(void)
{
	for (int i = 0; i < loaded.n; i++) {
		free(loaded.host[i]);
		free(loaded.box[i]);
	}
	free(loaded.host);
	free(loaded.box);
	memset(&loaded, 0, sizeof loaded);
}
