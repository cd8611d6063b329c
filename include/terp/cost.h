/* cost: what a session's model calls cost (issue 11, part 3). Prices
 * are US dollars per million tokens (the config's
 * `price = MODEL INPUT OUTPUT [CACHED]` lines), with an optional
 * built-in table of list prices in US dollars, taken on
 * COST_BUILTIN_DATE (`builtin_prices = on`). Pure: no I/O. */
#ifndef TERP_COST_H
#define TERP_COST_H

#include <stddef.h>

#include "terp/notebook.h"

/* The day the built-in table's prices were read (they change). */
#define COST_BUILTIN_DATE	"2025-06-01"

/* Per million tokens. cached < 0: cached input costs as much as input. */
struct cost_price {
	double	input, output, cached;
};

/* The prices known to a run: the config's lines, then (when enabled)
 * the built-in table. Free with cost_table_free. */
struct cost_table;

struct cost_table *cost_table_new(void);
void cost_table_free(struct cost_table *t);
/* Parses "MODEL INPUT OUTPUT [CACHED]" (spaces or tabs; numbers >= 0)
 * and adds it; a later line for the same model wins. 0, or -1 with
 * *err (caller frees). */
int cost_table_add(struct cost_table *t, const char *line, char **err);
/* Consults the built-in table for models the config does not price. */
void cost_table_use_builtin(struct cost_table *t, int on);

/* The price of model (exact name; for the built-in table also a dated
 * variant such as "gpt-4o-2024-08-06" of "gpt-4o"), or NULL. *builtin
 * (may be NULL) is 1 when it came from the built-in table. t may be
 * NULL (no prices). */
const struct cost_price *cost_lookup(const struct cost_table *t,
    const char *model, int *builtin);

/* What usage u costs at price p: input tokens not cached at the input
 * price, cached ones at the cached price, output at the output price. */
double cost_of(const struct cost_price *p, const struct usage *u);

/* The exit status of `terp -p` when --max-cost stopped a question. */
#define COST_EXIT	7

/* Prices u (its cost and priced fields) at model's price in t; an
 * unpriced model leaves cost 0 and priced 0. */
void cost_price_usage(const struct cost_table *t, const char *model,
    struct usage *u);

/* --max-cost max (> 0): whether the next model call would pass it, the
 * session having spent total and the last call having cost last (its
 * cost is the estimate of the next; NULL or unpriced: the first call).
 * NULL when the call may go; else why not, a new string. A model
 * without a price is refused: the budget could not be kept. */
char *cost_over_budget(const struct cost_table *t, const char *model,
    double max, const struct usage *total, const struct usage *last);

/* "$0.0123" (4 decimals under a dollar, 2 above): writes to buf. */
const char *cost_fmt(double v, char *buf, size_t size);

#endif
