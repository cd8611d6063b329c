/* tui_span: styled text as lines of spans {text, theme role}, the output of
 * the Markdown-lite renderer and the Python highlighter and the input of
 * the TUI's text drawing; plus word wrapping by display width. Pure. */
#ifndef TERP_TUI_SPAN_H
#define TERP_TUI_SPAN_H

#include <stddef.h>

struct span {
	char	*text;		/* UTF-8, no newlines; owned by the line */
	int	 role;		/* an enum theme_role */
};

struct span_line {
	struct span	*v;
	size_t		 n, cap;
};

struct span_doc {
	struct span_line	*lines;
	size_t			 n, cap;
};

void tui_span_doc_init(struct span_doc *d);
/* Frees every line and span; the doc can be reused after init. */
void tui_span_doc_free(struct span_doc *d);
/* Appends an empty line and returns it (valid until the next append). */
struct span_line *tui_span_doc_add_line(struct span_doc *d);
/* Appends text[0..len) with role to the line, merging with the last
 * span when the role is the same. The text is copied. */
void tui_span_line_add(struct span_line *l, const char *text, size_t len,
    int role);
void tui_span_line_free(struct span_line *l);
/* The display width of a line. */
size_t tui_span_line_width(const struct span_line *l);
/* The line's text without styles, as a new string (tests, export). */
char *tui_span_line_text(const struct span_line *l);

/* Appends `in` to `out` wrapped to width columns. Words break at spaces;
 * a word wider than a line is cut by columns; hard != 0 cuts anywhere
 * (code). Continuation lines start with `hang` spaces. in is only read. */
void tui_span_wrap(struct span_doc *out, const struct span_line *in, int width,
    int hang, int hard);

#endif
