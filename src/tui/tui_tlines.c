/* tui_tlines: styled display lines and wrapping by display width (see
 * tui_tlines.h). Everything the TUI draws passes through here first, so
 * widths are measured once, with one function. */
#include "terp/tui_tlines.h"

#include <stdlib.h>
#include <string.h>

#include "terp/sanitize.h"
#include "terp/tui_span.h"
#include "terp/tui_uwidth.h"
#include "terp/util.h"

void
tui_tlines_init(struct tlines *ls)
{
	memset(ls, 0, sizeof *ls);
}

void
tui_tline_free(struct tline *l)
{
	for (int i = 0; i < l->nseg; i++)
		free(l->seg[i].text);
	free(l->seg);
	memset(l, 0, sizeof *l);
}

void
tui_tlines_free(struct tlines *ls)
{
	for (int i = 0; i < ls->n; i++)
		tui_tline_free(&ls->v[i]);
	free(ls->v);
	memset(ls, 0, sizeof *ls);
}

struct tline *
tui_tlines_add(struct tlines *ls, int tag)
{
	if (ls->n == ls->cap) {
		ls->cap = ls->cap ? ls->cap * 2 : 16;
		ls->v = xrealloc(ls->v, (size_t)ls->cap * sizeof *ls->v);
	}
	struct tline *l = &ls->v[ls->n++];
	memset(l, 0, sizeof *l);
	l->tag = tag;
	return l;
}

static struct tseg *
tline_push(struct tline *l)
{
	if (l->nseg == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 4;
		l->seg = xrealloc(l->seg, (size_t)l->cap * sizeof *l->seg);
	}
	struct tseg *s = &l->seg[l->nseg++];
	memset(s, 0, sizeof *s);
	s->fg = s->bg = -1;
	return s;
}

void
tui_tline_add(struct tline *l, int role, const char *s, size_t n)
{
	struct tseg *g = tline_push(l);
	g->text = xstrndup(s, n);
	g->role = role;
}

void
tui_tline_adds(struct tline *l, int role, const char *s)
{
	tui_tline_add(l, role, s, strlen(s));
}

void
tui_tline_add_color(struct tline *l, const char *s, size_t n, int fg, int bg)
{
	struct tseg *g = tline_push(l);
	g->text = xstrndup(s, n);
	g->role = 0;
	g->fg = fg;
	g->bg = bg;
}

int
tui_tlines_cpwidth(unsigned cp)
{
	return tui_uwidth_cp(cp);
}

/* Decodes one character; invalid bytes count as one column each. */
static size_t
next_char(const char *s, size_t n, int *w)
{
	unsigned cp;
	size_t k = utf8_decode(s, n, &cp);
	if (k == 0) {
		*w = 1;
		return 1;
	}
	*w = tui_tlines_cpwidth(cp);
	return k;
}

int
tui_tlines_width(const char *s, size_t n)
{
	int w = 0, cw;
	size_t i = 0;
	while (i < n) {
		i += next_char(s + i, n - i, &cw);
		w += cw;
	}
	return w;
}

int
tui_tline_width(const struct tline *l)
{
	int w = 0;
	for (int i = 0; i < l->nseg; i++)
		w += tui_tlines_width(l->seg[i].text, strlen(l->seg[i].text));
	return w;
}

size_t
tui_tlines_fit(const char *s, size_t n, int width, int *used)
{
	int w = 0, cw;
	size_t i = 0;
	while (i < n) {
		size_t k = next_char(s + i, n - i, &cw);
		if (w + cw > width)
			break;
		w += cw;
		i += k;
	}
	if (used)
		*used = w;
	return i;
}

static struct tline *
start_line(struct tlines *ls, int tag, const char *prefix, int prole,
    int first, int pw)
{
	struct tline *l = tui_tlines_add(ls, tag);
	if (pw > 0) {
		if (first)
			tui_tline_adds(l, prole, prefix);
		else {
			char sp[64];
			int k = pw < 63 ? pw : 63;
			memset(sp, ' ', (size_t)k);
			tui_tline_add(l, prole, sp, (size_t)k);
		}
	}
	return l;
}

int
tui_tlines_wrap(struct tlines *ls, const char *text, size_t len, int width,
    int role, const char *prefix, int prole, int tag)
{
	if (!prefix)
		prefix = "";
	int pw = tui_tlines_width(prefix, strlen(prefix));
	int avail = width - pw;
	int added = 0, first = 1;
	if (avail < 1)
		avail = 1;
	size_t pos = 0;
	do {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len;
		size_t p = pos;
		do {
			struct tline *l = start_line(ls, tag, prefix, prole,
			    first, pw);
			first = 0;
			added++;
			size_t rest = end - p;
			size_t k = tui_tlines_fit(text + p, rest, avail, NULL);
			if (k < rest) {
				/* break after the last space in the piece */
				size_t b = k;
				while (b > 0 && text[p + b - 1] != ' ')
					b--;
				if (b > 0)
					k = b;
				if (k == 0) {	/* a glyph wider than the room */
					int cw;
					k = next_char(text + p, rest, &cw);
				}
			}
			size_t shown = k;
			while (shown > 0 && k < rest && text[p + shown - 1] == ' ')
				shown--;
			tui_tline_add(l, role, text + p, shown);
			p += k;
		} while (p < end);
		pos = end + 1;
	} while (pos <= len);
	return added;
}

int
tui_tlines_cut(struct tlines *ls, const char *text, size_t len, int width,
    int role, const char *prefix, int prole, int tag)
{
	if (!prefix)
		prefix = "";
	int pw = tui_tlines_width(prefix, strlen(prefix));
	int avail = width - pw, added = 0, first = 1;
	size_t pos = 0;
	do {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len;
		struct tline *l = start_line(ls, tag, prefix, prole, first, pw);
		first = 0;
		added++;
		size_t rest = end - pos;
		if (avail > 0) {
			size_t k = tui_tlines_fit(text + pos, rest, avail, NULL);
			if (k < rest) {
				k = tui_tlines_fit(text + pos, rest, avail - 1, NULL);
				tui_tline_add(l, role, text + pos, k);
				tui_tline_adds(l, role, "…");
			} else
				tui_tline_add(l, role, text + pos, k);
		}
		pos = end + 1;
	} while (pos <= len);
	return added;
}

int
tui_tlines_spans(struct tlines *ls, const struct span_doc *d, int max,
    const char *prefix, int prole, int role_base, int tag)
{
	int added = 0;
	for (size_t i = 0; i < d->n && (max < 0 || added < max); i++) {
		struct tline *l = tui_tlines_add(ls, tag);
		if (prefix && *prefix)
			tui_tline_adds(l, prole, prefix);
		for (size_t j = 0; j < d->lines[i].n; j++)
			tui_tline_adds(l, role_base + d->lines[i].v[j].role,
			    d->lines[i].v[j].text);
		added++;
	}
	return added;
}
