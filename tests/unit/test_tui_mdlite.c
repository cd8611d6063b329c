#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/tui_mdlite.h"
#include "terp/tui_pyhl.h"
#include "terp/tui_theme.h"
#include "terp/tui_uwidth.h"

/* Renders md at width into d (initialised here; the caller frees it). */
static void
render(struct span_doc *d, const char *md, int width)
{
	tui_span_doc_init(d);
	tui_mdlite_render(d, md, strlen(md), width);
}

/* Asserts that line i of d reads want. */
static void
line_is(const struct span_doc *d, size_t i, const char *want)
{
	char *s;

	cr_assert_lt(i, d->n, "line %zu of %zu", i, d->n);
	s = tui_span_line_text(&d->lines[i]);
	cr_assert_str_eq(s, want, "line %zu: \"%s\", not \"%s\"", i, s, want);
	free(s);
}

/* The role of the span holding needle on line i, or -1. */
static int
role_of(const struct span_doc *d, size_t i, const char *needle)
{
	for (size_t k = 0; k < d->lines[i].n; k++)
		if (strstr(d->lines[i].v[k].text, needle) != NULL)
			return d->lines[i].v[k].role;
	return -1;
}

Test(tui_uwidth, widths)
{
	size_t cols, k;

	cr_assert_eq(tui_uwidth_str("abc", 3), 3);
	cr_assert_eq(tui_uwidth_str("日本語", 9), 6);
	cr_assert_eq(tui_uwidth_str("e\xcc\x81", 3), 1);	/* e + combining acute */
	cr_assert_eq(tui_uwidth_str("\xf0\x9f\x99\x82", 4), 2);	/* emoji */
	cr_assert_eq(tui_uwidth_str("\xff", 1), 1);
	k = tui_uwidth_prefix("ab日本", 8, 3, &cols);
	cr_assert_eq(k, 2);
	cr_assert_eq(cols, 2);
	k = tui_uwidth_prefix("ab日本", 8, 4, &cols);
	cr_assert_eq(k, 5);
	cr_assert_eq(cols, 4);
}

Test(tui_mdlite, headings_and_inline)
{
	struct span_doc d;
	const char *md = "# Title *x*\n\nSome **bold**, *it*, `code` and "
	    "snake_case_name.\n";

	render(&d, md, 80);
	cr_assert_eq(d.n, 3);
	line_is(&d, 0, "Title x");
	cr_assert_eq(role_of(&d, 0, "Title"), THEME_MD_HEADING);
	line_is(&d, 2, "Some bold, it, code and snake_case_name.");
	cr_assert_eq(role_of(&d, 2, "bold"), THEME_MD_BOLD);
	cr_assert_eq(role_of(&d, 2, "it"), THEME_MD_ITALIC);
	cr_assert_eq(role_of(&d, 2, "code"), THEME_MD_CODE);
	cr_assert_eq(role_of(&d, 2, "snake_case_name"), THEME_NORMAL);
	tui_span_doc_free(&d);
}

Test(tui_mdlite, lists_wrap_with_hanging_indent)
{
	struct span_doc d;
	const char *md = "- alpha beta gamma delta epsilon\n"
	    "2. second item\n";

	render(&d, md, 16);
	line_is(&d, 0, "\u2022 alpha beta");
	line_is(&d, 1, "  gamma delta");
	line_is(&d, 2, "  epsilon");
	line_is(&d, 3, "2. second item");
	cr_assert_eq(role_of(&d, 0, "\u2022"), THEME_MD_BULLET);
	tui_span_doc_free(&d);
}

Test(tui_mdlite, wraps_wide_characters_by_columns)
{
	struct span_doc d;
	const char *md = "日本語のテキストは長いので折り返す abc 🙂🙂🙂🙂\n";

	render(&d, md, 10);
	cr_assert_gt(d.n, 3);
	for (size_t i = 0; i < d.n; i++) {
		size_t w = tui_span_line_width(&d.lines[i]);
		cr_assert_leq(w, 10, "line %zu is %zu wide", i, w);
	}
	line_is(&d, 0, "日本語のテ");
	tui_span_doc_free(&d);
}

Test(tui_mdlite, tables_align_and_fit)
{
	struct span_doc d;
	const char *md =
	    "| name | n |\n"
	    "|:-----|--:|\n"
	    "| a | 1 |\n"
	    "| bbbb | 22 |\n";

	render(&d, md, 40);
	cr_assert_eq(d.n, 6);
	line_is(&d, 0, "┌──────┬────┐");
	line_is(&d, 1, "│ name │  n │");
	line_is(&d, 3, "│ a    │  1 │");
	line_is(&d, 4, "│ bbbb │ 22 │");
	cr_assert_eq(role_of(&d, 1, "name"), THEME_TABLE_HEADER);
	cr_assert_eq(role_of(&d, 0, "┌"), THEME_TABLE_BORDER);
	tui_span_doc_free(&d);

	/* Too wide: the widest column is cut with an ellipsis. */
	md = "| k | description |\n|---|---|\n| x | a very long cell "
	    "text here |\n";
	render(&d, md, 20);
	for (size_t i = 0; i < d.n; i++)
		cr_assert_leq(tui_span_line_width(&d.lines[i]), 20);
	line_is(&d, 3, "│ x │ a very long… │");
	tui_span_doc_free(&d);
}

Test(tui_mdlite, fenced_python_is_highlighted)
{
	struct span_doc d;
	const char *md = "Run:\n```python\nimport pandas as pd\n"
	    "x = 1  # one\n```\nafter\n";

	render(&d, md, 40);
	cr_assert_eq(d.n, 4);
	line_is(&d, 1, "import pandas as pd");
	cr_assert_eq(role_of(&d, 1, "import"), THEME_CODE_KEYWORD);
	cr_assert_eq(role_of(&d, 2, "# one"), THEME_CODE_COMMENT);
	cr_assert_eq(role_of(&d, 2, "1"), THEME_CODE_NUMBER);
	line_is(&d, 3, "after");
	tui_span_doc_free(&d);
}

Test(tui_pyhl, tokens_and_triple_quotes)
{
	struct span_doc d;
	const char *py =
	    "@app.route\n"
	    "def f(x):\n"
	    "    '''doc\n"
	    "    # not a comment'''\n"
	    "    s = rb\"\\\"q\" + 'a'  # c\n"
	    "    return len(x) * 0x1F + 1.5e-3\n";

	tui_span_doc_init(&d);
	tui_pyhl_highlight(&d, py, strlen(py), 0, THEME_CELL_CODE);
	cr_assert_eq(d.n, 6);
	cr_assert_eq(role_of(&d, 0, "@app.route"), THEME_CODE_DECORATOR);
	cr_assert_eq(role_of(&d, 1, "def"), THEME_CODE_KEYWORD);
	cr_assert_eq(role_of(&d, 1, "f(x):"), THEME_CELL_CODE);
	cr_assert_eq(role_of(&d, 2, "'''doc"), THEME_CODE_STRING);
	cr_assert_eq(role_of(&d, 3, "# not a comment"), THEME_CODE_STRING);
	cr_assert_eq(role_of(&d, 4, "rb\"\\\"q\""), THEME_CODE_STRING);
	cr_assert_eq(role_of(&d, 4, "'a'"), THEME_CODE_STRING);
	cr_assert_eq(role_of(&d, 4, "# c"), THEME_CODE_COMMENT);
	cr_assert_eq(role_of(&d, 5, "return"), THEME_CODE_KEYWORD);
	cr_assert_eq(role_of(&d, 5, "len"), THEME_CODE_BUILTIN);
	cr_assert_eq(role_of(&d, 5, "0x1F"), THEME_CODE_NUMBER);
	cr_assert_eq(role_of(&d, 5, "1.5e-3"), THEME_CODE_NUMBER);
	line_is(&d, 5, "    return len(x) * 0x1F + 1.5e-3");
	tui_span_doc_free(&d);

	/* Cut to a width, tabs expanded. */
	tui_span_doc_init(&d);
	tui_pyhl_highlight(&d, "\tx = 'abcdefgh'", 15, 8, THEME_CELL_CODE);
	cr_assert_eq(d.n, 3);
	line_is(&d, 0, "    x = ");
	line_is(&d, 1, "'abcdefg");
	tui_span_doc_free(&d);
}
