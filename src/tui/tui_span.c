/* tui_span: lines of styled spans and wrapping them by display width. */
#include "terp/tui_span.h"

#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/sanitize.h"
#include "terp/tui_uwidth.h"
#include "terp/util.h"

void
tui_span_doc_init(struct span_doc *d)
{
	memset(d, 0, sizeof *d);
}

void
tui_span_line_free(struct span_line *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].text);
	free(l->v);
	memset(l, 0, sizeof *l);
}

void
tui_span_doc_free(struct span_doc *d)
{
	for (size_t i = 0; i < d->n; i++)
		tui_span_line_free(&d->lines[i]);
	free(d->lines);
	memset(d, 0, sizeof *d);
}

struct span_line *
tui_span_doc_add_line(struct span_doc *d)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 16;
		d->lines = xrealloc(d->lines, d->cap * sizeof *d->lines);
	}
	memset(&d->lines[d->n], 0, sizeof d->lines[d->n]);
	return &d->lines[d->n++];
}

void
tui_span_line_add(struct span_line *l, const char *text, size_t len, int role)
{
	if (len == 0)
		return;
	if (l->n > 0 && l->v[l->n - 1].role == role) {
		struct span *s = &l->v[l->n - 1];
		size_t old = strlen(s->text);
		s->text = xrealloc(s->text, old + len + 1);
		memcpy(s->text + old, text, len);
		s->text[old + len] = '\0';
		return;
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 4;
		l->v = xrealloc(l->v, l->cap * sizeof *l->v);
	}
	l->v[l->n].text = xstrndup(text, len);
	l->v[l->n].role = role;
	l->n++;
}

size_t
tui_span_line_width(const struct span_line *l)
{
	size_t w = 0;

	for (size_t i = 0; i < l->n; i++)
		w += tui_uwidth_str(l->v[i].text, strlen(l->v[i].text));
	return w;
}

char *
tui_span_line_text(const struct span_line *l)
{
	struct buf b;

	buf_init(&b, (size_t)-1);
	for (size_t i = 0; i < l->n; i++)
		buf_adds(&b, l->v[i].text);
	return buf_take(&b);
}

struct span_wrapper {
	struct span_doc		*out;
	struct span_line	*cur;
	size_t			 col, width, hang;
	/* Spaces seen after the last word, emitted only if another word
	 * follows on the same line. */
	char			*pend;
	size_t			 pend_len, pend_w;
	int			 pend_role;
	int			 first;		/* still on the first line */
	int			 hard;
};

static void
span_newline(struct span_wrapper *w)
{
	static const char spaces[] = "                                ";
	size_t h = w->hang < sizeof spaces - 1 ? w->hang : sizeof spaces - 1;

	w->cur = tui_span_doc_add_line(w->out);
	tui_span_line_add(w->cur, spaces, h, 0);
	w->col = h;
	w->pend_len = w->pend_w = 0;
	w->first = 0;
}

/* Emits one word (no spaces unless hard) at the current position. */
static void
span_word(struct span_wrapper *w, const char *s, size_t len, int role)
{
	size_t ww = tui_uwidth_str(s, len);

	/* A word too wide for any line is cut where it stands. */
	if (!w->hard && w->col > w->hang && w->col + w->pend_w + ww > w->width &&
	    ww <= w->width - w->hang)
		span_newline(w);
	if (w->pend_len > 0) {
		tui_span_line_add(w->cur, w->pend, w->pend_len, w->pend_role);
		w->col += w->pend_w;
		w->pend_len = w->pend_w = 0;
	}
	while (len > 0) {
		size_t cols, k;
		size_t room = w->width > w->col ? w->width - w->col : 0;
		k = tui_uwidth_prefix(s, len, room, &cols);
		if (k == 0 && w->col <= w->hang) {
			/* Not even one character fits a fresh line: take
			 * one anyway so the loop ends. */
			unsigned cp;
			k = utf8_decode(s, len, &cp);
			if (k == 0)
				k = 1;
			cols = tui_uwidth_str(s, k);
		}
		if (k == 0) {
			span_newline(w);
			continue;
		}
		tui_span_line_add(w->cur, s, k, role);
		w->col += cols;
		s += k;
		len -= k;
		if (len > 0)
			span_newline(w);
	}
}

void
tui_span_wrap(struct span_doc *out, const struct span_line *in, int width,
    int hang, int hard)
{
	struct span_wrapper w;

	memset(&w, 0, sizeof w);
	w.out = out;
	w.width = width > 0 ? (size_t)width : 1;
	w.hang = hang > 0 && (size_t)hang < w.width / 2 ? (size_t)hang : 0;
	w.cur = tui_span_doc_add_line(out);
	w.pend = xmalloc(1);
	w.first = 1;
	w.hard = hard;
	for (size_t i = 0; i < in->n; i++) {
		const char *s = in->v[i].text;
		size_t len = strlen(s);
		int role = in->v[i].role;
		if (hard) {
			span_word(&w, s, len, role);
			continue;
		}
		while (len > 0) {
			size_t k = 0;
			if (*s == ' ') {
				while (k < len && s[k] == ' ')
					k++;
				/* Kept between words and as the first line's
				 * indent; dropped at the start of a wrapped
				 * line. */
				if (w.col > w.hang || w.first) {
					w.pend = xrealloc(w.pend,
					    w.pend_len + k + 1);
					memcpy(w.pend + w.pend_len, s, k);
					w.pend_len += k;
					w.pend_w += k;
					w.pend_role = role;
				}
			} else {
				while (k < len && s[k] != ' ')
					k++;
				span_word(&w, s, k, role);
			}
			s += k;
			len -= k;
		}
	}
	free(w.pend);
}
