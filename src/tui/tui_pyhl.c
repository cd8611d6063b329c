/* tui_pyhl: a one-pass scanner over the whole cell (not line by line) so a
 * triple-quoted string keeps its colour across lines. Not a tokenizer:
 * good enough for colour, never an error. */
#include "terp/tui_pyhl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "terp/tui_theme.h"
#include "terp/tui_uwidth.h"
#include "terp/util.h"

static const char *const pyhl_keywords[] = {
	"False", "None", "True", "and", "as", "assert", "async", "await",
	"break", "class", "continue", "def", "del", "elif", "else", "except",
	"finally", "for", "from", "global", "if", "import", "in", "is",
	"lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
	"while", "with", "yield", NULL,
};

static const char *const pyhl_builtins[] = {
	"abs", "all", "any", "bool", "dict", "enumerate", "filter", "float",
	"format", "getattr", "hasattr", "int", "isinstance", "len", "list",
	"map", "max", "min", "open", "print", "range", "repr", "reversed",
	"round", "self", "set", "sorted", "str", "sum", "super", "tuple",
	"type", "zip", NULL,
};

static int
pyhl_in(const char *const *list, const char *s, size_t n)
{
	for (; *list != NULL; list++)
		if (strlen(*list) == n && memcmp(*list, s, n) == 0)
			return 1;
	return 0;
}

struct pyhl {
	struct span_line	 line;	/* the source line being built */
	struct span_doc		*out;
	int			 width;
	size_t			 col;	/* for tab expansion */
	const char		*mark;	/* starts a wrapped line's rest, or NULL */
	int			 mark_role;
};

/* Lines from..out->n of out are the rest of one wrapped source line:
 * each starts with the hang tui_span_wrap gave it, which becomes the
 * mark. */
static void
pyhl_mark(struct pyhl *h, size_t from)
{
	for (size_t i = from; i < h->out->n; i++) {
		struct span_line *l = &h->out->lines[i];
		if (l->n == 0 || l->v[0].role != 0 ||
		    strspn(l->v[0].text, " ") != strlen(l->v[0].text))
			continue;
		free(l->v[0].text);
		l->v[0].text = xstrdup(h->mark);
		l->v[0].role = h->mark_role;
	}
}

static void
pyhl_flush(struct pyhl *h)
{
	if (h->width > 0 && h->mark != NULL) {
		size_t from = h->out->n + 1;
		/* at spaces, as prose: a number or a name stays whole */
		tui_span_wrap(h->out, &h->line, h->width,
		    (int)tui_uwidth_str(h->mark, strlen(h->mark)), 0);
		pyhl_mark(h, from);
	} else if (h->width > 0) {
		tui_span_wrap(h->out, &h->line, h->width, 0, 1);
	} else {
		struct span_line *l = tui_span_doc_add_line(h->out);
		*l = h->line;
		memset(&h->line, 0, sizeof h->line);
	}
	tui_span_line_free(&h->line);
	h->col = 0;
}

/* Adds s[0..n) with role, splitting at newlines and expanding tabs. */
static void
pyhl_add(struct pyhl *h, const char *s, size_t n, int role)
{
	size_t i = 0, start = 0;

	for (i = 0; i < n; i++) {
		if (s[i] == '\n' || s[i] == '\t') {
			tui_span_line_add(&h->line, s + start, i - start, role);
			h->col += i - start;
			if (s[i] == '\n') {
				pyhl_flush(h);
			} else {
				size_t k = 4 - h->col % 4;
				tui_span_line_add(&h->line, "    ", k, role);
				h->col += k;
			}
			start = i + 1;
		}
	}
	tui_span_line_add(&h->line, s + start, n - start, role);
	h->col += n - start;
}

/* The length of the string literal starting at s[i] (at a quote). */
static size_t
pyhl_string(const char *s, size_t n, size_t i)
{
	char q = s[i];
	size_t j;

	if (i + 2 < n && s[i + 1] == q && s[i + 2] == q) {
		for (j = i + 3; j < n; j++) {
			if (s[j] == '\\') {
				j++;
				continue;
			}
			if (j + 2 < n && s[j] == q && s[j + 1] == q &&
			    s[j + 2] == q)
				return j + 3 - i;
		}
		return n - i;	/* unterminated: to the end of the cell */
	}
	for (j = i + 1; j < n && s[j] != '\n'; j++) {
		if (s[j] == '\\' && j + 1 < n && s[j + 1] != '\n') {
			j++;
			continue;
		}
		if (s[j] == q)
			return j + 1 - i;
	}
	return j - i;
}

static size_t
pyhl_number(const char *s, size_t n, size_t i)
{
	size_t j = i;

	if (s[j] == '0' && j + 1 < n && strchr("xXoObB", s[j + 1])) {
		for (j += 2; j < n && (isxdigit((unsigned char)s[j]) ||
		    s[j] == '_'); j++)
			;
		return j - i;
	}
	while (j < n && (isdigit((unsigned char)s[j]) || s[j] == '_' ||
	    s[j] == '.'))
		j++;
	if (j < n && (s[j] == 'e' || s[j] == 'E')) {
		size_t k = j + 1;
		if (k < n && (s[k] == '+' || s[k] == '-'))
			k++;
		if (k < n && isdigit((unsigned char)s[k])) {
			for (j = k; j < n && isdigit((unsigned char)s[j]); j++)
				;
		}
	}
	if (j < n && (s[j] == 'j' || s[j] == 'J'))
		j++;
	return j - i;
}

static int
pyhl_ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80;
}

void
tui_pyhl_highlight(struct span_doc *out, const char *s, size_t n, int width,
    int base)
{
	tui_pyhl_highlight_wrap(out, s, n, width, base, NULL, 0);
}

void
tui_pyhl_highlight_wrap(struct span_doc *out, const char *s, size_t n,
    int width, int base, const char *mark, int mark_role)
{
	struct pyhl h;
	size_t i = 0, plain = 0;
	int line_start = 1;

	memset(&h, 0, sizeof h);
	h.out = out;
	h.width = width;
	h.mark = mark;
	h.mark_role = mark_role;
	while (i < n) {
		size_t k = 0;
		int role = -1;
		char c = s[i];

		if (c == '#') {
			while (i + k < n && s[i + k] != '\n')
				k++;
			role = THEME_CODE_COMMENT;
		} else if (c == '"' || c == '\'') {
			k = pyhl_string(s, n, i);
			role = THEME_CODE_STRING;
		} else if (c == '@' && line_start) {
			k = 1;
			while (i + k < n && (pyhl_ident_char(s[i + k]) ||
			    s[i + k] == '.'))
				k++;
			role = THEME_CODE_DECORATOR;
		} else if (isdigit((unsigned char)c) || (c == '.' && i + 1 < n &&
		    isdigit((unsigned char)s[i + 1]))) {
			if (i == 0 || !pyhl_ident_char(s[i - 1])) {
				k = pyhl_number(s, n, i);
				role = THEME_CODE_NUMBER;
			}
		} else if (pyhl_ident_char(c) && (i == 0 ||
		    !pyhl_ident_char(s[i - 1]))) {
			while (i + k < n && pyhl_ident_char(s[i + k]))
				k++;
			/* String prefixes: r"", b'', f"", rb"", ... */
			if (k <= 2 && i + k < n && (s[i + k] == '"' ||
			    s[i + k] == '\'') && strspn(s + i, "rRbBfFuU") >= k) {
				k += pyhl_string(s, n, i + k);
				role = THEME_CODE_STRING;
			} else if (pyhl_in(pyhl_keywords, s + i, k)) {
				role = THEME_CODE_KEYWORD;
			} else if (pyhl_in(pyhl_builtins, s + i, k)) {
				role = THEME_CODE_BUILTIN;
			} else {
				i += k;		/* a plain name */
				line_start = 0;
				continue;
			}
		}
		if (role < 0) {
			if (c == '\n')
				line_start = 1;
			else if (c != ' ' && c != '\t')
				line_start = 0;
			i++;
			continue;
		}
		pyhl_add(&h, s + plain, i - plain, base);
		pyhl_add(&h, s + i, k, role);
		i += k;
		plain = i;
		line_start = 0;
	}
	pyhl_add(&h, s + plain, n - plain, base);
	if (h.line.n > 0 || n == 0 || s[n - 1] != '\n')
		pyhl_flush(&h);
	tui_span_line_free(&h.line);
}
