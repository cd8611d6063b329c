/* tui: the terminal notebook. Panes (conversation, cells, artifacts),
 * a status bar and a GNU readline input line in callback mode inside
 * ncursesw, all driven by terp's one poll loop. Event handlers and keys
 * only change state and set `dirty`; one redraw per loop iteration,
 * at most ~60 per second, composes the frame (TUI.md sections 3 and 4). */
#include "terp/tui.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curses.h>
#include <readline/history.h>
#include <readline/readline.h>

#include "terp/buf.h"
#include "terp/colorpair.h"
#include "terp/export.h"
#include "terp/kernel.h"
#include "terp/mdlite.h"
#include "terp/pyhl.h"
#include "terp/span.h"
#include "terp/llm.h"
#include "terp/png.h"
#include "terp/sanitize.h"
#include "terp/session.h"
#include "terp/theme.h"
#include "terp/thumb.h"
#include "terp/tlines.h"
#include "terp/util.h"

#include "tui_priv.h"

struct tui T = { .kstate = -1, .ov_art = -1, .saved_stderr = -1,
	.err_fd = -1 };

void
tui_mark(void)
{
	T.dirty = 1;
}

/* ---- the conversation model (what the pane shows) ---- */

static struct item *
item_new(enum item_kind k)
{
	if (T.nitems == ITEMS_MAX) {
		buf_free(&T.items[0].text);
		tlines_free(&T.items[0].lines);
		memmove(T.items, T.items + 1, (size_t)(T.nitems - 1) * sizeof *T.items);
		T.nitems--;
	}
	if (T.nitems == T.citems) {
		T.citems = T.citems ? T.citems * 2 : 64;
		T.items = xrealloc(T.items, (size_t)T.citems * sizeof *T.items);
	}
	struct item *it = &T.items[T.nitems++];
	memset(it, 0, sizeof *it);
	it->kind = k;
	buf_init(&it->text, ITEM_TEXT_MAX);
	tlines_init(&it->lines);
	it->version = 1;
	tui_mark();
	return it;
}

/* Appends raw text (from the model, the sandbox or the user) sanitized. */
static void
item_add(struct item *it, const char *s, size_t n)
{
	sanitize_append(&it->text, s, n,
	    SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL, NULL);
	it->version++;
	tui_mark();
}

struct item *
tui_item_text(enum item_kind k, const char *s)
{
	struct item *it = item_new(k);
	item_add(it, s, strlen(s));
	return it;
}

void
tui_items_clear(void)
{
	for (int i = 0; i < T.nitems; i++) {
		buf_free(&T.items[i].text);
		tlines_free(&T.items[i].lines);
	}
	T.nitems = 0;
	T.v[P_CONV].top = 0;
	T.v[P_CONV].follow = 1;
	tui_mark();
}

void
tui_flash(const char *fmt, ...)
{
	va_list ap;
	char tmp[512];

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	free(T.flash);
	T.flash = sanitize_str(tmp, strlen(tmp), 0);
	T.flash_until = now_ms() + 4000;
	tui_mark();
}

static struct item *
open_answer(void)
{
	if (T.nitems > 0) {
		struct item *it = &T.items[T.nitems - 1];
		if (it->kind == IT_ANSWER && !it->closed)
			return it;
	}
	return item_new(IT_ANSWER);
}

static void
close_answer(void)
{
	if (T.nitems > 0 && T.items[T.nitems - 1].kind == IT_ANSWER)
		T.items[T.nitems - 1].closed = 1;
}

/* Whether the cell's item is already in the conversation. */
static int
has_cell_item(int n)
{
	for (int i = T.nitems - 1; i >= 0 && i >= T.nitems - 50; i--)
		if (T.items[i].kind == IT_CELL && T.items[i].cell == n)
			return 1;
	return 0;
}

static void
cells_changed(void)
{
	/* the cell pane follows the newest cell unless scrolled away */
	tui_mark();
}

/* The core's word that it restarted the sandbox; after an idle stop,
 * with what the user lost and how to get it back. */
static void
restart_notice(const char *text)
{
	int ok = 0;

	/* no hint while a replay runs: it is already re-running them */
	int replaying = T.o.session && session_busy(T.o.session);
	for (int n = 1; T.idle_down && !replaying && T.nb &&
	    n <= notebook_ncells(T.nb); n++) {
		const struct cell *c = notebook_cell(T.nb, n);
		ok += c->status == CELL_OK;
	}
	if (ok == 0) {
		tui_item_text(IT_NOTICE, text);
		return;
	}
	char *m = xasprintf("%s: variables from before are gone; /replay re-runs "
	    "the cells that succeeded", text);
	tui_item_text(IT_NOTICE, m);
	free(m);
}

void
tui_on_event(void *arg, const struct event *ev)
{
	(void)arg;
	switch (ev->type) {
	case EV_SESSION:
		free(T.session_id);
		free(T.workspace);
		T.session_id = ev->text ? xstrdup(ev->text) : NULL;
		T.workspace = ev->name ? xstrdup(ev->name) : NULL;
		break;
	case EV_KERNEL:
		if (T.kstate == KERNEL_BUSY || T.kstate < 0 || ev->n != T.kstate) {
			if (ev->n == KERNEL_DEAD && ev->text)
				tui_item_text(IT_ERROR, ev->text);
			else if (ev->text && strstr(ev->text, "restart"))
				restart_notice(ev->text);
		}
		if (ev->n == KERNEL_STOPPED && T.o.session) {
			int stopped = 0;
			session_idle_deadline(T.o.session, &stopped);
			T.idle_down = stopped;
		} else if (ev->n != KERNEL_STOPPED)
			T.idle_down = 0;
		T.kstate = ev->n;
		free(T.kmsg);
		T.kmsg = ev->text ? sanitize_str(ev->text, strlen(ev->text), 0) : NULL;
		break;
	case EV_QUESTION:
		close_answer();
		tui_item_text(IT_USER, ev->text ? ev->text : "");
		T.busy = 1;
		T.phase = 1;
		T.question_text = 0;
		T.step_ms = now_ms();
		T.v[P_CONV].follow = 1;
		break;
	case EV_TURN:
		break;
	case EV_REQUEST:
		T.busy = 1;
		T.phase = 1;
		T.step_ms = now_ms();
		break;
	case EV_TEXT:
		if (ev->text && ev->len) {
			item_add(open_answer(), ev->text, ev->len);
			T.question_text = 1;
			if (T.phase != 2)
				T.step_ms = now_ms();
			T.phase = 2;
		}
		break;
	case EV_TOOL_CALL:
		close_answer();
		break;
	case EV_CELL_START:
		close_answer();
		if (ev->cell) {
			if (!has_cell_item(ev->cell->n)) {
				struct item *it = item_new(IT_CELL);
				it->cell = ev->cell->n;
			}
			T.run_cell = ev->cell->n;
			T.v[P_CELLS].sel = ev->cell->n;
			T.v[P_CELLS].follow = 1;
		}
		T.busy = 1;
		T.phase = 3;
		T.step_ms = now_ms();
		cells_changed();
		break;
	case EV_STDOUT:
	case EV_STDERR:
	case EV_ARTIFACT:
		cells_changed();
		break;
	case EV_RESULT:
		for (int i = T.nitems - 1; i >= 0; i--)
			if (T.items[i].kind == IT_CELL && ev->cell &&
			    T.items[i].cell == ev->cell->n) {
				T.items[i].version++;
				break;
			}
		if (T.phase == 3) {
			T.phase = 1;
			T.step_ms = now_ms();
		}
		cells_changed();
		break;
	case EV_USAGE:
		if (ev->total)
			T.total = *ev->total;
		break;
	case EV_ANSWER:
		if (!T.question_text && ev->text && *ev->text)
			tui_item_text(IT_ANSWER, ev->text);
		close_answer();
		break;
	case EV_ERROR:
		close_answer();
		tui_item_text(IT_ERROR, ev->text ? ev->text : "error");
		break;
	case EV_NOTICE:
		close_answer();
		tui_item_text(IT_NOTICE, ev->text ? ev->text : "");
		break;
	case EV_IDLE:
		close_answer();
		T.busy = 0;
		T.phase = 0;
		T.run_cell = 0;
		break;
	}
	tui_mark();
}

/* One item of the resumed notebook, in reading order (export_walk). */
static void
restore_item(void *arg, enum export_item k, const char *text,
    const struct cell *c)
{
	(void)arg;
	switch (k) {
	case EXPORT_QUESTION:
		tui_item_text(IT_USER, text ? text : "");
		break;
	case EXPORT_REPLY:
		tui_item_text(IT_ANSWER, text ? text : "")->closed = 1;
		break;
	case EXPORT_CELL:
		if (c != NULL)
			item_new(IT_CELL)->cell = c->n;
		break;
	}
}

void
tui_restore(const struct notebook *nb)
{
	export_walk(nb, restore_item, NULL);
	T.total = *notebook_usage(nb);
	T.v[P_CONV].follow = 1;
	T.v[P_CELLS].follow = 1;
	T.v[P_CELLS].sel = notebook_ncells(nb);
	tui_mark();
}

/* ---- styles ---- */

/* Each TUI role drawn with a theme role, plus attributes of its own. */
static const struct {
	enum theme_role	 theme;
	attr_t		 extra;
} role_map[R_NROLES] = {
	[R_TEXT]	= { THEME_NORMAL, 0 },
	[R_DIM]		= { THEME_CONV_NOTICE, 0 },
	[R_USER]	= { THEME_CONV_USER, 0 },
	[R_USER_MARK]	= { THEME_CONV_USER, A_BOLD },
	[R_ASSIST]	= { THEME_CONV_ASSISTANT, 0 },
	[R_NOTICE]	= { THEME_CONV_NOTICE, 0 },
	[R_ERROR]	= { THEME_CELL_ERROR, A_BOLD },
	[R_LINK]	= { THEME_ARTIFACT_NAME, 0 },
	[R_CELL_HDR]	= { THEME_CELL_HEADER, 0 },
	[R_CODE]	= { THEME_CELL_CODE, 0 },
	[R_KEYWORD]	= { THEME_CODE_KEYWORD, 0 },
	[R_STRING]	= { THEME_CODE_STRING, 0 },
	[R_NUMBER]	= { THEME_CODE_NUMBER, 0 },
	[R_COMMENT]	= { THEME_CODE_COMMENT, 0 },
	[R_STDOUT]	= { THEME_CELL_STDOUT, 0 },
	[R_STDERR]	= { THEME_CELL_STDERR, 0 },
	[R_VALUE]	= { THEME_CELL_VALUE, 0 },
	[R_TRACE]	= { THEME_CELL_ERROR, 0 },
	[R_GOOD]		= { THEME_CELL_OK, 0 },
	[R_RUNNING]	= { THEME_STATUS_BUSY, 0 },
	[R_FAIL]	= { THEME_CELL_ERROR, A_BOLD },
	[R_TITLE]	= { THEME_PANE_TITLE, 0 },
	[R_TITLE_FOCUS]	= { THEME_PANE_FOCUS, 0 },
	[R_BORDER]	= { THEME_PANE_BORDER, 0 },
	[R_STATUS]	= { THEME_STATUS_BAR, 0 },
	[R_STATUS_KEY]	= { THEME_STATUS_BAR, A_BOLD },
	[R_SEL]		= { THEME_SELECTION, 0 },
	[R_PROMPT]	= { THEME_INPUT_PROMPT, 0 },
	[R_INPUT]	= { THEME_INPUT, 0 },
	[R_HIDDEN]	= { THEME_CONV_NOTICE, 0 },
	[R_BOLD]	= { THEME_MD_BOLD, 0 },
	[R_HEADING]	= { THEME_MD_HEADING, 0 },
	[R_MD_CODE]	= { THEME_MD_CODE, 0 },
};

/* Colour pairs for explicit fg/bg (thumbnails), from colorpair.c. */
static int
pair_for(int fg, int bg)
{
	if (!T.cp)
		return 0;
	return colorpair_get(T.cp, fg, bg);
}

/* Loads the theme and sets up colours. Returns 0, or -1 with *err
 * (caller frees) when the theme file had problems (the built-in look
 * fills in). */
static int
styles_init(char **err)
{
	struct theme th;
	int rc = 0;

	if (T.o.theme)
		rc = theme_load(&th, T.o.theme, err);
	else {
		/* default.theme when installed, else the same built in */
		char *ignored = NULL;
		if (theme_load(&th, "default", &ignored) < 0)
			theme_init_builtin(&th);
		free(ignored);
	}

	T.colors = 0;
	T.ncolors = 0;
	if (!T.o.no_color && has_colors() && start_color() == OK) {
		use_default_colors();
		T.ncolors = theme_ncolors(COLORS);
		T.colors = T.ncolors > 0;
	}
	if (T.colors) {
		colorpair_apply_theme(&th, T.ncolors);
		T.cp = colorpair_new(COLORPAIR_FIRST_DYNAMIC, COLOR_PAIRS - 1);
	}
	for (int r = 0; r < R_NROLES; r++) {
		unsigned long at;
		int pair;
		colorpair_role(&th, role_map[r].theme, T.ncolors, &at, &pair);
		T.role_attr[r] = (attr_t)at | role_map[r].extra;
		T.role_pair[r] = T.colors ? pair : 0;
		if (!T.colors && (r == R_STATUS || r == R_SEL || r == R_STATUS_KEY))
			T.role_attr[r] |= A_REVERSE;
	}
	for (int r = 0; r < THEME_NROLES; r++) {
		unsigned long at;
		int pair;
		colorpair_role(&th, (enum theme_role)r, T.ncolors, &at, &pair);
		T.theme_attr[r] = (attr_t)at;
		T.theme_pair[r] = T.colors ? pair : 0;
	}
	return rc;
}

static void
set_style(WINDOW *w, const struct tseg *g, int over)
{
	int pair;
	attr_t a;

	if (over >= 0) {
		a = T.role_attr[over];
		pair = T.role_pair[over];
	} else if (g->fg >= 0 || g->bg >= 0) {
		a = A_NORMAL;
		pair = pair_for(g->fg, g->bg);
	} else if (g->role >= R_THEME && g->role < R_THEME + THEME_NROLES) {
		a = T.theme_attr[g->role - R_THEME];
		pair = T.theme_pair[g->role - R_THEME];
	} else {
		a = T.role_attr[g->role];
		pair = T.role_pair[g->role];
	}
	wattr_set(w, a, 0, &pair);
}

/* ---- thumbnails ---- */

static int
utf8_term(void)
{
	return MB_CUR_MAX > 1;
}

/* The thumbnail of a PNG at most cols wide and rows_max high, cached.
 * NULL when the file is not a decodable PNG (*why says so). */
static struct thumb *
thumb_get(const char *path, int cols, int rows_max, const char **why)
{
	struct tcache *slot = NULL;

	*why = NULL;
	if (cols < 2)
		cols = 2;
	for (int i = 0; i < NTHUMBS; i++) {
		struct tcache *c = &T.thumbs[i];
		if (c->path && c->cols == cols && c->rows_max == rows_max &&
		    strcmp(c->path, path) == 0) {
			c->stamp = ++T.tstamp;
			*why = c->err;
			return c->t;
		}
		if (!slot || !c->path || (slot->path && c->stamp < slot->stamp))
			slot = c;
	}
	free(slot->path);
	free(slot->err);
	thumb_free(slot->t);
	memset(slot, 0, sizeof *slot);
	slot->path = xstrdup(path);
	slot->cols = cols;
	slot->rows_max = rows_max;
	slot->stamp = ++T.tstamp;

	char *err = NULL;
	struct png_rgba *img = png_decode_file(path, &err);
	if (img) {
		struct thumb_opts to;
		thumb_opts_init(&to);
		to.cols = cols;
		to.max_rows = rows_max;
		to.symbols = utf8_term() ? THUMB_SYM_QUAD : THUMB_SYM_ASCII;
		to.palette = !T.colors ? THUMB_PAL_MONO :
		    T.ncolors >= 256 ? THUMB_PAL_256 :
		    T.ncolors >= 16 ? THUMB_PAL_16 : THUMB_PAL_8;
		slot->t = thumb_render(img->px, (int)img->w, (int)img->h, 4,
		    (size_t)img->w * 4, &to, &err);
		png_rgba_free(img);
	}
	if (!slot->t)
		slot->err = err ? sanitize_str(err, strlen(err), 0) :
		    xstrdup("cannot render");
	else
		free(err);
	*why = slot->err;
	return slot->t;
}

static void
thumbs_clear(void)
{
	for (int i = 0; i < NTHUMBS; i++) {
		free(T.thumbs[i].path);
		free(T.thumbs[i].err);
		thumb_free(T.thumbs[i].t);
		memset(&T.thumbs[i], 0, sizeof T.thumbs[i]);
	}
}

/* Appends the grid as lines: runs of one colour become one segment. */
static void
thumb_lines(struct tlines *ls, const struct thumb *t, int indent, int tag)
{
	for (int y = 0; y < t->rows; y++) {
		struct tline *l = tlines_add(ls, tag);
		if (indent > 0)
			tline_add(l, R_TEXT, "        ", (size_t)(indent < 8 ? indent : 8));
		struct buf run;
		buf_init(&run, 4096);
		int fg = -2, bg = -2;
		for (int x = 0; x < t->cols; x++) {
			const struct thumb_cell *c = &t->cells[y * t->cols + x];
			if ((c->fg != fg || c->bg != bg) && run.len) {
				tline_add_color(l, run.data, run.len, fg, bg);
				buf_reset(&run);
			}
			fg = c->fg;
			bg = c->bg;
			buf_adds(&run, c->sym[0] ? c->sym : " ");
		}
		if (run.len)
			tline_add_color(l, run.data, run.len, fg, bg);
		buf_free(&run);
	}
}

static int
is_png(const char *name)
{
	size_t n = strlen(name);
	return n > 4 && strcasecmp(name + n - 4, ".png") == 0;
}

/* ---- building display lines ---- */

/* Appends span lines (theme roles) as display lines after a prefix;
 * at most max lines when max >= 0. Returns the lines added. */
static int
add_spans(struct tlines *ls, const struct span_doc *d, size_t from, int max,
    const char *prefix, int prole, int tag)
{
	int added = 0;
	for (size_t i = from; i < d->n && (max < 0 || added < max); i++) {
		struct tline *l = tlines_add(ls, tag);
		if (prefix && *prefix)
			tline_adds(l, prole, prefix);
		for (size_t j = 0; j < d->lines[i].n; j++)
			tline_adds(l, R_THEME + d->lines[i].v[j].role,
			    d->lines[i].v[j].text);
		added++;
	}
	return added;
}

/* Appends text (sanitized) as lines; collapsed, only head and tail
 * lines are kept around a "... N lines hidden ..." marker, and each
 * line is cut at the width; expanded, everything is wrapped. */
static void
add_block(struct tlines *ls, const char *text, size_t len, int w, int role,
    const char *prefix, int expanded, int head, int tail, int tag)
{
	while (len > 0 && text[len - 1] == '\n')
		len--;
	if (len == 0)
		return;
	if (expanded) {
		tlines_wrap(ls, text, len, w, role, prefix, R_BORDER, tag);
		return;
	}
	size_t nl = 1;
	for (const char *p = text; (p = memchr(p, '\n', len - (size_t)(p - text)));
	    p++)
		nl++;
	if (nl <= (size_t)(head + tail + 1)) {
		tlines_cut(ls, text, len, w, role, prefix, R_BORDER, tag);
		return;
	}
	/* the head lines, the marker, the tail lines */
	const char *p = text, *end = text + len;
	for (int i = 0; i < head; i++) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		tlines_cut(ls, p, (size_t)(e - p), w, role, prefix, R_BORDER, tag);
		p = e + 1;
	}
	char msg[96];
	snprintf(msg, sizeof msg, "… %zu lines hidden (Enter on the cell shows all) …",
	    nl - (size_t)head - (size_t)tail);
	tlines_cut(ls, msg, strlen(msg), w, R_HIDDEN, prefix, R_BORDER, tag);
	const char *q = end;
	for (int i = 0; i < tail; i++) {
		q--;
		while (q > text && q[-1] != '\n')
			q--;
	}
	tlines_cut(ls, q, (size_t)(end - q), w, role, prefix, R_BORDER, tag);
}

static void
add_sanitized(struct tlines *ls, const char *raw, size_t n, int w, int role,
    const char *prefix, int expanded, int head, int tail, int tag)
{
	char *s = sanitize_str(raw, n,
	    SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL);
	add_block(ls, s, strlen(s), w, role, prefix, expanded, head, tail, tag);
	free(s);
}

static int
cell_expanded(int n)
{
	return n > 0 && n < T.nexp && T.expanded[n];
}

static int
cell_nart(const struct cell *c)
{
	int k = 0, na = notebook_nartifacts(T.nb);
	for (int i = 0; i < na; i++)
		if (notebook_artifact(T.nb, i)->cell == c->n)
			k++;
	return k;
}

/* The code of a cell, highlighted; collapsed, the first CODE_SHOW lines. */
static void
code_lines(struct tlines *ls, const char *code, int w, int expanded, int tag)
{
	char *s = sanitize_str(code, strlen(code),
	    SANITIZE_KEEP_NL | SANITIZE_CR_AS_NL | SANITIZE_KEEP_TAB);
	size_t len = strlen(s);
	while (len > 0 && s[len - 1] == '\n')
		len--;
	struct span_doc d;
	span_doc_init(&d);
	pyhl_highlight(&d, s, len, expanded ? w - 4 : 0, THEME_CELL_CODE);
	int show = expanded || d.n <= CODE_SHOW + 1 ? -1 : CODE_SHOW;
	add_spans(ls, &d, 0, show, "  │ ", R_BORDER, tag);
	if (show >= 0) {
		char msg[64];
		snprintf(msg, sizeof msg, "… %zu more lines", d.n - (size_t)show);
		tlines_cut(ls, msg, strlen(msg), w, R_HIDDEN, "  │ ", R_BORDER, tag);
	}
	span_doc_free(&d);
	free(s);
}

/* Everything of a cell below its header line. */
static void
cell_body(struct tlines *ls, const struct cell *c, int w)
{
	int ex = cell_expanded(c->n), tag = c->n;
	size_t n;

	code_lines(ls, c->code ? c->code : "", w, ex, tag);
	for (int st = 0; st < 2; st++) {
		char *o = cell_output(c, st, &n);
		if (n)
			add_sanitized(ls, o, n, w, st ? R_STDERR : R_STDOUT, "  ",
			    ex, OUT_SHOW_HEAD, OUT_SHOW_TAIL, tag);
		free(o);
	}
	if (c->value)
		add_sanitized(ls, c->value, strlen(c->value), w, R_VALUE, "  → ",
		    ex, OUT_SHOW_HEAD, OUT_SHOW_TAIL, tag);
	if (c->ename || c->evalue) {
		char *m = xasprintf("%s%s%s", c->ename ? c->ename : "",
		    c->ename && c->evalue ? ": " : "", c->evalue ? c->evalue : "");
		add_sanitized(ls, m, strlen(m), w, R_FAIL, "  ✗ ", 0, 2, 2, tag);
		free(m);
		if (c->traceback && ex)
			add_sanitized(ls, c->traceback, strlen(c->traceback), w,
			    R_TRACE, "    ", 1, 0, 0, tag);
		else if (c->traceback) {
			/* the last frames are what matters */
			add_sanitized(ls, c->traceback, strlen(c->traceback), w,
			    R_TRACE, "    ", 0, 0, 4, tag);
		}
	}
	if (c->reason)
		add_sanitized(ls, c->reason, strlen(c->reason), w, R_FAIL, "  ! ",
		    ex, 2, 2, tag);
	if (c->state_lost) {
		const char *m = "the session restarted: variables are gone";
		tlines_cut(ls, m, strlen(m), w, R_FAIL, "  ! ", R_BORDER, tag);
	}
	int na = notebook_nartifacts(T.nb);
	for (int i = 0; i < na; i++) {
		const struct artifact *a = notebook_artifact(T.nb, i);
		if (a->cell != c->n)
			continue;
		char sz[32];
		fmt_bytes(sz, sizeof sz, a->bytes);
		/* the name on one line: a newline in it is shown, not kept */
		char *nm = sanitize_str(a->name, strlen(a->name), 0);
		char *m = xasprintf("%s  %s", nm, sz);
		add_sanitized(ls, m, strlen(m), w, R_LINK, "  ▪ ", 0, 1, 1, tag);
		free(m);
		free(nm);
		if (is_png(a->name)) {
			const char *why;
			int tc = w - 4 < 64 ? w - 4 : 64;
			struct thumb *t = thumb_get(a->path, ex ? w - 4 : tc,
			    ex ? 40 : 14, &why);
			if (t)
				thumb_lines(ls, t, 4, tag);
			else if (why)
				tlines_cut(ls, why, strlen(why), w, R_DIM, "    ",
				    R_BORDER, tag);
		}
	}
}

static struct cblock *
cell_block(const struct cell *c, int w)
{
	if (c->n >= T.ncb) {
		int nn = c->n + 32;
		T.cb = xrealloc(T.cb, (size_t)nn * sizeof *T.cb);
		memset(T.cb + T.ncb, 0, (size_t)(nn - T.ncb) * sizeof *T.cb);
		T.ncb = nn;
	}
	struct cblock *b = &T.cb[c->n];
	int ex = cell_expanded(c->n), nart = cell_nart(c);
	if (b->valid && b->width == w && b->expanded == ex &&
	    b->status == (int)c->status && b->nart == nart &&
	    b->tot[0] == c->out[0].total && b->tot[1] == c->out[1].total &&
	    b->has_value == (c->value != NULL))
		return b;
	tlines_free(&b->lines);
	tlines_init(&b->lines);
	cell_body(&b->lines, c, w);
	b->valid = 1;
	b->width = w;
	b->expanded = ex;
	b->status = (int)c->status;
	b->nart = nart;
	b->tot[0] = c->out[0].total;
	b->tot[1] = c->out[1].total;
	b->has_value = c->value != NULL;
	return b;
}

static void
cblocks_invalidate(void)
{
	for (int i = 0; i < T.ncb; i++)
		T.cb[i].valid = 0;
}

static int
status_role(enum cell_status s)
{
	switch (s) {
	case CELL_OK:		return R_GOOD;
	case CELL_PENDING:
	case CELL_RUNNING:	return R_RUNNING;
	default:		return R_FAIL;
	}
}

/* "[3] model · ok · 0.42s" */
static void
cell_header(struct tline *l, const struct cell *c)
{
	char tmp[128];
	snprintf(tmp, sizeof tmp, "[%d] ", c->n);
	tline_adds(l, R_CELL_HDR, tmp);
	tline_adds(l, R_DIM, c->author == CELL_BY_MODEL ? "model" : "you");
	tline_adds(l, R_DIM, " · ");
	if (c->status == CELL_RUNNING) {
		static const char *spin[] = { "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏" };
		int64_t el = now_ms() - c->started_ms;
		snprintf(tmp, sizeof tmp, "running %.1fs %s", (double)el / 1000.0,
		    utf8_term() ? spin[(el / 100) % 10] : "");
	} else if (c->status == CELL_PENDING)
		snprintf(tmp, sizeof tmp, "queued");
	else
		snprintf(tmp, sizeof tmp, "%s · %.2fs", cell_status_name(c->status),
		    (double)c->duration_ms / 1000.0);
	tline_adds(l, status_role(c->status), tmp);
	if (cell_expanded(c->n))
		tline_adds(l, R_DIM, " · expanded");
}

/* The conversation line that links a model turn to its cell. */
static void
cell_link(struct tline *l, int n)
{
	const struct cell *c = T.nb ? notebook_cell(T.nb, n) : NULL;
	char tmp[160];
	tline_adds(l, R_LINK, "  ▸ ");
	snprintf(tmp, sizeof tmp, "ran cell [%d]", n);
	tline_adds(l, R_LINK, tmp);
	if (!c)
		return;
	if (c->status == CELL_RUNNING || c->status == CELL_PENDING) {
		tline_adds(l, R_RUNNING, " · running");
		return;
	}
	size_t lines = 0;
	for (int st = 0; st < 2; st++) {
		size_t n2;
		char *o = cell_output(c, st, &n2);
		for (size_t i = 0; i < n2; i++)
			lines += o[i] == '\n';
		if (n2 && o[n2 - 1] != '\n')
			lines++;
		free(o);
	}
	snprintf(tmp, sizeof tmp, " · %s %.2fs", cell_status_name(c->status),
	    (double)c->duration_ms / 1000.0);
	tline_adds(l, status_role(c->status), tmp);
	if (lines) {
		snprintf(tmp, sizeof tmp, " · %zu line%s of output", lines,
		    lines == 1 ? "" : "s");
		tline_adds(l, R_DIM, tmp);
	}
	if (c->nartifacts > 0 || cell_nart(c)) {
		snprintf(tmp, sizeof tmp, " · %d file%s", cell_nart(c),
		    cell_nart(c) == 1 ? "" : "s");
		tline_adds(l, R_DIM, tmp);
	}
}

/* The wrapped lines of one conversation item (cached by version, width). */
static const struct tlines *
item_lines(struct item *it, int w)
{
	if (it->kind != IT_CELL && it->cver == it->version && it->cw == w)
		return &it->lines;
	tlines_free(&it->lines);
	tlines_init(&it->lines);
	const char *s = buf_str(&it->text);
	size_t n = it->text.len;
	switch (it->kind) {
	case IT_USER:
		tlines_add(&it->lines, 0);
		tlines_wrap(&it->lines, s, n, w, R_USER, "› ", R_USER_MARK, 0);
		break;
	case IT_ANSWER: {
		while (n > 0 && s[n - 1] == '\n')
			n--;
		struct span_doc d;
		span_doc_init(&d);
		mdlite_render(&d, s, n, w - 2 > 10 ? w - 2 : 10);
		add_spans(&it->lines, &d, 0, -1, "  ", R_ASSIST, 0);
		span_doc_free(&d);
		break;
	}
	case IT_CELL:
		cell_link(tlines_add(&it->lines, it->cell), it->cell);
		break;
	case IT_NOTICE:
		tlines_wrap(&it->lines, s, n, w, R_NOTICE, "  · ", R_NOTICE, 0);
		break;
	case IT_ERROR:
		tlines_wrap(&it->lines, s, n, w, R_ERROR, "  ✗ ", R_ERROR, 0);
		break;
	case IT_INFO:
		while (n > 0 && s[n - 1] == '\n')
			n--;
		tlines_wrap(&it->lines, s, n, w, R_TEXT, "  ", R_TEXT, 0);
		break;
	}
	it->cver = it->version;
	it->cw = w;
	return &it->lines;
}

/* ---- layout and drawing ---- */

static const char *pane_name[P_NPANES] = { "input", "conversation", "cells",
	"files" };

/* Input rows the current line needs (it may hold newlines). */
static int
input_rows(void)
{
	int rows = 1;
	if (rl_line_buffer)
		for (const char *p = rl_line_buffer; *p; p++)
			rows += *p == '\n';
	if (rows > INPUT_ROWS_MAX)
		rows = INPUT_ROWS_MAX;
	if (rows > T.rows / 4)
		rows = T.rows / 4 > 0 ? T.rows / 4 : 1;
	return rows;
}

/* Which pane a compact screen shows. */
static enum pane
shown_pane(void)
{
	if (T.focus != P_INPUT)
		return T.focus;
	return T.last_pane != P_INPUT ? T.last_pane : P_CONV;
}

static void
layout(void)
{
	T.rows = LINES;
	T.cols = COLS;
	T.inrows = input_rows();
	int h = T.rows - 1 - T.inrows;		/* above the status bar */
	memset(T.ph, 0, sizeof T.ph);
	memset(T.pw, 0, sizeof T.pw);
	T.compact = h < 14 || T.cols < 60;
	if (T.compact) {
		enum pane p = shown_pane();
		T.py[p] = 0;
		T.px[p] = 0;
		T.ph[p] = h;
		T.pw[p] = T.cols;
		return;
	}
	int artw = T.cols >= 110 ? 30 : T.cols >= 80 ? 24 : 20;
	int leftw = T.cols - artw - 1;
	int convh = h * 2 / 5;
	if (convh < 5)
		convh = 5;
	T.py[P_CONV] = 0;
	T.px[P_CONV] = 0;
	T.ph[P_CONV] = convh;
	T.pw[P_CONV] = leftw;
	T.py[P_CELLS] = convh;
	T.px[P_CELLS] = 0;
	T.ph[P_CELLS] = h - convh;
	T.pw[P_CELLS] = leftw;
	T.py[P_ARTS] = 0;
	T.px[P_ARTS] = leftw + 1;
	T.ph[P_ARTS] = h;
	T.pw[P_ARTS] = artw;
}

/* Draws l at row y from column x, at most w columns; over >= 0 styles
 * the whole row (selection) and pads it. */
static void
draw_line(WINDOW *win, int y, int x, int w, const struct tline *l, int over)
{
	int col = 0;
	wmove(win, y, x);
	for (int i = 0; l && i < l->nseg && col < w; i++) {
		const struct tseg *g = &l->seg[i];
		int used;
		size_t len = strlen(g->text);
		size_t k = tlines_fit(g->text, len, w - col, &used);
		if (k == 0)
			continue;
		set_style(win, g, over);
		waddnstr(win, g->text, (int)k);
		col += used;
		if (k < len)
			break;
	}
	if (over >= 0 && col < w) {
		set_style(win, NULL, over);
		for (; col < w; col++)
			waddch(win, ' ');
	}
	wattr_set(win, A_NORMAL, 0, &(int){0});
}

static void
draw_text(WINDOW *win, int y, int x, int w, int role, const char *s)
{
	struct tline l = { 0 };
	tline_adds(&l, role, s);
	draw_line(win, y, x, w, &l, -1);
	for (int i = 0; i < l.nseg; i++)
		free(l.seg[i].text);
	free(l.seg);
}

/* A pane's title row: "─ conversation ─── extra ─". */
static void
draw_title(enum pane p, const char *extra)
{
	int y = T.py[p], x = T.px[p], w = T.pw[p];
	int focus = T.focus == p;
	struct tline l = { 0 };

	if (T.compact) {
		/* a tab strip: every pane, the shown one highlighted */
		for (int q = (int)P_CONV; q < (int)P_NPANES; q++) {
			tline_adds(&l, q == (int)p ? (focus ? R_TITLE_FOCUS : R_CELL_HDR) :
			    R_TITLE, q == (int)p ? "[" : " ");
			tline_adds(&l, q == (int)p ? (focus ? R_TITLE_FOCUS : R_CELL_HDR) :
			    R_TITLE, pane_name[q]);
			tline_adds(&l, q == (int)p ? (focus ? R_TITLE_FOCUS : R_CELL_HDR) :
			    R_TITLE, q == (int)p ? "]" : " ");
		}
	} else {
		tline_adds(&l, R_BORDER, "─ ");
		tline_adds(&l, focus ? R_TITLE_FOCUS : R_TITLE, pane_name[p]);
		tline_adds(&l, R_BORDER, " ");
	}
	if (extra && *extra) {
		tline_adds(&l, R_DIM, extra);
		tline_adds(&l, R_BORDER, " ");
	}
	int used = tline_width(&l);
	struct buf fill;
	buf_init(&fill, 4096);
	for (int i = used; i < w; i++)
		buf_adds(&fill, utf8_term() ? "─" : "-");
	if (fill.len)
		tline_add(&l, R_BORDER, fill.data, fill.len);
	buf_free(&fill);
	draw_line(T.mainw, y, x, w, &l, -1);
	for (int i = 0; i < l.nseg; i++)
		free(l.seg[i].text);
	free(l.seg);
}

/* Clamps a view over total lines in h rows; follow pins the bottom. */
static void
view_clamp(struct view *v, int total, int h)
{
	int maxtop = total - h > 0 ? total - h : 0;
	if (v->follow || v->top > maxtop)
		v->top = maxtop;
	if (v->top < 0)
		v->top = 0;
}

static void
draw_conv(void)
{
	enum pane p = P_CONV;
	int h = T.ph[p] - 1, w = T.pw[p], y0 = T.py[p] + 1;
	if (h <= 0 || w <= 0)
		return;
	int total = 0;
	for (int i = 0; i < T.nitems; i++)
		total += item_lines(&T.items[i], w)->n;
	struct view *v = &T.v[p];
	view_clamp(v, total, h);
	char extra[64] = "";
	if (!v->follow && total > h)
		snprintf(extra, sizeof extra, "%d/%d  End: follow", v->top + h, total);
	draw_title(p, extra);
	if (T.nitems == 0) {
		draw_text(T.mainw, y0, 0, w, R_DIM,
		    "  Ask a question about your data and press Enter.");
		draw_text(T.mainw, y0 + 1, 0, w, R_DIM,
		    "  /help lists the commands, ? or F1 the keys.");
		return;
	}
	int line = 0, row = 0;
	for (int i = 0; i < T.nitems && row < h; i++) {
		const struct tlines *ls = item_lines(&T.items[i], w);
		if (line + ls->n <= v->top) {
			line += ls->n;
			continue;
		}
		for (int j = 0; j < ls->n && row < h; j++, line++) {
			if (line < v->top)
				continue;
			draw_line(T.mainw, y0 + row, 0, w, &ls->v[j], -1);
			if (row < TAGROWS)
				T.tagmap[p][row] = ls->v[j].tag;
			row++;
		}
	}
}

/* Line offset of each cell's header in the cell pane; returns the total. */
static int
cells_total(int w, int *start, int ncells)
{
	int total = 0;
	for (int n = 1; n <= ncells; n++) {
		const struct cell *c = notebook_cell(T.nb, n);
		if (start)
			start[n] = total;
		total += 1 + (c ? cell_block(c, w)->lines.n : 0) + 1;
	}
	if (start)
		start[ncells + 1] = total;
	return total;
}

static void
draw_cells(void)
{
	enum pane p = P_CELLS;
	int h = T.ph[p] - 1, w = T.pw[p], y0 = T.py[p] + 1, x0 = T.px[p];
	if (h <= 0 || w <= 0)
		return;
	int nc = notebook_ncells(T.nb);
	struct view *v = &T.v[p];
	int *start = xcalloc((size_t)nc + 2, sizeof *start);
	int total = cells_total(w, start, nc);
	if (v->sel > nc)
		v->sel = nc;
	if (v->sel < 1 && nc > 0)
		v->sel = nc;
	if (v->sel_from_top) {
		for (int n = 1; n <= nc; n++)
			if (start[n] <= v->top)
				v->sel = n;
		v->sel_from_top = 0;
	}
	if (v->ensure_sel && v->sel >= 1) {
		v->follow = 0;
		if (start[v->sel] < v->top)
			v->top = start[v->sel];
		else if (start[v->sel] >= v->top + h)
			v->top = start[v->sel + 1] - h < start[v->sel] ?
			    start[v->sel + 1] - h : start[v->sel];
		if (v->sel == nc && start[nc + 1] <= v->top + h)
			v->follow = 1;
		v->ensure_sel = 0;
	}
	view_clamp(v, total, h);
	char extra[80];
	snprintf(extra, sizeof extra, "%d%s", nc,
	    !v->follow && total > h ? "  End: follow" : "");
	draw_title(p, extra);
	if (nc == 0)
		draw_text(T.mainw, y0, x0, w, R_DIM,
		    "  No cells yet. The model's code appears here; /py CODE runs your own.");
	int row = 0;
	for (int n = 1; n <= nc && row < h; n++) {
		if (start[n + 1] <= v->top)
			continue;
		const struct cell *c = notebook_cell(T.nb, n);
		const struct tlines *body = &cell_block(c, w)->lines;
		for (int j = start[n]; j < start[n + 1] && row < h; j++) {
			if (j < v->top)
				continue;
			int k = j - start[n];
			if (k == 0) {
				struct tline hl = { 0 };
				tline_adds(&hl, R_LINK, n == v->sel ?
				    (utf8_term() ? "▸" : ">") : " ");
				cell_header(&hl, c);
				draw_line(T.mainw, y0 + row, x0, w, &hl,
				    n == v->sel && T.focus == p ? R_SEL : -1);
				for (int i = 0; i < hl.nseg; i++)
					free(hl.seg[i].text);
				free(hl.seg);
			} else if (k - 1 < body->n)
				draw_line(T.mainw, y0 + row, x0, w,
				    &body->v[k - 1], -1);
			if (row < TAGROWS)
				T.tagmap[p][row] = n;
			row++;
		}
	}
	free(start);
}

static void
draw_arts(void)
{
	enum pane p = P_ARTS;
	int h = T.ph[p] - 1, w = T.pw[p], y0 = T.py[p] + 1, x0 = T.px[p];
	if (h <= 0 || w <= 0)
		return;
	int na = notebook_nartifacts(T.nb);
	char extra[32];
	snprintf(extra, sizeof extra, "%d", na);
	draw_title(p, extra);
	if (!T.compact)	/* the separator from the left panes */
		for (int y = 0; y < T.ph[p]; y++) {
			int pr = T.role_pair[R_BORDER];
			wattr_set(T.mainw, T.role_attr[R_BORDER], 0, &pr);
			mvwaddstr(T.mainw, y, x0 - 1, utf8_term() ? "│" : "|");
		}
	if (na == 0) {
		draw_text(T.mainw, y0, x0, w, R_DIM, " Charts and files");
		draw_text(T.mainw, y0 + 1, x0, w, R_DIM, " the code saves to");
		draw_text(T.mainw, y0 + 2, x0, w, R_DIM, " out/ appear here.");
		return;
	}
	struct view *v = &T.v[p];
	if (v->sel >= na)
		v->sel = na - 1;
	if (v->sel < 0)
		v->sel = 0;
	/* lines: per artifact a name row, a detail row, a thumbnail */
	struct tlines ls;
	tlines_init(&ls);
	int selrow = 0;
	for (int i = 0; i < na; i++) {
		const struct artifact *a = notebook_artifact(T.nb, i);
		if (i == v->sel)
			selrow = ls.n;
		char *nm = sanitize_str(a->name, strlen(a->name), 0);
		tlines_cut(&ls, nm, strlen(nm), w, R_TEXT, i == v->sel ? "▸ " : "  ",
		    R_LINK, i);
		free(nm);
		char sz[32], det[64];
		fmt_bytes(sz, sizeof sz, a->bytes);
		snprintf(det, sizeof det, "%s · cell [%d]", sz, a->cell);
		tlines_cut(&ls, det, strlen(det), w, R_DIM, "  ", R_DIM, i);
		if (is_png(a->name) && w > 6) {
			const char *why;
			struct thumb *t = thumb_get(a->path, w - 3, 6, &why);
			if (t)
				thumb_lines(&ls, t, 2, i);
		}
	}
	if (selrow < v->top)
		v->top = selrow;
	if (selrow + 2 > v->top + h)
		v->top = selrow + 2 - h;
	if (v->top > ls.n - h)
		v->top = ls.n - h > 0 ? ls.n - h : 0;
	for (int r = 0; r < h && v->top + r < ls.n; r++) {
		const struct tline *l = &ls.v[v->top + r];
		int selected = l->tag == v->sel && v->top + r == selrow &&
		    T.focus == p;
		draw_line(T.mainw, y0 + r, x0, w, l, selected ? R_SEL : -1);
		if (r < TAGROWS)
			T.tagmap[p][r] = l->tag;
	}
	tlines_free(&ls);
}

static const char *
kstate_text(void)
{
	switch (T.kstate) {
	case KERNEL_STOPPED:	return "stopped";
	case KERNEL_STARTING:	return "starting";
	case KERNEL_LOADING:	return "loading libraries";
	case KERNEL_READY:	return "ready";
	case KERNEL_BUSY:	return "running";
	case KERNEL_DEAD:	return "sandbox failed";
	default:		return "starting";
	}
}

static void
fmt_tokens(char *b, size_t n, long v)
{
	if (v >= 10000)
		snprintf(b, n, "%.0fk", (double)v / 1000.0);
	else if (v >= 1000)
		snprintf(b, n, "%.1fk", (double)v / 1000.0);
	else
		snprintf(b, n, "%ld", v);
}

static void
draw_status(void)
{
	int y = T.rows - T.inrows - 1;
	struct tline l = { 0 };
	char tmp[256];
	const char *model = NULL;
	struct llm *m = T.agent ? agent_llm(T.agent) : NULL;

	if (m)
		model = llm_model(m);
	snprintf(tmp, sizeof tmp, " %s%s%s ", T.o.provider_label ?
	    T.o.provider_label : (m ? llm_provider(m) : "no model"),
	    model ? " · " : "", model ? model : "");
	tline_adds(&l, R_STATUS_KEY, tmp);
	tline_adds(&l, R_STATUS, "│ ");
	int total = 0, done = T.o.session ? session_progress(T.o.session, &total) : 0;
	int64_t deadline = 0;
	int idle_stopped = 0;
	if (T.o.session)
		deadline = session_idle_deadline(T.o.session, &idle_stopped);
	T.ticking = 0;
	if (total > 0)
		snprintf(tmp, sizeof tmp, "replaying %d/%d",
		    done < total ? done + 1 : total, total);
	else if (T.phase == 3 && T.run_cell)
		snprintf(tmp, sizeof tmp, "running cell [%d]", T.run_cell);
	else if (T.phase == 1)
		snprintf(tmp, sizeof tmp, "thinking");
	else if (T.phase == 2)
		snprintf(tmp, sizeof tmp, "answering");
	else if (T.kstate == KERNEL_STOPPED && idle_stopped)
		snprintf(tmp, sizeof tmp, "sandbox stopped (idle)");
	else
		snprintf(tmp, sizeof tmp, "%s", kstate_text());
	tline_adds(&l, total > 0 ? R_STATUS_KEY : R_STATUS, tmp);
	if (T.nheld > 0) {
		snprintf(tmp, sizeof tmp, " · %d held", T.nheld);
		tline_adds(&l, R_STATUS, tmp);
	}
	if (deadline > 0 && !T.busy) {
		int64_t left = deadline - now_ms();
		if (left < 0)
			left = 0;
		if (left < IDLE_SHOW_MS) {
			int64_t sec = (left + 999) / 1000;
			snprintf(tmp, sizeof tmp, " │ idle stop in %d:%02d",
			    (int)(sec / 60), (int)(sec % 60));
			tline_adds(&l, R_STATUS, tmp);
			T.ticking = 1;
		}
	}
	if (T.busy) {
		snprintf(tmp, sizeof tmp, " %.1fs", (double)(now_ms() - T.step_ms) / 1000.0);
		tline_adds(&l, R_STATUS, tmp);
	}
	if (T.total.input_tokens || T.total.output_tokens) {
		char a[24], b[24];
		fmt_tokens(a, sizeof a, T.total.input_tokens);
		fmt_tokens(b, sizeof b, T.total.output_tokens);
		snprintf(tmp, sizeof tmp, " │ tokens %s in · %s out", a, b);
		tline_adds(&l, R_STATUS, tmp);
	}
	if (T.flash && now_ms() < T.flash_until) {
		tline_adds(&l, R_STATUS, " │ ");
		tline_adds(&l, R_STATUS_KEY, T.flash);
	}
	const char *hint = T.busy ? " Ctrl-C cancel · ? help " :
	    " Tab panes · ? help ";
	int hw = tlines_width(hint, strlen(hint));
	int used = tline_width(&l);
	if (used + hw <= T.cols) {
		memset(tmp, ' ', sizeof tmp);
		int pad = T.cols - used - hw;
		if (pad > (int)sizeof tmp - 1)
			pad = (int)sizeof tmp - 1;
		tline_add(&l, R_STATUS, tmp, (size_t)pad);
		tline_adds(&l, R_STATUS, hint);
	}
	draw_line(T.mainw, y, 0, T.cols, &l, -1);
	/* pad the bar to the full width */
	int col = tline_width(&l);
	int pr = T.role_pair[R_STATUS];
	wattr_set(T.mainw, T.role_attr[R_STATUS], 0, &pr);
	for (; col < T.cols; col++)
		mvwaddch(T.mainw, y, col, ' ');
	wattr_set(T.mainw, A_NORMAL, 0, &(int){0});
	for (int i = 0; i < l.nseg; i++)
		free(l.seg[i].text);
	free(l.seg);
}

static const char *
prompt_text(void)
{
	switch (T.modal) {
	case M_CONFIRM_QUIT:	return "Something is running. Quit anyway? (y/n) ";
	case M_SAVE_AS:		return "save as: ";
	case M_SAVE_CONFIRM:	return T.save_prompt;
	default:		return T.busy ? "… " : "› ";
	}
}

/* Draws the input buffer, laying out its newlines across rows, and
 * leaves the cursor at rl_point. */
static void
draw_input(void)
{
	WINDOW *w = T.inw;
	const char *pr = prompt_text();
	const char *s = T.modal == M_CONFIRM_QUIT || T.modal == M_SAVE_CONFIRM ? "" :
	    (rl_line_buffer ? rl_line_buffer : "");
	int pw = tlines_width(pr, strlen(pr));
	int W = T.cols;
	size_t n = strlen(s), point = (size_t)(rl_point >= 0 ? rl_point : 0);

	werase(w);
	if (point > n)
		point = n;
	/* rows of the buffer and the cursor's row/column */
	int crow = 0, ccol = pw, row = 0, col = pw, nrows = 1;
	for (size_t i = 0; i <= n; ) {
		if (i == point) {
			crow = row;
			ccol = col;
		}
		if (i == n)
			break;
		if (s[i] == '\n') {
			row++;
			nrows++;
			col = pw;
			i++;
			continue;
		}
		unsigned cp;
		size_t k = utf8_decode(s + i, n - i, &cp);
		if (k == 0) {
			col += 1;
			i++;
		} else {
			col += cp < 0x20 || cp == 0x7f ? 2 :
			    sanitize_is_control(cp) ? 1 : tlines_cpwidth(cp);
			i += k;
		}
	}
	int first = crow - T.inrows + 1 > 0 ? crow - T.inrows + 1 : 0;
	if (first > nrows - T.inrows)
		first = nrows - T.inrows > 0 ? nrows - T.inrows : 0;
	if (first > crow)
		first = crow;
	/* horizontal scroll keeps the cursor visible on long rows */
	int hoff = ccol >= W - 1 ? ccol - (W - 1) + W / 3 : 0;

	row = 0;
	size_t i = 0;
	while (row < first && i < n) {
		if (s[i] == '\n')
			row++;
		i++;
	}
	for (int r = 0; r < T.inrows && row < nrows; r++, row++) {
		int off = row == crow ? hoff : 0;
		int c = 0;
		wmove(w, r, 0);
		const char *lead = row == 0 ? pr : (utf8_term() ? "┆ " : ": ");
		int lw = tlines_width(lead, strlen(lead));
		int prp = T.role_pair[R_PROMPT];
		wattr_set(w, T.role_attr[R_PROMPT], 0, &prp);
		if (off < lw)
			waddstr(w, lead);
		c = lw;
		int ip = T.role_pair[R_INPUT];
		wattr_set(w, T.role_attr[R_INPUT], 0, &ip);
		while (i < n && s[i] != '\n') {
			unsigned cp;
			size_t k = utf8_decode(s + i, n - i, &cp);
			int cw;
			char show[8];
			if (k == 0) {
				k = 1;
				cw = 1;
				snprintf(show, sizeof show, "?");
			} else if (cp < 0x20 || cp == 0x7f) {
				cw = 2;
				snprintf(show, sizeof show, "^%c", cp == 0x7f ? '?' : (char)(cp + '@'));
			} else if (sanitize_is_control(cp)) {	/* C1, bidi */
				cw = 1;
				snprintf(show, sizeof show, "?");
			} else {
				cw = tlines_cpwidth(cp);
				memcpy(show, s + i, k);
				show[k] = 0;
			}
			if (c >= off && c - off + cw <= W)
				mvwaddstr(w, r, c - off, show);
			c += cw;
			i += k;
		}
		if (i < n && s[i] == '\n')
			i++;
	}
	if (crow - first >= 0 && crow - first < T.inrows)
		wmove(w, crow - first, ccol - hoff < W ? ccol - hoff : W - 1);
}

static void
draw_overlay(void)
{
	int h = T.rows - T.inrows - 1, w = T.cols;
	struct tline l = { 0 };
	tline_adds(&l, R_TITLE_FOCUS, " ");
	tline_adds(&l, R_TITLE_FOCUS, T.ov_title ? T.ov_title : "");
	tline_adds(&l, R_DIM, T.ov_art >= 0 ? "   q/Esc close · o open · s save · ↑↓ PgUp PgDn" :
	    "   q/Esc close · ↑↓ PgUp PgDn Home End");
	draw_line(T.mainw, 0, 0, w, &l, -1);
	for (int i = 0; i < l.nseg; i++)
		free(l.seg[i].text);
	free(l.seg);
	struct tlines ls;
	const struct tlines *src = &T.ov_lines;
	tlines_init(&ls);
	if (T.ov_png) {
		const char *why;
		struct thumb *t = thumb_get(T.ov_png, w - 2, h - 2, &why);
		if (t)
			thumb_lines(&ls, t, 1, 0);
		else
			tlines_cut(&ls, why ? why : "cannot render", strlen(why ? why : "cannot render"),
			    w, R_ERROR, " ", R_ERROR, 0);
		src = &ls;
	}
	int body = h - 1;
	if (T.ov_top > src->n - body)
		T.ov_top = src->n - body;
	if (T.ov_top < 0)
		T.ov_top = 0;
	for (int r = 0; r < body && T.ov_top + r < src->n; r++)
		draw_line(T.mainw, 1 + r, 0, w, &src->v[T.ov_top + r], -1);
	tlines_free(&ls);
}

static void
windows_make(void)
{
	int mh = T.rows - T.inrows > 0 ? T.rows - T.inrows : 1;
	int iy = T.rows - T.inrows > 0 ? T.rows - T.inrows : 0;

	if (T.mainw)
		delwin(T.mainw);
	if (T.inw)
		delwin(T.inw);
	T.mainw = newwin(mh, T.cols > 0 ? T.cols : 1, 0, 0);
	T.inw = newwin(T.inrows, T.cols > 0 ? T.cols : 1, iy, 0);
	leaveok(T.mainw, TRUE);
	keypad(T.inw, TRUE);
	nodelay(T.inw, TRUE);
}

static void
redraw(void)
{
	T.dirty = 0;
	T.last_draw = now_ms();
	if (LINES != T.rows || COLS != T.cols || input_rows() != T.inrows) {
		/* new geometry: new windows (wresize cannot grow a window
		 * past the screen's edge before it is moved) */
		layout();
		windows_make();
		cblocks_invalidate();
		clearok(curscr, TRUE);
	}
	layout();
	werase(T.mainw);
	if (T.cp)
		colorpair_frame(T.cp);
	for (int p = 0; p < P_NPANES; p++)
		for (int r = 0; r < TAGROWS; r++)
			T.tagmap[p][r] = -1;
	curs_set(T.focus == P_INPUT && !T.overlay ? 1 : 0);
	if (T.rows < 6 || T.cols < 20) {
		draw_text(T.mainw, 0, 0, T.cols, R_TEXT, "terminal too small");
	} else if (T.overlay) {
		draw_overlay();
		draw_status();
	} else {
		if (T.ph[P_CONV])
			draw_conv();
		if (T.ph[P_CELLS])
			draw_cells();
		if (T.ph[P_ARTS])
			draw_arts();
		draw_status();
	}
	wnoutrefresh(T.mainw);
	draw_input();
	wnoutrefresh(T.inw);	/* last: the cursor stays in the input */
	doupdate();
}

void
tui_overlay_open(const char *title)
{
	tlines_free(&T.ov_lines);
	tlines_init(&T.ov_lines);
	free(T.ov_title);
	T.ov_title = sanitize_str(title, strlen(title), 0);
	free(T.ov_png);
	T.ov_png = NULL;
	T.ov_art = -1;
	T.ov_top = 0;
	T.overlay = 1;
	tui_mark();
}

static void
overlay_close(void)
{
	T.overlay = 0;
	tlines_free(&T.ov_lines);
	free(T.ov_png);
	T.ov_png = NULL;
	T.ov_art = -1;
	tui_mark();
}

/* ---- external programs ---- */

static int
in_path(const char *prog)
{
	const char *path = getenv("PATH");
	if (!path)
		return 0;
	char *dup = xstrdup(path), *save = NULL;
	int found = 0;
	for (char *d = strtok_r(dup, ":", &save); d && !found;
	    d = strtok_r(NULL, ":", &save)) {
		char *f = xasprintf("%s/%s", *d ? d : ".", prog);
		found = access(f, X_OK) == 0;
		free(f);
	}
	free(dup);
	return found;
}

/* Leaves curses for a program that needs the terminal. */
static void
screen_suspend(void)
{
	fputs("\033[?2004l", stdout);
	fflush(stdout);
	def_prog_mode();
	endwin();
}

static void
screen_resume(void)
{
	reset_prog_mode();
	fputs("\033[?2004h", stdout);
	fflush(stdout);
	clearok(curscr, TRUE);
	T.rows = -1;	/* force a relayout: the size may have changed */
	tui_mark();
}

/* Runs $VISUAL / $EDITOR (vi) on path with the terminal handed over.
 * Returns the exit status, or -1 when it could not run. */
static int
run_editor(const char *path)
{
	const char *ed = getenv("VISUAL");
	if (!ed || !*ed)
		ed = getenv("EDITOR");
	if (!ed || !*ed)
		ed = "vi";
	char *cmd = xasprintf("%s \"$1\"", ed);
	struct sigaction ign = { .sa_handler = SIG_IGN }, oint, oquit;
	int status = -1;

	screen_suspend();
	sigaction(SIGINT, &ign, &oint);
	sigaction(SIGQUIT, &ign, &oquit);
	pid_t pid = fork();
	if (pid == 0) {
		loop_signal_reset_child();
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		if (T.saved_stderr >= 0)
			dup2(T.saved_stderr, 2);
		execl("/bin/sh", "sh", "-c", cmd, "sh", path, (char *)NULL);
		_exit(127);
	}
	if (pid > 0) {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGQUIT, &oquit, NULL);
	screen_resume();
	free(cmd);
	if (pid < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Starts argv detached (own session, no tty, never waited for). */
static int
spawn_detached(char *const argv[])
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		loop_signal_reset_child();
		setsid();
		if (fork() == 0) {
			int fd = open("/dev/null", O_RDWR);
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
			execvp(argv[0], argv);
			_exit(127);
		}
		_exit(0);
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return 0;
}

/* Pipes text to a clipboard tool. Returns 0 when one took it. */
static int
clipboard_copy(const char *text)
{
	const char *argv[4] = { NULL };
	if (getenv("WAYLAND_DISPLAY") && in_path("wl-copy"))
		argv[0] = "wl-copy";
	else if (getenv("DISPLAY") && in_path("xclip")) {
		argv[0] = "xclip";
		argv[1] = "-selection";
		argv[2] = "clipboard";
	} else if (getenv("DISPLAY") && in_path("xsel")) {
		argv[0] = "xsel";
		argv[1] = "-b";
		argv[2] = "-i";
	} else
		return -1;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		loop_signal_reset_child();
		int fd = open("/dev/null", O_RDWR);
		dup2(p[0], 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[0]);
	if (pid > 0) {
		struct sigaction ign = { .sa_handler = SIG_IGN }, op;
		sigaction(SIGPIPE, &ign, &op);
		write_all(p[1], text, strlen(text));
		sigaction(SIGPIPE, &op, NULL);
	}
	close(p[1]);
	int st = 1;
	if (pid > 0)
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	return pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* The folder for files terp writes for the user in this session. */
static char *
session_dir(void)
{
	if (T.workspace) {
		char *d = xstrdup(T.workspace);
		char *slash = strrchr(d, '/');
		if (slash && slash != d)
			*slash = 0;
		return d;
	}
	char *st = xdg_state_home();
	char *d = xasprintf("%s/terp", st);
	free(st);
	return d;
}

/* Copies src (a regular file) to dst, refusing to overwrite or follow
 * links; a copy cut short is removed. */
static int
copy_file(const char *src, const char *dst, char **err)
{
	struct stat st;
	int in = open(src, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		*err = xasprintf("%s: %s", src, in < 0 ? strerror(errno) :
		    "not a regular file");
		if (in >= 0)
			close(in);
		return -1;
	}
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0644);
	if (out < 0) {
		*err = xasprintf("%s: %s", dst, strerror(errno));
		close(in);
		return -1;
	}
	char b[65536];
	ssize_t n;
	int rc = 0;
	while ((n = read(in, b, sizeof b)) > 0)
		if (write_all(out, b, (size_t)n) < 0) {
			rc = -1;
			break;
		}
	if (n < 0)
		rc = -1;
	if (rc < 0)
		*err = xasprintf("copy to %s failed: %s", dst, strerror(errno));
	close(in);
	if (close(out) < 0 && rc == 0) {
		rc = -1;
		*err = xasprintf("%s: %s", dst, strerror(errno));
	}
	if (rc < 0)
		unlink(dst);
	return rc;
}

/* ---- actions on cells and files ---- */

void
tui_show_err(const char *what, char *err)
{
	char *m = xasprintf("%s: %s", what, err ? err : "failed");
	tui_item_text(IT_ERROR, m);
	tui_flash("%s", m);
	free(m);
	free(err);
}

static void
cell_toggle(int n)
{
	if (n <= 0)
		return;
	if (n >= T.nexp) {
		int nn = n + 64;
		T.expanded = xrealloc(T.expanded, (size_t)nn * sizeof *T.expanded);
		memset(T.expanded + T.nexp, 0, (size_t)(nn - T.nexp) * sizeof *T.expanded);
		T.nexp = nn;
	}
	T.expanded[n] = !T.expanded[n];
	T.v[P_CELLS].follow = 0;
	tui_mark();
}

void
tui_cell_rerun(int n)
{
	char *err = NULL;
	if (agent_rerun(T.agent, n, &err) < 0)
		tui_show_err("rerun", err);
	else
		T.v[P_CELLS].follow = 1;
}

static void
cell_edit(int n)
{
	const struct cell *c = notebook_cell(T.nb, n);
	if (!c)
		return;
	char tmpl[] = "/tmp/terp-cell-XXXXXX.py";
	int fd = mkstemps(tmpl, 3);
	if (fd < 0) {
		tui_flash("cannot create a temporary file: %s", strerror(errno));
		return;
	}
	const char *code = c->code ? c->code : "";
	if (write_all(fd, code, strlen(code)) < 0) {
		close(fd);
		unlink(tmpl);
		tui_flash("cannot write %s", tmpl);
		return;
	}
	close(fd);
	int st = run_editor(tmpl);
	size_t len;
	char *nc = read_file(tmpl, 1024 * 1024, &len);
	unlink(tmpl);
	if (st != 0 || !nc) {
		tui_flash("editor failed (status %d); nothing run", st);
		free(nc);
		return;
	}
	if (strcmp(nc, code) == 0 || len == 0) {
		tui_flash("cell [%d] unchanged; not run", n);
		free(nc);
		return;
	}
	char *err = NULL;
	if (agent_run_cell(T.agent, nc, &err) < 0)
		tui_show_err("run", err);
	else
		T.v[P_CELLS].follow = 1;
	free(nc);
}

static void
cell_copy(int n)
{
	const struct cell *c = notebook_cell(T.nb, n);
	if (!c || !c->code)
		return;
	if (clipboard_copy(c->code) == 0) {
		tui_flash("copied the code of cell [%d] to the clipboard", n);
		return;
	}
	char *dir = session_dir();
	mkdir_p(dir, 0700);
	char *path = xasprintf("%s/cell-%d.py", dir, n);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0 && write_all(fd, c->code, strlen(c->code)) == 0) {
		char *m = xasprintf("no clipboard: the code of cell [%d] is in %s", n, path);
		tui_item_text(IT_NOTICE, m);
		tui_flash("%s", m);
		free(m);
	} else
		tui_flash("cannot write %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(path);
	free(dir);
}

static void
art_open(int i)
{
	if (i < 0 || i >= notebook_nartifacts(T.nb))
		return;
	const struct artifact *a = notebook_artifact(T.nb, i);
	if (!in_path("xdg-open")) {
		tui_flash("xdg-open not found; the file is %s", a->path);
		return;
	}
	char *argv[] = { "xdg-open", a->path, NULL };
	if (spawn_detached(argv) < 0)
		tui_flash("cannot start xdg-open: %s", strerror(errno));
	else
		tui_flash("opening %s", a->name);
}

static void
art_preview(int i)
{
	if (i < 0 || i >= notebook_nartifacts(T.nb))
		return;
	const struct artifact *a = notebook_artifact(T.nb, i);
	char sz[32];
	fmt_bytes(sz, sizeof sz, a->bytes);
	char *title = xasprintf("%s  (%s, cell [%d])", a->name, sz, a->cell);
	tui_overlay_open(title);
	free(title);
	T.ov_art = i;
	if (is_png(a->name)) {
		T.ov_png = xstrdup(a->path);
		return;
	}
	size_t len = 0;
	int fd = open(a->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char *data = NULL;
	if (fd >= 0) {
		data = xmalloc(PREVIEW_MAX + 1);
		ssize_t n;
		while (len < PREVIEW_MAX &&
		    (n = read(fd, data + len, PREVIEW_MAX - len)) > 0)
			len += (size_t)n;
		close(fd);
	}
	if (!data) {
		const char *m = strerror(errno);
		tlines_wrap(&T.ov_lines, m, strlen(m), COLS, R_ERROR, " ", R_ERROR, 0);
		return;
	}
	if (memchr(data, 0, len)) {
		char *m = xasprintf("binary file (%s); o opens it with xdg-open", sz);
		tlines_wrap(&T.ov_lines, m, strlen(m), COLS, R_DIM, " ", R_DIM, 0);
		free(m);
	} else {
		char *s = sanitize_str(data, len,
		    SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL);
		tlines_wrap(&T.ov_lines, s, strlen(s), COLS, R_TEXT, " ", R_TEXT, 0);
		free(s);
		if (a->bytes > PREVIEW_MAX) {
			const char *m = "… (the preview shows the first 256 KiB)";
			tlines_wrap(&T.ov_lines, m, strlen(m), COLS, R_HIDDEN, " ", R_HIDDEN, 0);
		}
	}
	free(data);
}

static void
art_save_ask(int i)
{
	if (i < 0 || i >= notebook_nartifacts(T.nb))
		return;
	T.modal = M_SAVE_AS;
	T.save_art = i;
	T.focus = P_INPUT;
	/* Offered: the host copy's file name, made safe again here (one
	 * component, not hidden); never the name the sandbox gave, which
	 * may hold "../", newlines or escapes. */
	char *name = sanitize_filename(notebook_artifact(T.nb, i)->path, 100);
	rl_replace_line(name, 0);
	free(name);
	rl_point = rl_end;
	tui_mark();
}

static void
art_save_to(const struct artifact *a, const char *name)
{
	char *err = NULL;
	if (copy_file(a->path, name, &err) < 0) {
		tui_flash("%s", err);
		free(err);
	} else
		tui_flash("saved a copy as %s", name);
}

static void
art_save(const char *name)
{
	const struct artifact *a = T.save_art < notebook_nartifacts(T.nb) ?
	    notebook_artifact(T.nb, T.save_art) : NULL;
	if (!a || !*name) {
		tui_flash("not saved");
		return;
	}
	if (strchr(name, '/') != NULL || name[0] == '.') {
		/* outside the working folder, or hidden: ask first */
		char *shown = sanitize_str(name, strlen(name), 0);
		free(T.save_name);
		T.save_name = xstrdup(name);
		snprintf(T.save_prompt, sizeof T.save_prompt,
		    "write \"%.*s%s\" (outside ./ or hidden)? (y/n) ",
		    (int)utf8_complete_prefix(shown, strlen(shown) > 60 ? 60 :
		    strlen(shown)), shown, strlen(shown) > 60 ? "…" : "");
		free(shown);
		T.modal = M_SAVE_CONFIRM;
		tui_mark();
		return;
	}
	art_save_to(a, name);
}

/* ---- readline glue (TUI.md 3.1) ---- */

#ifndef READERR
#define READERR (-2)
#endif

static void
q_push(int c)
{
	size_t next = (T.qt + 1) % sizeof T.q;
	if (next == T.qh)
		return;		/* full: drop (a human cannot type that fast) */
	T.q[T.qt] = (unsigned char)c;
	T.qt = next;
}

static void
q_push_str(const char *s)
{
	while (*s)
		q_push((unsigned char)*s++);
}

static int
q_getc(FILE *f)
{
	(void)f;
	if (T.qh == T.qt)
		return READERR;
	int c = T.q[T.qh];
	T.qh = (T.qh + 1) % sizeof T.q;
	return c;
}

static int
q_avail(void)
{
	return T.qh != T.qt;
}

static void
rl_redisplay_mark(void)
{
	tui_mark();
}

static int
rl_newline_insert(int count, int key)
{
	(void)count;
	(void)key;
	rl_insert_text("\n");
	return 0;
}

static const char *
skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static void
on_line(char *line)
{
	if (!line) {
		/* Ctrl-D on an empty line */
		if (T.modal == M_SAVE_AS)
			T.modal = M_NONE;
		else
			tui_cmd_quit();
		tui_mark();
		return;
	}
	if (T.modal == M_SAVE_AS) {
		T.modal = M_NONE;
		art_save(skip_ws(line));
		free(line);
		return;
	}
	const char *s = skip_ws(line);
	if (*s) {
		HIST_ENTRY *last = history_length > 0 ?
		    history_get(history_base + history_length - 1) : NULL;
		if (!last || strcmp(last->line, line) != 0)
			add_history(line);
	}
	if (*s && tui_cmd_holds(s)) {
		if (T.nheld == HELD_MAX)
			tui_flash("too many lines held; wait for the replay to end");
		else {
			T.held[T.nheld++] = xstrdup(s);
			char *m = xasprintf("held until the replay is over: %s", s);
			tui_item_text(IT_NOTICE, m);
			free(m);
		}
	} else
		tui_cmd_line(s);
	free(line);
	tui_mark();
}

static void
rl_setup(void)
{
	rl_readline_name = "terp";
	rl_catch_signals = 0;
	rl_catch_sigwinch = 0;
	rl_prep_term_function = NULL;
	rl_deprep_term_function = NULL;
	rl_getc_function = q_getc;
	rl_input_available_hook = q_avail;
	rl_redisplay_function = rl_redisplay_mark;
	T.rl_null = fopen("/dev/null", "w");
	rl_outstream = T.rl_null;
	rl_attempted_completion_function = tui_cmd_complete;
	rl_completion_display_matches_hook = tui_cmd_show_matches;
	rl_variable_bind("bell-style", "none");
	rl_variable_bind("enable-bracketed-paste", "off");
	rl_add_funmap_entry("terp-insert-newline", rl_newline_insert);
	rl_bind_keyseq("\\e\\r", rl_newline_insert);
	rl_bind_keyseq("\\e\\n", rl_newline_insert);
	rl_callback_handler_install("", on_line);
	rl_set_screen_size(1, COLS > 0 ? COLS : 80);

	using_history();
	stifle_history(2000);
	read_history(T.history);
}

/* Ctrl-C on the input: drop the edit, as a shell does. */
static void
input_cancel(void)
{
	T.qh = T.qt = 0;
	rl_callback_sigcleanup();
	rl_free_line_state();
	rl_replace_line("", 0);
	rl_point = rl_end = 0;
	rl_callback_handler_remove();
	rl_callback_handler_install("", on_line);
	tui_mark();
}

/* ---- keys and mouse ---- */

static void
focus_set(enum pane p)
{
	T.focus = p;
	if (p != P_INPUT)
		T.last_pane = p;
	tui_mark();
}

static void
focus_cycle(int dir)
{
	int p = ((int)T.focus + dir + P_NPANES) % P_NPANES;
	focus_set((enum pane)p);
}

/* The pane PgUp/PgDn and the wheel act on from the input line. */
static enum pane
scroll_target(void)
{
	if (T.focus != P_INPUT)
		return T.focus;
	return T.compact ? shown_pane() : P_CONV;
}

#define SCROLL_TOP	(INT_MIN / 2)
#define SCROLL_END	(INT_MAX / 2)

static void
pane_scroll(enum pane p, int d)
{
	struct view *v = &T.v[p];
	int h = T.ph[p] > 2 ? T.ph[p] - 1 : 1;
	if (d == SCROLL_END) {
		v->follow = 1;
		if (p == P_CELLS)
			v->sel = notebook_ncells(T.nb);
		if (p == P_ARTS)
			v->sel = notebook_nartifacts(T.nb) - 1;
	} else if (d == SCROLL_TOP) {
		v->follow = 0;
		v->top = 0;
		if (p == P_CELLS)
			v->sel = 1;
		if (p == P_ARTS)
			v->sel = 0;
	} else {
		if (d == 1000)
			d = h - 1;
		if (d == -1000)
			d = -(h - 1);
		if (p == P_ARTS) {
			v->sel += d > 0 ? 1 : -1;
		} else {
			v->top += d;
			v->follow = 0;
			if (p == P_CELLS)
				v->sel_from_top = 1;
		}
	}
	tui_mark();
}

static void
sel_move(enum pane p, int d)
{
	struct view *v = &T.v[p];
	if (p == P_CELLS) {
		int nc = notebook_ncells(T.nb);
		v->sel += d;
		if (v->sel < 1)
			v->sel = 1;
		if (v->sel > nc)
			v->sel = nc;
		v->ensure_sel = 1;
	} else if (p == P_ARTS) {
		v->sel += d;
	} else
		pane_scroll(p, d);
	tui_mark();
}

/* A key when a pane (not the input) has the focus. Returns 0 when the
 * key is not the pane's (it then goes to the input line). */
static int
pane_key(int c)
{
	enum pane p = T.focus;
	int sel = T.v[p].sel;

	switch (c) {
	case KEY_UP: case 'k':		sel_move(p, -1); return 1;
	case KEY_DOWN: case 'j':	sel_move(p, 1); return 1;
	case KEY_PPAGE: case 'b':	pane_scroll(p, -1000); return 1;
	case KEY_NPAGE: case ' ':	pane_scroll(p, 1000); return 1;
	case KEY_HOME: case 'g':	pane_scroll(p, SCROLL_TOP); return 1;
	case KEY_END: case 'G':		pane_scroll(p, SCROLL_END); return 1;
	case 27: case 'i':		focus_set(P_INPUT); return 1;
	case '?':			tui_cmd_help(); return 1;
	case '\r': case '\n': case KEY_ENTER:
		if (p == P_CELLS) {
			cell_toggle(sel);
			T.v[p].ensure_sel = 1;
		} else if (p == P_ARTS)
			art_preview(sel);
		return 1;
	}
	if (p == P_CELLS && sel > 0) {
		switch (c) {
		case 'e': cell_edit(sel); return 1;
		case 'r': tui_cell_rerun(sel); return 1;
		case 'y': cell_copy(sel); return 1;
		}
	}
	if (p == P_ARTS) {
		switch (c) {
		case 'o': art_open(sel); return 1;
		case 's': art_save_ask(sel); return 1;
		}
	}
	return 0;
}

static void
overlay_key(int c)
{
	int h = T.rows - T.inrows - 2;
	switch (c) {
	case KEY_UP: case 'k':		T.ov_top--; break;
	case KEY_DOWN: case 'j':	T.ov_top++; break;
	case KEY_PPAGE: case 'b':	T.ov_top -= h > 1 ? h - 1 : 1; break;
	case KEY_NPAGE: case ' ':	T.ov_top += h > 1 ? h - 1 : 1; break;
	case KEY_HOME: case 'g':	T.ov_top = 0; break;
	case KEY_END: case 'G':		T.ov_top = INT_MAX / 2; break;
	case 'o':
		if (T.ov_art >= 0)
			art_open(T.ov_art);
		break;
	case 's':
		if (T.ov_art >= 0) {
			int a = T.ov_art;
			overlay_close();
			art_save_ask(a);
		}
		break;
	case 'q': case 27: case '?': case KEY_F(1): case '\r': case '\n':
	case KEY_ENTER:
		overlay_close();
		break;
	}
	tui_mark();
}

/* Keys readline binds by their ANSI sequences (so inputrc applies). */
static int
input_translate(int c)
{
	switch (c) {
	case KEY_LEFT:		q_push_str("\033[D"); return 1;
	case KEY_RIGHT:		q_push_str("\033[C"); return 1;
	case KEY_UP:		q_push_str("\033[A"); return 1;
	case KEY_DOWN:		q_push_str("\033[B"); return 1;
	case KEY_HOME:		q_push_str("\033[H"); return 1;
	case KEY_END:		q_push_str("\033[F"); return 1;
	case KEY_DC:		q_push_str("\033[3~"); return 1;
	case KEY_BACKSPACE:	q_push(0x7f); return 1;
	case KEY_ENTER:		q_push('\r'); return 1;
	case KEY_SLEFT:		q_push_str("\033[1;2D"); return 1;
	case KEY_SRIGHT:	q_push_str("\033[1;2C"); return 1;
	}
	if (c >= 0 && c < 256) {
		q_push(c);
		return 1;
	}
	return 0;
}

static void
mouse_event(void)
{
	MEVENT me;
	if (getmouse(&me) != OK)
		return;
	int y = me.y, x = me.x;
	if (T.overlay) {
		if (me.bstate & BUTTON4_PRESSED)
			T.ov_top -= 3;
#if NCURSES_MOUSE_VERSION > 1
		else if (me.bstate & BUTTON5_PRESSED)
			T.ov_top += 3;
#endif
		tui_mark();
		return;
	}
	if (y >= T.rows - T.inrows) {
		if (me.bstate & (BUTTON1_PRESSED | BUTTON1_RELEASED | BUTTON1_CLICKED))
			focus_set(P_INPUT);
		return;
	}
	for (int p = P_CONV; p < P_NPANES; p++) {
		if (!T.ph[p] || y < T.py[p] || y >= T.py[p] + T.ph[p] ||
		    x < T.px[p] || x >= T.px[p] + T.pw[p])
			continue;
		if (me.bstate & BUTTON4_PRESSED) {
			pane_scroll((enum pane)p, -3);
			return;
		}
#if NCURSES_MOUSE_VERSION > 1
		if (me.bstate & BUTTON5_PRESSED) {
			pane_scroll((enum pane)p, 3);
			return;
		}
#endif
		if (!(me.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED)))
			return;
		int row = y - T.py[p] - 1;
		if (row < 0) {
			if (T.compact) {	/* the tab strip */
				int col = 0;
				for (int q = (int)P_CONV; q < (int)P_NPANES; q++) {
					int w = (int)strlen(pane_name[q]) + 2;
					if (x >= col && x < col + w) {
						focus_set((enum pane)q);
						return;
					}
					col += w;
				}
			}
			focus_set((enum pane)p);
			return;
		}
		int tag = row < TAGROWS ? T.tagmap[p][row] : -1;
		if (p == P_CONV && tag > 0) {
			T.v[P_CELLS].sel = tag;
			T.v[P_CELLS].ensure_sel = 1;
			focus_set(P_CELLS);
			return;
		}
		focus_set((enum pane)p);
		if (p == P_CELLS && tag > 0) {
			T.v[p].sel = tag;
			T.v[p].follow = 0;
		} else if (p == P_ARTS && tag >= 0)
			T.v[p].sel = tag;
		return;
	}
}

/* Hands the queued bytes to readline, so that a key that looks at the
 * line (Tab, ?) sees what was typed before it in the same batch. */
static void
input_flush(void)
{
	while (q_avail() && !T.quit)
		rl_callback_read_char();
}

static void
on_key(int c)
{
	if (c < 0x80 || c >= 256)
		input_flush();
	if (c == KEY_RESIZE) {
		tui_mark();
		return;
	}
	if (c == KEY_MOUSE) {
		mouse_event();
		return;
	}
	if (T.modal == M_CONFIRM_QUIT) {
		if (c == 'y' || c == 'Y') {
			agent_cancel(T.agent);
			T.quit = 1;
		}
		T.modal = M_NONE;
		tui_mark();
		return;
	}
	if (T.modal == M_SAVE_CONFIRM) {
		T.modal = M_NONE;
		if ((c == 'y' || c == 'Y') && T.save_art < notebook_nartifacts(T.nb))
			art_save_to(notebook_artifact(T.nb, T.save_art), T.save_name);
		else
			tui_flash("not saved");
		free(T.save_name);
		T.save_name = NULL;
		tui_mark();
		return;
	}
	if (c == 3) {	/* Ctrl-C (raw mode: a byte, not a signal) */
		if (T.agent && agent_busy(T.agent)) {
			agent_cancel(T.agent);
			tui_flash("cancelling…");
		} else if (T.overlay)
			overlay_close();
		else {
			if (T.modal == M_SAVE_AS)
				T.modal = M_NONE;
			input_cancel();
		}
		return;
	}
	if (c == 12) {	/* Ctrl-L */
		clearok(curscr, TRUE);
		tui_mark();
		return;
	}
	if (c == KEY_F(1)) {
		if (T.overlay)
			overlay_close();
		else
			tui_cmd_help();
		return;
	}
	if (T.overlay) {
		overlay_key(c);
		return;
	}
	if (c == KEY_BTAB) {
		focus_cycle(-1);
		return;
	}
	if (c == '\t' && (T.focus != P_INPUT || !rl_line_buffer ||
	    rl_line_buffer[0] != '/')) {
		focus_cycle(1);
		return;
	}
	if (T.focus != P_INPUT) {
		if (pane_key(c))
			return;
		/* typing in a pane goes to the input line */
		if (c < 32 && c != 4 && c != 21 && c != 23)
			return;
		if (c >= 256)
			return;
		focus_set(P_INPUT);
	}
	if (c == KEY_PPAGE || c == KEY_NPAGE) {
		pane_scroll(scroll_target(), c == KEY_PPAGE ? -1000 : 1000);
		return;
	}
	if (c == '?' && rl_end == 0 && T.modal == M_NONE) {
		tui_cmd_help();
		return;
	}
	input_translate(c);
}

/* Bracketed paste: "\e[200~" ... "\e[201~" arrives byte by byte (ncurses
 * does not know the sequence). Pasted newlines become part of the input
 * instead of sending it. */
static const char paste_start[] = "\033[200~", paste_end[] = "\033[201~";

static void
paste_flush_esc(void)
{
	char tmp[8];
	int n = T.nesc;
	memcpy(tmp, T.esc, (size_t)n);
	T.nesc = 0;
	for (int i = 0; i < n; i++) {
		if (T.paste)
			buf_addc(&T.pastebuf, tmp[i] == '\r' ? '\n' : tmp[i]);
		else
			on_key((unsigned char)tmp[i]);
	}
}

static void
feed_key(int c)
{
	const char *want = T.paste ? paste_end : paste_start;
	if (c < 256 && (T.nesc > 0 || c == 27)) {
		if (c == (unsigned char)want[T.nesc]) {
			T.esc[T.nesc++] = (char)c;
			if (T.nesc == 6) {
				T.nesc = 0;
				if (!T.paste) {
					T.paste = 1;
					buf_reset(&T.pastebuf);
				} else {
					T.paste = 0;
					if (T.focus != P_INPUT || T.overlay) {
						overlay_close();
						focus_set(P_INPUT);
					}
					if (T.modal != M_CONFIRM_QUIT &&
					    T.pastebuf.len) {
						char *s = sanitize_str(T.pastebuf.data,
						    T.pastebuf.len, SANITIZE_KEEP_NL |
						    SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL);
						rl_insert_text(s);
						free(s);
					}
					tui_mark();
				}
			}
			return;
		}
		paste_flush_esc();
	}
	if (T.paste) {
		if (c < 256)
			buf_addc(&T.pastebuf, c == '\r' ? '\n' : (char)c);
		return;
	}
	on_key(c);
}

static void
on_tty(struct loop *l, int fd, int revents, void *arg)
{
	(void)l;
	(void)fd;
	(void)arg;
	int c;
	if (revents & (POLLHUP | POLLERR | POLLNVAL)) {
		T.quit = 1;	/* the terminal went away */
		return;
	}
	while ((c = wgetch(T.inw)) != ERR)
		feed_key(c);
	if (T.nesc > 0 && !T.paste)
		paste_flush_esc();	/* a lone Esc or Alt key */
	input_flush();
	tui_mark();
}

static void
on_winch(struct loop *l, int signo, void *arg)
{
	(void)l;
	(void)signo;
	(void)arg;
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 &&
	    ws.ws_col > 0) {
		resizeterm(ws.ws_row, ws.ws_col);
		rl_set_screen_size(1, ws.ws_col);
	}
	T.rows = -1;
	tui_mark();
}

/* A SIGINT from outside (the tty's ^C is a key in raw mode) cancels. */
static void
on_sigint(struct loop *l, int signo, void *arg)
{
	(void)l;
	(void)signo;
	(void)arg;
	if (T.agent && agent_busy(T.agent))
		agent_cancel(T.agent);
}

static void
on_term(struct loop *l, int signo, void *arg)
{
	(void)l;
	(void)signo;
	(void)arg;
	T.quit = 1;
}

/* ---- start and stop ---- */

/* While curses owns the screen, stray stderr (library warnings) goes to
 * a memory file and is re-emitted after endwin (htop's CRT.c does this). */
static void
stderr_redirect(void)
{
	int fd = memfd_create("terp-stderr", MFD_CLOEXEC);
	if (fd < 0)
		return;
	fflush(stderr);
	T.saved_stderr = fcntl(2, F_DUPFD_CLOEXEC, 3);
	if (T.saved_stderr < 0 || dup2(fd, 2) < 0) {
		close(fd);
		return;
	}
	T.err_fd = fd;
}

static void
stderr_restore(void)
{
	if (T.saved_stderr < 0)
		return;
	fflush(stderr);
	dup2(T.saved_stderr, 2);
	close(T.saved_stderr);
	T.saved_stderr = -1;
	if (T.err_fd >= 0) {
		char b[16384];
		off_t size = lseek(T.err_fd, 0, SEEK_END);
		off_t from = size > (off_t)sizeof b ? size - (off_t)sizeof b : 0;
		ssize_t n = pread(T.err_fd, b, sizeof b, from);
		if (n > 0)
			write_all(2, b, (size_t)n);
		close(T.err_fd);
		T.err_fd = -1;
	}
}

static void
screen_end(void)
{
	if (!T.active)
		return;
	T.active = 0;
	fputs("\033[?2004l", stdout);
	fflush(stdout);
	endwin();
	stderr_restore();
}

/* fatal() restores the terminal before printing. */
static void
tui_fatal_hook(void)
{
	screen_end();
}

void
tui_opts_default(struct tui_opts *o)
{
	memset(o, 0, sizeof *o);
	o->mouse = 1;
}

static void
state_free(void)
{
	tui_items_clear();
	free(T.items);
	T.items = NULL;
	T.citems = 0;
	for (int i = 0; i < T.ncb; i++)
		tlines_free(&T.cb[i].lines);
	free(T.cb);
	T.cb = NULL;
	T.ncb = 0;
	free(T.expanded);
	T.expanded = NULL;
	T.nexp = 0;
	thumbs_clear();
	tlines_free(&T.ov_lines);
	free(T.ov_title);
	T.ov_title = NULL;
	free(T.ov_png);
	T.ov_png = NULL;
	free(T.flash);
	T.flash = NULL;
	free(T.save_name);
	T.save_name = NULL;
	free(T.kmsg);
	T.kmsg = NULL;
	free(T.history);
	T.history = NULL;
	buf_free(&T.pastebuf);
	for (int i = 0; i < T.nheld; i++)
		free(T.held[i]);
	T.nheld = 0;
	tui_cmd_free();
}

int
tui_run(struct loop *l, struct agent *a, const struct tui_opts *o, char **err)
{
	/* FIRST, before any other readline call: otherwise readline exports
	 * LINES/COLUMNS and ncurses never sees a resize again (TUI.md 3.2). */
	rl_change_environment = 0;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		*err = xstrdup("the notebook needs a terminal (use -p for a one-shot question)");
		return -1;
	}
	setlocale(LC_ALL, "");
	T.loop = l;
	T.agent = a;
	T.nb = agent_notebook(a);
	T.o = *o;
	if (getenv("NO_COLOR") && *getenv("NO_COLOR"))
		T.o.no_color = 1;
	T.focus = P_INPUT;
	T.last_pane = P_CONV;
	for (int p = 0; p < P_NPANES; p++)
		T.v[p].follow = 1;
	T.v[P_ARTS].follow = 0;
	buf_init(&T.pastebuf, 1024 * 1024);
	if (o->history_path)
		T.history = xstrdup(o->history_path);
	else {
		char *st = xdg_state_home();
		char *dir = xasprintf("%s/terp", st);
		mkdir_p(dir, 0700);
		T.history = xasprintf("%s/history", dir);
		free(dir);
		free(st);
	}

	/* our SIGWINCH handler goes in before curses so ncurses keeps it */
	loop_signal(l, SIGWINCH, on_winch, NULL);
	loop_signal(l, SIGTERM, on_term, NULL);
	loop_signal(l, SIGINT, on_sigint, NULL);
	loop_signal(l, SIGHUP, on_term, NULL);

	stderr_redirect();
	SCREEN *scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		stderr_restore();
		*err = xasprintf("cannot use the terminal (TERM=%s)",
		    getenv("TERM") ? getenv("TERM") : "");
		state_free();
		return -1;
	}
	set_term(scr);
	T.active = 1;
	fatal_set_hook(tui_fatal_hook);
	raw();
	noecho();
	nonl();
	set_escdelay(25);
	char *terr = NULL;
	if (styles_init(&terr) < 0) {
		tui_item_text(IT_ERROR, terr ? terr : "theme: cannot load");
		free(terr);
	}
	T.rows = LINES;
	T.cols = COLS;
	T.inrows = 1;
	layout();
	windows_make();
	if (T.o.mouse) {
		mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON4_PRESSED
#if NCURSES_MOUSE_VERSION > 1
		    | BUTTON5_PRESSED
#endif
		    , NULL);
		mouseinterval(0);
	}
	fputs("\033[?2004h", stdout);	/* bracketed paste */
	fflush(stdout);
	rl_setup();
	loop_watch(l, STDIN_FILENO, POLLIN, on_tty, NULL);
	T.rows = -1;
	tui_mark();

	while (!T.quit && !loop_stopped(l)) {
		tui_cmd_held_run();
		int64_t now = now_ms();
		/* the idle countdown ticks by the second */
		if (T.ticking && now - T.last_draw >= 250)
			T.dirty = 1;
		/* the clock on the status bar and the spinner tick while busy */
		if ((T.busy || (T.flash && now >= T.flash_until && now < T.flash_until + 200)) &&
		    now - T.last_draw >= 100)
			T.dirty = 1;
		int64_t wait = 1000;
		if (T.dirty) {
			int64_t since = now - T.last_draw;
			if (since >= FRAME_MS) {
				redraw();
				wait = T.busy ? 100 : 1000;
			} else
				wait = FRAME_MS - since;
		} else if (T.busy)
			wait = 100;
		if ((T.ticking || T.nheld > 0) && wait > 250)
			wait = 250;
		loop_run_once(l, wait);
	}

	loop_unwatch(l, STDIN_FILENO);
	rl_callback_handler_remove();
	if (T.history && write_history(T.history) != 0) {
		/* not fatal: the session still ends cleanly */
	}
	delwin(T.mainw);
	delwin(T.inw);
	T.mainw = T.inw = NULL;
	screen_end();
	delscreen(scr);
	colorpair_free(T.cp);
	T.cp = NULL;
	fatal_set_hook(NULL);
	if (T.rl_null) {
		fclose(T.rl_null);
		T.rl_null = NULL;
	}
	rl_outstream = NULL;
	state_free();
	T.quit = 0;
	T.agent = NULL;
	T.nb = NULL;
	return 0;
}
