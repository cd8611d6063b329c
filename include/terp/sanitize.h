/* sanitize: makes text from the sandbox or the model safe to show on a
 * terminal, to put in a JSON line, or to offer as a host file name.
 * Pure. Invalid UTF-8 becomes U+FFFD; C0 controls (except newline and,
 * unless expanded, tab), DEL, C1 controls (as the code points
 * U+0080-U+009F: raw bytes 0x80-0x9F are invalid UTF-8 already) and the
 * bidi controls U+061C, U+200E, U+200F, U+202A-U+202E and U+2066-U+2069
 * become visible escapes such as "\u001b" so that nothing can move the
 * cursor, set the title, write the clipboard or reorder text. */
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

/* 1 for the code points above that are never passed through as is. */
int sanitize_is_control(unsigned cp);

/* Copies the JSON text json[0..len) to out with every DEL, C1 control
 * and bidi control written as a \uXXXX escape (JSON printers such as
 * cJSON escape only C0), so a JSON line shown on a terminal cannot
 * drive it, and decodes to the same text. Such code points can only
 * stand inside strings, where the escape means the same thing. Invalid
 * UTF-8 becomes U+FFFD. Returns 0 or -1 when out is full. */
int sanitize_json_inert(struct buf *out, const char *json, size_t len);

/* A host file name for a name the sandbox (or anyone) chose: one path
 * component of at most max (>= 8) bytes of [A-Za-z0-9._+-], other bytes
 * as '_' (one per UTF-8 sequence), never starting with '.' (so neither
 * hidden nor "." or ".."), never empty. Only the part after the last
 * '/' is kept. A new string. */
char *sanitize_filename(const char *name, size_t max);

#endif
