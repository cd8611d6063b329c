/* tui_cmd: the notebook UI's slash commands (/load, /py, /replay,
 * /export, /save...), one table that gives each its name, usage, help
 * line, handler and completion; the lines held while a replay runs;
 * Tab completion; and the help overlay that lists the keys and the
 * table. */
#include "tui_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <readline/readline.h>

#include "terp/buf.h"
#include "terp/context.h"
#include "terp/export.h"
#include "terp/kernel.h"
#include "terp/llm.h"
#include "terp/netlog.h"
#include "terp/sanitize.h"
#include "terp/session.h"
#include "terp/util.h"

#include "tui_act.h"
#include "tui_data.h"
#include "tui_draw.h"
#include "tui_items.h"
#include "tui_trace.h"

struct cmd_entry;
typedef void cmd_fn(struct tui *t, const struct cmd_entry *c,
    const char *arg);

enum {
	CMD_HOLDS = 1,	/* runs code or changes the sandbox: waits for a replay */
	CMD_FILES = 2,	/* its argument completes as a file name */
};

/* One slash command (tmux's cmd_entry): what /help shows, how it is
 * typed and completed, and what runs it. */
struct cmd_entry {
	const char	*name;		/* typed after the slash */
	const char	*alias[2];	/* other names, not completed */
	const char	*usage;		/* "/load PATH" */
	const char	*help;
	int		 flags;		/* CMD_* */
	cmd_fn		*fn;		/* arg: after the name, blanks skipped */
};

static cmd_fn cmd_help, cmd_load, cmd_files, cmd_py, cmd_rerun, cmd_reset,
    cmd_restart, cmd_replay, cmd_model, cmd_sent, cmd_net, cmd_allow, cmd_deny,
    cmd_clear, cmd_export, cmd_save, cmd_quit, cmd_trace, cmd_context, cmd_compact,
    cmd_ask;

/* In the order /help lists them and Tab offers them. */
static const struct cmd_entry cmds[] = {
	{ "help", { "h", "?" }, "/help", "the commands and keys", 0, cmd_help },
	{ "load", { NULL }, "/load PATH", "stage another data file into the sandbox",
	    CMD_HOLDS | CMD_FILES, cmd_load },
	{ "files", { NULL }, "/files", "the data files and the artifacts", 0,
	    cmd_files },
	{ "py", { NULL }, "/py CODE", "run your own Python as a new cell",
	    CMD_HOLDS, cmd_py },
	{ "rerun", { NULL }, "/rerun N", "re-run cell N", CMD_HOLDS, cmd_rerun },
	{ "reset", { NULL }, "/reset", "fresh Python namespace (same process)",
	    CMD_HOLDS, cmd_reset },
	{ "restart", { NULL }, "/restart", "restart the sandbox (state is lost)",
	    CMD_HOLDS, cmd_restart },
	{ "replay", { NULL }, "/replay [N-M]", "re-run the cells that succeeded "
	    "before the state was lost (after a resume, restart or idle stop), or "
	    "those you name: /replay 3, /replay 1-5, /replay 2,4-6",
	    CMD_HOLDS, cmd_replay },
	{ "model", { NULL }, "/model NAME", "switch the model", 0, cmd_model },
	{ "sent", { NULL }, "/sent [N]", "what left the machine for the model; "
	    "N shows request N in full", 0, cmd_sent },
	{ "trace", { NULL }, "/trace", "the last answer's numbers and the cell "
	    "output line each came from", 0, cmd_trace },
	{ "context", { NULL }, "/context", "what the model's context window holds, "
	    "with token counts", 0, cmd_context },
	{ "compact", { NULL }, "/compact", "make room in the context window now "
	    "(elide old outputs, summarise old questions)", 0, cmd_compact },
	{ "net", { NULL }, "/net", "what the sandbox tried to reach: every "
	    "egress attempt, allowed or refused and why, bytes up and down", 0, cmd_net },
	{ "allow", { NULL }, "/allow HOST[:PORT]", "let the sandbox reach HOST "
	    "(*.example.org for subdomains; an address); the first one restarts a "
	    "session started without egress", CMD_HOLDS, cmd_allow },
	{ "deny", { NULL }, "/deny HOST[:PORT]", "take it back: refused from now on, "
	    "open connections to it closed", CMD_HOLDS, cmd_deny },
	{ "clear", { NULL }, "/clear", "clear the conversation pane (the "
	    "notebook keeps everything)", 0, cmd_clear },
	{ "export", { NULL }, "/export FILE", "write the notebook as FILE: "
	    "Jupyter (.ipynb) or Markdown (.md)", CMD_FILES, cmd_export },
	{ "save", { NULL }, "/save", "write both, as terp-SESSION.ipynb and .md "
	    "in the output folder", CMD_FILES, cmd_save },
	{ "quit", { "q", "exit" }, "/quit", "quit (asks first when something runs)",
	    0, cmd_quit },
	{ "ask", { NULL }, "/ask on|off", "whether each cell of the model waits for "
	    "you first: y runs it, e edits it, n skips it, a stops asking", 0, cmd_ask },
};
#define NCMDS	(sizeof cmds / sizeof cmds[0])

/* ---- help ---- */

struct keyhelp {
	const char	*keys, *what;
};

static const struct keyhelp key_help[] = {
	{ "Enter", "ask the question typed on the input line" },
	{ "Alt-Enter", "new line inside the input (multi-line questions)" },
	{ "Ctrl-C", "cancel the model request or interrupt the running cell; else clear the input" },
	{ "Ctrl-D / Ctrl-U", "quit on an empty line (asks if variables would go); pane: half page ↓/↑" },
	{ "Tab / Shift-Tab", "next / previous pane (input, conversation, cells, files); completes /commands" },
	{ "Up Down / j k", "input: history; pane: previous / next cell or file (the conversation scrolls)" },
	{ "PgUp / PgDn", "scroll the focused pane (the conversation from the input line)" },
	{ "Home g / End G", "top / bottom of the pane; End follows new output again (also on the input line)" },
	{ "Enter e r (cell)", "expand the cell / edit it in $VISUAL or $EDITOR and run it / re-run it" },
	{ "y / Y (cell)", "copy the cell's code / its output; y in the conversation: the answer in view" },
	{ "w / v / d (cell)", "what the model saw, as sent / the output whole, sideways (← → h l) / drop it" },
	{ "Enter o s (file)", "preview the file full-screen / open it with xdg-open / save a copy" },
	{ "/ n N (pane)", "search conversation or cells (all output too); next / previous match; Esc ends" },
	{ "z / f / q (pane)", "maximise the pane (z again restores) / hide or show the files pane / quit" },
	{ "m (pane)", "mouse capture off / on: off, the terminal selects text (while on: Shift-drag)" },
	{ "Esc / i", "input line: to the last pane; pane: back to the input line (typing does too)" },
	{ "t (conversation)", "the next number of the last answer: its source on the status bar, its cell selected" },
	{ "r (conversation)", "unfold or fold the model's reasoning (a dimmed line above each reply)" },
	{ "Ctrl-L / Ctrl-Z", "redraw the screen / suspend to the shell (fg comes back)" },
	{ "? / F1", "this help (q or Esc closes)" },
	{ "mouse", "click focuses a pane and selects; the wheel scrolls" },
	{ NULL, NULL }
};

#define COPY_HELP "Copies go to wl-copy, xclip or xsel; without one to the " \
	"terminal's clipboard (OSC 52, which works over ssh; tmux needs " \
	"set-clipboard on) and to a file in the session folder."

/* One row of the help: keys (or usage) in a column, what wrapped. */
static void
help_row(struct tui *t, const char *keys, const char *what, int w)
{
	struct tline *l = tui_tlines_add(&t->ov.lines, 0);
	char k[64];
	int kw = 20;
	/* keys that fill their column get a row of their own: the text
	 * never runs into them (/allow HOST[:PORT]) */
	if (tui_tlines_width(keys, strlen(keys)) > kw - 3) {
		snprintf(k, sizeof k, "  %s", keys);
		tui_tline_adds(l, R_LINK, k);
		l = tui_tlines_add(&t->ov.lines, 0);
		tui_tline_add(l, R_TEXT, "                    ", (size_t)kw);
	} else {
		snprintf(k, sizeof k, "  %-18s", keys);
		tui_tline_adds(l, R_LINK, k);
	}
	struct tlines tmp;
	tui_tlines_init(&tmp);
	tui_tlines_wrap(&tmp, what, strlen(what), w - 1 - kw, R_TEXT, NULL, 0, 0);
	for (int i = 0; i < tmp.n; i++) {
		if (i > 0) {
			l = tui_tlines_add(&t->ov.lines, 0);
			tui_tline_add(l, R_TEXT, "                                ",
			    (size_t)kw < 32 ? (size_t)kw : 32);
		}
		for (int j = 0; j < tmp.v[i].nseg; j++)
			tui_tline_adds(l, R_TEXT, tmp.v[i].seg[j].text);
	}
	tui_tlines_free(&tmp);
}

void
tui_cmd_help(struct tui *t)
{
	tui_overlay_open(t, "terp: keys and commands");
	int w = COLS > 20 ? COLS : 80;
	tui_tline_adds(tui_tlines_add(&t->ov.lines, 0), R_HEADING, " Keys");
	for (const struct keyhelp *h = key_help; h->keys; h++)
		help_row(t, h->keys, h->what, w);
	tui_tlines_add(&t->ov.lines, 0);
	tui_tline_adds(tui_tlines_add(&t->ov.lines, 0), R_HEADING, " Commands (Tab completes)");
	for (size_t i = 0; i < NCMDS; i++)
		help_row(t, cmds[i].usage, cmds[i].help, w);
	tui_tlines_add(&t->ov.lines, 0);
	tui_tline_adds(tui_tlines_add(&t->ov.lines, 0), R_DIM,
	    "  The input line is GNU readline: your ~/.inputrc applies (emacs or vi mode).");
	tui_tline_adds(tui_tlines_add(&t->ov.lines, 0), R_DIM,
	    "  History is kept in $XDG_STATE_HOME/terp/history.");
	tui_tlines_wrap(&t->ov.lines, COPY_HELP, strlen(COPY_HELP), w - 1,
	    R_DIM, "  ", R_DIM, 0);
}

/* ---- the commands ---- */

static void
cmd_usage(struct tui *t, const struct cmd_entry *c)
{
	tui_flash(t, "usage: %s", c->usage);
}

static void
cmd_help(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	(void)c;
	(void)arg;
	tui_cmd_help(t);
}

void
tui_cmd_quit(struct tui *t)
{
	if (t->session && session_running(t->session)) {
		t->in.modal = M_CONFIRM_QUIT;
		t->focus = P_INPUT;
		tui_mark(t);
		return;
	}
	t->quit = 1;
}

/* Ctrl-D on an empty line: as ipython's "Do you really want to exit",
 * it asks first when the cells' variables would be lost with the
 * sandbox (a local one; a remote session may be reached again with
 * --resume). /quit, typed out, does not ask. */
void
tui_cmd_quit_eof(struct tui *t)
{
	if (t->st.live > 0 && t->st.where == NULL) {
		t->in.modal = M_CONFIRM_QUIT;
		t->focus = P_INPUT;
		tui_mark(t);
		return;
	}
	tui_cmd_quit(t);
}

/* The question on the input line while M_CONFIRM_QUIT waits. */
const char *
tui_cmd_quit_prompt(struct tui *t)
{
	static char q[96];

	if (t->session && session_running(t->session))
		return "Something is running. Quit anyway? (y/n) ";
	snprintf(q, sizeof q, "The variables of %d cell%s go with the sandbox. Quit? (y/n) ",
	    t->st.live, t->st.live == 1 ? "" : "s");
	return q;
}

static void
cmd_quit(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	(void)c;
	(void)arg;
	tui_cmd_quit(t);
}


static void
cmd_load(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	char *err = NULL;

	if (!*arg) {
		cmd_usage(t, c);
		return;
	}
	char *box = session_load(t->session, arg, &err);
	if (!box) {
		tui_show_err(t, "load", err);
		return;
	}
	char *m = xasprintf("loaded %s as %s", arg, box);
	tui_item_text(t, IT_NOTICE, m);
	tui_flash(t, "%s", m);
	free(m);
	free(box);
}

static void
cmd_files(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	struct buf b;

	(void)c;
	(void)arg;
	buf_init(&b, 256 * 1024);
	buf_adds(&b, "Data files:\n");
	/* where the sandbox has each: the path the notebook recorded when
	 * it was staged (two "my sales.csv" are two different names) */
	int nf = 0;
	for (int i = 0; i < notebook_nfiles(t->nb); i++) {
		const struct datafile *f = notebook_file(t->nb, i);
		if (f->sandbox == NULL)
			continue;	/* gone before this sandbox started */
		char *host = sanitize_str(f->path, strlen(f->path), 0);
		char *box = sanitize_str(f->sandbox, strlen(f->sandbox), 0);
		buf_printf(&b, "  %s → %s\n", host, box);
		free(host);
		free(box);
		nf++;
	}
	if (nf == 0)
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
cmd_py(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	char *err = NULL;

	if (!*arg) {
		cmd_usage(t, c);
		return;
	}
	if (session_run_cell(t->session, arg, &err) < 0)
		tui_show_err(t, "py", err);
	else
		t->v[P_CELLS].follow = 1;
}

static void
cmd_rerun(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	int n = atoi(arg);

	if (n <= 0)
		cmd_usage(t, c);
	else
		tui_act_rerun(t, n);
}

static void
cmd_reset(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	char *err = NULL;

	(void)c;
	(void)arg;
	if (session_reset(t->session, &err) < 0)
		tui_show_err(t, "reset", err);
	else
		tui_item_text(t, IT_NOTICE, "the Python namespace was reset");
}

static void
cmd_restart(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	char *err = NULL;

	(void)c;
	(void)arg;
	if (session_restart(t->session, &err) < 0)
		tui_show_err(t, "restart", err);
	else
		tui_item_text(t, IT_NOTICE, "restarting the sandbox: variables "
		    "are gone (/replay re-runs the cells that succeeded)");
}

static void
cmd_replay(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	char *err = NULL;

	(void)c;
	if (session_replay(t->session, arg, &err) < 0)
		tui_show_err(t, "replay", err);
	else {
		t->v[P_CELLS].follow = 1;
		t->v[P_CONV].follow = 1;
	}
}

static void
cmd_ask(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	(void)c;
	if (strcmp(arg, "on") == 0 || strcmp(arg, "off") == 0)
		session_set_ask(t->session, strcmp(arg, "on") == 0);
	else if (*arg) {
		tui_flash(t, "/ask on or /ask off");
		return;
	}
	tui_flash(t, session_asks(t->session) ? "ask: on (each cell of the model waits for y)" :
	    "ask: off (the model's cells run at once)");
}

static void
cmd_model(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	char *err = NULL;

	(void)c;
	if (!*arg) {
		struct llm *m = session_llm(t->session);
		tui_flash(t, "model: %s", m && llm_model(m) ? llm_model(m) : "none");
	} else if (session_set_model(t->session, arg, &err) < 0)
		tui_show_err(t, "model", err);
	else {
		char *m = xasprintf("model set to %s", arg);
		tui_item_text(t, IT_NOTICE, m);
		tui_flash(t, "%s", m);
		free(m);
	}
}

/* A request body laid out one member a line, indented by two spaces
 * (the bytes sent are the same JSON); NULL when it is not JSON. */
static char *
json_pretty(const char *body, size_t len)
{
	if (body == NULL)
		return NULL;
	cJSON *j = cJSON_ParseWithLength(body, len);
	if (j == NULL)
		return NULL;
	char *p = cJSON_Print(j);
	cJSON_Delete(j);
	if (p == NULL)
		return NULL;
	/* cJSON indents with tabs and puts one after each colon; strings
	 * hold no raw tab (JSON escapes them) */
	struct buf b;
	buf_init(&b, 2 * strlen(p) + 16);
	int lead = 1;
	for (const char *q = p; *q; q++) {
		if (*q == '\n')
			lead = 1;
		else if (*q != '\t')
			lead = 0;
		if (*q == '\t')
			buf_adds(&b, lead ? "  " : " ");
		else
			buf_addc(&b, *q);
	}
	free(p);
	return buf_take(&b);
}

static void
cmd_trace(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	(void)c;
	(void)arg;
	tui_trace_list(t);
}

static void
cmd_sent(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	int n = notebook_nsent(t->nb);

	(void)c;
	if (arg && *arg) {
		int i = atoi(arg);
		const char *what;
		size_t len;
		if (i < 1 || i > n) {
			tui_flash(t, "no request %s (there are %d)", arg, n);
			return;
		}
		(void)notebook_sent(t->nb, i - 1, &what, &len);
		char *title = xasprintf("request %d of %d: %s (%zu bytes)", i, n,
		    what ? what : "", len);
		/* older bodies are read back from the journal */
		char *err = NULL, *body = session_sent(t->session, i - 1, &len,
		    &err);
		if (body == NULL) {
			tui_show_err(t, "sent", err ? err : "not kept");
			free(err);
			free(title);
			return;
		}
		tui_overlay_open(t, title);
		free(title);
		char *pretty = json_pretty(body, len);
		const char *show = pretty ? pretty : body;
		char *s = sanitize_str(show, pretty ? strlen(pretty) : len,
		    SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS);
		free(body);
		tui_tlines_wrap(&t->ov.lines, s, strlen(s), COLS, R_TEXT, " ", R_TEXT, 0);
		free(s);
		free(pretty);
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

static const char *const part_names[] = {
	[CONTEXT_SYSTEM] = "system prompt and data description",
	[CONTEXT_SUMMARY] = "summary of earlier questions",
	[CONTEXT_QUESTION] = "question",
	[CONTEXT_ANSWER] = "model",
	[CONTEXT_CELL] = "cell",
	[CONTEXT_ELIDED] = "cell (elided)",
};

static void
cmd_context(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	struct context *cx = t->session ? session_context(t->session) : NULL;
	struct context_part *p;
	struct buf b;
	int n, upto = 0;
	long est;

	(void)c;
	(void)arg;
	if (cx == NULL) {
		tui_flash(t, "no model is configured");
		return;
	}
	est = context_estimate(cx, NULL);
	n = context_parts(cx, NULL, &p);
	context_summary(cx, &upto);
	buf_init(&b, 256 * 1024);
	buf_printf(&b, "Context window: %ld tokens (%s), %ld kept for the reply. "
	    "The next request: about %ld tokens (%ld%%).\n", context_window(cx),
	    context_window_source(cx), context_reserve(cx), est,
	    context_window(cx) > 0 ? est * 100 / context_window(cx) : 0);
	for (int i = 0; i < n; i++) {
		if (p[i].kind == CONTEXT_CELL || p[i].kind == CONTEXT_ELIDED) {
			if (p[i].cell > 0)
				buf_printf(&b, "  %-36s [%d] %7ld\n", part_names[p[i].kind],
				    p[i].cell, p[i].tokens);
			else
				buf_printf(&b, "  %-40s %7ld\n", "tool result", p[i].tokens);
		} else if (p[i].kind == CONTEXT_SUMMARY) {
			buf_printf(&b, "  %-40s %7ld  (messages 1-%d)\n",
			    part_names[p[i].kind], p[i].tokens, upto);
		} else {
			buf_printf(&b, "  %-40s %7ld\n", part_names[p[i].kind], p[i].tokens);
		}
	}
	buf_adds(&b, "/compact makes room now; the notebook keeps every cell whole.\n");
	free(p);
	tui_item_text(t, IT_INFO, buf_str(&b));
	buf_free(&b);
	t->v[P_CONV].follow = 1;
}

#define NET_LIST	200	/* /net lists the newest attempts */

static void
cmd_net(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	size_t n;
	uint64_t dropped;
	const struct net_attempt *v = notebook_nets(t->nb, &n, &dropped);
	const struct netlog_sum *all = notebook_net_total(t->nb);
	size_t refused = all ? all->bad : 0;
	char u[32], d[32];
	struct buf b;

	(void)c;
	(void)arg;
	fmt_bytes(u, sizeof u, all ? all->up : 0);
	fmt_bytes(d, sizeof d, all ? all->down : 0);
	buf_init(&b, 256 * 1024);
	buf_printf(&b, "What the sandbox tried to reach: %zu attempt%s, %zu refused or "
	    "failed; %s sent out, %s received.\n", n + (size_t)dropped,
	    n + dropped == 1 ? "" : "s", refused, u, d);
	if (n == 0)
		buf_adds(&b, "Nothing leaves without a host allowed (--allow-host HOST, "
		    "/allow HOST).\n");
	if (n > NET_LIST)
		buf_printf(&b, "  (%zu earlier attempts not listed)\n", n - NET_LIST);
	for (size_t i = n > NET_LIST ? n - NET_LIST : 0; i < n; i++) {
		const struct net_attempt *a = &v[i];
		time_t when = (time_t)(a->time_ms / 1000);
		struct tm tm;
		char hms[16] = "";
		if (localtime_r(&when, &tm) != NULL)
			strftime(hms, sizeof hms, "%H:%M:%S", &tm);
		buf_printf(&b, "  [%d] %s %s %s:%u ", a->cell, hms,
		    a->method[0] ? a->method : "-", a->host[0] ? a->host : "(no host)",
		    a->port);
		if (a->verdict == NETLOG_ALLOWED) {
			fmt_bytes(u, sizeof u, a->up);
			fmt_bytes(d, sizeof d, a->down);
			buf_printf(&b, "allowed, %s up, %s down%s\n", u, d,
			    a->open ? ", open" : "");
		} else
			buf_printf(&b, "%s: %s\n", netlog_verdict_name(a->verdict), a->reason);
	}
	if (dropped)
		buf_printf(&b, "  (%llu more not kept)\n", (unsigned long long)dropped);
	tui_item_text(t, IT_INFO, buf_str(&b));
	buf_free(&b);
	t->v[P_CONV].follow = 1;
}

static void
compact_done(void *arg, const char *err)
{
	struct tui *t = arg;

	if (err)
		tui_flash(t, "/compact: %s", err);
	tui_mark(t);
}

static void
cmd_compact(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	struct context *cx = t->session ? session_context(t->session) : NULL;
	char *err = NULL;
	long before;
	int r;

	(void)c;
	(void)arg;
	if (cx == NULL) {
		tui_flash(t, "no model is configured");
		return;
	}
	if (t->session && session_running(t->session)) {
		tui_flash(t, "/compact waits until the question is over");
		return;
	}
	before = context_estimate(cx, NULL);
	r = context_prepare(cx, NULL, 1, compact_done, t, &err);
	if (r < 0) {
		tui_flash(t, "/compact: %s", err);
		free(err);
	} else if (r == 0 && context_estimate(cx, NULL) >= before) {
		tui_flash(t, "the conversation already fits: about %ld tokens of %ld",
		    before, context_window(cx));
	}
}

/* /allow and /deny: the session's proxy changed, the change kept in
 * the journal (session_egress) so that --resume applies it again. */
static void
egress_cmd(struct tui *t, int allow, const char *spec)
{
	char *err = NULL, *m;
	int rc;

	if (!*spec || strchr(spec, ' ') != NULL) {
		tui_flash(t, "usage: /%s HOST[:PORT]", allow ? "allow" : "deny");
		return;
	}
	rc = session_egress(t->session, allow, spec, &err);
	if (rc < 0) {
		tui_show_err(t, allow ? "allow" : "deny", err);
		return;
	}
	/* short enough for one line beside the files pane */
	if (!allow)
		m = xasprintf("the sandbox may no longer reach %s", spec);
	else if (rc == 1)
		m = xasprintf("the sandbox may reach %s; the Python session restarts for it "
		    "(variables are gone, files are kept)", spec);
	else
		m = xasprintf("the sandbox may reach %s from now on", spec);
	tui_item_text(t, IT_NOTICE, m);
	free(m);
}

static void
cmd_allow(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	(void)c;
	egress_cmd(t, 1, arg);
}

static void
cmd_deny(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	(void)c;
	egress_cmd(t, 0, arg);
}

static void
cmd_clear(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	(void)c;
	(void)arg;
	tui_items_clear(t);
}

static void
cmd_export(struct tui *t, const struct cmd_entry *c, const char *path)
{
	char *err = NULL;

	(void)c;
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

static void
cmd_save(struct tui *t, const struct cmd_entry *c, const char *arg)
{
	if (*arg) {
		cmd_export(t, c, arg);
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

/* ---- lines typed at the prompt ---- */

static const char *
skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* The command a line starting with '/' names (NULL: none), its name
 * copied to name (cut at size - 1 bytes); *end gets the offset just
 * past the name. */
static const struct cmd_entry *
cmd_find(const char *line, char *name, size_t size, size_t *end)
{
	size_t k = 0;
	const char *p = line + 1;

	while (*p && *p != ' ' && *p != '\t' && k < size - 1)
		name[k++] = *p++;
	name[k] = 0;
	*end = (size_t)(p - line);
	for (size_t i = 0; i < NCMDS; i++) {
		const struct cmd_entry *c = &cmds[i];
		if (strcmp(name, c->name) == 0 ||
		    (c->alias[0] && strcmp(name, c->alias[0]) == 0) ||
		    (c->alias[1] && strcmp(name, c->alias[1]) == 0))
			return c;
	}
	return NULL;
}

static void
run_command(struct tui *t, const char *line)
{
	char name[32];
	size_t end;
	const struct cmd_entry *c = cmd_find(line, name, sizeof name, &end);

	if (c == NULL) {
		tui_flash(t, "unknown command /%s (try /help)", name);
		return;
	}
	/* no blanks after the argument: Tab completion leaves one after a
	 * file name */
	char *arg = xstrdup(skip_ws(line + end));
	size_t n = strlen(arg);
	while (n > 0 && (arg[n - 1] == ' ' || arg[n - 1] == '\t'))
		arg[--n] = '\0';
	c->fn(t, c, arg);
	free(arg);
}

/* A line typed at the prompt: a command or a question. */
static void
cmd_line(struct tui *t, const char *s)
{
	if (*s == '/')
		run_command(t, s);
	else if (*s) {
		char *err = NULL;
		if (tui_data_no_model(t)) {
			/* the question stays in the history; the banner again */
			tui_item_text(t, IT_ERROR, TUI_NO_MODEL);
			tui_flash(t, "no model is configured");
		} else if (session_ask(t->session, s, &err) < 0)
			tui_show_err(t, "ask", err);
		t->v[P_CONV].follow = 1;
	}
}

/* Whether a replay is running (and can go on). */
static int
replaying(const struct tui *t)
{
	return session_busy(t->session) &&
	    t->st.kstate != KERNEL_DEAD;
}

/* Whether the line must wait for the running replay or question:
 * questions and the commands that run code or change the sandbox's
 * state (the others, /help, /files, /export..., do not disturb it), as
 * Jupyter queues a cell run while another runs. Lines already held keep
 * their order behind the first. */
static int
cmd_holds(struct tui *t, const char *s)
{
	if (*s == '/') {
		char name[32];
		size_t end;
		const struct cmd_entry *c = cmd_find(s, name, sizeof name, &end);
		if (c == NULL || !(c->flags & CMD_HOLDS))
			return 0;
	}
	if (t->cmd.nheld > 0)
		return 1;
	return replaying(t) || (t->session && session_running(t->session));
}

void
tui_cmd_submit(struct tui *t, const char *s)
{
	/* what the status bar said is about an earlier line */
	if (*s) {
		free(t->st.flash);
		t->st.flash = NULL;
	}
	if (!*s || !cmd_holds(t, s)) {
		cmd_line(t, s);
		return;
	}
	int replay = replaying(t);
	if (t->cmd.nheld == HELD_MAX) {
		tui_flash(t, "too many lines held; wait for the %s to end",
		    replay ? "replay" : "question");
		return;
	}
	t->cmd.held[t->cmd.nheld++] = xstrdup(s);
	char *m = replay ? xasprintf("held until the replay is over: %s", s) :
	    xasprintf("queued, runs when this one is done (Ctrl-C drops it): %s",
	    s);
	tui_item_text(t, IT_NOTICE, m);
	free(m);
}

int
tui_cmd_held_drop(struct tui *t)
{
	int n = t->cmd.nheld;

	if (n == 0 || replaying(t))
		return 0;
	for (int i = 0; i < n; i++)
		free(t->cmd.held[i]);
	t->cmd.nheld = 0;
	char *m = xasprintf("%d queued line%s dropped", n, n == 1 ? "" : "s");
	tui_item_text(t, IT_NOTICE, m);
	free(m);
	return n;
}

/* Runs the oldest held line once the replay is over and the agent is
 * free (one per call: a question keeps the agent busy until EV_IDLE). */
void
tui_cmd_held_run(struct tui *t)
{
	if (t->cmd.nheld == 0 || (t->session && session_running(t->session)))
		return;
	if (replaying(t))
		return;
	char *s = t->cmd.held[0];
	memmove(t->cmd.held, t->cmd.held + 1,
	    (size_t)(t->cmd.nheld - 1) * sizeof *t->cmd.held);
	t->cmd.nheld--;
	/* not typed now: a user who scrolled up keeps the place */
	int scrolled = tui_items_user_scrolled(t);
	cmd_line(t, s);
	if (scrolled)
		t->v[P_CONV].follow = 0;
	free(s);
	tui_mark(t);
}

/* ---- completion ---- */

/* Readline's generator: called with state 0, then again for each next
 * match until it returns NULL; the position lives between the calls. */
static char *
cmd_generator(const char *text, int state)
{
	static size_t i, len;

	if (!state) {
		i = 0;
		len = strlen(text);
	}
	while (i < NCMDS) {
		char *n = xasprintf("/%s", cmds[i++].name);
		if (strncmp(n, text, len) == 0)
			return n;
		free(n);
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
	if (rl_line_buffer[0] == '/') {
		char name[32];
		size_t e;
		const struct cmd_entry *c = cmd_find(rl_line_buffer, name,
		    sizeof name, &e);
		if (c && (c->flags & CMD_FILES) && rl_line_buffer[e] == ' ')
			return NULL;	/* file names */
	}
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
tui_cmd_free(struct tui *t)
{
	for (int i = 0; i < t->cmd.nheld; i++)
		free(t->cmd.held[i]);
	t->cmd.nheld = 0;
}
