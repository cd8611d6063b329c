/* Unit tests for tlines: wrapping and cutting by display width. */
#include <criterion/criterion.h>
#include <locale.h>
#include <string.h>

#include "terp/tui_span.h"
#include "terp/tui_tlines.h"

static void
setup(void)
{
	setlocale(LC_ALL, "C.UTF-8");
}

static const char *
seg(const struct tlines *ls, int line, int s)
{
	return ls->v[line].seg[s].text;
}

Test(tui_tlines, width_of_wide_and_combining, .init = setup)
{
	cr_assert_eq(tui_tlines_width("abc", 3), 3);
	cr_assert_eq(tui_tlines_width("日本", 6), 4);
	cr_assert_eq(tui_tlines_width("e\xcc\x81", 3), 1);	/* e + combining acute */
}

Test(tui_tlines, fit_never_splits_a_wide_char, .init = setup)
{
	int used;
	size_t k = tui_tlines_fit("a日本", 7, 4, &used);
	cr_assert_eq(k, 4);	/* "a日" */
	cr_assert_eq(used, 3);
}

Test(tui_tlines, wrap_at_spaces, .init = setup)
{
	struct tlines ls;
	tui_tlines_init(&ls);
	const char *t = "hello world foo\nbar";
	int n = tui_tlines_wrap(&ls, t, strlen(t), 11, 1, "> ", 2, 7);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(seg(&ls, 0, 0), "> ");
	cr_assert_str_eq(seg(&ls, 0, 1), "hello");
	cr_assert_str_eq(seg(&ls, 1, 0), "  ");
	cr_assert_str_eq(seg(&ls, 1, 1), "world foo");
	cr_assert_str_eq(seg(&ls, 2, 1), "bar");
	cr_assert_eq(ls.v[2].tag, 7);
	tui_tlines_free(&ls);
}

Test(tui_tlines, wrap_long_word_and_narrow, .init = setup)
{
	struct tlines ls;
	tui_tlines_init(&ls);
	int n = tui_tlines_wrap(&ls, "abcdefgh", 8, 3, 0, NULL, 0, 0);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(seg(&ls, 2, 0), "gh");
	tui_tlines_free(&ls);
	tui_tlines_init(&ls);
	/* room for one column only: a wide char still makes progress */
	n = tui_tlines_wrap(&ls, "日本", 6, 1, 0, NULL, 0, 0);
	cr_assert_eq(n, 2);
	tui_tlines_free(&ls);
}

Test(tui_tlines, cut_marks_the_cut, .init = setup)
{
	struct tlines ls;
	tui_tlines_init(&ls);
	int n = tui_tlines_cut(&ls, "abcdef\nxy", 9, 4, 0, NULL, 0, 0);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(seg(&ls, 0, 0), "abc");
	cr_assert_str_eq(seg(&ls, 0, 1), "…");
	cr_assert_eq(tui_tline_width(&ls.v[0]), 4);
	cr_assert_str_eq(seg(&ls, 1, 0), "xy");
	tui_tlines_free(&ls);
}

Test(tui_tlines, spans_become_lines_with_a_prefix, .init = setup)
{
	struct span_doc d;
	struct tlines ls;
	tui_span_doc_init(&d);
	tui_span_line_add(tui_span_doc_add_line(&d), "def", 3, 2);
	tui_span_line_add(&d.lines[0], " f", 2, 0);
	tui_span_line_add(tui_span_doc_add_line(&d), "pass", 4, 0);
	tui_tlines_init(&ls);
	cr_assert_eq(tui_tlines_spans(&ls, &d, 1, "│ ", 5, 100, 9), 1);
	cr_assert_eq(ls.n, 1);
	cr_assert_str_eq(seg(&ls, 0, 0), "│ ");
	cr_assert_eq(ls.v[0].seg[0].role, 5);
	cr_assert_str_eq(seg(&ls, 0, 1), "def");
	cr_assert_eq(ls.v[0].seg[1].role, 102);
	cr_assert_eq(ls.v[0].seg[2].role, 100);
	cr_assert_eq(ls.v[0].tag, 9);
	cr_assert_eq(tui_tlines_spans(&ls, &d, -1, NULL, 0, 0, 0), 2);
	cr_assert_eq(ls.n, 3);
	cr_assert_eq(ls.v[1].nseg, 2);	/* no prefix segment */
	tui_tlines_free(&ls);
	tui_span_doc_free(&d);
}
