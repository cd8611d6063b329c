/* tui_trace: number tracing (answer_trace.c) shown in the notebook UI.
 * The state hangs off struct tui as one pointer, made on first use. */
#include "tui_trace.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/answer_trace.h"
#include "terp/buf.h"
#include "terp/sanitize.h"
#include "terp/tui_span.h"
#include "terp/tui_theme.h"
#include "terp/util.h"

#include "tui_items.h"

/* Bytes of an output line quoted as a number's source. */
#define SRC_LINE_MAX	120

struct tui_trace {
	struct answer_tracer	*tracer;
	char			*question;
	struct answer_trace	 last;		/* the last answer's numbers */
	size_t			 next;		/* what `t` shows next */
	/* restoring: the last reply, answer unless a model cell follows */
	const struct notebook	*nb;		/* the resumed one (borrowed) */
	char			*reply;
	int			 upto;		/* the last cell walked */
};

static struct tui_trace *
state(struct tui *t)
{
	if (t->trace == NULL) {
		t->trace = xcalloc(1, sizeof *t->trace);
		t->trace->tracer = answer_tracer_new();
	}
	return t->trace;
}

void
tui_trace_free(struct tui *t)
{
	if (t->trace == NULL)
		return;
	answer_tracer_free(t->trace->tracer);
	answer_trace_free(&t->trace->last);
	free(t->trace->question);
	free(t->trace->reply);
	free(t->trace);
	t->trace = NULL;
}

void
tui_trace_question(struct tui *t, const char *question)
{
	struct tui_trace *s = state(t);

	free(s->question);
	s->question = xstrdup(question ? question : "");
}

/* Where one mark was found in a rendered answer. */
struct mark_at {
	size_t	 line, span, off;
	int	 found;
};

static int
word_byte(unsigned char c)
{
	return isalnum(c) || c == '_' || c >= 0x80;
}

/* Whether text[a..a+len) stands alone: no letter or digit glued to it,
 * no "1,2" or "1.2" continuing it. */
static int
bounded(const char *text, size_t a, size_t len)
{
	size_t n = strlen(text), e = a + len;

	if (a > 0 && (word_byte((unsigned char)text[a - 1]) ||
	    ((text[a - 1] == '.' || text[a - 1] == ',') && a > 1 &&
	    isdigit((unsigned char)text[a - 2]))))
		return 0;
	if (e < n && word_byte((unsigned char)text[e]))
		return 0;
	if (e + 1 < n && (text[e] == '.' || text[e] == ',') &&
	    isdigit((unsigned char)text[e + 1]))
		return 0;
	return 1;
}

/* Finds mark text m at or after *at in d, within one span. */
static int
find_mark(const struct span_doc *d, const char *m, struct mark_at *at)
{
	size_t i = at->line, j = at->span, o = at->off, ml = strlen(m);

	for (; i < d->n; i++, j = 0, o = 0) {
		for (; j < d->lines[i].n; j++, o = 0) {
			const char *t = d->lines[i].v[j].text, *p = t + o;
			while ((p = strstr(p, m)) != NULL) {
				if (bounded(t, (size_t)(p - t), ml)) {
					at->line = i;
					at->span = j;
					at->off = (size_t)(p - t);
					at->found = 1;
					return 1;
				}
				p++;
			}
		}
	}
	return 0;
}

/* Line i of d rebuilt with the marks found on it in their roles. */
static void
restyle_line(struct span_doc *d, size_t i, const struct item *it,
    const struct mark_at *at)
{
	struct span_line nl = { 0 }, *l = &d->lines[i];

	for (size_t j = 0; j < l->n; j++) {
		const char *t = l->v[j].text;
		size_t done = 0;
		for (int k = 0; k < it->nmarks; k++) {
			size_t ml = strlen(it->marks[k].text);
			if (!at[k].found || at[k].line != i || at[k].span != j)
				continue;
			tui_span_line_add(&nl, t + done, at[k].off - done,
			    l->v[j].role);
			tui_span_line_add(&nl, t + at[k].off, ml,
			    it->marks[k].traced ? THEME_ANSWER_TRACED :
			    THEME_ANSWER_UNTRACED);
			done = at[k].off + ml;
		}
		tui_span_line_add(&nl, t + done, strlen(t) - done, l->v[j].role);
	}
	tui_span_line_free(l);
	*l = nl;
}

void
tui_trace_style(struct span_doc *d, const struct item *it)
{
	struct mark_at cur = { 0 }, *at;
	size_t last = (size_t)-1;

	if (it->nmarks == 0)
		return;
	at = xcalloc((size_t)it->nmarks, sizeof *at);
	for (int k = 0; k < it->nmarks; k++) {
		struct mark_at try = cur;
		if (!find_mark(d, it->marks[k].text, &try))
			continue;	/* not as written (a wrapped "1 203"): unstyled */
		at[k] = try;
		cur = try;
		cur.off += strlen(it->marks[k].text);
	}
	for (int k = 0; k < it->nmarks; k++) {
		if (at[k].found && at[k].line != last) {
			last = at[k].line;
			restyle_line(d, last, it, at);
		}
	}
	free(at);
}

/* The answer item's marks from tr, replacing any. */
static void
set_marks(struct item *it, const struct answer_trace *tr)
{
	for (int i = 0; i < it->nmarks; i++)
		free(it->marks[i].text);
	free(it->marks);
	it->marks = xcalloc(tr->n ? tr->n : 1, sizeof *it->marks);
	it->nmarks = (int)tr->n;
	for (size_t i = 0; i < tr->n; i++) {
		it->marks[i].text = xstrndup(tr->answer + tr->hits[i].off,
		    tr->hits[i].len);
		it->marks[i].traced = tr->hits[i].line > 0;
	}
	it->version++;
}

/* The line index in the conversation at which item i starts (width w). */
static int
item_line(struct tui *t, int i, int w)
{
	int line = 0;

	for (int k = 0; k < i; k++)
		line += tui_item_lines(t, &t->conv.items[k], w)->n;
	return line;
}

static void
trace_answer(struct tui *t, const struct notebook *nb, const char *answer,
    int upto)
{
	struct tui_trace *s = state(t);
	struct item *it, *info, tmp;
	char *m, *sum;
	int n, w = t->lay.pw[P_CONV], at, grew;

	answer_trace_free(&s->last);
	s->next = 0;
	answer_tracer_sync(s->tracer, nb, upto);
	answer_tracer_trace(s->tracer, answer, s->question, &s->last);
	n = t->conv.nitems;
	if (s->last.n == 0 || n == 0 || t->conv.items[n - 1].kind != IT_ANSWER)
		return;
	/* the words stay as they are: the numbers get a style */
	set_marks(&t->conv.items[n - 1], &s->last);
	at = w > 0 ? item_line(t, n - 1, w) : 0;
	/* the header: a line of its own, put before the answer */
	sum = answer_trace_summary(&s->last);
	m = xasprintf("%s · t: where each came from · /trace lists them", sum);
	info = tui_item_text(t, IT_INFO, m);
	free(m);
	free(sum);
	it = info - 1;
	tmp = *it;
	*it = *info;
	*info = tmp;
	/* a reader scrolled into the answer keeps their place: the view
	 * moves down by the header's lines */
	grew = w > 0 ? tui_item_lines(t, it, w)->n : 0;
	if (!t->v[P_CONV].follow && t->v[P_CONV].top > at)
		t->v[P_CONV].top += grew;
}

void
tui_trace_answer(struct tui *t, const char *answer)
{
	trace_answer(t, t->nb, answer, 0);
}

void
tui_trace_restore_begin(struct tui *t, const struct notebook *nb)
{
	state(t)->nb = nb;
}

void
tui_trace_restore(struct tui *t, enum export_item k, const char *text,
    const struct cell *c)
{
	struct tui_trace *s = state(t);

	if (k == EXPORT_REASONING)	/* never an answer, never its end */
		return;
	if (s->reply && !(k == EXPORT_CELL && c && c->author == CELL_BY_MODEL))
		trace_answer(t, s->nb, s->reply, s->upto);
	free(s->reply);
	s->reply = NULL;
	switch (k) {
	case EXPORT_QUESTION:
		tui_trace_question(t, text);
		break;
	case EXPORT_REPLY:
		s->reply = xstrdup(text ? text : "");
		break;
	case EXPORT_CELL:
		if (c && c->n > s->upto)
			s->upto = c->n;
		break;
	case EXPORT_REASONING:
		break;
	}
}

void
tui_trace_restore_end(struct tui *t)
{
	struct tui_trace *s = state(t);

	if (s->reply)
		trace_answer(t, s->nb, s->reply, s->upto);
	free(s->reply);
	s->reply = NULL;
	s->nb = NULL;
}

/* Line `line` (1-based) of text, sanitized and cut: a new string. */
static char *
nth_line(const char *text, size_t len, int line)
{
	const char *p = text, *end = text + len, *nl;

	for (int i = 1; i < line && p < end; i++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	nl = memchr(p, '\n', (size_t)(end - p));
	len = (size_t)((nl ? nl : end) - p);
	return sanitize_str(p, len > SRC_LINE_MAX ? SRC_LINE_MAX : len,
	    SANITIZE_EXPAND_TABS);
}

/* "cell [3], line 2: east     2748435.15", or "not in any output". */
static char *
source(struct tui *t, const struct numtrace_hit *h)
{
	const struct cell *c = notebook_cell(t->nb, h->cell);
	char where[64], *text = NULL, *line, *r;
	size_t len = 0;

	answer_trace_where(h, where, sizeof where);
	if (h->line <= 0 || c == NULL)
		return xstrdup(where);
	if (h->stream == NUMTRACE_VALUE) {
		if (c->value)
			text = xstrdup(c->value);
		len = text ? strlen(text) : 0;
	} else {
		text = cell_output(c, h->stream == NUMTRACE_STDERR, &len);
	}
	line = nth_line(text ? text : "", len, h->line);
	r = xasprintf("%s: %s", where, line);
	free(line);
	free(text);
	return r;
}

void
tui_trace_list(struct tui *t)
{
	struct tui_trace *s = state(t);
	const struct answer_trace *tr = &s->last;
	struct buf b;

	if (tr->n == 0) {
		tui_flash(t, "the last answer has no numbers to trace");
		return;
	}
	buf_init(&b, 1 << 20);
	buf_printf(&b, "Numbers of the last answer: %zu of %zu traced\n", tr->traced,
	    tr->n);
	for (size_t i = 0; i < tr->n; i++) {
		char *src = source(t, &tr->hits[i]);
		buf_adds(&b, tr->hits[i].line > 0 ? "  ✓" : "  ✗");
		buf_printf(&b, " %.*s  %s\n", (int)tr->hits[i].len,
		    tr->answer + tr->hits[i].off, src);
		free(src);
	}
	tui_item_text(t, IT_INFO, buf_str(&b));
	buf_free(&b);
	t->v[P_CONV].follow = 1;
}

void
tui_trace_next(struct tui *t)
{
	struct tui_trace *s = state(t);
	const struct answer_trace *tr = &s->last;
	const struct numtrace_hit *h;
	char *src;

	if (tr->n == 0) {
		tui_flash(t, "the last answer has no numbers to trace");
		return;
	}
	h = &tr->hits[s->next % tr->n];
	src = source(t, h);
	tui_flash(t, "%zu/%zu %s %.*s — %s", s->next % tr->n + 1, tr->n,
	    h->line > 0 ? "✓" : "✗", (int)(h->len > 64 ? 64 : h->len),
	    tr->answer + h->off, src);
	free(src);
	if (h->line > 0) {
		t->v[P_CELLS].sel = h->cell;
		t->v[P_CELLS].ensure_sel = 1;
		t->v[P_CELLS].follow = 0;
	}
	s->next = (s->next + 1) % tr->n;
}
