/* tui_tlines: lists of styled display lines, the TUI's intermediate form
 * between text (already sanitized) and ncurses. Wrapping by display
 * width lives here. Pure: no ncurses, no I/O, so it is unit-tested. */
#ifndef TERP_TUI_TLINES_H
#define TERP_TUI_TLINES_H

#include <stddef.h>

struct span_doc;

/* A run of text in one style. role is a TUI style role (tui.c's enum);
 * fg/bg >= 0 give explicit 256-colour indexes (thumbnail cells). */
struct tseg {
	char	*text;		/* owned, NUL-terminated UTF-8 */
	int	 role;
	int	 fg, bg;
};

struct tline {
	struct tseg	*seg;	/* owned */
	int		 nseg, cap;
	int		 tag;	/* what the line belongs to (cell number...) */
	int		 pic;	/* > 0: row pic_row of the TUI's inline
				 * picture pic - 1, drawn over it in pixels */
	int		 pic_row;
};

struct tlines {
	struct tline	*v;	/* owned */
	int		 n, cap;
};

void tui_tlines_init(struct tlines *ls);
void tui_tlines_free(struct tlines *ls);
/* Appends an empty line tagged tag; the pointer is valid until the next
 * tui_tlines_add. */
struct tline *tui_tlines_add(struct tlines *ls, int tag);

/* Appends s[0..n) to the line as one segment (copied). */
void tui_tline_add(struct tline *l, int role, const char *s, size_t n);
void tui_tline_adds(struct tline *l, int role, const char *s);
void tui_tline_add_color(struct tline *l, const char *s, size_t n, int fg, int bg);
/* Frees the line's segments; *l is empty after. */
void tui_tline_free(struct tline *l);
/* Display width of the whole line. */
int tui_tline_width(const struct tline *l);

/* Display width of one code point (tui_uwidth.h's, the one width function
 * of terp, so the layout is consistent everywhere). */
int tui_tlines_cpwidth(unsigned cp);
/* Display width of s[0..n) (UTF-8; invalid bytes count 1). */
int tui_tlines_width(const char *s, size_t n);
/* How many bytes of s[0..n) fit in width columns; *used gets their
 * width when not NULL. Never splits a character (combining marks stay
 * with their base). */
size_t tui_tlines_fit(const char *s, size_t n, int width, int *used);

/* Wraps text (sanitized UTF-8, '\n' separated) to width columns, at
 * spaces when possible, appending lines tagged tag. Each line starts
 * with prefix (role prole) on the first row and as many spaces on the
 * next ones. Returns the number of lines added. */
int tui_tlines_wrap(struct tlines *ls, const char *text, size_t len, int width,
    int role, const char *prefix, int prole, int tag);
/* Same but never wraps: each text line is cut at width, a trailing
 * marker ("…") showing the cut. */
int tui_tlines_cut(struct tlines *ls, const char *text, size_t len, int width,
    int role, const char *prefix, int prole, int tag);

/* Appends the lines of d (tui_span.h; at most max when max >= 0), each
 * after prefix (role prole), a span of role r becoming a segment of
 * role role_base + r. Returns the number of lines added. */
int tui_tlines_spans(struct tlines *ls, const struct span_doc *d, int max,
    const char *prefix, int prole, int role_base, int tag);

#endif
