/* utf8carry: whole UTF-8 sequences out of a stream cut anywhere. */
#include "terp/utf8carry.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "terp/sanitize.h"
#include "terp/util.h"

void
utf8carry_feed(struct utf8carry *c, const char *p, size_t n,
    utf8carry_fn emit, void *arg)
{
	char small[256], *s = small;
	size_t len = c->n + n, ok;

	if (c->n == 0) {
		/* The common case: nothing held back, nothing copied. */
		ok = utf8_complete_prefix(p, n);
		assert(n - ok <= 3);
		c->n = n - ok;
		memcpy(c->b, p + ok, c->n);
		if (ok > 0)
			emit(arg, p, ok);
		return;
	}
	if (len > sizeof small)
		s = xmalloc(len);
	memcpy(s, c->b, c->n);
	memcpy(s + c->n, p, n);
	ok = utf8_complete_prefix(s, len);
	/* utf8_complete_prefix only cuts before a lead byte that lacks some
	 * of its continuation bytes, so the tail fits in c->b. */
	assert(len - ok <= 3);
	c->n = len - ok;
	memcpy(c->b, s + ok, c->n);
	if (ok > 0)
		emit(arg, s, ok);
	if (s != small)
		free(s);
}

void
utf8carry_flush(struct utf8carry *c, utf8carry_fn emit, void *arg)
{
	size_t n = c->n;

	c->n = 0;
	if (n > 0)
		emit(arg, c->b, n);
}
