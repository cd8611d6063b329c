/* buf: bounded growable byte buffers. */
#include "terp/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/util.h"

void
buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = b->cap = 0;
	b->max = max;
}

void
buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

int
buf_add(struct buf *b, const void *p, size_t n)
{
	if (n > b->max || b->len > b->max - n)
		return -1;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n + 1)
			cap *= 2;
		b->data = xrealloc(b->data, cap);
		b->cap = cap;
	}
	if (n > 0)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int
buf_adds(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int
buf_addc(struct buf *b, char c)
{
	return buf_add(b, &c, 1);
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	char small[256];
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n < sizeof small)
		return buf_add(b, small, (size_t)n);
	{
		char *big = xmalloc((size_t)n + 1);
		int r;
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
		r = buf_add(b, big, (size_t)n);
		free(big);
		return r;
	}
}

void
buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

char *
buf_take(struct buf *b)
{
	char *s = b->data ? b->data : xstrdup("");
	b->data = NULL;
	b->len = b->cap = 0;
	return s;
}

const char *
buf_str(const struct buf *b)
{
	return b->data ? b->data : "";
}
