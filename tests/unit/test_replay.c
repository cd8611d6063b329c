/* replay_parse_range: the cell lists /replay takes ("3", "1-5",
 * "2,4-6"), and the one-line errors for the others. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/replay.h"

/* The cells spec names among max, as "1 2 3", or "error: ...". */
static char *
parse(const char *spec, int max)
{
	char *err = NULL, out[256] = "";
	int *cells, n = replay_parse_range(spec, max, &cells, &err);

	if (n < 0) {
		char *r = malloc(strlen(err) + 8);
		strcpy(r, "error: ");
		strcat(r, err);
		free(err);
		cr_assert_null(cells);
		return r;
	}
	for (int i = 0; i < n; i++) {
		size_t k = strlen(out);
		snprintf(out + k, sizeof out - k, "%s%d", i ? " " : "", cells[i]);
	}
	free(cells);
	return strdup(out);
}

static void
check(const char *spec, int max, const char *want)
{
	char *got = parse(spec, max);

	cr_assert_str_eq(got, want, "%s (of %d): %s", spec, max, got);
	free(got);
}

Test(replay_range, one_cell_a_range_and_a_list)
{
	check("3", 5, "3");
	check("1-5", 5, "1 2 3 4 5");
	check("2,4-6", 6, "2 4 5 6");
	check(" 2 , 4 - 6 ", 6, "2 4 5 6");
	check("5-5", 5, "5");
}

Test(replay_range, in_the_notebook_order_once_each)
{
	check("4-6,2,5", 6, "2 4 5 6");
	check("3,3,1-3", 3, "1 2 3");
}

Test(replay_range, past_the_last_cell)
{
	check("7", 5, "error: no cell [7]: the last is [5]");
	check("1-9", 5, "error: no cell [9]: the last is [5]");
	check("1", 0, "error: there is no cell yet");
}

Test(replay_range, backward_zero_and_garbage)
{
	const char *bad = "error: not a cell list: use N, N-M or a list like 2,4-6";

	check("5-2", 6, "error: 5-2: the first cell comes first");
	check("0", 6, "error: cells are numbered from 1");
	check("0-2", 6, "error: cells are numbered from 1");
	check("", 6, bad);
	check("   ", 6, bad);
	check("x", 6, bad);
	check("-3", 6, bad);
	check("3-", 6, bad);
	check("2,", 6, bad);
	check(",2", 6, bad);
	check("2;3", 6, bad);
	check("2 3", 6, bad);
	check("+2", 6, bad);
	check("1.5", 6, bad);
	check("99999999999999999999", 6, bad);	/* no overflow */
	check("2147483648", 6, bad);
	check("2147483647", 6, "error: no cell [2147483647]: the last is [6]");
}
