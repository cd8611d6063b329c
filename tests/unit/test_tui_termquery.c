/* tui_termquery_keys: what the user typed while terp asked the terminal
 * (OSC 11, DA1) is kept, in order; the terminal's answers are not. */
#include <criterion/criterion.h>
#include <string.h>

#include "../../src/tui/tui_termquery.h"

static const char *
keys_of(const char *in, size_t n)
{
	static char out[256];
	size_t k = tui_termquery_keys(in, n, out, sizeof out - 1);

	out[k] = '\0';
	return out;
}

#define KEYS(s)	keys_of(s, sizeof s - 1)

Test(tui_termquery, answers_are_taken_out_keys_kept_in_order)
{
	cr_assert_str_eq(KEYS("ab\033]11;rgb:ffff/ffff/ffff\033\\cd\033[?62;4;22cef"), "abcdef");
	cr_assert_str_eq(KEYS("\033]11;rgb:0000/0000/0000\aq\r"), "q\r");	/* BEL ends it too */
	cr_assert_str_eq(KEYS("\033[?1;2c"), "");
	cr_assert_str_eq(KEYS("no answer at all\r"), "no answer at all\r");
}

Test(tui_termquery, keys_that_look_like_answers_are_keys)
{
	/* an arrow key, a ? typed, a c typed: none is a DA1 answer */
	cr_assert_str_eq(KEYS("\033[Ax?1c"), "\033[Ax?1c");
	cr_assert_str_eq(KEYS("\033[?62x"), "\033[?62x");	/* not digits and ; to a c */
	cr_assert_str_eq(KEYS("\033]11;x\033Xy"), "\033]11;x\033Xy");	/* ESC, not ST */
}

Test(tui_termquery, an_answer_cut_short_at_the_end_is_dropped)
{
	cr_assert_str_eq(KEYS("hi\033]11;rgb:ff"), "hi");
	cr_assert_str_eq(KEYS("hi\033[?62;4"), "hi");
	cr_assert_str_eq(KEYS("hi\033["), "hi");
	cr_assert_str_eq(KEYS("hi\033"), "hi");
}

Test(tui_termquery, keys_are_bounded)
{
	char out[4];

	cr_assert_eq(tui_termquery_keys("abcdefgh", 8, out, sizeof out), 4);
	cr_assert_eq(memcmp(out, "abcd", 4), 0);
}
