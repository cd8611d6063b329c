#include <criterion/criterion.h>
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
