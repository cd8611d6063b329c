/* bench/numtrace: the cost of number tracing in a long session. Builds
 * an index from 100 cells of ~4 KB pandas-style output (groupby tables
 * with month labels, describe() tables, series), one cell at a time as
 * a session would, then traces 100 answers of ~10 numbers each (rounded,
 * percent and magnitude forms, a date, a year, a cell reference and one
 * invented number). Prints microseconds per cell added and per answer,
 * then the same session as terp runs it (answer_trace.c over a
 * notebook: each turn a cell's output captured, the tracer synced, one
 * answer traced against the question).
 *   build/bench-numtrace [CELLS [ANSWERS [RUNS]]]   (default 100 100 21) */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "terp/answer_trace.h"
#include "terp/numtrace.h"

#define MAXVALS	1024

struct bcell {
	char	 text[8192];
	size_t	 len;
	double	 vals[MAXVALS];	/* numbers printed, for the answers */
	int	 nvals;
};

static unsigned long long rng = 0x9e3779b97f4a7c15ULL;

static double
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

static double
now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
add(struct bcell *c, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(c->text + c->len, sizeof c->text - c->len, fmt, ap);
	va_end(ap);
	if (k > 0 && (size_t)k < sizeof c->text - c->len)
		c->len += (size_t)k;
}

static double
keep(struct bcell *c, double v)
{
	if (c->nvals < MAXVALS)
		c->vals[c->nvals++] = v;
	return v;
}

/* One cell's output, ~4 KB, in one of three pandas shapes. */
static void
make_cell(struct bcell *c, int k)
{
	c->len = 0;
	c->nvals = 0;
	switch (k % 3) {
	case 0:	/* df.groupby("month")[...].sum() */
		add(c, "            revenue  marketing_spend  units       roi\n"
		    "month                                                \n");
		for (int r = 0; c->len < 4000; r++) {
			double rev = keep(c, 10000 + rnd() * 990000);
			double sp = keep(c, rev * (0.1 + rnd() * 0.4));
			add(c, "%d-%02d  %10.2f  %15.2f  %5d  %8.6f\n",
			    2019 + r / 12 % 6, r % 12 + 1, rev, sp,
			    (int)keep(c, (double)(100 + (int)(rnd() * 2000))),
			    keep(c, rev / sp));
		}
		break;
	case 1:	/* df.describe() over several columns, repeated */
		while (c->len < 4000) {
			static const char *const st[] = { "count", "mean",
			    "std", "min", "25%", "50%", "75%", "max" };
			add(c, "            alcohol      proline        color"
			    "          hue\n");
			for (int r = 0; r < 8; r++)
				add(c, "%-5s  %11.6f  %11.6f  %11.6f  %11.6f\n",
				    st[r], keep(c, 10 + rnd() * 5),
				    keep(c, 270 + rnd() * 1400),
				    keep(c, 1 + rnd() * 12),
				    keep(c, 0.4 + rnd()));
		}
		break;
	default:	/* a Series, then a dict repr */
		add(c, "region\n");
		for (int r = 0; c->len < 3600; r++)
			add(c, "r%03d    %.4f\n", r, keep(c, rnd()));
		add(c, "Name: share, dtype: float64\n{");
		while (c->len < 4000)
			add(c, "'k%d': %.16g, ", c->nvals, keep(c, rnd() * 100));
		add(c, "'n': %d}\n", (int)keep(c, 288));
		break;
	}
}

/* An answer quoting ten numbers of recent cells in various roundings. */
static void
make_answer(char *out, size_t size, const struct bcell *cells, int ncells,
    int a)
{
	size_t len = 0;

#define PUT(...) do { int k_ = snprintf(out + len, size - len, __VA_ARGS__); \
	if (k_ > 0 && (size_t)k_ < size - len) len += (size_t)k_; } while (0)
	PUT("Here is what the data shows (see cell [%d]). In 2024-11 and "
	    "from 2023 to 2024:\n\n", ncells);
	for (int i = 0; i < 10; i++) {
		int ci = ncells - 1 - (int)(rnd() * rnd() * ncells);
		const struct bcell *c = &cells[ci];
		double v = c->vals[(int)(rnd() * c->nvals)];

		switch ((a + i) % 5) {
		case 0:
			PUT("- the figure is %.2f;\n", v);
			break;
		case 1:
			if (v < 1)
				PUT("- a share of %.1f%%;\n", v * 100);
			else
				PUT("- about %.1f units;\n", v);
			break;
		case 2:
			if (v > 1e5)
				PUT("- revenue of $%.2fM;\n", v / 1e6);
			else
				PUT("- roughly %.0f;\n", v);
			break;
		case 3:
			if (v >= 1000)
				PUT("- **%d,%03d** in total;\n",
				    (int)(v + 0.5) / 1000, (int)(v + 0.5) % 1000);
			else
				PUT("- %.3f per row;\n", v);
			break;
		default:
			PUT("- %.1f in Nov 2024.\n", v);
			break;
		}
	}
	PUT("\nOne more: %.3f (made up), and `df.head(5)` shows the rows.\n",
	    1234.5678 + a);
#undef PUT
}

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	int ncells = argc > 1 ? atoi(argv[1]) : 100;
	int nans = argc > 2 ? atoi(argv[2]) : 100;
	int reps = argc > 3 ? atoi(argv[3]) : 21;
	struct bcell *cells = calloc((size_t)ncells, sizeof *cells);
	char (*answers)[4096] = calloc((size_t)nans, sizeof *answers);
	double *add_us = calloc((size_t)reps, sizeof(double));
	double *match_us = calloc((size_t)reps, sizeof(double));
	struct numtrace_index *idx = NULL;
	size_t bytes = 0, found = 0, traced = 0, count = 0;
	double t0;

	if (ncells < 1 || nans < 1 || reps < 1 || cells == NULL ||
	    answers == NULL || add_us == NULL || match_us == NULL) {
		fprintf(stderr, "usage: bench-numtrace [CELLS [ANSWERS [RUNS]]]\n");
		return 2;
	}
	for (int k = 0; k < ncells; k++) {
		make_cell(&cells[k], k);
		bytes += cells[k].len;
	}
	for (int a = 0; a < nans; a++)
		make_answer(answers[a], sizeof answers[a], cells, ncells, a);

	/* Each run: a fresh session index fed cell by cell, then every
	 * answer traced against it. The machine is shared, so the median
	 * and the best run are both shown. */
	for (int r = 0; r < reps; r++) {
		numtrace_index_free(idx);
		idx = numtrace_index_new();
		t0 = now_sec();
		for (int k = 0; k < ncells; k++) {
			struct numtrace_source src = { k + 1, NUMTRACE_STDOUT,
			    cells[k].text, cells[k].len };
			numtrace_index_add(idx, &src);
		}
		add_us[r] = (now_sec() - t0) * 1e6 / ncells;
		count = numtrace_index_count(idx);
		t0 = now_sec();
		for (int a = 0; a < nans; a++) {
			struct numtrace_hit *h;
			size_t t, n;

			n = numtrace_index_match(idx, answers[a],
			    strlen(answers[a]), "What changed in 2024?", 21, &h,
			    &t);
			if (r == 0) {
				found += n;
				traced += t;
			}
			free(h);
		}
		match_us[r] = (now_sec() - t0) * 1e6 / nans;
	}
	qsort(add_us, (size_t)reps, sizeof *add_us, dbl_cmp);
	qsort(match_us, (size_t)reps, sizeof *match_us, dbl_cmp);

	printf("index: %d cells, %zu KB of output, %zu numbers; "
	    "us per cell added: median %.1f, best %.1f\n", ncells,
	    bytes / 1024, count, add_us[reps / 2],
	    add_us[0]);
	printf("trace: %d answers, %.1f numbers each, %zu of %zu traced; "
	    "us per answer: median %.1f, best %.1f (%d runs)\n", nans,
	    (double)found / nans, traced, found, match_us[reps / 2],
	    match_us[0], reps);
	printf("per turn (one cell added, one answer traced): median %.1f us\n",
	    add_us[reps / 2] + match_us[reps / 2]);

	/* The wiring: a notebook, one cell and one answer a turn. */
	for (int r = 0; r < reps; r++) {
		struct notebook *nb = notebook_new();
		struct answer_tracer *tr = answer_tracer_new();
		double spent = 0;

		for (int k = 0; k < ncells; k++) {
			struct cell *c = notebook_add_cell(nb, CELL_BY_MODEL, "x", NULL);
			struct answer_trace at;

			outcap_add(&c->out[0], cells[k].text, cells[k].len);
			c->status = CELL_OK;
			t0 = now_sec();
			answer_tracer_sync(tr, nb, 0);
			answer_tracer_trace(tr, answers[k % nans],
			    "What changed in 2024?", &at);
			spent += now_sec() - t0;
			answer_trace_free(&at);
		}
		match_us[r] = spent * 1e6 / ncells;
		answer_tracer_free(tr);
		notebook_free(nb);
	}
	qsort(match_us, (size_t)reps, sizeof *match_us, dbl_cmp);
	printf("session turn through answer_trace (cell synced from the notebook, "
	    "answer traced): median %.1f us, best %.1f us\n", match_us[reps / 2],
	    match_us[0]);
	numtrace_index_free(idx);
	free(cells);
	free(answers);
	free(add_us);
	free(match_us);
	return 0;
}
