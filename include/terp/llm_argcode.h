/* llm_argcode: the "code" member of a python_exec call's arguments,
 * decoded while the arguments still stream. The providers send the
 * arguments as JSON text cut anywhere (inside a key, an escape, a
 * \uXXXX or between the two halves of a surrogate pair); this reads the
 * pieces as they come, once, and keeps the string value of the object's
 * first top-level "code" member decoded so far, so that a frontend can
 * show the code before the call is whole. What it decodes is for
 * showing only: the call that runs is parsed whole (cJSON) when it is
 * complete. Memory: the decoded text, at most max bytes; the scanner
 * itself is a few words. No allocation beyond the buffer. */
#ifndef TERP_LLM_ARGCODE_H
#define TERP_LLM_ARGCODE_H

#include <stddef.h>

#include "terp/buf.h"

struct llm_argcode {
	int		 st;		/* scanner state (llm_argcode.c) */
	int		 nest;		/* inside a skipped value: [ { depth */
	int		 skip_str;	/* inside a string of a skipped value */
	int		 after;		/* the state a string's end returns to */
	char		 key[5];	/* the member name read so far */
	int		 klen;		/* its length; > 4: not "code" */
	unsigned	 hex, nhex;	/* a \uXXXX being read */
	unsigned	 high;		/* a high surrogate waiting for its low */
	int		 found;		/* the code member was seen */
	int		 full;		/* the buffer is full: no more */
	struct buf	 out;		/* the code decoded so far (UTF-8) */
};

/* An empty decoder keeping at most max bytes of code. */
void llm_argcode_init(struct llm_argcode *d, size_t max);
/* Forgets what was read (the arguments start over). */
void llm_argcode_reset(struct llm_argcode *d);
void llm_argcode_free(struct llm_argcode *d);
/* Reads the next piece of the arguments' JSON text. Returns 1 when the
 * code decoded so far grew, else 0. */
int llm_argcode_feed(struct llm_argcode *d, const char *p, size_t n);
/* The code decoded so far, cut to whole UTF-8 sequences (a character
 * whose bytes have not all come yet is left out); *len its length.
 * Owned by d, valid until its next feed. */
const char *llm_argcode_text(const struct llm_argcode *d, size_t *len);
/* Whether the code's string is closed (its ending quote came). */
int llm_argcode_done(const struct llm_argcode *d);

#endif
