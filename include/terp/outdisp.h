/* outdisp: Jupyter's display outputs inside a cell's text stream.
 *
 * A display keeps its place among the prints only if it travels in the
 * same stream, so the driver marks one as a region of stdout:
 *
 *     "\n" ESC "]7701;show;" MIME ";" ID BEL "\n"   the content   "\n"
 *     ESC "]7701;end" BEL "\n"
 *
 * with "update" for "show" when update_display() replaces what every
 * earlier region of that id shows (a progress display), and the line
 * ESC "]7701;clear" BEL "\n" where clear_output() drops all the stream
 * showed before it (a "\n" before a mark makes it start a line, so
 * that a progress bar's '\r' never overwrites it; it goes with the
 * mark); MIME one of
 * text/plain and text/markdown, and ID letters, digits, '-' and '_' (up
 * to 64; empty: no id). Readers of the notebook get the text as Jupyter
 * shows it (outdisp_resolve): the marks gone, each id's regions showing
 * its last update, Markdown spans known; a live stream's reader gets the
 * content without the marks (outdisp_unmark), as jupyter-console prints
 * an update again.
 *
 * The cell shares its process with the driver, so a cell can write the
 * marks itself: that changes how its own output reads and nothing else.
 * Everything is parsed with bounds (a mark's length, ids tracked) and in
 * linear time; a malformed or unfinished mark is text, an end with no
 * region is dropped. Pure: no I/O. */
#ifndef TERP_OUTDISP_H
#define TERP_OUTDISP_H

#include <stddef.h>

#define OUTDISP_MARK	"\x1b]7701;"
#define OUTDISP_ID_MAX	64

/* A display region in resolved text: bytes [off, off+len). */
struct outdisp_span {
	size_t	off, len;
	int	markdown;	/* text/markdown, else text/plain */
};

/* Whether s[0..n) holds a mark (the cheap test before the others). */
int outdisp_has(const char *s, size_t n);

/* The text as a notebook shows it: regions in place with their ids' last
 * updates, the marks gone, then carriage returns and backspaces
 * resolved (outnorm_text) within each stretch of prints and each region;
 * a region always starts and ends a line. When spans is not NULL, *spans
 * gets the regions (a new array the caller frees, NULL when none) and
 * *nspans their count. Returns a new string; *len its length when not
 * NULL. */
char *outdisp_resolve(const char *s, size_t n, size_t *len,
    struct outdisp_span **spans, size_t *nspans);

/* The marked region showing text[0..n) (a '\n' added when it has none),
 * as the driver writes it, for a backend whose displays come typed
 * (Jupyter's display_data): id may be NULL or anything (a byte other
 * than a letter, digit, '-' or '_' becomes '_'; cut at OUTDISP_ID_MAX).
 * Returns a new string; *len its length. */
char *outdisp_region(const char *text, size_t n, int markdown, const char *id,
    int update, size_t *len);

/* s[0..n) with every well-formed mark line removed and the rest kept as
 * it is (for a live reader). Returns a new string; *len its length. */
char *outdisp_unmark(const char *s, size_t n, size_t *len);

#endif
