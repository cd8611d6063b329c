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
#include "terp/outdisp.h"
#include "terp/sanitize.h"
#include "terp/tui_mdlite.h"
#include "terp/tui_pyhl.h"
#include "terp/tui_span.h"
#include "terp/util.h"

#include "tui_pics.h"
#include "tui_style.h"
#include "tui_thumbs.h"
#include "tui_told.h"

/* Lines in text[0..len) (a last line without '\n' counts). */
static size_t
count_lines(const char *text, size_t len)
{
	size_t nl = 0;

	for (size_t i = 0; i < len; i++)
		nl += text[i] == '\n';
	return nl + (len > 0 && text[len - 1] != '\n');
}

/* Appends text (sanitized) as lines; collapsed, text longer than `room`
 * lines keeps its head and tail around a "… N lines hidden …" marker
 * (room - 1 lines of text, a third of them the head), and each line is
 * cut at the width; expanded, everything is wrapped. */
static void
add_block(struct tlines *ls, const char *text, size_t len, int w, int role,
    const char *prefix, int expanded, int room, int tag)
{
	while (len > 0 && text[len - 1] == '\n')
		len--;
	if (len == 0)
		return;
	if (expanded) {
		tui_tlines_wrap(ls, text, len, w, role, prefix, R_BORDER, tag);
		return;
	}
	size_t nl = count_lines(text, len);
	if (room < 3)
		room = 3;
	if (nl <= (size_t)room) {
		tui_tlines_cut(ls, text, len, w, role, prefix, R_BORDER, tag);
		return;
	}
	int head = (room - 1) / 3, tail = room - 1 - head;
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
    const char *prefix, int expanded, int room, int tag)
{
	char *s = sanitize_str(raw, n,
	    SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL);
	add_block(ls, s, strlen(s), w, role, prefix, expanded, room, tag);
	free(s);
}

/* Whether line s (n bytes) of a traceback is a frame of a cell:
 * `  File "<cell 3>", line 4, in top`. */
static int
trace_cell_frame(const char *s, size_t n)
{
	static const char key[] = "File \"<cell ";

	while (n > 0 && *s == ' ') {
		s++;
		n--;
	}
	return n >= sizeof key - 1 && memcmp(s, key, sizeof key - 1) == 0;
}

/* Whether it is any frame's line: `  File "...", line N, in f`. */
static int
trace_frame(const char *s, size_t n)
{
	while (n > 0 && *s == ' ') {
		s++;
		n--;
	}
	return n >= 6 && memcmp(s, "File \"", 6) == 0;
}

static size_t
trace_indent(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && s[i] == ' ')
		i++;
	return i;
}

/* Emits lines [from, to) of the traceback (starts[] holds each line's
 * offset into s, starts[nl] its end plus one). */
static void
trace_emit(struct tlines *ls, const char *s, const size_t *starts, size_t from,
    size_t to, int w, int role, const char *prefix, int tag)
{
	if (from >= to)
		return;
	tui_tlines_cut(ls, s + starts[from], starts[to] - 1 - starts[from], w, role,
	    prefix, R_BORDER, tag);
}

static void
trace_hidden(struct tlines *ls, size_t n, int w, const char *prefix, int tag)
{
	char msg[64];

	snprintf(msg, sizeof msg, "… %zu lines hidden …", n);
	tui_tlines_cut(ls, msg, strlen(msg), w, R_HIDDEN, prefix, R_BORDER, tag);
}

/* A folded traceback keeps its last frame (or its last `tail` lines
 * when that frame is longer: the failing line and the error) and the frames of the cells with their source lines (where
 * the user's code went wrong, under a library's frames); each run of
 * other lines becomes one "… N lines hidden …" (a run of one is shown:
 * the marker would take its row anyway). */
static void
add_tail(struct tlines *ls, const char *raw, int w, int role,
    const char *prefix, int tail, int tag)
{
	char *s = sanitize_str(raw, strlen(raw),
	    SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL);
	size_t len = strlen(s), nl, k = 0, i;
	size_t *starts;
	unsigned char *keep;

	while (len > 0 && s[len - 1] == '\n')
		len--;
	s[len] = '\0';
	nl = count_lines(s, len);
	if (nl <= (size_t)tail + 1) {
		if (len > 0)
			tui_tlines_cut(ls, s, len, w, role, prefix, R_BORDER, tag);
		free(s);
		return;
	}
	starts = xcalloc(nl + 1, sizeof *starts);
	keep = xcalloc(nl, 1);
	for (i = 0; i < len; i++)
		if (s[i] == '\n')
			starts[++k] = i + 1;
	starts[nl] = len + 1;
	/* the end: the last frame when it fits, else the last lines */
	size_t from = nl - (size_t)tail;
	for (i = nl; i-- > 0 && nl - i <= (size_t)tail + 2;)
		if (trace_frame(s + starts[i], starts[i + 1] - 1 - starts[i])) {
			from = i;
			break;
		}
	for (i = from; i < nl; i++)
		keep[i] = 1;
	for (i = 0; i < nl; i++) {
		const char *l = s + starts[i];
		size_t n = starts[i + 1] - 1 - starts[i], ind;
		if (!trace_cell_frame(l, n))
			continue;
		/* the frame and the source (and caret) lines under it */
		keep[i] = 1;
		ind = trace_indent(l, n);
		while (i + 1 < nl && trace_indent(s + starts[i + 1],
		    starts[i + 2] - 1 - starts[i + 1]) > ind)
			keep[++i] = 1;
	}
	for (i = 0; i < nl;) {
		size_t j = i;
		while (j < nl && keep[j] == keep[i])
			j++;
		if (keep[i] || j - i == 1)
			trace_emit(ls, s, starts, i, j, w, role, prefix, tag);
		else
			trace_hidden(ls, j - i, w, prefix, tag);
		i = j;
	}
	free(keep);
	free(starts);
	free(s);
}

static int
cell_expanded(const struct tui *t, int n)
{
	return n > 0 && n < t->cells.nexp && t->cells.expanded[n];
}

int
tui_cells_expanded(const struct tui *t, int n)
{
	return cell_expanded(t, n);
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

/* The code of a cell, highlighted; collapsed, at most `most` rows (the
 * first most - 1 lines and a "… N more lines" marker when longer). */
static void
cells_code(struct tlines *ls, const char *code, int w, int expanded, int most,
    int tag)
{
	char *s = sanitize_str(code, strlen(code),
	    SANITIZE_KEEP_NL | SANITIZE_CR_AS_NL | SANITIZE_KEEP_TAB);
	size_t len = strlen(s);
	while (len > 0 && s[len - 1] == '\n')
		len--;
	struct span_doc d;
	tui_span_doc_init(&d);
	/* long lines wrap, the rest marked with ↪, collapsed or not */
	tui_pyhl_highlight_wrap(&d, s, len, w - 4 > 8 ? w - 4 : 8, THEME_CELL_CODE,
	    "↪ ", THEME_CODE_COMMENT);
	if (most < 2)
		most = 2;
	int show = expanded || d.n <= (size_t)most ? -1 : most - 1;
	tui_tlines_spans(ls, &d, show, "  │ ", R_BORDER, R_THEME, tag);
	if (show >= 0) {
		char msg[64];
		snprintf(msg, sizeof msg, "… %zu more lines", d.n - (size_t)show);
		tui_tlines_cut(ls, msg, strlen(msg), w, R_HIDDEN, "  │ ", R_BORDER, tag);
	}
	tui_span_doc_free(&d);
	free(s);
}

void
tui_cells_code(struct tlines *ls, const char *code, int w, int expanded, int tag)
{
	cells_code(ls, code, w, expanded, CODE_SHOW + 1, tag);
}

int
tui_cells_charts(struct tui *t, int n)
{
	int k = 0, na = t->nb ? notebook_nartifacts(t->nb) : 0;

	for (int i = 0; i < na; i++) {
		const struct artifact *a = notebook_artifact(t->nb, i);
		k += a->cell == n && tui_thumbs_is_png(a->name);
	}
	return k;
}

/* The files a cell wrote: a name line each, charts with a thumbnail. */
static void
cell_files(struct tui *t, struct tlines *ls, const struct cell *c, int w,
    int ex, int trows)
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
		add_sanitized(ls, m, strlen(m), w, R_LINK, "  ▪ ", 0, 3, tag);
		free(m);
		free(nm);
		if (!tui_thumbs_is_png(a->name))
			continue;
		const char *why;
		/* indented by 4, a column free at the right (the margin);
		 * as wide as the pane, as high as the aspect gives within
		 * trows; in pixels where the terminal can */
		if (tui_pics_lines(t, ls, a->path, w - 5, trows, 4, tag) == 0)
			continue;
		struct thumb *th = tui_thumbs_get(t, a->path, w - 5, trows, &why);
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
	const struct netlog_sum *sum = notebook_net_sum(t->nb, c->n);
	char *s = netlog_sum_text(sum, tui_style_utf8() ? NETLOG_UTF8 : NETLOG_ASCII);

	if (s != NULL)
		add_sanitized(ls, s, strlen(s), w, sum->bad ? R_FAIL : R_DIM,
		    tui_style_utf8() ? "  \xe2\x87\x84 " : "  net ", 0, 5, c->n);
	free(s);
}

/* A cell's value as the user reads it: printed at the pane's width
 * when the kernel could (kernel_set_width), else the model's text. */
static const char *
shown_value(const struct cell *c)
{
	return c->value_wide != NULL ? c->value_wide : c->value;
}

/* The rows each collapsed output of c (stdout, stderr, value) gets out
 * of room, the rows left in the pane for them: all its lines when they
 * fit, else shares filled from the shortest output up (each gets its
 * lines or an equal part of what is left); never fewer than the old
 * fixed fold (3 + 5 lines and a marker) for an output that long. */
static void
fold_rooms(const struct cell *c, int room, int out[3])
{
	size_t nl[3] = { 0, 0, 0 };
	const int least = OUT_SHOW_HEAD + OUT_SHOW_TAIL + 1;
	int done[3] = { 0, 0, 0 }, left = room > 0 ? room : 0;

	for (int st = 0; st < 2; st++) {
		size_t n;
		char *o = cell_output(c, st, &n);
		while (n > 0 && o[n - 1] == '\n')
			n--;
		nl[st] = count_lines(o, n);
		free(o);
	}
	if (c->value)
		nl[2] = count_lines(shown_value(c), strlen(shown_value(c)));
	for (int k = 3; k > 0; k--) {
		int i = -1;
		for (int j = 0; j < 3; j++)	/* the shortest not yet given */
			if (!done[j] && (i < 0 || nl[j] < nl[i]))
				i = j;
		int share = left / k;
		out[i] = nl[i] <= (size_t)share ? (int)nl[i] : share;
		left -= out[i];
		done[i] = 1;
	}
	for (int i = 0; i < 3; i++)
		if ((size_t)out[i] < nl[i] && out[i] < least)
			out[i] = least;
}

/* Appends the lines of src to dst, which takes them; src is empty after. */
static void
tlines_move(struct tlines *dst, struct tlines *src)
{
	for (int i = 0; i < src->n; i++) {
		struct tline *l = tui_tlines_add(dst, src->v[i].tag);
		*l = src->v[i];
	}
	free(src->v);
	tui_tlines_init(src);
}

/* The order cell n's output came in, or NULL when none was seen. */
static const struct corder *
order_of(const struct tui *t, int n)
{
	return n > 0 && n < t->cells.nord ? &t->cells.ord[n] : NULL;
}

void
tui_cells_note_output(struct tui *t, const struct cell *c, int st)
{
	if (c == NULL || c->n <= 0 || c->n > ORDER_CELLS_MAX)
		return;
	if (c->n >= t->cells.nord) {
		int n = c->n + 16;
		t->cells.ord = xrealloc(t->cells.ord, (size_t)n * sizeof *t->cells.ord);
		memset(t->cells.ord + t->cells.nord, 0,
		    (size_t)(n - t->cells.nord) * sizeof *t->cells.ord);
		t->cells.nord = n;
	}
	struct corder *o = &t->cells.ord[c->n];
	uint64_t end = c->out[st ? 1 : 0].total;
	if (o->n > 0 && o->run[o->n - 1].st == st) {
		o->run[o->n - 1].end = end;
		return;
	}
	if (o->n >= ORDER_RUNS_MAX) {
		o->over = 1;
		return;
	}
	if (o->n == o->cap) {
		o->cap = o->cap ? 2 * o->cap : 8;
		o->run = xrealloc(o->run, (size_t)o->cap * sizeof *o->run);
	}
	o->run[o->n].st = st ? 1 : 0;
	o->run[o->n].end = end;
	o->n++;
}

/* Collapsed, the middle of ls's lines beyond `room` becomes a marker
 * line, as add_block does with one text; dst takes the lines kept. */
static void
fold_lines(struct tlines *dst, struct tlines *ls, int w, int room, int ex,
    int tag)
{
	if (room < 3)
		room = 3;
	if (ex || ls->n <= room) {
		tlines_move(dst, ls);
		return;
	}
	int head = (room - 1) / 3, tail = room - 1 - head;
	for (int i = 0; i < ls->n; i++) {
		if (i == head) {
			char msg[96];
			snprintf(msg, sizeof msg, "… %d lines hidden (Enter on the "
			    "cell shows all) …", ls->n - head - tail);
			tui_tlines_cut(dst, msg, strlen(msg), w, R_HIDDEN, "  ",
			    R_BORDER, tag);
		}
		if (i < head || i >= ls->n - tail)
			*tui_tlines_add(dst, ls->v[i].tag) = ls->v[i];
		else
			tui_tline_free(&ls->v[i]);
	}
	free(ls->v);
	tui_tlines_init(ls);
}

#define INTERLEAVE_MAX	(256u * 1024)	/* collapsed output bytes, at most */

/* stdout and stderr in the order they came (as Jupyter shows them),
 * when both were written while this UI watched and every byte is
 * still held; the collapsed whole folds in `room` lines. Returns 0
 * when it cannot (the caller shows stdout, then stderr). */
static int
interleaved(struct tui *t, struct tlines *ls, const struct cell *c, int w,
    int ex, int room)
{
	const struct corder *o = order_of(t, c->n);
	if (o == NULL || o->over || o->n < 2 || outcap_dropped(&c->out[0]) ||
	    outcap_dropped(&c->out[1]))
		return 0;
	/* a flood, collapsed: every line would be laid out to keep a few;
	 * the separate blocks fold without that */
	if (!ex && c->out[0].total + c->out[1].total > INTERLEAVE_MAX)
		return 0;
	/* every byte of both streams is in a run */
	uint64_t last[2] = { 0, 0 };
	for (int i = 0; i < o->n; i++)
		last[o->run[i].st] = o->run[i].end;
	if (last[0] != c->out[0].total || last[1] != c->out[1].total)
		return 0;
	size_t len[2], nsp;
	struct outdisp_span *sp;
	char *raw[2] = { cell_output_spans(c, 0, &len[0], &sp, &nsp),
	    cell_output(c, 1, &len[1]) };
	free(sp);
	if (nsp > 0) {
		/* the runs count the bytes of the marks: displays are
		 * shown as blocks, stdout first */
		free(raw[0]);
		free(raw[1]);
		return 0;
	}
	uint64_t from[2] = { 0, 0 };
	struct tlines all;
	tui_tlines_init(&all);
	for (int i = 0; i < o->n; i++) {
		int st = o->run[i].st;
		uint64_t a = from[st], b = o->run[i].end;
		from[st] = b;
		if (b <= a || b > len[st])
			continue;
		char *s = sanitize_str(raw[st] + a, (size_t)(b - a),
		    SANITIZE_KEEP_NL | SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL);
		size_t n = strlen(s);
		while (n > 0 && s[n - 1] == '\n')
			n--;
		int role = st ? R_STDERR : R_STDOUT;
		if (n > 0 && ex)
			tui_tlines_wrap(&all, s, n, w, role, "  ", R_BORDER, c->n);
		else if (n > 0)
			tui_tlines_cut(&all, s, n, w, role, "  ", R_BORDER, c->n);
		free(s);
	}
	free(raw[0]);
	free(raw[1]);
	fold_lines(ls, &all, w, room, ex, c->n);
	return 1;
}

static int
has_markdown(const struct outdisp_span *sp, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (sp[i].markdown)
			return 1;
	return 0;
}

/* Output with Markdown displays (display(Markdown(...))) rendered as the
 * answers are, the prints around them as text; folded as one block. */
static void
add_with_markdown(struct tlines *ls, const char *o, size_t n,
    const struct outdisp_span *sp, size_t nsp, int w, int ex, int room,
    int tag)
{
	struct tlines all;
	size_t at = 0;

	tui_tlines_init(&all);
	for (size_t i = 0; i <= nsp; i++) {
		size_t end = i < nsp ? sp[i].off : n;
		if (i < nsp && !sp[i].markdown)
			continue;	/* a plain display is text */
		if (end > at) {
			char *s = sanitize_str(o + at, end - at, SANITIZE_KEEP_NL |
			    SANITIZE_EXPAND_TABS | SANITIZE_CR_AS_NL);
			size_t k = strlen(s);
			while (k > 0 && s[k - 1] == '\n')
				k--;
			if (k > 0 && ex)
				tui_tlines_wrap(&all, s, k, w, R_STDOUT, "  ", R_BORDER, tag);
			else if (k > 0)
				tui_tlines_cut(&all, s, k, w, R_STDOUT, "  ", R_BORDER, tag);
			free(s);
		}
		if (i == nsp)
			break;
		char *m = sanitize_str(o + sp[i].off, sp[i].len, SANITIZE_KEEP_NL |
		    SANITIZE_EXPAND_TABS);
		struct span_doc d;
		tui_span_doc_init(&d);
		tui_mdlite_render(&d, m, strlen(m), w - 2 > 10 ? w - 2 : 10);
		tui_tlines_spans(&all, &d, -1, "  ", R_BORDER, R_THEME, tag);
		tui_span_doc_free(&d);
		free(m);
		at = sp[i].off + sp[i].len;
	}
	fold_lines(ls, &all, w, room, ex, tag);
}

/* The rows the folded outputs of c take at least (fold_rooms never
 * folds an output under its lines or the old fixed fold, 3 + 5 lines
 * and a marker), and the network summary's line. */
static int
outs_rows(struct tui *t, const struct cell *c)
{
	const size_t least = OUT_SHOW_HEAD + OUT_SHOW_TAIL + 1;
	char *net = netlog_sum_text(notebook_net_sum(t->nb, c->n), NETLOG_ASCII);
	int rows = (c->value != NULL) + (net != NULL);

	free(net);
	for (int st = 0; st < 2; st++) {
		size_t n, nl;
		if (c->out[st].total == 0)
			continue;
		char *o = cell_output(c, st, &n);
		while (n > 0 && o[n - 1] == '\n')
			n--;
		nl = count_lines(o, n);
		free(o);
		rows += (int)(nl < least ? nl : least);
	}
	return rows;
}

/* The rows each chart thumbnail of cell c may take when the pane has
 * room rows (0: unknown) and the cell's other lines take used: an
 * equal share of what the header, the code, a name line per file, the
 * folded outputs and the blank after the cell leave of the pane, so the
 * cell never outgrows the pane (which follows the newest cell and would
 * scroll the header away). Expanded, the user asked for size: the
 * pane's height, at least 40. */
static int
thumb_rows(struct tui *t, const struct cell *c, int room, int ex, int used)
{
	int left, npng = tui_cells_charts(t, c->n);

	if (room <= 0)
		return ex ? 40 : 14;
	if (ex)
		return room - 3 > 40 ? room - 3 : 40;
	left = room - 2 - used - cell_nart(t, c) - outs_rows(t, c);
	if (npng > 1)
		left /= npng;
	return left < 2 ? 2 : left;
}

/* Collapsed, the rows the code of a cell with charts may take: what is
 * left after two thirds of the room for the charts (the chart is the
 * result; Enter shows all the code), at least 3 (two lines and the
 * marker) and at most the usual fold. */
static int
code_rows(struct tui *t, const struct cell *c, int room, int used)
{
	if (room <= 0 || tui_cells_charts(t, c->n) == 0)
		return CODE_SHOW + 1;
	int avail = room - 2 - used - cell_nart(t, c) - outs_rows(t, c);
	int most = avail - avail * 2 / 3;
	return most < 3 ? 3 : most > CODE_SHOW + 1 ? CODE_SHOW + 1 : most;
}

/* Everything of a cell below its header line. room: the pane's rows
 * (0: the fixed fold). */
static void
cell_body(struct tui *t, struct tlines *ls, const struct cell *c, int w,
    int room)
{
	int ex = cell_expanded(t, c->n), tag = c->n, rooms[3];
	struct tlines end;
	size_t n;

	/* what comes after the outputs first, to know the outputs' room */
	tui_tlines_init(&end);
	if (c->ename || c->evalue) {
		char *m = xasprintf("%s%s%s", c->ename ? c->ename : "",
		    c->ename && c->evalue ? ": " : "", c->evalue ? c->evalue : "");
		add_sanitized(&end, m, strlen(m), w, R_FAIL, "  ✗ ", 0, 5, tag);
		free(m);
		if (c->traceback && ex)
			add_sanitized(&end, c->traceback, strlen(c->traceback), w,
			    R_TRACE, "    ", 1, 0, tag);
		else if (c->traceback)
			add_tail(&end, c->traceback, w, R_TRACE, "    ", 4, tag);
	}
	if (c->reason)
		add_sanitized(&end, c->reason, strlen(c->reason), w, R_FAIL, "  ! ",
		    ex, 5, tag);
	if (c->state_lost) {
		const char *m = "the session restarted: variables are gone";
		tui_tlines_cut(&end, m, strlen(m), w, R_FAIL, "  ! ", R_BORDER, tag);
	}
	cells_code(ls, c->code ? c->code : "", w, ex,
	    code_rows(t, c, room, end.n), tag);
	cell_files(t, &end, c, w, ex, thumb_rows(t, c, room, ex,
	    ls->n + end.n));
	cell_net(t, &end, c, w);

	/* the outputs get what the header, the code, the lines after and
	 * the blank line after the cell leave of the pane */
	fold_rooms(c, room - 2 - ls->n - end.n, rooms);
	if (!interleaved(t, ls, c, w, ex, rooms[0] + rooms[1]))
		for (int st = 0; st < 2; st++) {
			struct outdisp_span *sp;
			size_t nsp;
			char *o = cell_output_spans(c, st, &n, &sp, &nsp);
			if (has_markdown(sp, nsp))
				add_with_markdown(ls, o, n, sp, nsp, w, ex,
				    rooms[st], tag);
			else if (n)
				add_sanitized(ls, o, n, w, st ? R_STDERR : R_STDOUT,
				    "  ", ex, rooms[st], tag);
			free(sp);
			free(o);
		}
	if (c->value)
		add_sanitized(ls, shown_value(c), strlen(shown_value(c)), w, R_VALUE, "  → ",
		    ex, rooms[2], tag);
	tlines_move(ls, &end);
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
	int fold = t->cells.fold_rows;
	const struct netlog_sum *ns = notebook_net_sum(t->nb, c->n);
	uint64_t net_gen = ns ? ns->gen : 0;
	if (b->valid && b->width == w && b->expanded == ex && b->fold == fold &&
	    b->net_gen == net_gen &&
	    b->status == (int)c->status && b->nart == nart &&
	    b->tot[0] == c->out[0].total && b->tot[1] == c->out[1].total &&
	    b->has_value == (c->value != NULL))
		return b;
	tui_tlines_free(&b->lines);
	tui_tlines_init(&b->lines);
	cell_body(t, &b->lines, c, w, fold);
	b->valid = 1;
	b->fold = fold;
	b->width = w;
	b->expanded = ex;
	b->status = (int)c->status;
	b->nart = nart;
	b->tot[0] = c->out[0].total;
	b->tot[1] = c->out[1].total;
	b->has_value = c->value != NULL;
	b->net_gen = net_gen;
	return b;
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
	if (c->author == CELL_BY_MODEL)
		tui_tline_adds(l, R_DIM, "model");
	else
		tui_tline_adds(l, R_USER, "you");
	if (c->rerun_of > 0) {
		snprintf(tmp, sizeof tmp, " · re-run of [%d]", c->rerun_of);
		tui_tline_adds(l, R_USER, tmp);
	}
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

int
tui_cells_by_user(const struct tui *t, int n)
{
	const struct cell *c = t->nb ? notebook_cell(t->nb, n) : NULL;

	return c != NULL && c->author == CELL_BY_USER;
}

/* The conversation line that links a turn to its cell: the model's
 * under its question ("▸ ran cell [3]"), the user's own in the user's
 * colours ("› you ran cell [4] (re-run of [3])"). */
void
tui_cells_link(struct tui *t, struct tline *l, int n)
{
	const struct cell *c = t->nb ? notebook_cell(t->nb, n) : NULL;
	char tmp[160];
	if (c && c->author == CELL_BY_USER) {
		tui_tline_adds(l, R_USER_MARK, "› ");
		if (c->rerun_of > 0)
			snprintf(tmp, sizeof tmp, "you ran cell [%d] (re-run of [%d])",
			    n, c->rerun_of);
		else
			snprintf(tmp, sizeof tmp, "you ran cell [%d]", n);
		tui_tline_adds(l, R_USER, tmp);
	} else {
		tui_tline_adds(l, R_LINK, "  ▸ ");
		snprintf(tmp, sizeof tmp, c && c->status == CELL_RUNNING ? "running cell [%d]" :
		    c && c->status == CELL_PENDING ? "cell [%d]" : "ran cell [%d]", n);
		tui_tline_adds(l, R_LINK, tmp);
	}
	if (!c)
		return;
	if (c->dropped) {
		tui_tline_adds(l, R_DIM, " · dropped (the model no longer sees it)");
		return;
	}
	if (c->status == CELL_PENDING) {
		tui_tline_adds(l, R_RUNNING, " · waiting to run");
		return;
	}
	if (c->status == CELL_RUNNING) {
		if (c->author == CELL_BY_USER)
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
	char saw[80];
	int cut = tui_told_cut_note(t, c, saw, sizeof saw);
	if (lines) {
		/* shorter when the model's share follows: the line must fit */
		snprintf(tmp, sizeof tmp, " · %zu line%s%s", lines,
		    lines == 1 ? "" : "s", cut ? "" : " of output");
		tui_tline_adds(l, R_DIM, tmp);
	}
	if (cut) {
		snprintf(tmp, sizeof tmp, " · %s", saw);
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

int
tui_cells_span(struct tui *t, const struct cell *c, int w)
{
	if (c != NULL && c->dropped)
		return 0;	/* `d`: out of the pane */
	return 1 + (c ? tui_cells_body(t, c, w)->n : 0) + 1;
}

/* A key for the pending items: their count, versions and places. */
static unsigned
pending_key(const struct tui *t)
{
	unsigned k = 2166136261u;

	for (int i = t->conv.nitems - 1; i >= 0 && i >= t->conv.nitems - 50; i--) {
		const struct item *it = &t->conv.items[i];
		if (it->kind != IT_PENDING)
			continue;
		k = (k ^ (unsigned)i) * 16777619u;
		k = (k ^ it->version) * 16777619u;
		k = (k ^ (unsigned)it->closed) * 16777619u;
	}
	return k;
}

const struct tlines *
tui_cells_pending(struct tui *t, int w)
{
	unsigned key = pending_key(t);
	int n = t->nb ? notebook_ncells(t->nb) : 0;

	if (key == t->cells.pend_key && w == t->cells.pend_w)
		return &t->cells.pend;
	tui_tlines_free(&t->cells.pend);
	tui_tlines_init(&t->cells.pend);
	t->cells.pend_key = key;
	t->cells.pend_w = w;
	int from = t->conv.nitems - 50 > 0 ? t->conv.nitems - 50 : 0;
	for (int i = from; i < t->conv.nitems; i++) {
		const struct item *it = &t->conv.items[i];
		if (it->kind != IT_PENDING)
			continue;
		/* numbered as it will be: the next cells in order */
		char hd[64];
		snprintf(hd, sizeof hd, "[%d] ", ++n);
		struct tline *l = tui_tlines_add(&t->cells.pend, -1);
		tui_tline_adds(l, R_LINK, " ");
		tui_tline_adds(l, R_CELL_HDR, hd);
		tui_tline_adds(l, R_DIM, "model · ");
		tui_tline_adds(l, R_RUNNING, it->closed ? "not run yet" :
		    "the model writes it…");
		/* all of it: the pane follows its end as it grows */
		if (it->text.len > 0) {
			char *code = xstrndup(it->text.data, it->text.len);
			cells_code(&t->cells.pend, code, w, 1, 0, -1);
			free(code);
		}
		tui_tlines_add(&t->cells.pend, -1);	/* the blank after */
	}
	return &t->cells.pend;
}

void
tui_cells_free(struct tui *t)
{
	tui_tlines_free(&t->cells.pend);
	tui_tlines_init(&t->cells.pend);
	t->cells.pend_key = 0;
	for (int i = 0; i < t->cells.ncb; i++)
		tui_tlines_free(&t->cells.cb[i].lines);
	free(t->cells.cb);
	t->cells.cb = NULL;
	t->cells.ncb = 0;
	free(t->cells.expanded);
	t->cells.expanded = NULL;
	t->cells.nexp = 0;
	for (int i = 0; i < t->cells.nord; i++)
		free(t->cells.ord[i].run);
	free(t->cells.ord);
	t->cells.ord = NULL;
	t->cells.nord = 0;
}
