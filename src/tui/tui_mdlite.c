/* tui_mdlite: line-oriented Markdown-lite. Blocks are recognised by their
 * first characters; paragraphs are joined and wrapped with tui_span_wrap;
 * tables are measured first, then shrunk column by column to fit. */
#include "terp/tui_mdlite.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/tui_pyhl.h"
#include "terp/tui_theme.h"
#include "terp/tui_uwidth.h"
#include "terp/util.h"

#define MD_MAX_COLS	32	/* table columns */

struct md_src {
	const char	*p;
	size_t		 len;
};

/* Finds the closing marker for an inline run. */
static const char *
md_find(const char *s, const char *end, const char *mark, size_t mlen)
{
	for (const char *p = s; p + mlen <= end; p++) {
		if (*p == '\\') {
			p++;
			continue;
		}
		if (memcmp(p, mark, mlen) == 0)
			return p;
	}
	return NULL;
}

/* Appends s[0..n) with inline markup resolved into spans on l. Roles
 * inside: bold, italic, code; `base` elsewhere. A heading keeps its
 * role for bold and italic. */
static void
md_inline(struct span_line *l, const char *s, size_t n, int base)
{
	const char *p = s, *end = s + n, *plain = s;

	while (p < end) {
		const char *close = NULL;
		size_t ml = 0;
		int role = base;

		if (*p == '\\' && p + 1 < end && strchr("\\`*_[]#|", p[1])) {
			tui_span_line_add(l, plain, (size_t)(p - plain), base);
			plain = p + 1;
			p += 2;
			continue;
		}
		if (*p == '`') {
			ml = 1;
			close = md_find(p + 1, end, "`", 1);
			role = THEME_MD_CODE;
		} else if ((*p == '*' || *p == '_') && p + 1 < end &&
		    p[1] == *p) {
			ml = 2;
			close = md_find(p + 2, end, *p == '*' ? "**" : "__", 2);
			role = base == THEME_MD_HEADING ? base : THEME_MD_BOLD;
		} else if ((*p == '*' || *p == '_') && p + 1 < end &&
		    p[1] != ' ' && (p == s || !isalnum((unsigned char)p[-1]))) {
			/* _x_ only at a word start, so snake_case stays. */
			ml = 1;
			close = md_find(p + 1, end, *p == '*' ? "*" : "_", 1);
			if (close != NULL && *p == '_' && close + 1 < end &&
			    isalnum((unsigned char)close[1]))
				close = NULL;
			role = base == THEME_MD_HEADING ? base : THEME_MD_ITALIC;
		} else if (*p == '[') {
			const char *rb = md_find(p + 1, end, "]", 1);
			if (rb != NULL && rb + 1 < end && rb[1] == '(') {
				const char *rp = md_find(rb + 2, end, ")", 1);
				if (rp != NULL) {
					tui_span_line_add(l, plain,
					    (size_t)(p - plain), base);
					md_inline(l, p + 1, (size_t)(rb - p - 1),
					    base);
					tui_span_line_add(l, " <", 2, THEME_MD_QUOTE);
					tui_span_line_add(l, rb + 2,
					    (size_t)(rp - rb - 2), THEME_MD_QUOTE);
					tui_span_line_add(l, ">", 1, THEME_MD_QUOTE);
					p = plain = rp + 1;
					continue;
				}
			}
		}
		if (close == NULL || close == p + ml) {
			p++;
			continue;
		}
		tui_span_line_add(l, plain, (size_t)(p - plain), base);
		tui_span_line_add(l, p + ml, (size_t)(close - p - ml), role);
		p = plain = close + ml;
	}
	tui_span_line_add(l, plain, (size_t)(end - plain), base);
}

static int
md_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)s[i]))
			return 0;
	return 1;
}

static size_t
md_indent(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && s[i] == ' ')
		i++;
	return i;
}

/* A fence line: ``` or ~~~; *lang gets the info word. */
static int
md_fence(const char *s, size_t n, const char **lang, size_t *llen)
{
	size_t i = md_indent(s, n);

	if (n - i < 3 || !(memcmp(s + i, "```", 3) == 0 ||
	    memcmp(s + i, "~~~", 3) == 0))
		return 0;
	i += 3;
	while (i < n && (s[i] == '`' || s[i] == '~' || s[i] == ' '))
		i++;
	*lang = s + i;
	*llen = 0;
	while (i + *llen < n && !isspace((unsigned char)s[i + *llen]))
		(*llen)++;
	return 1;
}

/* A list item: returns the marker's length including the space after
 * it, and writes the bullet to show into bullet[]. */
static size_t
md_list_item(const char *s, size_t n, char *bullet, size_t bsize)
{
	size_t i = 0;

	if (n >= 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') &&
	    s[1] == ' ') {
		snprintf(bullet, bsize, "\u2022 ");
		return 2;
	}
	while (i < n && i < 9 && isdigit((unsigned char)s[i]))
		i++;
	if (i > 0 && i + 1 < n && (s[i] == '.' || s[i] == ')') &&
	    s[i + 1] == ' ') {
		snprintf(bullet, bsize, "%.*s. ", (int)i, s);
		return i + 2;
	}
	return 0;
}

static int
md_rule(const char *s, size_t n)
{
	size_t k = 0;
	char c = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ')
			continue;
		if (c == 0 && (s[i] == '-' || s[i] == '*' || s[i] == '_'))
			c = s[i];
		if (s[i] != c)
			return 0;
		k++;
	}
	return k >= 3;
}

/* Splits a table row into cells (trimmed). Returns the count. */
static int
md_cells(const char *s, size_t n, const char **cs, size_t *cl, int max)
{
	size_t i = md_indent(s, n);
	int nc = 0;

	while (n > i && isspace((unsigned char)s[n - 1]))
		n--;
	if (i < n && s[i] == '|')
		i++;
	if (n > i && s[n - 1] == '|' && (n < 2 || s[n - 2] != '\\'))
		n--;
	while (i <= n && nc < max) {
		size_t j = i;
		while (j < n && !(s[j] == '|' && (j == 0 || s[j - 1] != '\\')))
			j++;
		size_t a = i, b = j;
		while (a < b && isspace((unsigned char)s[a]))
			a++;
		while (b > a && isspace((unsigned char)s[b - 1]))
			b--;
		cs[nc] = s + a;
		cl[nc] = b - a;
		nc++;
		i = j + 1;
	}
	return nc;
}

static int
md_table_sep(const char *s, size_t n)
{
	int dash = 0, pipe = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '-')
			dash = 1;
		else if (s[i] == '|')
			pipe = 1;
		else if (s[i] != ':' && s[i] != ' ')
			return 0;
	}
	return dash && pipe;
}

/* Lines of the input, as offsets. */
struct md_lines {
	const char	**p;
	size_t		 *n;
	size_t		  count;
};

static void
md_split(struct md_lines *ls, const char *text, size_t len)
{
	size_t cap = 64;
	const char *p = text, *end = text + len;

	ls->p = xmalloc(cap * sizeof *ls->p);
	ls->n = xmalloc(cap * sizeof *ls->n);
	ls->count = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (ls->count == cap) {
			cap *= 2;
			ls->p = xrealloc(ls->p, cap * sizeof *ls->p);
			ls->n = xrealloc(ls->n, cap * sizeof *ls->n);
		}
		if (n > 0 && p[n - 1] == '\r')
			n--;
		ls->p[ls->count] = p;
		ls->n[ls->count++] = n;
		p += (nl ? (size_t)(nl - p) + 1 : n);
	}
}

/* Adds cell text (already spans in `c`) to row l, cut or padded to w
 * columns with the given alignment ('l', 'c', 'r'). */
static void
md_table_cell(struct span_line *l, const struct span_line *c, size_t w,
    char align)
{
	static const char sp[] = "                                        ";
	size_t cw = tui_span_line_width(c), used = 0, pad;

	if (cw > w) {
		/* Cut, leaving a column for the ellipsis. */
		for (size_t i = 0; i < c->n && used + 1 < w; i++) {
			size_t cols, k;
			k = tui_uwidth_prefix(c->v[i].text, strlen(c->v[i].text),
			    w - 1 - used, &cols);
			tui_span_line_add(l, c->v[i].text, k, c->v[i].role);
			used += cols;
			if (k < strlen(c->v[i].text))
				break;
		}
		tui_span_line_add(l, "\u2026", 3, THEME_TABLE_BORDER);
		used++;
		for (; used < w; used++)
			tui_span_line_add(l, " ", 1, THEME_NORMAL);
		return;
	}
	pad = w - cw;
	size_t left = align == 'r' ? pad : align == 'c' ? pad / 2 : 0;
	for (size_t k = left; k > 0;) {
		size_t m = k < sizeof sp - 1 ? k : sizeof sp - 1;
		tui_span_line_add(l, sp, m, THEME_NORMAL);
		k -= m;
	}
	for (size_t i = 0; i < c->n; i++)
		tui_span_line_add(l, c->v[i].text, strlen(c->v[i].text),
		    c->v[i].role);
	for (size_t k = pad - left; k > 0;) {
		size_t m = k < sizeof sp - 1 ? k : sizeof sp - 1;
		tui_span_line_add(l, sp, m, THEME_NORMAL);
		k -= m;
	}
}

static void
md_table_rule(struct span_doc *out, const size_t *w, int nc, const char *l,
    const char *m, const char *r)
{
	struct span_line *line = tui_span_doc_add_line(out);

	tui_span_line_add(line, l, strlen(l), THEME_TABLE_BORDER);
	for (int c = 0; c < nc; c++) {
		for (size_t k = 0; k < w[c] + 2; k++)
			tui_span_line_add(line, "\u2500", 3, THEME_TABLE_BORDER);
		tui_span_line_add(line, c + 1 < nc ? m : r, strlen(m),
		    THEME_TABLE_BORDER);
	}
}

/* Renders the table in lines [first, last): header, separator, rows. */
static void
md_table(struct span_doc *out, const struct md_lines *ls, size_t first,
    size_t last, int width)
{
	const char *cs[MD_MAX_COLS];
	size_t cl[MD_MAX_COLS], w[MD_MAX_COLS] = { 0 }, total;
	char align[MD_MAX_COLS];
	int nc, n;
	size_t nrows = last - first - 1;
	struct span_line *cells;

	nc = md_cells(ls->p[first], ls->n[first], cs, cl, MD_MAX_COLS);
	n = md_cells(ls->p[first + 1], ls->n[first + 1], cs, cl, MD_MAX_COLS);
	for (int c = 0; c < nc; c++) {
		align[c] = 'l';
		if (c < n && cl[c] > 0) {
			int lc = cs[c][0] == ':', rc = cs[c][cl[c] - 1] == ':';
			align[c] = lc && rc ? 'c' : rc ? 'r' : 'l';
		}
	}
	/* Parse every cell's inline markup once; measure. */
	cells = xcalloc(nrows * (size_t)nc, sizeof *cells);
	for (size_t r = 0, i = first; i < last; i++) {
		if (i == first + 1)
			continue;
		n = md_cells(ls->p[i], ls->n[i], cs, cl, MD_MAX_COLS);
		for (int c = 0; c < nc && c < n; c++) {
			struct span_line *cell = &cells[r * (size_t)nc + c];
			md_inline(cell, cs[c], cl[c], r == 0 ?
			    THEME_TABLE_HEADER : THEME_NORMAL);
			size_t cw = tui_span_line_width(cell);
			if (cw > w[c])
				w[c] = cw;
		}
		r++;
	}
	/* "│ a │ b │": 3 columns per cell of border and padding, plus 1. */
	for (int c = 0; c < nc; c++)
		if (w[c] < 1)
			w[c] = 1;
	for (;;) {
		int widest = 0;
		total = 1;
		for (int c = 0; c < nc; c++) {
			total += w[c] + 3;
			if (w[c] > w[widest])
				widest = c;
		}
		if (total <= (size_t)width || w[widest] <= 3)
			break;
		w[widest]--;
	}
	md_table_rule(out, w, nc, "\u250c", "\u252c", "\u2510");
	for (size_t r = 0; r < nrows; r++) {
		struct span_line *line = tui_span_doc_add_line(out);
		tui_span_line_add(line, "\u2502", 3, THEME_TABLE_BORDER);
		for (int c = 0; c < nc; c++) {
			tui_span_line_add(line, " ", 1, THEME_NORMAL);
			md_table_cell(line, &cells[r * (size_t)nc + c], w[c],
			    align[c]);
			tui_span_line_add(line, " ", 1, THEME_NORMAL);
			tui_span_line_add(line, "\u2502", 3, THEME_TABLE_BORDER);
		}
		if (r == 0)
			md_table_rule(out, w, nc, "\u251c", "\u253c",
			    "\u2524");
	}
	md_table_rule(out, w, nc, "\u2514", "\u2534", "\u2518");
	for (size_t i = 0; i < nrows * (size_t)nc; i++)
		tui_span_line_free(&cells[i]);
	free(cells);
}

/* Wraps a logical line with a prefix (bullet, quote bar) and a hanging
 * indent the prefix's width. */
static void
md_emit(struct span_doc *out, const char *prefix, int prole, size_t indent,
    const char *s, size_t n, int base, int width)
{
	struct span_line l = { 0 };
	static const char sp[] = "                ";
	size_t hang;

	if (indent > sizeof sp - 1)
		indent = sizeof sp - 1;
	tui_span_line_add(&l, sp, indent, THEME_NORMAL);
	tui_span_line_add(&l, prefix, strlen(prefix), prole);
	hang = indent + tui_uwidth_str(prefix, strlen(prefix));
	md_inline(&l, s, n, base);
	tui_span_wrap(out, &l, width, (int)hang, 0);
	tui_span_line_free(&l);
}

void
tui_mdlite_render(struct span_doc *out, const char *text, size_t len, int width)
{
	struct md_lines ls;
	size_t i = 0;
	int last_blank = 1;

	if (width < 4)
		width = 4;
	if (len > MDLITE_MAX_INPUT)
		len = MDLITE_MAX_INPUT;
	md_split(&ls, text, len);
	while (i < ls.count) {
		const char *s = ls.p[i], *lang;
		size_t n = ls.n[i], ind = md_indent(s, n), llen, k;
		char bullet[16];

		if (md_blank(s, n)) {
			if (!last_blank)
				tui_span_doc_add_line(out);
			last_blank = 1;
			i++;
			continue;
		}
		last_blank = 0;
		if (md_fence(s, n, &lang, &llen)) {
			size_t j = i + 1, end;
			int py = (llen == 6 && memcmp(lang, "python", 6) == 0) ||
			    (llen == 2 && memcmp(lang, "py", 2) == 0) ||
			    (llen == 7 && memcmp(lang, "python3", 7) == 0);
			while (j < ls.count && !md_fence(ls.p[j], ls.n[j], &lang,
			    &llen))
				j++;
			if (j > i + 1) {
				end = (size_t)(ls.p[j - 1] + ls.n[j - 1] -
				    ls.p[i + 1]);
				if (py) {
					tui_pyhl_highlight(out, ls.p[i + 1], end,
					    width, THEME_CELL_CODE);
				} else {
					struct span_doc tmp;
					tui_span_doc_init(&tmp);
					tui_pyhl_highlight(&tmp, ls.p[i + 1], end,
					    width, THEME_MD_CODE);
					/* Not Python: one colour throughout. */
					for (size_t t = 0; t < tmp.n; t++) {
						char *txt = tui_span_line_text(
						    &tmp.lines[t]);
						tui_span_line_add(tui_span_doc_add_line(
						    out), txt, strlen(txt),
						    THEME_MD_CODE);
						free(txt);
					}
					tui_span_doc_free(&tmp);
				}
			}
			i = j < ls.count ? j + 1 : j;
			continue;
		}
		if (ind < n && s[ind] == '#') {
			k = ind;
			while (k < n && s[k] == '#')
				k++;
			if (k - ind <= 6 && (k == n || s[k] == ' ')) {
				while (k < n && s[k] == ' ')
					k++;
				md_emit(out, "", THEME_NORMAL, 0, s + k, n - k,
				    THEME_MD_HEADING, width);
				i++;
				continue;
			}
		}
		if (md_rule(s, n)) {
			struct span_line *l = tui_span_doc_add_line(out);
			for (int c = 0; c < width; c++)
				tui_span_line_add(l, "\u2500", 3, THEME_TABLE_BORDER);
			i++;
			continue;
		}
		if (i + 1 < ls.count && memchr(s, '|', n) != NULL &&
		    md_table_sep(ls.p[i + 1], ls.n[i + 1])) {
			size_t j = i + 2;
			while (j < ls.count && !md_blank(ls.p[j], ls.n[j]) &&
			    memchr(ls.p[j], '|', ls.n[j]) != NULL)
				j++;
			md_table(out, &ls, i, j, width);
			i = j;
			continue;
		}
		if ((k = md_list_item(s + ind, n - ind, bullet,
		    sizeof bullet)) > 0) {
			md_emit(out, bullet, THEME_MD_BULLET, ind / 2 * 2,
			    s + ind + k, n - ind - k, THEME_NORMAL, width);
			i++;
			continue;
		}
		if (s[ind] == '>') {
			k = ind + 1;
			if (k < n && s[k] == ' ')
				k++;
			md_emit(out, "\u2502 ", THEME_MD_QUOTE, 0, s + k, n - k,
			    THEME_MD_QUOTE, width);
			i++;
			continue;
		}
		/* A paragraph: this line and the following plain ones,
		 * joined with spaces. */
		{
			struct span_line l = { 0 };
			size_t j = i;
			while (j < ls.count && !md_blank(ls.p[j], ls.n[j])) {
				const char *t = ls.p[j] + md_indent(ls.p[j],
				    ls.n[j]);
				size_t tn = ls.n[j] - (size_t)(t - ls.p[j]);
				if (j > i && (md_fence(ls.p[j], ls.n[j], &lang,
				    &llen) || t[0] == '#' || t[0] == '>' ||
				    md_list_item(t, tn, bullet,
				    sizeof bullet) > 0 || (j + 1 < ls.count &&
				    memchr(t, '|', tn) != NULL &&
				    md_table_sep(ls.p[j + 1], ls.n[j + 1]))))
					break;
				if (j > i)
					tui_span_line_add(&l, " ", 1, THEME_NORMAL);
				md_inline(&l, t, tn, THEME_NORMAL);
				j++;
			}
			tui_span_wrap(out, &l, width, 0, 0);
			tui_span_line_free(&l);
			i = j;
		}
	}
	free(ls.p);
	free(ls.n);
}
