/* Unit tests of cost: price lines, the opt-in built-in table and its
 * dated names, what a call costs with cached input, and --max-cost's
 * estimate of the next call. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "terp/cost.h"

Test(cost, price_lines)
{
	struct cost_table *t = cost_table_new();
	const struct cost_price *p;
	char *err = NULL;

	cr_assert_eq(cost_table_add(t, "m1 2.5 10 1.25", &err), 0);
	cr_assert_eq(cost_table_add(t, "m2\t3 15", &err), 0);
	cr_assert_eq(cost_table_add(t, "m1 1 2", &err), 0);	/* later wins */
	p = cost_lookup(t, "m1", NULL);
	cr_assert(p && p->input == 1 && p->output == 2 && p->cached < 0);
	p = cost_lookup(t, "m2", NULL);
	cr_assert(p && p->input == 3 && p->output == 15);
	cr_assert_null(cost_lookup(t, "m3", NULL));
	cr_assert_null(cost_lookup(t, "m1-2024-01-01", NULL));	/* exact only */
	const char *bad[] = { "m1", "m1 1", "m1 1 2 3 4", "m1 -1 2", "m1 1 nan",
	    "m1 1 inf", "m1 0x10 2", "m1 1e3 2", "m1 1.2.3 2" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(cost_table_add(t, bad[i], &err), -1, "%s", bad[i]);
		cr_assert(strncmp(err, "price: ", 7) == 0);
		free(err);
		err = NULL;
	}
	cost_table_free(t);
	cr_assert_null(cost_lookup(NULL, "m1", NULL));
}

Test(cost, builtin_is_opt_in_and_matches_dated_names)
{
	struct cost_table *t = cost_table_new();
	const struct cost_price *p;
	char *err = NULL;
	int b = -1;

	cr_assert_null(cost_lookup(t, "gpt-4o", NULL));
	cost_table_use_builtin(t, 1);
	p = cost_lookup(t, "gpt-4o-2024-08-06", &b);
	cr_assert(p && p->input == 2.5 && b == 1);
	p = cost_lookup(t, "gpt-4o-mini", NULL);
	cr_assert(p && p->input == 0.15);
	p = cost_lookup(t, "claude-sonnet-4-20250514", NULL);
	cr_assert(p && p->output == 15);
	cr_assert_null(cost_lookup(t, "gpt-4o-evil", NULL));
	cr_assert_null(cost_lookup(t, "gpt-4", NULL));
	/* the config's line beats the table */
	cr_assert_eq(cost_table_add(t, "gpt-4o 1 1", &err), 0);
	p = cost_lookup(t, "gpt-4o", &b);
	cr_assert(p && p->input == 1 && b == 0);
	cost_table_free(t);
}

Test(cost, cached_input_and_totals)
{
	struct cost_price p = { 1000, 2000, 500 };
	struct cost_price nocache = { 1000, 2000, -1 };
	struct usage u = { .input_tokens = 1000, .output_tokens = 100,
	    .cached_tokens = 200 };
	struct usage odd = { .input_tokens = 10, .cached_tokens = 50 };
	char b[32];

	cr_assert_float_eq(cost_of(&p, &u), 1.1, 1e-12);
	cr_assert_float_eq(cost_of(&nocache, &u), 1.2, 1e-12);
	/* more cached than input (a server's error): never negative */
	cr_assert_float_eq(cost_of(&p, &odd), 0.025, 1e-12);
	cr_assert_str_eq(cost_fmt(0.01234, b, sizeof b), "$0.0123");
	cr_assert_str_eq(cost_fmt(2.2, b, sizeof b), "$2.20");
}

Test(cost, budget)
{
	struct cost_table *t = cost_table_new();
	struct usage total = { .cost = 1.1, .priced = 1 };
	struct usage last = { .cost = 1.1, .priced = 1 };
	struct usage none = { 0 };
	char *err = NULL, *why;

	cr_assert_eq(cost_table_add(t, "m 1000 2000 500", &err), 0);
	cr_assert_null(cost_over_budget(t, "m", 0, &total, &last));	/* no cap */
	cr_assert_null(cost_over_budget(t, "m", 2.2, &total, &last));
	why = cost_over_budget(t, "m", 2.0, &total, &last);
	cr_assert_str_eq(why, "stopped: the next model call would take the session "
	    "past --max-cost $2.00 (spent $1.10, the last call cost $1.10)");
	free(why);
	/* the first call: nothing to estimate from, only what was spent */
	cr_assert_null(cost_over_budget(t, "m", 2.0, &none, NULL));
	why = cost_over_budget(t, "m", 1.0, &total, &none);
	cr_assert_not_null(why);
	free(why);
	why = cost_over_budget(t, "x", 5, &none, NULL);
	cr_assert(strstr(why, "no price is known for model 'x'") != NULL);
	free(why);
	cost_table_free(t);
}
