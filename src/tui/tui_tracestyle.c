/* tui_tracestyle: the traced numbers of an answer styled where they
 * stand in its rendered lines (tui_tracestyle.h). Below tui_items.c,
 * which draws answers with it, and tui_trace.c, which fills the items:
 * here, neither calls back into the other. */
#include "tui_tracestyle.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "terp/tui_span.h"
#include "terp/tui_theme.h"
#include "terp/util.h"

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
