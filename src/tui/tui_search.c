/* tui_search: `/` in the conversation or the cell pane, as in less:
 * the pattern is typed on the input line; the view moves to the first
 * match from the top of the pane, n and N go to the next and previous
 * one (round the end), and every match is highlighted while the pane
 * is drawn (tui_draw). In the cell pane a collapsed cell whose hidden
 * lines hold a match is expanded on the way, so the search covers the
 * cells' full code and outputs. A pattern without capitals ignores
 * case (less -i, vim's smartcase). */
#include "tui_search.h"

#include <stdlib.h>
#include <string.h>

#include <readline/readline.h>

#include "terp/buf.h"
#include "terp/util.h"

#include "tui_cells.h"
#include "tui_items.h"

/* An offset past any cell's last line. */
#define SEARCH_END	(1 << 28)

static int
ascii_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 'a' - 'A' : c;
}

int
tui_search_find(const char *pat, const char *s, size_t n, size_t *off,
    size_t *len)
{
	size_t m = strlen(pat);
	int fold = 1;

	for (const char *p = pat; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			fold = 0;
	if (m == 0 || m > n)
		return 0;
	for (size_t i = 0; i + m <= n; i++) {
		size_t j = 0;
		while (j < m && (fold ? ascii_lower((unsigned char)s[i + j]) ==
		    ascii_lower((unsigned char)pat[j]) : s[i + j] == pat[j]))
			j++;
		if (j == m) {
			*off = i;
			*len = m;
			return 1;
		}
	}
	return 0;
}

static int
line_has(const char *pat, const struct tline *l)
{
	size_t off, len;

	for (int i = 0; i < l->nseg; i++)
		if (tui_search_find(pat, l->seg[i].text, strlen(l->seg[i].text),
		    &off, &len))
			return 1;
	return 0;
}

static int
text_has(const char *pat, const char *s)
{
	size_t off, len;

	return s && tui_search_find(pat, s, strlen(s), &off, &len);
}

/* Whether any of the cell's text, shown or folded away, matches. */
static int
cell_has(const char *pat, const struct cell *c)
{
	int hit = text_has(pat, c->code) || text_has(pat, c->value) ||
	    text_has(pat, c->ename) || text_has(pat, c->evalue) ||
	    text_has(pat, c->traceback) || text_has(pat, c->reason);

	for (int st = 0; st < 2 && !hit; st++) {
		size_t n, off, len;
		char *o = cell_output(c, st, &n);
		hit = tui_search_find(pat, o, n, &off, &len);
		free(o);
	}
	return hit;
}

/* ---- the conversation: items' lines, one after the other ---- */

static int
conv_total(struct tui *t, int w)
{
	int total = 0;

	for (int i = 0; i < t->conv.nitems; i++)
		total += tui_item_lines(t, &t->conv.items[i], w)->n;
	return total;
}

/* The first line after (dir 1) or before (dir -1) line `from`, round
 * the end, that matches; -1 when none does. */
static int
conv_next(struct tui *t, int from, int dir, int w)
{
	int total = conv_total(t, w);
	struct tline **at;

	if (total == 0)
		return -1;
	at = xcalloc((size_t)total, sizeof *at);
	for (int i = 0, k = 0; i < t->conv.nitems; i++) {
		const struct tlines *ls = tui_item_lines(t, &t->conv.items[i], w);
		for (int j = 0; j < ls->n; j++)
			at[k++] = &ls->v[j];
	}
	int found = -1;
	for (int step = 1; step <= total && found < 0; step++) {
		int i = ((from + dir * step) % total + total) % total;
		if (line_has(t->srch.pat, at[i]))
			found = i;
	}
	free(at);
	return found;
}

/* ---- the cell pane: per cell a header, its body and a blank line ---- */

/* The line of cell n's block (0 the header) that matches first from
 * offset `from` on in direction dir (inside the block), or -1. */
static int
cell_match(struct tui *t, int n, int from, int dir, int w)
{
	const struct cell *c = notebook_cell(t->nb, n);
	const struct tlines *body = tui_cells_body(t, c, w);
	int last = body->n + 1;

	if (from > last)
		from = last;
	for (int k = from; k >= 0 && k <= last; k += dir) {
		if (k == 0) {
			struct tline h = { 0 };
			tui_cells_header(t, &h, c);
			int hit = line_has(t->srch.pat, &h);
			tui_tline_free(&h);
			if (hit)
				return k;
		} else if (k <= body->n && line_has(t->srch.pat, &body->v[k - 1]))
			return k;
	}
	return -1;
}

static int
cells_start(struct tui *t, int upto, int w)
{
	int line = 0;

	for (int n = 1; n < upto; n++)
		line += tui_cells_span(t, notebook_cell(t->nb, n), w);
	return line;
}

/* The next match from line `from` in direction dir (round the end):
 * its line, its cell in *cell; -1 when none. */
static int
cells_next(struct tui *t, int from, int dir, int w, int *cell)
{
	int nc = notebook_ncells(t->nb), n = 1, line = 0;

	if (nc == 0)
		return -1;
	/* the cell that holds line `from`, and the offset in it */
	if (from < 0) {
		n = dir > 0 ? 1 : nc;
		from = dir > 0 ? -1 : SEARCH_END;
	} else {
		for (n = 1; n <= nc; n++) {
			int span = tui_cells_span(t, notebook_cell(t->nb, n), w);
			if (from < line + span)
				break;
			line += span;
		}
		if (n > nc) {
			n = nc;
			from = SEARCH_END;
		} else
			from -= line;
	}
	for (int step = 0; step <= nc; step++) {
		int k = ((n - 1 + dir * step) % nc + nc) % nc + 1;
		/* the first cell from where the last match was; then each
		 * whole, the first last again */
		int whole = step > 0 || from < 0 || from >= SEARCH_END;
		int off = !whole ? from + dir : dir > 0 ? 0 : SEARCH_END;
		int m = off < 0 ? -1 : cell_match(t, k, off, dir, w);
		if (m < 0 && whole && !tui_cells_expanded(t, k) &&
		    cell_has(t->srch.pat, notebook_cell(t->nb, k))) {
			/* the match is folded away: show the whole cell */
			tui_cells_toggle(t, k);
			m = cell_match(t, k, off, dir, w);
		}
		if (m >= 0) {
			*cell = k;
			return cells_start(t, k, w) + m;
		}
	}
	return -1;
}

/* ---- the count: "match 2 of 7", as less and vim say it ---- */

/* The conversation's matching lines: how many, and in *idx how many of
 * them are at or above line. */
static int
conv_count(struct tui *t, int w, int line, int *idx)
{
	int total = 0, k = 0;

	*idx = 0;
	for (int i = 0; i < t->conv.nitems; i++) {
		const struct tlines *ls = tui_item_lines(t, &t->conv.items[i], w);
		for (int j = 0; j < ls->n; j++, k++)
			if (line_has(t->srch.pat, &ls->v[j])) {
				total++;
				*idx += k <= line;
			}
	}
	return total;
}

/* The cells with a match (shown or folded away): how many, and in
 * *idx how many of them up to cell. */
static int
cells_count(struct tui *t, int cell, int *idx)
{
	int nc = notebook_ncells(t->nb), total = 0;

	*idx = 0;
	for (int n = 1; n <= nc; n++)
		if (cell_has(t->srch.pat, notebook_cell(t->nb, n))) {
			total++;
			*idx += n <= cell;
		}
	return total;
}

/* Flashes where the match at line (cell) is among all, after why
 * (NULL, or that the search went round). */
static void
search_tell(struct tui *t, int line, int cell, int w, const char *why)
{
	int idx, total;

	if (t->srch.pane == P_CONV) {
		total = conv_count(t, w, line, &idx);
		tui_flash(t, "%s%smatch %d of %d", why ? why : "", why ? " · " : "",
		    idx, total);
	} else {
		total = cells_count(t, cell, &idx);
		tui_flash(t, "%s%scell [%d]: %d of %d cells with a match", why ? why : "",
		    why ? " · " : "", cell, idx, total);
	}
}

/* ---- the search ---- */

/* Moves the pane's view to the next match in direction dir from `from`
 * (-1: from the view's top). */
static void
search_go(struct tui *t, int from, int dir)
{
	enum pane p = t->srch.pane;
	struct view *v = &t->v[p];
	int w = t->lay.pw[p] > 0 ? t->lay.pw[p] : t->lay.cols;
	int h = t->lay.ph[p] > 2 ? t->lay.ph[p] - 1 : 1;
	int cell = 0, line;

	if (from < 0)
		from = v->top - 1;
	if (p == P_CONV)
		line = conv_next(t, from, dir, w);
	else
		line = cells_next(t, from < 0 && dir > 0 ? -1 : from, dir, w,
		    &cell);
	if (line < 0) {
		tui_flash(t, "pattern not found: %s", t->srch.pat);
		return;
	}
	search_tell(t, line, cell, w, t->srch.line >= 0 && (dir > 0 ?
	    line <= t->srch.line : line >= t->srch.line) ? dir > 0 ?
	    "search went round the end" : "search went round the start" : NULL);
	t->srch.line = line;
	/* the match a third of the way down, as less puts it near the top */
	if (line < v->top || line >= v->top + h)
		v->top = line - h / 3 > 0 ? line - h / 3 : 0;
	v->follow = 0;
	if (p == P_CELLS) {
		v->sel = cell;
		v->ensure_sel = 0;
		v->sel_from_top = 0;
	}
	tui_mark(t);
}

void
tui_search_begin(struct tui *t)
{
	if (t->focus != P_CONV && t->focus != P_CELLS) {
		tui_flash(t, "/ searches the conversation and the cells");
		return;
	}
	t->srch.pane = t->focus;
	free(t->in.search_saved);
	t->in.search_saved = xstrdup(rl_line_buffer ? rl_line_buffer : "");
	t->in.search_point = rl_point;
	rl_replace_line("", 0);
	rl_point = rl_end = 0;
	t->in.modal = M_SEARCH;
	t->focus = P_INPUT;
	tui_mark(t);
}

/* The input line as it was before the prompt; the focus back on the
 * pane searched. */
static void
prompt_end(struct tui *t)
{
	t->in.modal = M_NONE;
	rl_replace_line(t->in.search_saved ? t->in.search_saved : "", 0);
	rl_point = t->in.search_point <= rl_end ? t->in.search_point : rl_end;
	free(t->in.search_saved);
	t->in.search_saved = NULL;
	t->focus = t->srch.pane;
	t->last_pane = t->srch.pane;
	tui_mark(t);
}

void
tui_search_set(struct tui *t, const char *pat)
{
	prompt_end(t);
	if (!*pat) {		/* an empty pattern repeats the last, as in less */
		if (t->srch.pat)
			search_go(t, t->srch.line, 1);
		return;
	}
	free(t->srch.pat);
	t->srch.pat = xstrdup(pat);
	t->srch.line = -1;
	search_go(t, -1, 1);
}

void
tui_search_cancel(struct tui *t)
{
	prompt_end(t);
}

void
tui_search_next(struct tui *t, int dir)
{
	if (t->srch.pat)
		search_go(t, t->srch.line, dir);
}

void
tui_search_end(struct tui *t)
{
	free(t->srch.pat);
	t->srch.pat = NULL;
	t->srch.line = -1;
	tui_mark(t);
}

int
tui_search_active(const struct tui *t, enum pane p)
{
	return t->srch.pat != NULL && t->srch.pane == p;
}

void
tui_search_free(struct tui *t)
{
	tui_search_end(t);
	free(t->in.search_saved);
	t->in.search_saved = NULL;
}
