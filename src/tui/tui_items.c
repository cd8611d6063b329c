/* tui_items: the conversation pane's model: the items (questions,
 * answers as they stream, links to cells, notices, errors), their text
 * sanitized as it arrives, and their wrapped lines cached by version
 * and width; plus the status bar's transient message. */
#include "tui_items.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/sanitize.h"
#include "terp/tui_mdlite.h"
#include "terp/tui_span.h"
#include "terp/util.h"

#include "tui_cells.h"
#include "tui_tracestyle.h"

/* Frees what an item owns. */
static void
item_free(struct item *it)
{
	buf_free(&it->text);
	tui_tlines_free(&it->lines);
	for (int i = 0; i < it->nmarks; i++)
		free(it->marks[i].text);
	free(it->marks);
	it->marks = NULL;
	it->nmarks = 0;
}

struct item *
tui_item_new(struct tui *t, enum item_kind k)
{
	size_t sz = sizeof *t->conv.items;

	if (t->conv.nitems == ITEMS_MAX) {
		item_free(&t->conv.items[0]);
		memmove(t->conv.items, t->conv.items + 1,
		    (size_t)(t->conv.nitems - 1) * sz);
		t->conv.nitems--;
	}
	if (t->conv.nitems == t->conv.citems) {
		t->conv.citems = t->conv.citems ? t->conv.citems * 2 : 64;
		t->conv.items = xrealloc(t->conv.items, (size_t)t->conv.citems * sz);
	}
	struct item *it = &t->conv.items[t->conv.nitems++];
	memset(it, 0, sizeof *it);
	it->kind = k;
	buf_init(&it->text, ITEM_TEXT_MAX);
	tui_tlines_init(&it->lines);
	it->version = 1;
	tui_mark(t);
	return it;
}

/* Appends raw text (from the model, the sandbox or the user) sanitized. */
void
tui_item_add(struct tui *t, struct item *it, const char *s, size_t n)
{
	sanitize_append(&it->text, s, n,
	    SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL, NULL);
	it->version++;
	tui_mark(t);
}

struct item *
tui_item_text(struct tui *t, enum item_kind k, const char *s)
{
	struct item *it = tui_item_new(t, k);
	tui_item_add(t, it, s, strlen(s));
	return it;
}

void
tui_items_clear(struct tui *t)
{
	for (int i = 0; i < t->conv.nitems; i++)
		item_free(&t->conv.items[i]);
	t->conv.nitems = 0;
	t->conv.anchor = -1;
	t->v[P_CONV].top = 0;
	t->v[P_CONV].follow = 1;
	tui_mark(t);
}


struct item *
tui_items_answer(struct tui *t)
{
	if (t->conv.nitems > 0) {
		struct item *it = &t->conv.items[t->conv.nitems - 1];
		if (it->kind == IT_ANSWER && !it->closed)
			return it;
	}
	return tui_item_new(t, IT_ANSWER);
}

void
tui_items_answer_close(struct tui *t)
{
	if (t->conv.nitems > 0 && t->conv.items[t->conv.nitems - 1].kind == IT_ANSWER)
		t->conv.items[t->conv.nitems - 1].closed = 1;
}

int
tui_items_user_scrolled(const struct tui *t)
{
	const struct view *v = &t->v[P_CONV];

	return !v->follow && !(t->conv.pin_top >= 0 && v->top == t->conv.pin_top);
}

void
tui_items_follow_newest(struct tui *t)
{
	t->conv.anchor = -1;
	if (!tui_items_user_scrolled(t))
		t->v[P_CONV].follow = 1;
	t->conv.pin_top = -1;
	tui_mark(t);
}

void
tui_items_anchor_answer(struct tui *t)
{
	for (int i = t->conv.nitems - 1; i >= 0; i--) {
		if (t->conv.items[i].kind == IT_USER)
			return;
		if (t->conv.items[i].kind == IT_ANSWER) {
			t->conv.anchor = i;
			tui_mark(t);
			return;
		}
	}
}

/* ------------------------------------------------------------ pending cells */

/* The pending cell of part n, found among the last items, or NULL. */
static struct item *
pending_find(struct tui *t, int n)
{
	for (int i = t->conv.nitems - 1; i >= 0 && i >= t->conv.nitems - 50; i--)
		if (t->conv.items[i].kind == IT_PENDING && t->conv.items[i].cell == n &&
		    !t->conv.items[i].closed)
			return &t->conv.items[i];
	return NULL;
}

void
tui_items_pending_code(struct tui *t, int n, const char *code, size_t len)
{
	struct item *it = pending_find(t, n);

	if (it == NULL) {
		tui_items_answer_close(t);
		it = tui_item_new(t, IT_PENDING);
		it->cell = n;
	}
	/* The code only grows within a call, so only its new end is
	 * copied; shorter means the request started over. */
	if (len < it->text.len)
		buf_reset(&it->text);
	if (len > PENDING_MAX)
		len = PENDING_MAX;
	if (len > it->text.len)
		(void)buf_add(&it->text, code + it->text.len, len - it->text.len);
	it->version++;
	tui_mark(t);
}

void
tui_items_pending_claim(struct tui *t)
{
	for (int i = 0; i < t->conv.nitems; i++)
		if (t->conv.items[i].kind == IT_PENDING && !t->conv.items[i].closed) {
			t->conv.items[i].closed = 1;
			return;
		}
}

int
tui_items_pending_ran(struct tui *t, int n)
{
	for (int i = t->conv.nitems - 1; i >= 0 && i >= t->conv.nitems - 50; i--) {
		struct item *it = &t->conv.items[i];
		if (it->kind == IT_PENDING && it->closed) {
			buf_reset(&it->text);
			it->kind = IT_CELL;
			it->cell = n;
			it->closed = 0;
			it->version++;
			tui_mark(t);
			return 1;
		}
	}
	return 0;
}

/* The pending cell last claimed, or NULL. */
static struct item *
pending_claimed(struct tui *t)
{
	for (int i = t->conv.nitems - 1; i >= 0 && i >= t->conv.nitems - 50; i--)
		if (t->conv.items[i].kind == IT_PENDING && t->conv.items[i].closed)
			return &t->conv.items[i];
	return NULL;
}

void
tui_items_pending_show(struct tui *t, const char *code, size_t len)
{
	struct item *it = pending_claimed(t);

	if (it == NULL) {
		tui_items_answer_close(t);
		it = tui_item_new(t, IT_PENDING);
		it->cell = -1;
		it->closed = 1;
	}
	buf_reset(&it->text);
	(void)buf_add(&it->text, code, len < PENDING_MAX ? len : PENDING_MAX);
	it->version++;
	t->v[P_CONV].follow = 1;
	tui_mark(t);
}

void
tui_items_pending_skipped(struct tui *t)
{
	struct item *it = pending_claimed(t);
	static const char msg[] = "the model's cell did not run: you skipped it "
	    "(the model is told)";

	if (it == NULL)
		return;
	buf_reset(&it->text);
	it->kind = IT_NOTICE;
	tui_item_add(t, it, msg, strlen(msg));
}

void
tui_items_pending_drop(struct tui *t)
{
	int w = 0;

	for (int i = 0; i < t->conv.nitems; i++) {
		if (t->conv.items[i].kind == IT_PENDING) {
			item_free(&t->conv.items[i]);
			continue;
		}
		if (w != i)
			t->conv.items[w] = t->conv.items[i];
		w++;
	}
	if (w != t->conv.nitems) {
		t->conv.nitems = w;
		t->conv.anchor = -1;
		tui_mark(t);
	}
}

/* A cell the model is still writing: a header, then its code so far,
 * highlighted as the cell will show it. */
static void
item_pending_lines(struct tlines *ls, const char *s, size_t n, int w,
    int closed)
{
	struct tline *l = tui_tlines_add(ls, 0);
	tui_tline_adds(l, R_RUNNING, closed ? "  ▸ the model's cell, not run yet" :
	    n >= PENDING_MAX ? "  ▸ the model writes a cell (its first 256 KiB shown)" :
	    "  ▸ the model writes a cell…");
	if (n > 0)
		tui_cells_code(ls, s, w, 1, 0);
}

/* Whether the cell's item is already in the conversation. */
int
tui_items_has_cell(struct tui *t, int n)
{
	for (int i = t->conv.nitems - 1; i >= 0 && i >= t->conv.nitems - 50; i--)
		if (t->conv.items[i].kind == IT_CELL && t->conv.items[i].cell == n)
			return 1;
	return 0;
}

/* The model's reasoning: one dimmed line saying how long it is, or,
 * unfolded (r in the conversation), the text itself, dimmed. */
static void
item_reasoning_lines(struct tui *t, struct item *it, const char *s, size_t n,
    int ww)
{
	char head[96];
	int lines = 1;

	while (n > 0 && s[n - 1] == '\n')
		n--;
	for (size_t i = 0; i < n; i++)
		lines += s[i] == '\n';
	if (!t->conv.show_reasoning) {
		snprintf(head, sizeof head, "▸ reasoning, %d line%s (r shows it)",
		    lines, lines == 1 ? "" : "s");
		tui_tlines_wrap(&it->lines, head, strlen(head), ww, R_DIM, "  ",
		    R_DIM, 0);
		return;
	}
	tui_tlines_wrap(&it->lines, "▾ reasoning (r folds it)",
	    strlen("▾ reasoning (r folds it)"), ww, R_DIM, "  ", R_DIM, 0);
	tui_tlines_wrap(&it->lines, s, n, ww, R_DIM, "  │ ", R_DIM, 0);
}

struct item *
tui_items_reasoning(struct tui *t)
{
	if (t->conv.nitems > 0) {
		struct item *it = &t->conv.items[t->conv.nitems - 1];
		if (it->kind == IT_REASONING)
			return it;
	}
	return tui_item_new(t, IT_REASONING);
}

void
tui_items_toggle_reasoning(struct tui *t)
{
	t->conv.show_reasoning = !t->conv.show_reasoning;
	for (int i = 0; i < t->conv.nitems; i++)
		if (t->conv.items[i].kind == IT_REASONING)
			t->conv.items[i].version++;
	tui_mark(t);
}

/* The wrapped lines of one conversation item (cached by version, width). */
const struct tlines *
tui_item_lines(struct tui *t, struct item *it, int w)
{
	if (it->kind != IT_CELL && it->cver == it->version && it->cw == w)
		return &it->lines;
	tui_tlines_free(&it->lines);
	tui_tlines_init(&it->lines);
	const char *s = buf_str(&it->text);
	size_t n = it->text.len;
	/* wrapped text keeps a column free at the right: it never touches
	 * the files pane's border */
	int ww = w > 12 ? w - 1 : w;
	switch (it->kind) {
	case IT_USER:
		tui_tlines_add(&it->lines, 0);
		tui_tlines_wrap(&it->lines, s, n, ww, R_USER, "› ", R_USER_MARK, 0);
		break;
	case IT_ANSWER: {
		while (n > 0 && s[n - 1] == '\n')
			n--;
		struct span_doc d;
		tui_span_doc_init(&d);
		tui_mdlite_render(&d, s, n, ww - 2 > 10 ? ww - 2 : 10);
		tui_trace_style(&d, it);
		tui_tlines_spans(&it->lines, &d, -1, "  ", R_ASSIST, R_THEME, 0);
		tui_span_doc_free(&d);
		break;
	}
	case IT_CELL:
		/* the user's own cell is a block of its own, as a question */
		if (tui_cells_by_user(t, it->cell))
			tui_tlines_add(&it->lines, 0);
		tui_cells_link(t, tui_tlines_add(&it->lines, it->cell), it->cell);
		break;
	case IT_NOTICE:
		tui_tlines_wrap(&it->lines, s, n, ww, R_NOTICE, "  · ", R_NOTICE, 0);
		break;
	case IT_ERROR:
		tui_tlines_wrap(&it->lines, s, n, ww, R_ERROR, "  ✗ ", R_ERROR, 0);
		break;
	case IT_INFO:
		while (n > 0 && s[n - 1] == '\n')
			n--;
		tui_tlines_wrap(&it->lines, s, n, ww, R_TEXT, "  ", R_TEXT, 0);
		break;
	case IT_REASONING:
		item_reasoning_lines(t, it, s, n, ww);
		break;
	case IT_PENDING:
		item_pending_lines(&it->lines, s, n, ww, it->closed);
		break;
	}
	it->cver = it->version;
	it->cw = w;
	return &it->lines;
}

void
tui_show_err(struct tui *t, const char *what, char *err)
{
	char *m = xasprintf("%s: %s", what, err ? err : "failed");
	tui_item_text(t, IT_ERROR, m);
	tui_flash(t, "%s", m);
	free(m);
	free(err);
}

void
tui_items_free(struct tui *t)
{
	tui_items_clear(t);
	free(t->conv.items);
	t->conv.items = NULL;
	t->conv.citems = 0;
	free(t->st.flash);
	t->st.flash = NULL;
}
