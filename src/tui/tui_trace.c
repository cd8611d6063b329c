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
