/* outnorm: a cell's output the way a notebook shows it. A lone '\r'
 * takes the cursor back to the start of the line and what follows
 * overwrites it character by character (Jupyter's fixCarriageReturn),
 * "\r\n" is a newline, '\b' steps back one character: a progress bar of
 * 100 updates is one line. The one place where every reader of output
 * gets this (the tool result, the panes, the export through
 * cell_output; the event stream through the coalescer below). Pure: no
 * I/O; UTF-8 safe (a character is never split; an invalid byte is one
 * character). */
#ifndef TERP_OUTNORM_H
#define TERP_OUTNORM_H

#include <stddef.h>

/* The text s[0..n) resolved: no '\r' and no '\b' are left in it (a
 * trailing lone '\r' is dropped, the line before it stays). Never
 * longer than n. Returns a new string (NUL-terminated); *len gets its
 * length when not NULL. */
char *outnorm_text(const char *s, size_t n, size_t *len);

/* ------------------------------------------------------------ stream */

/* Receives a piece of the normalised stream (n > 0; p borrowed). */
typedef void (*outnorm_fn)(void *arg, const char *p, size_t n);

/* Coalesces a stream that arrives in arbitrary writes into pieces of
 * whole lines, and of what is pending when the owner flushes it (on a
 * timer: ipykernel flushes every 0.2 s). Each piece is resolved within
 * itself; a piece that rewrites a line a piece before left unfinished
 * starts with "\r" (or holds the '\b'), so that outnorm_text over the
 * concatenation of the pieces is outnorm_text of the stream. Holds at
 * most max bytes (a longer unfinished line goes out in pieces). Input
 * must end on UTF-8 boundaries (utf8carry). */
struct outnorm {
	char	*p;
	size_t	 len, cap, max;
	int	 midline;	/* what went out ends inside a line */
};

void outnorm_init(struct outnorm *o, size_t max);
void outnorm_free(struct outnorm *o);
/* Appends p[0..n); passes on everything up to the last newline. */
void outnorm_add(struct outnorm *o, const char *p, size_t n, outnorm_fn emit,
    void *arg);
/* Passes on what is pending. final: the stream ends (a trailing '\r'
 * is dropped and the next piece starts a fresh line); else a trailing
 * '\r' stays pending (it may be half of "\r\n"). */
void outnorm_flush(struct outnorm *o, int final, outnorm_fn emit, void *arg);
/* Bytes pending. */
size_t outnorm_pending(const struct outnorm *o);

#endif
