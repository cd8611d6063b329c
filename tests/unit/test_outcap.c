#include <criterion/criterion.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/outcap.h"
#include "terp/sanitize.h"
#include "terp/util.h"

Test(outcap, keeps_everything_when_small)
{
	struct outcap c;
	size_t len;
	char *s;

	outcap_init(&c, 8, 8);
	outcap_add(&c, "hello", 5);
	s = outcap_render(&c, &len);
	cr_assert_str_eq(s, "hello");
	cr_assert_eq(outcap_dropped(&c), 0);
	free(s);
	outcap_free(&c);
}

Test(outcap, head_tail_and_count)
{
	struct outcap c;
	char *s;

	outcap_init(&c, 4, 4);
	for (int i = 0; i < 10; i++)
		outcap_add(&c, "0123456789" + i, 1);
	s = outcap_render(&c, NULL);
	cr_assert_eq(outcap_dropped(&c), 2);
	cr_assert(strncmp(s, "0123", 4) == 0, "head: %s", s);
	cr_assert(strstr(s, "2 bytes") != NULL, "marker: %s", s);
	cr_assert(strcmp(s + strlen(s) - 4, "6789") == 0, "tail: %s", s);
	free(s);
	outcap_free(&c);
}

Test(outcap, huge_chunk_keeps_its_tail)
{
	struct outcap c;
	char big[1000];
	char *s;

	for (int i = 0; i < 1000; i++)
		big[i] = (char)('a' + i % 26);
	outcap_init(&c, 10, 10);
	outcap_add(&c, big, sizeof big);
	s = outcap_render(&c, NULL);
	cr_assert_eq(c.total, 1000);
	cr_assert_eq(outcap_dropped(&c), 980);
	cr_assert(memcmp(s + strlen(s) - 10, big + 990, 10) == 0);
	free(s);
	outcap_free(&c);
}

Test(truncate, keeps_head_and_tail_on_utf8_boundaries)
{
	char in[4000];
	char *out;

	for (int i = 0; i < 1000; i++)
		memcpy(in + i * 4, "\xF0\x9F\x98\x80", 4);	/* U+1F600 */
	out = text_truncate(in, sizeof in, 500);
	cr_assert(strstr(out, "bytes cut") != NULL);
	cr_assert(strlen(out) <= 520, "len %zu", strlen(out));
	/* every byte still decodes */
	for (size_t i = 0; out[i]; ) {
		unsigned cp;
		size_t k = utf8_decode(out + i, strlen(out + i), &cp);
		cr_assert(k > 0, "invalid UTF-8 at %zu", i);
		i += k;
	}
	free(out);
}

Test(sanitize, escapes_controls_and_bidi)
{
	const char in[] = "a\x1b]0;t\x07" "b\xc2\x9b" "c\xe2\x80\xae" "d\xff\n";
	char *s = sanitize_str(in, sizeof in - 1, SANITIZE_KEEP_NL);
	cr_assert_str_eq(s, "a\\u001b]0;t\\u0007b\\u009bc\\u202ed\xEF\xBF\xBD\n");
	free(s);
}

Test(sanitize, tabs_expand_to_columns)
{
	char *s = sanitize_str("ab\tc", 4, SANITIZE_EXPAND_TABS);
	cr_assert_str_eq(s, "ab      c");
	free(s);
}

Test(sanitize, complete_prefix_stops_before_cut_sequence)
{
	cr_assert_eq(utf8_complete_prefix("ab\xe2\x82", 4), 2);
	cr_assert_eq(utf8_complete_prefix("ab\xe2\x82\xac", 5), 5);
	cr_assert_eq(utf8_complete_prefix("ab", 2), 2);
}

Test(util, parse_size_and_duration)
{
	uint64_t v;
	int64_t ms;

	cr_assert_eq(parse_size("4G", &v), 0);
	cr_assert_eq(v, 4ULL << 30);
	cr_assert_eq(parse_size("512MiB", &v), 0);
	cr_assert_eq(v, 512ULL << 20);
	cr_assert_eq(parse_size("x", &v), -1);
	cr_assert_eq(parse_size("4Q", &v), -1);
	cr_assert_eq(parse_duration_ms("120", &ms), 0);
	cr_assert_eq(ms, 120000);
	cr_assert_eq(parse_duration_ms("500ms", &ms), 0);
	cr_assert_eq(ms, 500);
	cr_assert_eq(parse_duration_ms("2m", &ms), 0);
	cr_assert_eq(ms, 120000);
	cr_assert_eq(parse_duration_ms("-1", &ms), -1);
}

Test(buf, refuses_past_max)
{
	struct buf b;

	buf_init(&b, 8);
	cr_assert_eq(buf_adds(&b, "12345678"), 0);
	cr_assert_eq(buf_addc(&b, '9'), -1);
	cr_assert_str_eq(buf_str(&b), "12345678");
	buf_free(&b);
}

/* The head grows with what comes: a cell that prints one line holds a
 * few bytes for the whole session, not the head's bound (160 KiB per
 * cell was most of a long session's memory). */
Test(outcap, a_short_output_holds_little)
{
	struct outcap c;
	char *s;

	outcap_init(&c, 1 << 20, 1 << 20);
	outcap_add(&c, "1\n", 2);
	cr_assert_lt(malloc_usable_size(c.head), 4096, "%zu",
	    malloc_usable_size(c.head));
	for (int i = 0; i < 1000; i++)
		outcap_add(&c, "0123456789", 10);
	s = outcap_render(&c, NULL);
	cr_assert_eq(strlen(s), 10002);
	cr_assert(strncmp(s, "1\n0123456789", 12) == 0);
	free(s);
	outcap_free(&c);
}

/* The cut line of a text the notebook had already cut (an outcap's):
 * the real number of bytes cut and that the rest is nowhere, not "in
 * the notebook" (a 100 MiB output said 323733 bytes cut, all in the
 * notebook). */
Test(truncate, says_the_real_size_past_the_notebooks_cap)
{
	char in[4000];
	char *out;

	memset(in, 'x', sizeof in);
	out = text_truncate_of(in, sizeof in, 1000, 100000000, 100004000);
	cr_assert_not_null(strstr(out, "100003"), "%s", out);	/* cut: 100,003,xxx */
	cr_assert_not_null(strstr(out, "95.4 MiB"), "%s", out);
	cr_assert_null(strstr(out, "full output is in the notebook"), "%s", out);
	cr_assert_lt(strlen(out), 1000 + 1);
	free(out);
	out = text_truncate_of(in, sizeof in, 1000, 0, 4000);
	cr_assert_not_null(strstr(out, "full output is in the notebook"), "%s", out);
	free(out);
}
