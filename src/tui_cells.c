/* tui_cells: what the cell pane shows of each cell: a header line
 * ("[3] model · ok · 0.42s") and a body (highlighted code, output, the
 * value, the error, files and chart thumbnails), collapsed to a few
 * lines unless the user expanded the cell. Bodies are cached per cell
 * until the cell or the width changes. Also the conversation's line
 * that links a model turn to its cell. */
#include "tui_cells.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/netlog.h"
#include "terp/sanitize.h"
#include "terp/tui_pyhl.h"
#include "terp/tui_span.h"
#include "terp/util.h"

#include "tui_style.h"
#include "tui_thumbs.h"

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
		tui_tlines_wrap(ls, text, len, w, role, prefix, R_BORDER, tag);
		return;
	}
	size_t nl = 1;
	for (const char *p = text; (p = memchr(p, '\n', len - (size_t)(p - text)));
	    p++)
		nl++;
	if (nl <= (size_t)(head + tail + 1)) {
		tui_tlines_cut(ls, text, len, w, role, prefix, R_BORDER, tag);
		return;
	}
	/* the head lines, the marker, the tail lines */
	const char *p = text, *end = text + len;
	for (int i = 0; i < head; i++) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		tui_tlines_cut(ls, p, (size_t)(e - p), w, role, prefix, R_BORDER, tag);
		p = e + 1;
	}
	char msg[96];
	snprintf(msg, sizeof msg, "… %zu lines hidden (Enter on the cell shows all) …",
	    nl - (size_t)head - (size_t)tail);
	tui_tlines_cut(ls, msg, strlen(msg), w, R_HIDDEN, prefix, R_BORDER, tag);
	const char *q = end;
	for (int i = 0; i < tail; i++) {
		q--;
		while (q > text && q[-1] != '\n')
			q--;
	}
	tui_tlines_cut(ls, q, (size_t)(end - q), w, role, prefix, R_BORDER, tag);
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
cell_expanded(struct tui *t, int n)
{
	return n > 0 && n < t->cells.nexp && t->cells.expanded[n];
}

static int
cell_nart(struct tui *t, const struct cell *c)
{
	int k = 0, na = notebook_nartifacts(t->nb);
	for (int i = 0; i < na; i++)
		if (notebook_artifact(t->nb, i)->cell == c->n)
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
	tui_span_doc_init(&d);
	tui_pyhl_highlight(&d, s, len, expanded ? w - 4 : 0, THEME_CELL_CODE);
	int show = expanded || d.n <= CODE_SHOW + 1 ? -1 : CODE_SHOW;
	tui_tlines_spans(ls, &d, show, "  │ ", R_BORDER, R_THEME, tag);
	if (show >= 0) {
		char msg[64];
		snprintf(msg, sizeof msg, "… %zu more lines", d.n - (size_t)show);
		tui_tlines_cut(ls, msg, strlen(msg), w, R_HIDDEN, "  │ ", R_BORDER, tag);
	}
	tui_span_doc_free(&d);
	free(s);
}

/* The files a cell wrote: a name line each, charts with a thumbnail. */
static void
cell_files(struct tui *t, struct tlines *ls, const struct cell *c, int w,
    int ex)
{
	int na = notebook_nartifacts(t->nb), tag = c->n;

	for (int i = 0; i < na; i++) {
		const struct artifact *a = notebook_artifact(t->nb, i);
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
		if (!tui_thumbs_is_png(a->name))
			continue;
		const char *why;
		int tc = w - 4 < 64 ? w - 4 : 64;
		struct thumb *th = tui_thumbs_get(t, a->path, ex ? w - 4 : tc,
		    ex ? 40 : 14, &why);
		if (th)
			tui_thumbs_lines(ls, th, 4, tag);
		else if (why)
			tui_tlines_cut(ls, why, strlen(why), w, R_DIM, "    ",
			    R_BORDER, tag);
	}
}

/* The cell's egress on one line: "⇄ host ✓ 2 MiB ↓ 3 KiB ↑ · evil ✗
 * not allowed", in the failure colour when something was refused. */
static void
cell_net(struct tui *t, struct tlines *ls, const struct cell *c, int w)
{
	size_t n, bad = 0;
	const struct net_attempt *v = notebook_nets(t->nb, &n, NULL);
	char *s;

	for (size_t i = 0; i < n; i++)
		bad += v[i].cell == c->n && v[i].verdict != NETLOG_ALLOWED;
	s = netlog_summary(v, n, c->n, tui_style_utf8() ? NETLOG_UTF8 : NETLOG_ASCII);
	if (s != NULL)
		add_sanitized(ls, s, strlen(s), w, bad ? R_FAIL : R_DIM,
		    tui_style_utf8() ? "  \xe2\x87\x84 " : "  net ", 0, 2, 2, c->n);
	free(s);
}

/* Everything of a cell below its header line. */
static void
cell_body(struct tui *t, struct tlines *ls, const struct cell *c, int w)
{
	int ex = cell_expanded(t, c->n), tag = c->n;
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
		tui_tlines_cut(ls, m, strlen(m), w, R_FAIL, "  ! ", R_BORDER, tag);
	}
	cell_files(t, ls, c, w, ex);
	cell_net(t, ls, c, w);
}

static struct cblock *
cell_block(struct tui *t, const struct cell *c, int w)
{
	if (c->n >= t->cells.ncb) {
		int nn = c->n + 32;
		size_t sz = sizeof *t->cells.cb;
		t->cells.cb = xrealloc(t->cells.cb, (size_t)nn * sz);
		memset(t->cells.cb + t->cells.ncb, 0, (size_t)(nn - t->cells.ncb) * sz);
		t->cells.ncb = nn;
	}
	struct cblock *b = &t->cells.cb[c->n];
	int ex = cell_expanded(t, c->n), nart = cell_nart(t, c);
	if (b->valid && b->width == w && b->expanded == ex &&
	    b->status == (int)c->status && b->nart == nart &&
	    b->tot[0] == c->out[0].total && b->tot[1] == c->out[1].total &&
	    b->has_value == (c->value != NULL))
		return b;
	tui_tlines_free(&b->lines);
	tui_tlines_init(&b->lines);
	cell_body(t, &b->lines, c, w);
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

void
tui_cells_invalidate(struct tui *t)
{
	for (int i = 0; i < t->cells.ncb; i++)
		t->cells.cb[i].valid = 0;
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
void
tui_cells_header(struct tui *t, struct tline *l, const struct cell *c)
{
	char tmp[128];
	snprintf(tmp, sizeof tmp, "[%d] ", c->n);
	tui_tline_adds(l, R_CELL_HDR, tmp);
	tui_tline_adds(l, R_DIM, c->author == CELL_BY_MODEL ? "model" : "you");
	tui_tline_adds(l, R_DIM, " · ");
	if (c->status == CELL_RUNNING) {
		static const char *spin[] = { "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏" };
		int64_t el = now_ms() - c->started_ms;
		snprintf(tmp, sizeof tmp, "running %.1fs %s", (double)el / 1000.0,
		    tui_style_utf8() ? spin[(el / 100) % 10] : "");
	} else if (c->status == CELL_PENDING)
		snprintf(tmp, sizeof tmp, "queued");
	else
		snprintf(tmp, sizeof tmp, "%s · %.2fs", cell_status_name(c->status),
		    (double)c->duration_ms / 1000.0);
	tui_tline_adds(l, status_role(c->status), tmp);
	if (cell_expanded(t, c->n))
		tui_tline_adds(l, R_DIM, " · expanded");
}

/* The conversation line that links a model turn to its cell. */
void
tui_cells_link(struct tui *t, struct tline *l, int n)
{
	const struct cell *c = t->nb ? notebook_cell(t->nb, n) : NULL;
	char tmp[160];
	tui_tline_adds(l, R_LINK, "  ▸ ");
	snprintf(tmp, sizeof tmp, "ran cell [%d]", n);
	tui_tline_adds(l, R_LINK, tmp);
	if (!c)
		return;
	if (c->status == CELL_RUNNING || c->status == CELL_PENDING) {
		tui_tline_adds(l, R_RUNNING, " · running");
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
	tui_tline_adds(l, status_role(c->status), tmp);
	if (lines) {
		snprintf(tmp, sizeof tmp, " · %zu line%s of output", lines,
		    lines == 1 ? "" : "s");
		tui_tline_adds(l, R_DIM, tmp);
	}
	if (c->nartifacts > 0 || cell_nart(t, c)) {
		snprintf(tmp, sizeof tmp, " · %d file%s", cell_nart(t, c),
		    cell_nart(t, c) == 1 ? "" : "s");
		tui_tline_adds(l, R_DIM, tmp);
	}
}

void
tui_cells_toggle(struct tui *t, int n)
{
	if (n <= 0)
		return;
	if (n >= t->cells.nexp) {
		int nn = n + 64;
		size_t sz = sizeof *t->cells.expanded;
		t->cells.expanded = xrealloc(t->cells.expanded, (size_t)nn * sz);
		memset(t->cells.expanded + t->cells.nexp, 0,
		    (size_t)(nn - t->cells.nexp) * sz);
		t->cells.nexp = nn;
	}
	t->cells.expanded[n] = !t->cells.expanded[n];
	t->v[P_CELLS].follow = 0;
	tui_mark(t);
}

const struct tlines *
tui_cells_body(struct tui *t, const struct cell *c, int w)
{
	return &cell_block(t, c, w)->lines;
}

void
tui_cells_free(struct tui *t)
{
	for (int i = 0; i < t->cells.ncb; i++)
		tui_tlines_free(&t->cells.cb[i].lines);
	free(t->cells.cb);
	t->cells.cb = NULL;
	t->cells.ncb = 0;
	free(t->cells.expanded);
	t->cells.expanded = NULL;
	t->cells.nexp = 0;
}
