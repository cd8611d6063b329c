/* Unit tests of number tracing (issue 11, part 2): which numbers of an
 * answer count, how output numbers are read, the rounding tolerance,
 * and whole answers over real outputs. The fixtures are outputs of
 * `terp exec` over examples/sales.csv and Debian's scikit-learn
 * wine_data.csv (python3-sklearn), copied as printed. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/buf.h"
#include "terp/numtrace.h"

/* The hits of answer over src, one "text=cell:line" per number
 * ("text=-" when untraced), joined by " | ". Caller frees. */
static char *
trace(const char *answer, const char *question,
    const struct numtrace_source *src, size_t nsrc, size_t *traced)
{
	struct numtrace_hit *h;
	struct buf b;
	size_t n, t;

	n = numtrace_answer(answer, question, src, nsrc, &h, &t);
	buf_init(&b, 1 << 20);
	for (size_t i = 0; i < n; i++) {
		cr_assert_leq(h[i].off + h[i].len, strlen(answer));
		if (i > 0)
			buf_adds(&b, " | ");
		buf_add(&b, answer + h[i].off, h[i].len);
		if (h[i].line > 0)
			buf_printf(&b, "=%d:%d", h[i].cell, h[i].line);
		else
			buf_adds(&b, "=-");
	}
	cr_assert_eq(n == 0, h == NULL);
	free(h);
	if (traced != NULL)
		*traced = t;
	return buf_take(&b);
}

/* The numbers found in an answer with no outputs at all. */
static char *
found(const char *answer, const char *question)
{
	struct numtrace_hit *h;
	struct buf b;
	size_t n, t;

	n = numtrace_answer(answer, question, NULL, 0, &h, &t);
	cr_assert_eq(t, 0);
	buf_init(&b, 1 << 20);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			buf_adds(&b, " | ");
		buf_add(&b, answer + h[i].off, h[i].len);
	}
	free(h);
	return buf_take(&b);
}

/* The one number of answer, traced against one stdout text: its line
 * there, 0 when untraced. */
static int
line_of(const char *answer, const char *output)
{
	struct numtrace_source src = { 1, NUMTRACE_STDOUT, output,
	    strlen(output) };
	struct numtrace_hit *h;
	size_t n, t;
	int line;

	n = numtrace_answer(answer, NULL, &src, 1, &h, &t);
	cr_assert_eq(n, 1, "one number in \"%s\", got %zu", answer, n);
	line = h[0].line;
	free(h);
	return line;
}

static void
expect_found(const char *answer, const char *question, const char *want)
{
	char *got = found(answer, question);

	cr_assert_str_eq(got, want, "in \"%s\"", answer);
	free(got);
}

/* The value of the only number of answer. */
static double
value_of(const char *answer, int *percent)
{
	struct numtrace_hit *h;
	size_t n, t;
	double v;

	n = numtrace_answer(answer, NULL, NULL, 0, &h, &t);
	cr_assert_eq(n, 1, "one number in \"%s\", got %zu", answer, n);
	v = h[0].value;
	if (percent != NULL)
		*percent = h[0].percent;
	free(h);
	return v;
}

#define SRC(c, st, s)	{ c, st, s, sizeof(s) - 1 }

/* Numbers in answers */

Test(numtrace, forms_of_numbers)
{
	int pct;

	cr_assert_eq(value_of("we have 1203 rows", NULL), 1203);
	cr_assert_float_eq(value_of("mean is 10.05.", NULL), 10.05, 1e-12);
	cr_assert_float_eq(value_of("only .5 left", NULL), 0.5, 1e-12);
	cr_assert_eq(value_of("share: 48%", &pct), 48);
	cr_assert_eq(pct, 1);
	cr_assert_eq(value_of("share: 48 %", &pct), 48);
	cr_assert_eq(value_of("up 3.5 percent", &pct), 3.5);
	cr_assert_eq(pct, 1);
	cr_assert_eq(value_of("up 1.5pp", &pct), 1.5);
	cr_assert_eq(pct, 1);
	cr_assert_eq(value_of("total 1,203,455 units", &pct), 1203455);
	cr_assert_eq(pct, 0);
	cr_assert_eq(value_of("total 1 203 455 units", NULL), 1203455);
	cr_assert_eq(value_of("total 1\xe2\x80\x89" "203\xe2\x80\x89" "455 u",
	    NULL), 1203455);
	cr_assert_eq(value_of("total 1\xc2\xa0" "203\xc2\xa0" "455 u", NULL),
	    1203455);
	cr_assert_float_eq(value_of("about 1.2k users", NULL), 1200, 1e-9);
	cr_assert_float_eq(value_of("about 12K users", NULL), 12000, 1e-9);
	cr_assert_float_eq(value_of("revenue 3.4M", NULL), 3.4e6, 1e-6);
	cr_assert_float_eq(value_of("revenue 2.5bn", NULL), 2.5e9, 1e-3);
	cr_assert_float_eq(value_of("revenue $1.2 million", NULL), 1.2e6, 1e-6);
	cr_assert_float_eq(value_of("revenue 1.2 mln", NULL), 1.2e6, 1e-6);
	cr_assert_float_eq(value_of("revenue \xe2\x82\xac" "3.4 billion", NULL),
	    3.4e9, 1e-3);
	cr_assert_float_eq(value_of("cost \xc2\xa3" "12.50", NULL), 12.5, 1e-12);
	cr_assert_float_eq(value_of("change -3.2", NULL), -3.2, 1e-12);
	cr_assert_float_eq(value_of("change \xe2\x88\x92" "3.2%", NULL), -3.2,
	    1e-12);
	cr_assert_float_eq(value_of("change -$3.2M", NULL), -3.2e6, 1e-6);
	cr_assert_float_eq(value_of("total 1.2e+06", NULL), 1.2e6, 1e-6);
	cr_assert_float_eq(value_of("p = 3.5E-4", NULL), 3.5e-4, 1e-15);
	/* the whole number, sign to suffix, is the hit's text */
	expect_found("fell (\xe2\x88\x92" "3.2%) and rose **$1.2 million**.",
	    NULL, "\xe2\x88\x92" "3.2% | $1.2 million");
	/* units after a number keep it; 5GB is 5 */
	expect_found("5GB in 12ms, 3x faster", NULL, "5 | 12 | 3");
}

Test(numtrace, lists_are_not_thousands)
{
	expect_found("classes 1, 2, 3 and 4", NULL, "1 | 2 | 3 | 4");
	expect_found("classes 1,2,3", NULL, "1 | 2 | 3");
	expect_found("10-20 and 3/4", NULL, "10 | 20 | 3 | 4");
	/* a space group needs exactly three digits after one to three */
	expect_found("saw 4023 100 rows; 12 34; 1 2345", NULL,
	    "4023 | 100 | 12 | 34 | 1 | 2345");
}

Test(numtrace, dates_and_years_are_not_numbers)
{
	expect_found("On 2024-11, 2023-12-01, 2024/01/05, 11/05/2024 and "
	    "5.11.24 at 12:30 or 12:30:05", NULL, "");
	expect_found("In Nov 2024, on March 3, 2024, on 3 March and in "
	    "September, 2023", NULL, "");
	expect_found("Revenue in 2023 and 2024, since 2019, from 2020 to 2022, "
	    "during 2021, FY 2024, Q3 2024, 2024 Q3, H1 2023, mid-2022, "
	    "2019-2021, 2019\xe2\x80\x93" "2021, 2022 vs 2023", NULL, "");
	/* ISO timestamps as pandas prints them */
	expect_found("at 2024-01-01 00:00:00 and 2024-01-01T08:15:00", NULL, "");
	/* a date then numbers: only the date goes */
	expect_found("In March 2024, 3 regions sold 2,100 units", NULL,
	    "3 | 2,100");
	/* lowercase "may" is a verb, not May */
	expect_found("it may 2 x", NULL, "2");
}

Test(numtrace, cells_ordinals_and_names_are_not_numbers)
{
	expect_found("See [3] and In [4], cell 5, Cell 6's output and cells "
	    "7, 8 and 9; cells 2-4; a note[^1]", NULL, "");
	expect_found("cell 3, 42 rows", NULL, "42");
	expect_found("1. First 12 rows\n2) then 3.5\n  10. nested 7\n"
	    "## 2. Results 8\n> 3. quoted 9\n- 1. bullet 11", NULL,
	    "12 | 3.5 | 7 | 8 | 9 | 11");
	/* a decimal at a line start is a number, not an ordinal */
	expect_found("1.5 million rows", NULL, "1.5 million");
	expect_found("the 3rd and 21st rows, 2nd-highest", NULL, "");
	expect_found("Q3, float64, int32, col_2, v3.11.2, 10.0.0.1, 0x1F, "
	    "H2O, py3 and 3.11.2", NULL, "");
	/* a manual page's section is a reference; a number in parentheses
	 * after a space is not */
	expect_found("see terp(1) and bwrap(1); sales (12) grew", NULL, "12");
}

/* Issue 24: labels and counts of what was shown are not results; the
 * same words before a wrong value still flag it when it is not a count
 * shown. */
Test(numtrace, labels_and_shown_counts_are_not_results)
{
	static const char out[] =
	    "region\neast     2748435.15\nnorth    2270303.71\n"
	    "south    1929048.29\nwest     2405181.59\n"
	    "Name: revenue, dtype: float64\n";
	struct numtrace_source src = { 1, NUMTRACE_STDOUT, out, sizeof out - 1 };
	char *r;

	expect_found("Observation number 1, month 01, day 3, step 2, #4, "
	    "figure 2 and row 7 hold 12.5", NULL, "12.5");
	/* the four rows shown: "top 4", "4 regions"; 3 was not shown */
	r = trace("Of the top 4, the 4 regions, east leads with 2,748,435.15; "
	    "3 regions beat 12.5 and the top 3 grew 29%.", NULL, &src, 1, NULL);
	cr_assert_str_eq(r, "2,748,435.15=1:2 | 3=- | 12.5=- | 3=- | 29%=-");
	free(r);
	/* a label is left out even when some output holds its value (3
	 * would match 2748435.15's neighbours no more than "day 3" any
	 * printed 3); a decimal after a label word is a result */
	r = trace("row 2748435.15 and number 4, day 3", NULL, &src, 1, NULL);
	cr_assert_str_eq(r, "2748435.15=1:2");
	free(r);
}

/* Numbers in code are code (a call's argument, a literal), not claims
 * the answer makes: they are not reported, whatever they are. */
Test(numtrace, code_and_links_are_not_numbers)
{
	expect_found("Used `df.head(5)` and ``x = `3` + 4``, then 6 rows.\n"
	    "```python\nx = 12345\nprint(3.5)\n```\n~~~\n99\n~~~\nafter 7",
	    NULL, "6 | 7");
	expect_found("an unclosed ` 8 backtick", NULL, "8");
	expect_found("see [the docs](https://example.invalid/v2/page?id=42) "
	    "and https://example.invalid/2024/11 then 5", NULL, "5");
}

Test(numtrace, numbers_in_the_question_are_not_reported)
{
	expect_found("The top 5 regions above 400,000: east has 1,463,569.91.",
	    "Which top 5 regions have revenue above 400000?",
	    "1,463,569.91");
	/* equal values, whatever the form */
	expect_found("Over 1,000,000 and 10 percent: 7", "above 1M and 10%?",
	    "7");
	expect_found("5 and 5.5", "top 5", "5.5");
}

/* Output parsing */

Test(numtrace, output_numbers)
{
	static const char out[] =
	    "            revenue  marketing_spend  units       roi\n"
	    "channel                                              \n"
	    "email    1768302.14        292933.09  37740  6.036539\n"
	    "Name: revenue, dtype: float64\n"
	    "{'east': 0.2938569802169573, 'n': 288}\n"
	    "array([11.933, 13.05 , 14.1  ])\n"
	    "[1.234560e+06 nan NaN inf -inf]\n"
	    "2024-07    402166.99\n"
	    "growth: -10.85%\n"
	    "total: 9,352,968.74\n"
	    "[100,200,300]\n";
	struct numtrace_index *idx = numtrace_index_new();
	struct numtrace_source src = { 1, NUMTRACE_STDOUT, out, strlen(out) };

	/* 4 + 2 + 3 + 1 + 1 + (10.85 and 0.1085) + 1 + 3; float64, nan,
	 * inf and 2024-07 are not numbers */
	cr_assert_eq(numtrace_index_add(idx, &src), 4 + 2 + 3 + 1 + 1 + 2 + 1 + 3);
	cr_assert_eq(numtrace_index_count(idx), 17);
	numtrace_index_free(idx);

	cr_assert_eq(line_of("ROI of 6.04", out), 3);
	cr_assert_eq(line_of("37,740 units", out), 3);
	cr_assert_eq(line_of("29.4% in the east", out), 5);
	cr_assert_eq(line_of("288 rows", out), 5);
	cr_assert_eq(line_of("median 13.05", out), 6);
	cr_assert_eq(line_of("1.23 million", out), 7);
	cr_assert_eq(line_of("402,167 in July", out), 8);
	cr_assert_eq(line_of("a fall of 10.9%", out), 9);
	cr_assert_eq(line_of("$9.35M", out), 10);
	cr_assert_eq(line_of("200 of them", out), 11);
	cr_assert_eq(line_of("64 bits", out), 0);
	cr_assert_eq(line_of("7 rows", out), 0);
}

Test(numtrace, output_magnitudes_and_percents_both_ways)
{
	cr_assert_eq(line_of("0.48 of rows", "x\nshare 48%\n"), 2);
	cr_assert_eq(line_of("48 percent", "x\nshare 0.48\n"), 2);
	cr_assert_eq(line_of("3.4 of them", "x\ntotal 3.4M\n"), 2);
	cr_assert_eq(line_of("3,400,000", "x\ntotal 3.4M\n"), 2);
}

/* Matching tolerance */

Test(numtrace, rounding_at_the_shown_precision)
{
	cr_assert_eq(line_of("10.05", "10.0498"), 1);
	cr_assert_eq(line_of("10.05", "10.0450"), 1);	/* rounds half up */
	cr_assert_eq(line_of("10.05", "10.0449"), 0);
	cr_assert_eq(line_of("10.0", "10.0498"), 1);
	cr_assert_eq(line_of("10.05", "10.0488"), 1);
	cr_assert_eq(line_of("10.050", "10.0488"), 0);	/* 3 decimals shown */
	cr_assert_eq(line_of("48%", "0.4812"), 1);
	cr_assert_eq(line_of("48%", "48.12"), 1);
	cr_assert_eq(line_of("48.1%", "0.4812"), 1);
	cr_assert_eq(line_of("48.2%", "0.4812"), 0);
	cr_assert_eq(line_of("1.2M", "1,203,455"), 1);
	cr_assert_eq(line_of("1.2M", "1254000"), 0);
	cr_assert_eq(line_of("$1.2 million", "1203455.0"), 1);
	cr_assert_eq(line_of("3.4k", "3412"), 1);
	cr_assert_eq(line_of("about 1,203", "1203.4"), 1);
	cr_assert_eq(line_of("1,204", "1203.4"), 0);
	cr_assert_eq(line_of("1203", "1203"), 1);
	cr_assert_eq(line_of("1203", "1202"), 0);
	cr_assert_eq(line_of("1.23 million", "1.234560e+06"), 1);
	cr_assert_eq(line_of("1.2e+06", "1203455"), 1);
	cr_assert_eq(line_of("0", "0.0"), 1);
}

/* "10-15%": the first end of a range is a percentage too. */
Test(numtrace, percent_ranges)
{
	static const char out[] = "low 0.1012\nhigh 0.1488\n";
	const struct numtrace_source src[] = { SRC(1, NUMTRACE_STDOUT, out) };
	static const char *const answers[] = { "10-15%", "10\xe2\x80\x93" "15%",
	    "between 10 and 15 percent", "from 10 to 15%" };

	for (size_t i = 0; i < 4; i++) {
		size_t t;
		char *got = trace(answers[i], NULL, src, 1, &t);
		cr_assert_eq(t, 2, "%s: %s", answers[i], got);
		free(got);
	}
	cr_assert_eq(line_of("10 rows", out), 0);
}

/* Signs are not compared: an answer says "fell 3.2%" for -0.032. */
Test(numtrace, signs_match_on_magnitude)
{
	cr_assert_eq(line_of("-3.2", "-3.2"), 1);
	cr_assert_eq(line_of("\xe2\x88\x92" "3.2", "-3.2"), 1);
	cr_assert_eq(line_of("a decrease of 3.2%", "-0.032"), 1);
	cr_assert_eq(line_of("-3.2", "3.2"), 1);
}

Test(numtrace, most_recent_cell_and_stdout_first)
{
	static const char a[] = "mean 13.05";
	struct numtrace_source src[] = {
		SRC(2, NUMTRACE_STDOUT, "x\nmean 13.05\n"),
		SRC(4, NUMTRACE_STDERR, "warn 13.05\n"),
		SRC(4, NUMTRACE_VALUE, "a\nb\n13.05"),
		SRC(3, NUMTRACE_STDOUT, "13.0501"),
	};
	struct numtrace_index *idx = numtrace_index_new();
	struct numtrace_hit *h;
	size_t n, t;

	for (size_t i = 0; i < 4; i++)
		numtrace_index_add(idx, &src[i]);
	n = numtrace_index_match(idx, a, strlen(a), NULL, 0, &h, &t);
	cr_assert_eq(n, 1);
	cr_assert_eq(t, 1);
	cr_assert_eq(h[0].cell, 4);
	cr_assert_eq(h[0].stream, NUMTRACE_VALUE);
	cr_assert_eq(h[0].line, 3);
	cr_assert_eq(h[0].src_off, 4);
	cr_assert_eq(h[0].src_len, 5);
	cr_assert_float_eq(h[0].matched, 13.05, 1e-12);
	free(h);

	/* cell 4 re-run with other output: cell 3 is now the newest */
	numtrace_index_drop_cell(idx, 4);
	n = numtrace_index_match(idx, a, strlen(a), NULL, 0, &h, &t);
	cr_assert_eq(n, 1);
	cr_assert_eq(h[0].cell, 3);
	cr_assert_eq(h[0].line, 1);
	free(h);
	cr_assert_eq(numtrace_index_count(idx), 2);

	/* one index, many answers: each query sees the same sources */
	n = numtrace_index_match(idx, "13.05 and 9", 11, NULL, 0, &h, &t);
	cr_assert_eq(n, 2);
	cr_assert_eq(t, 1);
	cr_assert_eq(h[1].line, 0);
	cr_assert_eq(h[1].cell, 0);
	free(h);
	numtrace_index_free(idx);
}

Test(numtrace, empty_inputs)
{
	struct numtrace_index *idx = numtrace_index_new();
	struct numtrace_source src = { 1, NUMTRACE_STDOUT, NULL, 0 };
	struct numtrace_hit *h = (void *)1;
	size_t t = 9;

	cr_assert_eq(numtrace_index_add(idx, &src), 0);
	cr_assert_eq(numtrace_index_match(idx, "", 0, NULL, 0, &h, &t), 0);
	cr_assert_null(h);
	cr_assert_eq(t, 0);
	cr_assert_eq(numtrace_index_match(idx, "no numbers here", 15, "", 0,
	    &h, NULL), 0);
	numtrace_index_free(idx);
	numtrace_index_free(NULL);
}

/* Real analyses */

/* `terp exec` over examples/sales.csv, five cells (stdout chunks of a
 * cell joined, as the notebook keeps them). */
static const char sales1_out[] = "(288, 6)\n";
static const char sales1_val[] =
    "     month channel region   revenue  marketing_spend  units\n"
    "0  2023-01  search  north  41894.14         14301.94    787\n"
    "1  2023-01  search  south  32250.82         11066.62    584\n"
    "2  2023-01  search   east  45085.69         16244.45    826\n"
    "3  2023-01  search   west  43587.40         15879.76    830\n"
    "4  2023-01  social  north  19139.90          9230.44    464";
static const char sales2_out[] =
    "            revenue  marketing_spend  units       roi\n"
    "channel                                              \n"
    "email    1768302.14        292933.09  37740  6.036539\n"
    "search   5032624.27       1565883.22  93028  3.213921\n"
    "social   2552042.33       1065467.89  62354  2.395232\n"
    "total revenue: 9352968.74\n"
    "total revenue: 9,352,968.74\n";
static const char sales3_out[] =
    "region\n"
    "east     0.2939\n"
    "north    0.2427\n"
    "south    0.2062\n"
    "west     0.2572\n"
    "Name: revenue, dtype: float64\n";
static const char sales3_val[] =
    "{'east': 0.2938569802169573, 'north': 0.24273615929994008, "
    "'south': 0.20624983827327537, 'west': 0.2571570222098272}";
static const char sales4_out[] =
    "month\n"
    "2024-07    402166.99\n"
    "2024-08    402931.84\n"
    "2024-09    402485.01\n"
    "2024-10    442795.90\n"
    "2024-11    550866.68\n"
    "2024-12    491096.76\n"
    "Name: revenue, dtype: float64\n"
    "growth last month: -10.85%\n";
static const char sales4_val[] =
    "            revenue  marketing_spend        units\n"
    "count    288.000000       288.000000   288.000000\n"
    "mean   32475.585903     10153.764583   670.562500\n"
    "std    16501.466813      5733.767276   284.883306\n"
    "min    12274.750000      2335.130000   258.000000\n"
    "25%    19519.727500      3375.547500   429.000000\n"
    "50%    26361.155000     11171.485000   634.000000\n"
    "75%    44753.847500     14850.437500   862.250000\n"
    "max    97786.550000     21524.470000  1857.000000";
static const char sales5_out[] =
    "channel      email      search     social\n"
    "region                                   \n"
    "east     527883.74  1463569.91  756981.50\n"
    "north    428924.19  1218439.36  622940.16\n"
    "south    362146.07  1044661.96  522240.26\n"
    "west     449348.14  1305953.04  649880.41\n"
    "[9.35296874e+06 6.70562500e+02]\n"
    "year\n"
    "2023    4332881.32\n"
    "2024    5020087.42\n"
    "Name: revenue, dtype: float64\n"
    "YoY growth: 15.9%\n";
static const char sales5_val[] =
    "{'roi_email': 6.04, 'best_month': '2024-11', 'n': 288}";

static const struct numtrace_source sales[] = {
	SRC(1, NUMTRACE_STDOUT, sales1_out), SRC(1, NUMTRACE_VALUE, sales1_val),
	SRC(2, NUMTRACE_STDOUT, sales2_out),
	SRC(3, NUMTRACE_STDOUT, sales3_out), SRC(3, NUMTRACE_VALUE, sales3_val),
	SRC(4, NUMTRACE_STDOUT, sales4_out), SRC(4, NUMTRACE_VALUE, sales4_val),
	SRC(5, NUMTRACE_STDOUT, sales5_out), SRC(5, NUMTRACE_VALUE, sales5_val),
};

static const char sales_answer[] =
    "Total revenue over the 288 rows was **$9.35M** (9,352,968.74). "
    "Search led with $5.03 million, then social ($2.55M) and email "
    "($1.77M); email had the best return on marketing spend at 6.04x "
    "(search 3.21x, social 2.40x).\n"
    "\n"
    "| Region | Share |\n"
    "|---|---|\n"
    "| East | 29.4% |\n"
    "| North | 24.3% |\n"
    "| South | 20.6% |\n"
    "| West | 25.7% |\n"
    "\n"
    "Revenue grew 15.9% from 2023 to 2024 (4,332,881 \xe2\x86\x92 "
    "5,020,087), peaked in 2024-11 at 550,866.68 and fell 10.85% in "
    "December 2024 (see cell [4]). Mean units per row: 670.6.\n";

Test(numtrace, sales_answer_all_traced)
{
	size_t t;
	char *got = trace(sales_answer, "What drives revenue, by channel and "
	    "region?", sales, 9, &t);

	cr_assert_str_eq(got,
	    "288=5:1 | $9.35M=5:7 | 9,352,968.74=5:7 | $5.03 million=2:4 | "
	    "$2.55M=2:5 | $1.77M=2:3 | 6.04=5:1 | 3.21=2:4 | 2.40=2:5 | "
	    "29.4%=3:2 | 24.3%=3:3 | 20.6%=3:4 | 25.7%=3:5 | 15.9%=5:12 | "
	    "4,332,881=5:9 | 5,020,087=5:10 | 550,866.68=4:6 | "
	    "10.85%=4:9 | 670.6=5:7");
	cr_assert_eq(t, 19);
	free(got);
}

Test(numtrace, sales_answer_invented_number_flagged)
{
	static const char a[] =
	    "Email returned 6.04x on spend, search 3.21x; mean units per row "
	    "were 712.4 and revenue grew by 15.9% in 2024.";
	size_t t;
	char *got = trace(a, NULL, sales, 9, &t);

	cr_assert_str_eq(got, "6.04=5:1 | 3.21=2:4 | 712.4=- | 15.9%=5:12");
	cr_assert_eq(t, 3);
	free(got);
}

Test(numtrace, sales_dates_and_years_not_flagged)
{
	static const char a[] =
	    "In November 2024 revenue was 550,866.68, the best month "
	    "(2024-11, Nov 2024), up from 442,795.90 in 2024-10; 2023-12-01 "
	    "and 11/05/2024 are outside the data, which runs from Jan 2023 "
	    "to Dec 2024.";
	size_t t;
	char *got = trace(a, "Which month of 2024 was best?", sales, 9, &t);

	cr_assert_str_eq(got, "550,866.68=4:6 | 442,795.90=4:5");
	cr_assert_eq(t, 2);
	free(got);
}

/* wine_data.csv of Debian's python3-sklearn, read with
 * names=[alcohol, ..., proline, cls]. */
static const char wine1_out[] =
    "(178, 14)\n"
    "     alcohol   proline  color\n"
    "cls                          \n"
    "0     13.745  1115.712  5.528\n"
    "1     12.279   519.507  3.087\n"
    "2     13.154   629.896  7.396\n";
static const char wine2_out[] =
    "phenols    0.289101\n"
    "color      0.546364\n"
    "proline    0.643720\n"
    "Name: alcohol, dtype: float64\n"
    "share of class 1: 0.3989\n"
    "mean proline: 746.9\n";
static const char wine2_val[] =
    "count     178.000000\n"
    "mean      746.893258\n"
    "std       314.907474\n"
    "min       278.000000\n"
    "25%       500.500000\n"
    "50%       673.500000\n"
    "75%       985.000000\n"
    "max      1680.000000\n"
    "Name: proline, dtype: float64";
static const char wine3_val[] = "array([11.933, 13.05 , 14.1  ])";

static const struct numtrace_source wine[] = {
	SRC(1, NUMTRACE_STDOUT, wine1_out),
	SRC(2, NUMTRACE_STDOUT, wine2_out), SRC(2, NUMTRACE_VALUE, wine2_val),
	SRC(3, NUMTRACE_VALUE, wine3_val),
};

Test(numtrace, wine_rounding_and_percentages)
{
	static const char a[] =
	    "Cultivar A wines average 13.75% alcohol against 12.28% and "
	    "13.15% for the others; proline averages 746.9 (std 314.9, range "
	    "278 to 1,680; A alone 1.1k). Alcohol correlates most with "
	    "proline (r = 0.64), then colour (0.55). The second cultivar is "
	    "39.9% of the 178 wines; the 10th\xe2\x80\x93" "90th percentiles "
	    "of alcohol are 11.93 and 14.1, around a median of 13.05.";
	size_t t;
	char *got = trace(a, "Describe the wines", wine, 4, &t);

	cr_assert_str_eq(got,
	    "13.75%=1:4 | 12.28%=1:5 | 13.15%=1:6 | 746.9=2:6 | 314.9=2:3 | "
	    "278=2:4 | 1,680=2:8 | 1.1k=1:4 | 0.64=2:3 | 0.55=2:2 | "
	    "39.9%=2:5 | 178=2:1 | 11.93=3:1 | 14.1=3:1 | 13.05=3:1");
	cr_assert_eq(t, 15);
	free(got);
}
