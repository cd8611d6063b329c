/* tui_draw: the notebook UI's screen: the layout (three panes, or one
 * with a tab strip on a small terminal), each pane drawn from the
 * conversation items and the notebook, the status bar (its line comes
 * from tui_status.c), the input line and the full-screen overlay (its
 * picture in pixels is tui_preview.c's).
 * Draws only what the state says; one call of tui_draw per frame
 * composes the whole screen and updates it once. */
#include "tui_draw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <readline/readline.h>

#include "terp/buf.h"
#include "terp/sanitize.h"
#include "terp/session.h"
#include "terp/util.h"

#include "tui_cells.h"
#include "tui_cmd.h"
#include "tui_data.h"
#include "tui_items.h"
#include "tui_pics.h"
#include "tui_preview.h"
#include "tui_search.h"
#include "tui_style.h"
#include "tui_status.h"
#include "tui_thumbs.h"

static const char *pane_name[P_NPANES] = { "input", "conversation", "cells",
	"files" };


/* Input rows the current line needs (it may hold newlines). */
static int
input_rows(struct tui *t)
{
	int rows = 1;
	if (rl_line_buffer)
		for (const char *p = rl_line_buffer; *p; p++)
			rows += *p == '\n';
	if (rows > INPUT_ROWS_MAX)
		rows = INPUT_ROWS_MAX;
	if (rows > t->lay.rows / 4)
		rows = t->lay.rows / 4 > 0 ? t->lay.rows / 4 : 1;
	return rows;
}

/* Which pane a compact screen shows. */
enum pane
tui_draw_shown_pane(const struct tui *t)
{
	if (t->focus != P_INPUT)
		return t->focus;
	return t->last_pane != P_INPUT ? t->last_pane : P_CONV;
}

/* The conversation's rows (title included) in a split of h rows: 2/5,
 * or, once the model answers (or all is idle), as many as the last
 * question and its answer need, leaving the cells pane a quarter (at
 * least 6 rows); the cells pane keeps its share while it has the focus.
 * When the newest cell drew a chart, the conversation gives up the
 * rows its last question and answer do not need (down to 5), so the
 * chart is big enough to read. */
static int
conv_rows(struct tui *t, int h, int w)
{
	int base = h * 2 / 5 > 5 ? h * 2 / 5 : 5;
	int cells_min = h / 4 > 6 ? h / 4 : 6;
	int most = h - cells_min;
	int nc = t->nb ? notebook_ncells(t->nb) : 0;
	int chart = nc > 0 && tui_cells_charts(t, nc) > 0 &&
	    !tui_cells_expanded(t, nc);

	if (most <= base ||
	    (t->st.busy && t->st.phase != PH_ANSWERING && t->st.phase != PH_CODE))
		return base;
	if (t->focus == P_CELLS && !chart)
		return base;
	int q = t->conv.nitems - 1, need = 1;
	if (t->conv.nitems == 0) {	/* the empty notebook's words */
		struct tlines ls;
		tui_tlines_init(&ls);
		tui_data_empty(t, &ls, w);
		need += ls.n;
		tui_tlines_free(&ls);
	}
	while (q > 0 && t->conv.items[q].kind != IT_USER)
		q--;
	for (int i = q; i >= 0 && i < t->conv.nitems && need <= most; i++)
		need += tui_item_lines(t, &t->conv.items[i], w)->n;
	int lo = chart ? 5 : base;
	if (t->focus == P_CELLS)	/* chart: the smaller of the two */
		return need < lo ? lo : need < base ? need : base;
	return need < lo ? lo : need > most ? most : need;
}

/* The kernel prints pandas values for the user at the cells pane's
 * width less the value's "  → " (the model keeps its 80 columns). */
static void
tell_width(struct tui *t, int pane_w)
{
	int w = pane_w - 4;

	if (t->session != NULL && w != t->lay.told_w) {
		t->lay.told_w = w;
		session_set_width(t->session, w);
	}
}

static void
layout(struct tui *t)
{
	t->lay.rows = LINES;
	t->lay.cols = COLS;
	t->lay.inrows = input_rows(t);
	int h = t->lay.rows - 1 - t->lay.inrows;		/* above the status bar */
	memset(t->lay.ph, 0, sizeof t->lay.ph);
	memset(t->lay.pw, 0, sizeof t->lay.pw);
	t->lay.compact = h < 14 || t->lay.cols < 60;
	if (t->lay.compact || t->lay.zoom) {
		enum pane p = tui_draw_shown_pane(t);
		t->lay.py[p] = 0;
		t->lay.px[p] = 0;
		t->lay.ph[p] = h;
		t->lay.pw[p] = t->lay.cols;
		tell_width(t, t->lay.cols);
		return;
	}
	/* the files pane grows with a wide terminal (its thumbnails too) */
	int artw = t->lay.files_hidden ? 0 : t->lay.cols >= 110 ?
	    (t->lay.cols * 27 / 100 < 60 ? t->lay.cols * 27 / 100 : 60) :
	    t->lay.cols >= 80 ? 24 : 20;
	if (artw && artw < 30 && t->lay.cols >= 110)
		artw = 30;
	int leftw = artw ? t->lay.cols - artw - 1 : t->lay.cols;
	int convh = conv_rows(t, h, leftw);
	t->lay.py[P_CONV] = 0;
	t->lay.px[P_CONV] = 0;
	t->lay.ph[P_CONV] = convh;
	t->lay.pw[P_CONV] = leftw;
	t->lay.py[P_CELLS] = convh;
	t->lay.px[P_CELLS] = 0;
	t->lay.ph[P_CELLS] = h - convh;
	t->lay.pw[P_CELLS] = leftw;
	t->lay.py[P_ARTS] = 0;
	t->lay.px[P_ARTS] = leftw + 1;
	t->lay.ph[P_ARTS] = artw ? h : 0;
	t->lay.pw[P_ARTS] = artw;
	tell_width(t, leftw);
}

/* Draws n bytes of text at the cursor in g's style, the matches of the
 * search pattern hl (when not NULL) in the selection's. */
static void
draw_piece(struct tui *t, WINDOW *win, const struct tseg *g, int over,
    const char *s, size_t n, const char *hl)
{
	size_t off, len;

	while (hl && n > 0 && tui_search_find(hl, s, n, &off, &len)) {
		tui_style_seg(t, win, g, over);
		tui_style_put(win, s, off);
		tui_style_role(t, win, R_SEL);
		tui_style_put(win, s + off, len);
		s += off + len;
		n -= off + len;
	}
	tui_style_seg(t, win, g, over);
	tui_style_put(win, s, n);
}

/* Draws l at row y from column x, at most w columns; a line cut short
 * ends in "…". over >= 0 styles the whole row (selection) and pads it;
 * matches of the search (t->lay.hl) are highlighted. */
static void
draw_line(struct tui *t, WINDOW *win, int y, int x, int w,
    const struct tline *l, int over)
{
	int col = 0, room = w, cut = 0;

	if (l && w > 1 && tui_tline_width(l) > w) {
		room = w - 1;	/* the last column shows the cut */
		cut = 1;
	}
	wmove(win, y, x);
	const struct tseg *last = NULL;
	for (int i = 0; l && i < l->nseg && col < room; i++) {
		const struct tseg *g = &l->seg[i];
		int used;
		size_t len = strlen(g->text);
		size_t k = tui_tlines_fit(g->text, len, room - col, &used);
		if (k == 0) {
			if (len > 0)
				break;	/* a wide glyph at the edge */
			continue;
		}
		draw_piece(t, win, g, over, g->text, k, t->lay.hl);
		last = g;
		col += used;
		if (k < len)
			break;
	}
	if (cut) {
		if (last)
			tui_style_seg(t, win, last, over);
		else
			tui_style_role(t, win, over >= 0 ? over : R_DIM);
		for (; col < room; col++)
			waddch(win, ' ');
		waddstr(win, tui_style_utf8() ? "…" : ">");
		col++;
	}
	if (over >= 0 && col < w) {
		tui_style_seg(t, win, NULL, over);
		for (; col < w; col++)
			waddch(win, ' ');
	}
	wattr_set(win, A_NORMAL, 0, &(int){0});
}

static void
draw_text(struct tui *t, WINDOW *win, int y, int x, int w, int role,
    const char *s)
{
	struct tline l = { 0 };
	tui_tline_adds(&l, role, s);
	draw_line(t, win, y, x, w, &l, -1);
	tui_tline_free(&l);
}

/* A compact screen's tab for pane q: its name and, for cells and files,
 * how many there are. */
static void
tab_label(const struct tui *t, int q, char *b, size_t n)
{
	if (q == P_CELLS)
		snprintf(b, n, "cells %d", t->nb ? notebook_ncells(t->nb) : 0);
	else if (q == P_ARTS)
		snprintf(b, n, "files %d", t->nb ? notebook_nartifacts(t->nb) : 0);
	else
		snprintf(b, n, "%s", pane_name[q]);
}

/* A pane's title row: "─ cells 3  End: follow ───"; on a compact screen
 * a tab strip of every pane (each with its count) instead of the name
 * and the count. */
static void
draw_title(struct tui *t, enum pane p, const char *count, const char *hint)
{
	int y = t->lay.py[p], x = t->lay.px[p], w = t->lay.pw[p];
	int focus = t->focus == p;
	struct tline l = { 0 };
	char extra[128];

	if (t->lay.compact) {
		/* a tab strip: every pane, the shown one highlighted */
		for (int q = (int)P_CONV; q < (int)P_NPANES; q++) {
			int shown = q == (int)p;
			int role = !shown ? R_TITLE : focus ? R_TITLE_FOCUS :
			    R_CELL_HDR;
			char lab[48];
			tab_label(t, q, lab, sizeof lab);
			tui_tline_adds(&l, role, shown ? "[" : " ");
			tui_tline_adds(&l, role, lab);
			tui_tline_adds(&l, role, shown ? "]" : " ");
		}
		snprintf(extra, sizeof extra, "%s", hint ? hint : "");
	} else {
		tui_tline_adds(&l, R_BORDER, "─ ");
		tui_tline_adds(&l, focus ? R_TITLE_FOCUS : R_TITLE, pane_name[p]);
		tui_tline_adds(&l, R_BORDER, " ");
		snprintf(extra, sizeof extra, "%s%s%s", count ? count : "",
		    count && *count && hint && *hint ? "  " : "", hint ? hint : "");
	}
	if (*extra) {
		tui_tline_adds(&l, R_DIM, extra);
		tui_tline_adds(&l, R_BORDER, " ");
	}
	int used = tui_tline_width(&l);
	struct buf fill;
	buf_init(&fill, 4096);
	for (int i = used; i < w; i++)
		buf_adds(&fill, tui_style_utf8() ? "─" : "-");
	if (fill.len)
		tui_tline_add(&l, R_BORDER, fill.data, fill.len);
	buf_free(&fill);
	draw_line(t, t->lay.mainw, y, x, w, &l, -1);
	tui_tline_free(&l);
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
draw_conv(struct tui *t)
{
	enum pane p = P_CONV;
	int h = t->lay.ph[p] - 1, w = t->lay.pw[p], y0 = t->lay.py[p] + 1;
	if (h <= 0 || w <= 0)
		return;
	int total = 0, qline = 0, aline = 0;
	for (int i = 0; i < t->conv.nitems; i++) {
		if (i == t->conv.anchor)
			aline = total;
		if (t->conv.items[i].kind == IT_USER && i <= t->conv.anchor)
			qline = total;
		total += tui_item_lines(t, &t->conv.items[i], w)->n;
	}
	struct view *v = &t->v[p];
	if (t->conv.anchor >= 0 && v->follow && total - qline > h &&
	    total - aline > h) {
		/* an answer taller than the pane: show its start, not its end */
		v->top = aline;
		v->follow = 0;
		t->conv.pin_top = aline;
	}
	t->conv.anchor = -1;
	view_clamp(v, total, h);
	char extra[64] = "";
	if (!v->follow && total > h)
		snprintf(extra, sizeof extra, "%d/%d  End: follow", v->top + h, total);
	draw_title(t, p, NULL, extra);
	if (t->conv.nitems == 0) {
		/* how to start, the data, example questions */
		struct tlines ls;
		tui_tlines_init(&ls);
		tui_data_empty(t, &ls, w);
		for (int i = 0; i < ls.n && i < h; i++)
			draw_line(t, t->lay.mainw, y0 + i, 0, w, &ls.v[i], -1);
		tui_tlines_free(&ls);
		return;
	}
	int line = 0, row = 0;
	t->lay.hl = t->srch.pat && t->srch.pane == p ? t->srch.pat : NULL;
	for (int i = 0; i < t->conv.nitems && row < h; i++) {
		const struct tlines *ls = tui_item_lines(t, &t->conv.items[i], w);
		if (line + ls->n <= v->top) {
			line += ls->n;
			continue;
		}
		for (int j = 0; j < ls->n && row < h; j++, line++) {
			if (line < v->top)
				continue;
			draw_line(t, t->lay.mainw, y0 + row, 0, w, &ls->v[j], -1);
			if (row < TAGROWS)
				t->lay.tagmap[p][row] = ls->v[j].tag;
			row++;
		}
	}
	t->lay.hl = NULL;
}

/* Line offset of each cell's header in the cell pane; returns the total. */
static int
cells_total(struct tui *t, int w, int *start, int ncells)
{
	int total = 0;
	for (int n = 1; n <= ncells; n++) {
		if (start)
			start[n] = total;
		total += tui_cells_span(t, notebook_cell(t->nb, n), w);
	}
	if (start)
		start[ncells + 1] = total;
	return total;
}

/* Keeps the cell pane's selection in range and, after paging, on the
 * cell at the top; scrolls so that a newly selected cell shows. start:
 * each cell's first line (cells_total). */
static void
cells_select(struct view *v, const int *start, int nc, int h)
{
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
}

/* A cell's header row, marked when selected. */
static void
draw_cell_header(struct tui *t, int y, int x, int w, const struct cell *c,
    int sel)
{
	struct tline hl = { 0 };

	tui_tline_adds(&hl, R_LINK, sel ? (tui_style_utf8() ? "▸" : ">") : " ");
	tui_cells_header(t, &hl, c);
	draw_line(t, t->lay.mainw, y, x, w, &hl, sel && t->focus == P_CELLS ?
	    R_SEL : -1);
	tui_tline_free(&hl);
}

static void
draw_cells(struct tui *t)
{
	enum pane p = P_CELLS;
	int h = t->lay.ph[p] - 1, w = t->lay.pw[p], y0 = t->lay.py[p] + 1, x0 = t->lay.px[p];
	if (h <= 0 || w <= 0)
		return;
	int nc = notebook_ncells(t->nb);
	struct view *v = &t->v[p];
	t->cells.fold_rows = h;		/* collapsed outputs fold to the pane */
	int *start = xcalloc((size_t)nc + 2, sizeof *start);
	int total = cells_total(t, w, start, nc);
	/* the cells the model still writes (or that wait to run), last */
	const struct tlines *pend = tui_cells_pending(t, w);
	int cells_end = total;
	total += pend->n;
	cells_select(v, start, nc, h);
	view_clamp(v, total, h);
	char count[32];
	snprintf(count, sizeof count, "%d", nc);
	draw_title(t, p, count, !v->follow && total > h ? "End: follow" : NULL);
	if (nc == 0 && pend->n == 0)
		draw_text(t, t->lay.mainw, y0, x0, w, R_DIM,
		    "  No cells yet. The model's code appears here; /py CODE runs your own.");
	int row = 0;
	t->lay.hl = t->srch.pat && t->srch.pane == p ? t->srch.pat : NULL;
	for (int n = 1; n <= nc && row < h; n++) {
		if (start[n + 1] <= v->top)
			continue;
		const struct cell *c = notebook_cell(t->nb, n);
		const struct tlines *body = tui_cells_body(t, c, w);
		for (int j = start[n]; j < start[n + 1] && row < h; j++) {
			if (j < v->top)
				continue;
			int k = j - start[n];
			if (k == 0)
				draw_cell_header(t, y0 + row, x0, w, c,
				    n == v->sel);
			else if (k - 1 < body->n) {
				draw_line(t, t->lay.mainw, y0 + row, x0, w,
				    &body->v[k - 1], -1);
				tui_pics_seen(t, &body->v[k - 1], y0 + row, x0);
			}
			if (row < TAGROWS)
				t->lay.tagmap[p][row] = n;
			row++;
		}
	}
	for (int j = cells_end > v->top ? cells_end : v->top;
	    j < total && row < h; j++, row++)
		draw_line(t, t->lay.mainw, y0 + row, x0, w,
		    &pend->v[j - cells_end], -1);
	t->lay.hl = NULL;
	free(start);
}

/* The file pane's lines: per file a name row, a detail row, and a
 * thumbnail for a chart, tagged with the file's index; the thumbnails
 * as wide as the pane and sharing its h rows (a chart alone gets them
 * all). Returns the selected file's first line. */
static int
arts_lines(struct tui *t, struct tlines *ls, int w, int h, int sel)
{
	int na = notebook_nartifacts(t->nb), selrow = 0, npng = 0;

	for (int i = 0; i < na; i++)
		npng += tui_thumbs_is_png(notebook_artifact(t->nb, i)->name);
	int trows = npng ? (h - 2 * na) / npng : 0;
	if (trows > h - 3)
		trows = h - 3;
	if (trows < 6)
		trows = 6;

	for (int i = 0; i < na; i++) {
		const struct artifact *a = notebook_artifact(t->nb, i);
		if (i == sel)
			selrow = ls->n;
		char *nm = sanitize_str(a->name, strlen(a->name), 0);
		tui_tlines_cut(ls, nm, strlen(nm), w, R_TEXT, i == sel ? "▸ " : "  ",
		    R_LINK, i);
		free(nm);
		char sz[32], det[64];
		fmt_bytes(sz, sizeof sz, a->bytes);
		snprintf(det, sizeof det, "%s · cell [%d]", sz, a->cell);
		tui_tlines_cut(ls, det, strlen(det), w, R_DIM, "  ", R_DIM, i);
		if (tui_thumbs_is_png(a->name) && w > 6) {
			const char *why;
			struct thumb *th = tui_thumbs_get(t, a->path, w - 2, trows,
			    &why);
			if (th)
				tui_thumbs_lines(ls, th, 1, i);
		}
	}
	return selrow;
}

static void
draw_arts(struct tui *t)
{
	enum pane p = P_ARTS;
	int h = t->lay.ph[p] - 1, w = t->lay.pw[p], y0 = t->lay.py[p] + 1, x0 = t->lay.px[p];
	if (h <= 0 || w <= 0)
		return;
	int na = notebook_nartifacts(t->nb);
	char count[32];
	snprintf(count, sizeof count, "%d", na);
	draw_title(t, p, count, NULL);
	if (!t->lay.compact)	/* the separator from the left panes */
		for (int y = 0; y < t->lay.ph[p]; y++) {
			tui_style_role(t, t->lay.mainw, R_BORDER);
			mvwaddstr(t->lay.mainw, y, x0 - 1, tui_style_utf8() ? "│" : "|");
		}
	if (na == 0) {
		draw_text(t, t->lay.mainw, y0, x0, w, R_DIM, " Charts and files");
		draw_text(t, t->lay.mainw, y0 + 1, x0, w, R_DIM, " the code saves to");
		draw_text(t, t->lay.mainw, y0 + 2, x0, w, R_DIM, " out/ appear here.");
		return;
	}
	struct view *v = &t->v[p];
	if (v->sel >= na)
		v->sel = na - 1;
	if (v->sel < 0)
		v->sel = 0;
	struct tlines ls;
	tui_tlines_init(&ls);
	int selrow = arts_lines(t, &ls, w, h, v->sel);
	if (selrow < v->top)
		v->top = selrow;
	if (selrow + 2 > v->top + h)
		v->top = selrow + 2 - h;
	if (v->top > ls.n - h)
		v->top = ls.n - h > 0 ? ls.n - h : 0;
	for (int r = 0; r < h && v->top + r < ls.n; r++) {
		const struct tline *l = &ls.v[v->top + r];
		int selected = l->tag == v->sel && v->top + r == selrow &&
		    t->focus == p;
		draw_line(t, t->lay.mainw, y0 + r, x0, w, l, selected ? R_SEL : -1);
		if (r < TAGROWS)
			t->lay.tagmap[p][r] = l->tag;
	}
	tui_tlines_free(&ls);
}

static void
draw_status(struct tui *t)
{
	int y = t->lay.rows - t->lay.inrows - 1;
	struct tline l = { 0 };

	tui_status_line(t, &l);
	draw_line(t, t->lay.mainw, y, 0, t->lay.cols, &l, -1);
	/* pad the bar to the full width */
	int col = tui_tline_width(&l);
	tui_style_role(t, t->lay.mainw, R_STATUS);
	for (; col < t->lay.cols; col++)
		mvwaddch(t->lay.mainw, y, col, ' ');
	wattr_set(t->lay.mainw, A_NORMAL, 0, &(int){0});
	tui_tline_free(&l);
}

static const char *
prompt_text(struct tui *t)
{
	switch (t->in.modal) {
	case M_CONFIRM_QUIT:	return tui_cmd_quit_prompt(t);
	case M_SAVE_AS:		return "save as: ";
	case M_SAVE_CONFIRM:
	case M_DROP_CONFIRM:
	case M_OPEN_CONFIRM:	return t->in.save_prompt;
	case M_SEARCH:		return "/";
	case M_INPUT:		return t->in.ask_prompt;
	case M_APPROVE:		return "run? y / e edit / n skip (tell the model) / a always ";
	default:
		/* Ctrl-R: readline's "(reverse-i-search)`pat': " */
		if (RL_ISSTATE(RL_STATE_ISEARCH) && rl_display_prompt && *rl_display_prompt)
			return rl_display_prompt;
		return t->st.busy ? "… " : "› ";
	}
}

/* The next character of the input line at s (n bytes left) as shown:
 * returns the bytes it takes, its width in *cw and its text in show
 * (^X for a control character, ? for an invalid byte, C1 or bidi). */
static size_t
input_glyph(const char *s, size_t n, char show[8], int *cw)
{
	unsigned cp;
	size_t k = utf8_decode(s, n, &cp);

	if (k == 0) {
		*cw = 1;
		snprintf(show, 8, "?");
		return 1;
	}
	if (cp < 0x20 || cp == 0x7f) {
		*cw = 2;
		snprintf(show, 8, "^%c", cp == 0x7f ? '?' : (char)(cp + '@'));
	} else if (sanitize_is_control(cp)) {	/* C1, bidi */
		*cw = 1;
		snprintf(show, 8, "?");
	} else {
		*cw = tui_tlines_cpwidth(cp);
		memcpy(show, s, k);
		show[k] = 0;
	}
	return k;
}

/* The rows of the input s[0..n) (it may hold newlines) and the row and
 * column of the cursor at byte point; the first row starts after a
 * prompt pw columns wide, as do the others after their lead. */
static void
input_measure(const char *s, size_t n, size_t point, int pw, int *crow,
    int *ccol, int *nrows)
{
	int row = 0, col = pw, cw;
	char show[8];

	*crow = 0;
	*ccol = pw;
	*nrows = 1;
	for (size_t i = 0; i <= n; ) {
		if (i == point) {
			*crow = row;
			*ccol = col;
		}
		if (i == n)
			break;
		if (s[i] == '\n') {
			row++;
			(*nrows)++;
			col = pw;
			i++;
			continue;
		}
		i += input_glyph(s + i, n - i, show, &cw);
		col += cw;
	}
}

/* Draws input row r: lead, then s from *i up to the next newline (which
 * it consumes), shifted left by off columns. */
static void
input_row(struct tui *t, int r, const char *lead, const char *s, size_t n,
    size_t *i, int off)
{
	WINDOW *w = t->lay.inw;
	int lw = tui_tlines_width(lead, strlen(lead)), c = lw, cw;
	char show[8];

	wmove(w, r, 0);
	tui_style_role(t, w, R_PROMPT);
	if (off < lw)
		tui_style_put(w, lead, strlen(lead));
	tui_style_role(t, w, R_INPUT);
	while (*i < n && s[*i] != '\n') {
		size_t k = input_glyph(s + *i, n - *i, show, &cw);
		if (t->in.modal == M_INPUT && t->in.ask_password)
			strcpy(show, cw > 1 ? "**" : "*");	/* getpass */
		if (c >= off && c - off + cw <= t->lay.cols) {
			wmove(w, r, c - off);
			tui_style_put(w, show, strlen(show));
		}
		c += cw;
		*i += k;
	}
	if (*i < n && s[*i] == '\n')
		(*i)++;
}

/* Draws the input buffer, laying out its newlines across rows, and
 * leaves the cursor at rl_point. */
static void
draw_input(struct tui *t)
{
	const char *pr = prompt_text(t);
	const char *s = t->in.modal == M_CONFIRM_QUIT ||
	    t->in.modal == M_SAVE_CONFIRM || t->in.modal == M_OPEN_CONFIRM ||
	    t->in.modal == M_APPROVE || t->in.modal == M_DROP_CONFIRM ? "" :
	    (rl_line_buffer ? rl_line_buffer : "");
	int W = t->lay.cols, rows = t->lay.inrows, crow, ccol, nrows;
	size_t n = strlen(s), point = (size_t)(rl_point >= 0 ? rl_point : 0);

	werase(t->lay.inw);
	if (point > n)
		point = n;
	input_measure(s, n, point, tui_tlines_width(pr, strlen(pr)), &crow, &ccol,
	    &nrows);
	int first = crow - rows + 1 > 0 ? crow - rows + 1 : 0;
	if (first > nrows - rows)
		first = nrows - rows > 0 ? nrows - rows : 0;
	if (first > crow)
		first = crow;
	/* horizontal scroll keeps the cursor visible on long rows */
	int hoff = ccol >= W - 1 ? ccol - (W - 1) + W / 3 : 0;

	int row = 0;
	size_t i = 0;
	while (row < first && i < n) {
		if (s[i] == '\n')
			row++;
		i++;
	}
	for (int r = 0; r < rows && row < nrows; r++, row++)
		input_row(t, r, row == 0 ? pr : (tui_style_utf8() ? "┆ " : ": "),
		    s, n, &i, row == crow ? hoff : 0);
	if (crow - first >= 0 && crow - first < rows)
		wmove(t->lay.inw, crow - first, ccol - hoff < W ? ccol - hoff : W - 1);
}

/* The widest line of the overlay, in columns. */
static int
overlay_width(const struct tui *t)
{
	int most = 0;

	for (int i = 0; i < t->ov.lines.n; i++) {
		int w = tui_tline_width(&t->ov.lines.v[i]);
		if (w > most)
			most = w;
	}
	return most;
}

/* l without its first left columns, into out (empty before). A wide
 * character cut in two becomes a space. */
static void
tline_shift(const struct tline *l, int left, struct tline *out)
{
	int skip = left;

	for (int i = 0; i < l->nseg; i++) {
		const struct tseg *g = &l->seg[i];
		size_t len = strlen(g->text), k = 0;
		int pad = 0;
		if (skip > 0) {
			int used;
			k = tui_tlines_fit(g->text, len, skip, &used);
			skip -= used;
			if (k == len)
				continue;
			if (skip > 0) {	/* a wide glyph across the edge */
				k += tui_tlines_fit(g->text + k, len - k, 2, NULL);
				pad = 1;
				skip = 0;
			}
		}
		if (pad)
			tui_tline_add(out, g->role, " ", 1);
		if (g->fg >= 0 || g->bg >= 0)
			tui_tline_add_color(out, g->text + k, len - k, g->fg, g->bg);
		else
			tui_tline_add(out, g->role, g->text + k, len - k);
	}
}

static void
draw_overlay(struct tui *t)
{
	int h = t->lay.rows - t->lay.inrows - 1, w = t->lay.cols;
	struct tline l = { 0 };
	tui_tline_adds(&l, R_TITLE_FOCUS, " ");
	tui_tline_adds(&l, R_TITLE_FOCUS, t->ov.title ? t->ov.title : "");
	if (t->ov.hscroll) {	/* where we are first: the hints may be cut */
		char where[64];
		snprintf(where, sizeof where, " · col %d of %d", t->ov.left + 1,
		    overlay_width(t));
		tui_tline_adds(&l, R_DIM, where);
	}
	tui_tline_adds(&l, R_DIM, t->ov.art >= 0 ?
	    "   q/Esc close · o open · s save · ↑↓ PgUp PgDn" : t->ov.hscroll ?
	    "   q back · ←→ h l · ↑↓ PgUp PgDn Home End" :
	    "   q/Esc close · ↑↓ PgUp PgDn Home End");
	draw_line(t, t->lay.mainw, 0, 0, w, &l, -1);
	tui_tline_free(&l);
	struct tlines ls;
	const struct tlines *src = &t->ov.lines;
	tui_tlines_init(&ls);
	if (t->ov.png && tui_preview_in_pixels(t)) {
		/* the body stays blank: tui_preview_pixels draws over it */
		src = &ls;
	} else if (t->ov.png) {
		const char *why;
		struct thumb *th = tui_thumbs_get(t, t->ov.png, w - 2, h - 2, &why);
		if (th)
			tui_thumbs_lines(&ls, th, 1, 0);
		else {
			const char *m = why ? why : t->gfx.mode == TUI_GFX_OFF ?
			    "pictures are off (--images off); o opens the file" :
			    "cannot render";
			tui_tlines_cut(&ls, m, strlen(m), w, why ? R_ERROR : R_DIM, " ",
			    R_ERROR, 0);
		}
		src = &ls;
	}
	int body = h - 1;
	if (t->ov.top > src->n - body)
		t->ov.top = src->n - body;
	if (t->ov.top < 0)
		t->ov.top = 0;
	if (t->ov.hscroll) {
		int most = overlay_width(t) - w + 1;
		if (t->ov.left > most)
			t->ov.left = most;
		if (t->ov.left < 0)
			t->ov.left = 0;
	}
	for (int r = 0; r < body && t->ov.top + r < src->n; r++) {
		const struct tline *ln = &src->v[t->ov.top + r];
		struct tline sh = { 0 };
		if (t->ov.hscroll && t->ov.left > 0) {
			tline_shift(ln, t->ov.left, &sh);
			ln = &sh;
		}
		draw_line(t, t->lay.mainw, 1 + r, 0, w, ln, -1);
		tui_tline_free(&sh);
	}
	tui_tlines_free(&ls);
}

static void
windows_make(struct tui *t)
{
	int mh = t->lay.rows - t->lay.inrows > 0 ? t->lay.rows - t->lay.inrows : 1;
	int iy = t->lay.rows - t->lay.inrows > 0 ? t->lay.rows - t->lay.inrows : 0;

	if (t->lay.mainw)
		delwin(t->lay.mainw);
	if (t->lay.inw)
		delwin(t->lay.inw);
	t->lay.mainw = newwin(mh, t->lay.cols > 0 ? t->lay.cols : 1, 0, 0);
	t->lay.inw = newwin(t->lay.inrows, t->lay.cols > 0 ? t->lay.cols : 1, iy, 0);
	leaveok(t->lay.mainw, TRUE);
	keypad(t->lay.inw, TRUE);
	nodelay(t->lay.inw, TRUE);
}

void
tui_draw(struct tui *t)
{
	t->dirty = 0;
	t->last_draw = now_ms();
	if (LINES != t->lay.rows || COLS != t->lay.cols ||
	    input_rows(t) != t->lay.inrows) {
		/* new geometry: new windows (wresize cannot grow a window
		 * past the screen's edge before it is moved) */
		layout(t);
		windows_make(t);
		tui_cells_invalidate(t);
		clearok(curscr, TRUE);
	}
	layout(t);
	werase(t->lay.mainw);
	tui_style_frame(t);
	tui_pics_begin(t);
	for (int p = 0; p < P_NPANES; p++)
		for (int r = 0; r < TAGROWS; r++)
			t->lay.tagmap[p][r] = -1;
	curs_set(t->focus == P_INPUT && !t->ov.on ? 1 : 0);
	if (t->lay.rows < 6 || t->lay.cols < 20) {
		draw_text(t, t->lay.mainw, 0, 0, t->lay.cols, R_TEXT, "terminal too small");
	} else if (t->ov.on) {
		draw_overlay(t);
		draw_status(t);
	} else {
		if (t->lay.ph[P_CONV])
			draw_conv(t);
		if (t->lay.ph[P_CELLS])
			draw_cells(t);
		if (t->lay.ph[P_ARTS])
			draw_arts(t);
		draw_status(t);
	}
	wnoutrefresh(t->lay.mainw);
	draw_input(t);
	wnoutrefresh(t->lay.inw);	/* last: the cursor stays in the input */
	if (is_cleared(curscr)) {	/* a full repaint wipes the pixels */
		free(t->ov.shown);
		t->ov.shown = NULL;
		tui_pics_lost(t, 0);
	}
	tui_pics_before_update(t);
	doupdate();
	tui_preview_pixels(t);
	tui_pics_after_update(t);
}


void
tui_overlay_close(struct tui *t)
{
	t->ov.on = 0;
	tui_preview_pixels_gone(t);
	tui_tlines_free(&t->ov.lines);
	free(t->ov.png);
	t->ov.png = NULL;
	t->ov.art = -1;
	tui_mark(t);
}

void
tui_draw_start(struct tui *t)
{
	t->lay.rows = LINES;
	t->lay.cols = COLS;
	t->lay.inrows = 1;
	layout(t);
	windows_make(t);
}

void
tui_draw_end(struct tui *t)
{
	tui_pics_free(t);
	delwin(t->lay.mainw);
	delwin(t->lay.inw);
	t->lay.mainw = t->lay.inw = NULL;
}

int
tui_draw_tab_at(const struct tui *t, int x)
{
	int col = 0;

	if (!t->lay.compact)
		return -1;
	for (int q = (int)P_CONV; q < (int)P_NPANES; q++) {
		char lab[48];
		tab_label(t, q, lab, sizeof lab);
		int w = (int)strlen(lab) + 2;
		if (x >= col && x < col + w)
			return q;
		col += w;
	}
	return -1;
}

void
tui_overlay_free(struct tui *t)
{
	tui_overlay_close(t);
	free(t->ov.title);
	t->ov.title = NULL;
}
