/* outnorm: carriage returns rewrite the line as a notebook shows them;
 * the coalesced stream, cut anywhere and flushed anywhere, resolves to
 * the same text as the whole; a progress bar is one line. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/outnorm.h"
#include "terp/sanitize.h"

static void
expect(const char *in, const char *want)
{
	size_t len;
	char *got = outnorm_text(in, strlen(in), &len);

	cr_assert_str_eq(got, want, "%s", in);
	cr_assert_eq(len, strlen(want));
	free(got);
}

Test(outnorm, carriage_returns_as_jupyter)
{
	expect("a\rb\n", "b\n");
	expect("abcdef\rxy\n", "xycdef\n");
	expect("one\r\ntwo\r\n", "one\ntwo\n");
	expect("  0%\r 50%\r100%\n", "100%\n");
	expect("done\r", "done");
	expect("ab\b\bX\n", "Xb\n");
	expect("\b\bq", "q");
	expect("x\n\ry", "x\ny");
	/* characters, not bytes, are overwritten */
	expect("\xc3\xa9t\xc3\xa9\rab", "ab\xc3\xa9");
	expect("abc\r\xe2\x82\xac", "\xe2\x82\xac" "bc");
	expect("", "");
}

struct out {
	struct buf	 all;
	int		 calls, cut;
};

static void
take(void *arg, const char *p, size_t n)
{
	struct out *o = arg;

	cr_assert_gt(n, 0);
	o->calls++;
	o->cut += utf8_complete_prefix(p, n) != n;
	buf_add(&o->all, p, n);
}

static char *
resolved(const char *s, size_t n)
{
	return outnorm_text(s, n, NULL);
}

/* The stream cut at a and b with a flush at the first cut (the timer):
 * the pieces resolve to the whole's text. */
Test(outnorm, pieces_resolve_to_the_whole)
{
	static const char *const cases[] = {
		"  0%|   |\r 10%|#  |\r 50%|## |\r100%|###|\n",
		"IDX 1\nIDX 2\npart\rover\r\nnext\n",
		"ab\b\bXY\rZ\nq\r",
		"\xc3\xa9t\xc3\xa9\r\xe2\x82\xac" "b\n\r\r\n",
		/* pieces that rewrite nothing go out as they are */
		"plain\nlines, one cut\n",
	};

	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		const char *s = cases[c];
		size_t n = strlen(s);
		char *want = resolved(s, n);
		for (size_t a = 0; a <= n; a++) {
			for (size_t b = a; b <= n; b++) {
				struct outnorm o;
				struct out got = { .calls = 0 };
				char *have;
				/* cut on character boundaries only, as utf8carry gives */
				if (utf8_complete_prefix(s, a) != a || utf8_complete_prefix(s, b) != b)
					continue;
				buf_init(&got.all, 1 << 16);
				outnorm_init(&o, 1 << 10);
				outnorm_add(&o, s, a, take, &got);
				outnorm_flush(&o, 0, take, &got);
				outnorm_add(&o, s + a, b - a, take, &got);
				outnorm_add(&o, s + b, n - b, take, &got);
				outnorm_flush(&o, 1, take, &got);
				have = resolved(buf_str(&got.all) ? buf_str(&got.all) : "", got.all.len);
				cr_assert_str_eq(have, want, "case %zu cut %zu %zu", c, a, b);
				cr_assert_eq(got.cut, 0);
				free(have);
				buf_free(&got.all);
				outnorm_free(&o);
			}
		}
		free(want);
	}
}

/* print('IDX', x) is four writes: one piece. A bar of 100 updates in
 * one read is one line, not 100. */
Test(outnorm, whole_lines_and_one_line_per_bar)
{
	struct outnorm o;
	struct out got = { .calls = 0 };
	struct buf bar;

	buf_init(&got.all, 1 << 16);
	outnorm_init(&o, 1 << 16);
	outnorm_add(&o, "IDX", 3, take, &got);
	outnorm_add(&o, " ", 1, take, &got);
	outnorm_add(&o, "7", 1, take, &got);
	cr_assert_eq(got.calls, 0);
	outnorm_add(&o, "\n", 1, take, &got);
	cr_assert_eq(got.calls, 1);
	cr_assert_str_eq(buf_str(&got.all), "IDX 7\n");

	buf_init(&bar, 1 << 16);
	for (int i = 0; i <= 100; i++)
		buf_printf(&bar, "\r%3d%%|%-10.*s|", i, i / 10, "##########");
	buf_addc(&bar, '\n');
	buf_reset(&got.all);
	outnorm_add(&o, buf_str(&bar), bar.len, take, &got);
	outnorm_flush(&o, 1, take, &got);
	cr_assert_str_eq(buf_str(&got.all), "100%|##########|\n");
	buf_free(&bar);
	buf_free(&got.all);
	outnorm_free(&o);
}

/* An unfinished line longer than the bound goes out in pieces: memory
 * stays bounded. */
Test(outnorm, bounded)
{
	struct outnorm o;
	struct out got = { .calls = 0 };
	char chunk[100];

	memset(chunk, 'x', sizeof chunk);
	buf_init(&got.all, 1 << 20);
	outnorm_init(&o, 1000);
	for (int i = 0; i < 100; i++) {
		outnorm_add(&o, chunk, sizeof chunk, take, &got);
		cr_assert_leq(outnorm_pending(&o), 1000);
	}
	outnorm_flush(&o, 1, take, &got);
	cr_assert_eq(got.all.len, 10000);
	buf_free(&got.all);
	outnorm_free(&o);
}
