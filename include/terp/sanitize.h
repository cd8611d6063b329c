/* sanitize: makes text from the sandbox or the model safe to show on a
 * terminal. Pure. Invalid UTF-8 becomes U+FFFD; C0 controls (except
 * newline and, unless expanded, tab), DEL, C1 controls and the bidi
 * overrides U+202A-U+202E and U+2066-U+2069 become visible escapes such
 * as "\u001b" so that nothing can move the cursor, set the title, write
 * the clipboard or reorder text. */
#ifndef TERP_SANITIZE_H
#define TERP_SANITIZE_H

#include <stddef.h>

#include "terp/buf.h"

enum {
	SANITIZE_KEEP_NL	= 1 << 0,	/* keep '\n' (else escaped) */
	SANITIZE_EXPAND_TABS	= 1 << 1,	/* tabs to spaces (8 columns) */
	SANITIZE_KEEP_TAB	= 1 << 2,	/* keep '\t' as is */
	SANITIZE_CR_AS_NL	= 1 << 3,	/* "\r\n" and lone '\r' become '\n' */
	SANITIZE_UTF8_ONLY	= 1 << 4,	/* only repair UTF-8 (for JSON) */
};

/* Appends the sanitized form of in[0..len) to out. The column used for
 * tab expansion restarts after each newline; *col (may be NULL) carries
 * it across calls for streamed text. Returns 0 or -1 when out is full. */
int sanitize_append(struct buf *out, const char *in, size_t len, int flags,
    size_t *col);

/* Convenience: a new NUL-terminated sanitized string. */
char *sanitize_str(const char *in, size_t len, int flags);

/* Decodes one UTF-8 sequence at s (n bytes available). Returns its
 * length (1..4) and the code point in *cp, or 0 when invalid or cut
 * short (then *cp is U+FFFD). Strict: no overlongs, no surrogates. */
size_t utf8_decode(const char *s, size_t n, unsigned *cp);

/* Length of the longest prefix of s[0..n) that does not end inside an
 * incomplete UTF-8 sequence: streamed chunks are cut there and the rest
 * kept for the next chunk. */
size_t utf8_complete_prefix(const char *s, size_t n);

#endif
