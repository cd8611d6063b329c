/* cost: prices per million tokens and what a call's usage costs. */
#include "terp/cost.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/util.h"

#define MODEL_MAX	200	/* bytes of a model name in a price line */

struct cost_entry {
	char			*model;
	struct cost_price	 p;
};

struct cost_table {
	struct cost_entry	*e;
	int			 n;
	int			 builtin;
};

/* List prices in US dollars per million tokens (input, output, cached
 * input) as published on COST_BUILTIN_DATE; a dated model name
 * ("-2024-08-06", "-20250514") matches its base name. */
static const struct {
	const char		*model;
	struct cost_price	 p;
} builtin[] = {
	{ "gpt-4o",		{ 2.50, 10.00, 1.25 } },
	{ "gpt-4o-mini",	{ 0.15, 0.60, 0.075 } },
	{ "gpt-4.1",		{ 2.00, 8.00, 0.50 } },
	{ "gpt-4.1-mini",	{ 0.40, 1.60, 0.10 } },
	{ "gpt-4.1-nano",	{ 0.10, 0.40, 0.025 } },
	{ "o4-mini",		{ 1.10, 4.40, 0.275 } },
	{ "claude-opus-4",	{ 15.00, 75.00, 1.50 } },
	{ "claude-sonnet-4",	{ 3.00, 15.00, 0.30 } },
	{ "claude-3-7-sonnet",	{ 3.00, 15.00, 0.30 } },
	{ "claude-3-5-haiku",	{ 0.80, 4.00, 0.08 } },
};

struct cost_table *
cost_table_new(void)
{
	return xcalloc(1, sizeof(struct cost_table));
}

void
cost_table_free(struct cost_table *t)
{
	if (t == NULL)
		return;
	for (int i = 0; i < t->n; i++)
		free(t->e[i].model);
	free(t->e);
	free(t);
}

void
cost_table_use_builtin(struct cost_table *t, int on)
{
	t->builtin = on;
}

/* One price: a decimal >= 0 (no hex, inf or nan). */
static int
price_num(const char *s, double *v)
{
	char *end;

	if (*s == '\0' || strspn(s, "0123456789.") != strlen(s))
		return -1;
	errno = 0;
	*v = strtod(s, &end);
	return errno || *end || !isfinite(*v) ? -1 : 0;
}

int
cost_table_add(struct cost_table *t, const char *line, char **err)
{
	char *copy = xstrdup(line), *save = NULL, *tok[5];
	int n = 0, rc = -1;
	double v[3] = { 0, 0, -1 };

	for (char *p = strtok_r(copy, " \t", &save); p; p = strtok_r(NULL, " \t", &save)) {
		if (n == 5)
			break;
		tok[n++] = p;
	}
	if (n < 3 || n > 4) {
		*err = xasprintf("price: want MODEL INPUT OUTPUT [CACHED] (dollars per "
		    "million tokens), got '%s'", line);
		goto out;
	}
	if (strlen(tok[0]) > MODEL_MAX) {
		*err = xasprintf("price: model name too long");
		goto out;
	}
	for (int i = 1; i < n; i++) {
		if (price_num(tok[i], &v[i - 1]) < 0) {
			*err = xasprintf("price: '%s' is not a price (dollars per million "
			    "tokens, e.g. 2.50)", tok[i]);
			goto out;
		}
	}
	for (int i = 0; i < t->n; i++) {
		if (strcmp(t->e[i].model, tok[0]) == 0) {
			t->e[i].p = (struct cost_price){ v[0], v[1], v[2] };
			rc = 0;
			goto out;
		}
	}
	t->e = xrealloc(t->e, (size_t)(t->n + 1) * sizeof *t->e);
	t->e[t->n].model = xstrdup(tok[0]);
	t->e[t->n].p = (struct cost_price){ v[0], v[1], v[2] };
	t->n++;
	rc = 0;
out:
	free(copy);
	return rc;
}

/* Whether model is base or base followed by a date: "-2024-08-06",
 * "-20250514" (a dash and digits and dashes to the end). */
static int
dated(const char *model, const char *base)
{
	size_t n = strlen(base);

	if (strncmp(model, base, n) != 0)
		return 0;
	if (model[n] == '\0')
		return 1;
	return model[n] == '-' && isdigit((unsigned char)model[n + 1]) &&
	    strspn(model + n + 1, "0123456789-") == strlen(model + n + 1);
}

const struct cost_price *
cost_lookup(const struct cost_table *t, const char *model, int *builtin_p)
{
	if (builtin_p)
		*builtin_p = 0;
	if (t == NULL || model == NULL)
		return NULL;
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->e[i].model, model) == 0)
			return &t->e[i].p;
	if (!t->builtin)
		return NULL;
	for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) {
		if (dated(model, builtin[i].model)) {
			if (builtin_p)
				*builtin_p = 1;
			return &builtin[i].p;
		}
	}
	return NULL;
}

double
cost_of(const struct cost_price *p, const struct usage *u)
{
	double cached = u->cached_tokens > 0 ? (double)u->cached_tokens : 0;
	double fresh = (double)u->input_tokens - cached;

	if (fresh < 0)
		fresh = 0;
	return (fresh * p->input + cached * (p->cached >= 0 ? p->cached : p->input) +
	    (double)u->output_tokens * p->output) / 1e6;
}

const char *
cost_fmt(double v, char *buf, size_t size)
{
	snprintf(buf, size, v < 1 ? "$%.4f" : "$%.2f", v);
	return buf;
}

void
cost_price_usage(const struct cost_table *t, const char *model,
    struct usage *u)
{
	const struct cost_price *p = cost_lookup(t, model, NULL);

	u->cost = p ? cost_of(p, u) : 0;
	u->priced = p != NULL;
}

char *
cost_over_budget(const struct cost_table *t, const char *model, double max,
    const struct usage *total, const struct usage *last)
{
	char a[32], b[32], c[32];
	double next = last && last->priced ? last->cost : 0;

	if (max <= 0)
		return NULL;
	if (cost_lookup(t, model, NULL) == NULL)
		return xasprintf("--max-cost: no price is known for model '%s'; add a "
		    "line 'price = %s INPUT OUTPUT [CACHED]' (dollars per million "
		    "tokens) to the config", model ? model : "?", model ? model : "MODEL");
	if (total->cost + next <= max)
		return NULL;
	return xasprintf("stopped: the next model call would take the session past "
	    "--max-cost %s (spent %s, the last call cost %s)", cost_fmt(max, a, sizeof a),
	    cost_fmt(total->cost, b, sizeof b), cost_fmt(next, c, sizeof c));
}
