/* bench/context: the cost of the context budget's bookkeeping in a long
 * session. Builds a session of QUESTIONS questions the way the agent
 * does (question, a python_exec call, a ~4 KB output, the answer; two
 * model requests per question) in an 8k-token window, and before each
 * request times what terp does: the fit check and the elisions
 * (context_prepare), the summary's installation when the plan asks for
 * one (the model's own summarising call is not timed: it is the model's
 * time, not terp's), and building the messages to send
 * (context_messages). Prints CPU microseconds per turn (median, p99,
 * max; CPU time, so that other processes on the machine do not count)
 * and the requests' largest estimate against the window.
 *   build/bench-context [QUESTIONS [RUNS]]   (default 100 5) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convo.h"
#include "terp/buf.h"
#include "terp/context.h"
#include "terp/notebook.h"
#include "terp/util.h"

#define WINDOW	8192

static double
bench_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static char *
output(int q)
{
	struct buf b;

	buf_init(&b, 1 << 20);
	buf_printf(&b, "status: ok (0.02 s)\nstdout:\nFACT-%d = %d\n", q, 1000 * q + 7);
	for (int i = 0; i < 100; i++)
		buf_printf(&b, "row %03d %12.4f %8d north\n", i, i * 1.25, i * q);
	return buf_take(&b);
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One turn's bookkeeping: returns its microseconds. */
static double
turn(struct context *cx, struct notebook *nb, const char *sys, long *peak,
    int *summaries)
{
	char *err = NULL;
	struct context_plan p;
	double t0 = bench_now_us(), t;
	long est;

	if (context_prepare(cx, sys, 0, NULL, NULL, &err) < 0) {
		fprintf(stderr, "bench-context: %s\n", err);
		exit(1);
	}
	/* Without a model the plan's summary is not asked for: install the
	 * one a model would have written. */
	context_plan(cx, sys, 0, &p);
	if (!p.fits || p.before > (WINDOW - context_reserve(cx))) {
		context_plan(cx, sys, (WINDOW - context_reserve(cx)) * 3 / 5, &p);
		if (p.summarise_to > 0) {
			context_set_summary(cx, p.summarise_to,
			    "Facts established so far: FACT-1 = 1007; FACT-2 = 2007; "
			    "the dataframe df holds the sales table.");
			(*summaries)++;
		}
		context_prepare(cx, sys, 0, NULL, NULL, &err);
	}
	context_messages(cx, sys);
	t = bench_now_us() - t0;
	est = context_estimate(cx, sys);
	if (est > *peak)
		*peak = est;
	/* The provider's count for what was sent. */
	{
		struct usage u = { .input_tokens = est, .output_tokens = 30 };
		notebook_add_usage(nb, &u);
	}
	return t;
}

int
main(int argc, char **argv)
{
	int nq = argc > 1 ? atoi(argv[1]) : 100, runs = argc > 2 ? atoi(argv[2]) : 5;
	int nt = 2 * nq, k = 0, summaries = 0;
	double *all = xcalloc((size_t)(nt * runs), sizeof *all), total = 0;
	long peak = 0;
	const char *sys =
	    "You are a careful data analyst working in a Python notebook.\n"
	    "You have one tool, python_exec(code), which runs Python 3 in a persistent "
	    "sandboxed session. pandas, numpy and matplotlib are installed.\n"
	    "Data files (read-only):\n- /workspace/data/sales.csv (12 KB)\n"
	    "  first lines:\n    month,channel,revenue,marketing_spend,units,region\n";

	for (int r = 0; r < runs; r++) {
		struct notebook *nb = notebook_new();
		struct context *cx = context_new(nb, NULL, WINDOW, NULL, NULL);
		for (int q = 1; q <= nq; q++) {
			char id[32], text[128];
			char *out = output(q);
			struct cell *c;
			snprintf(id, sizeof id, "call_q%d", q);
			snprintf(text, sizeof text, "Question %d: compute block %d.", q, q);
			convo_add(nb, convo_msg("user", text));
			all[k] = turn(cx, nb, sys, &peak, &summaries);
			total += all[k++];
			convo_add(nb, convo_call(id, "print(df.sum())"));
			c = notebook_add_cell(nb, CELL_BY_MODEL, "print(df.sum())", id);
			c->status = CELL_OK;
			convo_add(nb, convo_tool(id, out));
			free(out);
			all[k] = turn(cx, nb, sys, &peak, &summaries);
			total += all[k++];
			snprintf(text, sizeof text, "The result: FACT-%d = %d.", q, 1000 * q + 7);
			convo_add(nb, convo_msg("assistant", text));
		}
		context_free(cx);
		notebook_free(nb);
	}
	qsort(all, (size_t)k, sizeof *all, cmp);
	printf("%d questions, %d turns a run, %d runs, window %d tokens\n", nq, nt, runs, WINDOW);
	printf("per turn (prepare + summary bookkeeping + messages): median %.1f us, "
	    "p99 %.1f us, max %.1f us, mean %.1f us\n", all[k / 2], all[(k * 99) / 100],
	    all[k - 1], total / k);
	printf("largest request estimated: %ld tokens of %d; summaries installed: %d a run\n",
	    peak, WINDOW, summaries / runs);
	free(all);
	return 0;
}
