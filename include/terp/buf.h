/* buf: a growable byte buffer with a maximum size fixed at creation
 * (curl's dynbuf idea): nothing the outside world sends can grow memory
 * without bound. The data is always NUL-terminated for convenience. */
#ifndef TERP_BUF_H
#define TERP_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char	*data;	/* NUL-terminated; NULL until the first append */
	size_t	 len;
	size_t	 cap;
	size_t	 max;	/* appends that would pass this fail */
};

/* Initialises an empty buffer that may hold at most max bytes. */
void buf_init(struct buf *b, size_t max);
/* Frees the storage; the buffer can be reused after buf_init. */
void buf_free(struct buf *b);
/* Empties the buffer but keeps its storage. */
void buf_reset(struct buf *b);
/* Appends; returns 0, or -1 when the result would exceed max (nothing
 * is appended then). */
int buf_add(struct buf *b, const void *p, size_t n);
int buf_adds(struct buf *b, const char *s);
int buf_addc(struct buf *b, char c);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Removes the first n bytes. */
void buf_consume(struct buf *b, size_t n);
/* Returns the contents as a new string owned by the caller and leaves
 * the buffer empty (storage handed over). Never NULL. */
char *buf_take(struct buf *b);
/* The contents as a C string ("" when empty); owned by the buffer. */
const char *buf_str(const struct buf *b);

#endif
