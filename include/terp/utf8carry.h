/* utf8carry: passes a byte stream on in whole UTF-8 sequences. Network
 * reads and a model's text deltas may end inside a multi-byte character;
 * the incomplete tail (at most 3 bytes) is held back and put in front of
 * the next piece, so that no consumer ever sees half a character. Pure:
 * no allocation that outlives a call. Used by the llm decoders; the
 * kernel's output has the same need. */
#ifndef TERP_UTF8CARRY_H
#define TERP_UTF8CARRY_H

#include <stddef.h>

struct utf8carry {
	char	b[4];
	size_t	n;	/* bytes held back, 0 to 3 */
};

/* Receives bytes that end on a sequence boundary (arg as given). */
typedef void (*utf8carry_fn)(void *arg, const char *p, size_t n);

/* Passes on what was held back followed by p[0..n), minus an incomplete
 * sequence at the end, which is held back. emit is called at most once
 * and never with 0 bytes; p is borrowed for the call. */
void utf8carry_feed(struct utf8carry *c, const char *p, size_t n,
    utf8carry_fn emit, void *arg);
/* The stream is over, or something else comes between (a tool call):
 * passes on what is held back (a sequence never completed; the reader
 * sanitizes it) and empties c. */
void utf8carry_flush(struct utf8carry *c, utf8carry_fn emit, void *arg);

#endif
