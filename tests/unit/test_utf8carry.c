/* utf8carry: a stream cut at every position comes out whole, in pieces
 * that never end inside a character; what never completes is not held
 * back more than 3 bytes and comes out at the flush. */
#include <criterion/criterion.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/sanitize.h"
#include "terp/utf8carry.h"

struct out {
	struct buf	 all;
	int		 calls, empty, cut;
};

static void
take(void *arg, const char *p, size_t n)
{
	struct out *o = arg;

	o->calls++;
	o->empty += n == 0;
	o->cut += utf8_complete_prefix(p, n) != n;
	buf_add(&o->all, p, n);
}

/* Feeds s cut at a and b (a <= b), then flushes. */
static void
feed3(const char *s, size_t len, size_t a, size_t b, struct out *o)
{
	struct utf8carry c = { .n = 0 };

	memset(o, 0, sizeof *o);
	buf_init(&o->all, 1 << 16);
	utf8carry_feed(&c, s, a, take, o);
	utf8carry_feed(&c, s + a, b - a, take, o);
	utf8carry_feed(&c, s + b, len - b, take, o);
	cr_assert_leq(c.n, 3);
	utf8carry_flush(&c, take, o);
	cr_assert_eq(c.n, 0);
}

Test(utf8carry, every_two_cuts_give_the_stream_back_whole)
{
	/* 1, 2, 3 and 4 byte characters back to back. */
	const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z\xc3\xa9";
	size_t len = strlen(s);
	struct out o;

	for (size_t a = 0; a <= len; a++)
		for (size_t b = a; b <= len; b++) {
			feed3(s, len, a, b, &o);
			cr_assert_eq(o.all.len, len, "cuts %zu %zu", a, b);
			cr_assert(memcmp(o.all.data, s, len) == 0, "cuts %zu %zu", a, b);
			cr_assert_eq(o.empty, 0);
			cr_assert_eq(o.cut, 0, "a piece ended inside a character "
			    "(cuts %zu %zu)", a, b);
			buf_free(&o.all);
		}
}

Test(utf8carry, invalid_bytes_pass_and_a_cut_end_is_flushed)
{
	/* Stray continuation bytes and 0xff are not held back; a lead byte
	 * whose sequence never completes comes out at the flush. */
	const char *s = "\x80\x80x\xff\xc3";
	size_t len = strlen(s);
	struct utf8carry c = { .n = 0 };
	struct out o;

	memset(&o, 0, sizeof o);
	buf_init(&o.all, 1 << 10);
	utf8carry_feed(&c, s, len, take, &o);
	cr_assert_eq(o.all.len, len - 1);
	cr_assert_eq(c.n, 1);
	utf8carry_feed(&c, "", 0, take, &o);
	cr_assert_eq(c.n, 1);
	utf8carry_flush(&c, take, &o);
	cr_assert_eq(o.all.len, len);
	cr_assert(memcmp(o.all.data, s, len) == 0);
	utf8carry_flush(&c, take, &o);
	cr_assert_eq(o.all.len, len, "a second flush has nothing");
	buf_free(&o.all);
}

Test(utf8carry, long_piece_after_a_carry)
{
	/* A piece larger than the copy's stack buffer after a carry. */
	char big[1000];
	struct utf8carry c = { .n = 0 };
	struct out o;

	memset(big, 'b', sizeof big);
	big[0] = '\xa9';
	memset(&o, 0, sizeof o);
	buf_init(&o.all, 1 << 12);
	utf8carry_feed(&c, "\xc3", 1, take, &o);
	cr_assert_eq(o.calls, 0);
	utf8carry_feed(&c, big, sizeof big, take, &o);
	cr_assert_eq(o.calls, 1);
	cr_assert_eq(o.all.len, 1 + sizeof big);
	cr_assert(memcmp(o.all.data, "\xc3\xa9", 2) == 0);
	buf_free(&o.all);
}
