/* libFuzzer target for the SSE parser. Besides "no crash, no leak", it
 * checks a property: the events must not depend on how the stream is
 * split into reads (whole, at a position, or byte by byte). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
record(void *arg, const struct sse_event *ev)
{
	struct buf *b = arg;

	if (strlen(ev->data) > ev->len)
		abort();
	buf_adds(b, ev->type);
	buf_addc(b, 0);
	buf_adds(b, ev->id);
	buf_addc(b, 0);
	buf_add(b, ev->data, ev->len);
	buf_addc(b, 1);
	return 0;
}

static char *
run(const uint8_t *s, size_t len, size_t mode, size_t *olen, int *rc)
{
	struct buf out;
	struct sse *p;
	int r = 0;

	buf_init(&out, 1 << 24);
	p = sse_new(256, 1024, record, &out);
	if (mode == 0) {
		r = sse_feed(p, s, len);
	} else if (mode == 1) {
		for (size_t i = 0; i < len && r == 0; i++)
			r = sse_feed(p, s + i, 1);
	} else {
		size_t at = mode % (len + 1);
		r = sse_feed(p, s, at);
		if (r == 0)
			r = sse_feed(p, s + at, len - at);
	}
	if (r == 0)
		r = sse_finish(p);
	*rc = r;
	sse_free(p);
	*olen = out.len;
	return buf_take(&out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t l0, l1, l2;
	int r0, r1, r2;
	char *a, *b, *c;
	size_t cut = size ? data[0] * 7u + 2 : 2;

	a = run(data, size, 0, &l0, &r0);
	b = run(data, size, 1, &l1, &r1);
	c = run(data, size, cut, &l2, &r2);
	/* On success all three must agree; an overflow may be found at a
	 * different point but must be found by all. */
	if (r0 != r1 || r0 != r2)
		abort();
	if (r0 == 0 && (l0 != l1 || l0 != l2 || memcmp(a, b, l0) != 0 ||
	    memcmp(a, c, l0) != 0))
		abort();
	free(a);
	free(b);
	free(c);
	return 0;
}
