/* answer_trace: a session's cells indexed once each, answers traced
 * against them. The index grows with the session (each cell's outputs
 * are parsed once, when it has finished), so tracing an answer costs
 * its own length, not the session's. */
#include "terp/answer_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "terp/sanitize.h"
#include "terp/util.h"

/* Untraced numbers named in the one-line summary; the rest are counted. */
#define SUMMARY_LIST	5
/* Bytes of one number's text in messages (a hit is a few bytes). */
#define HIT_TEXT_MAX	64

struct answer_tracer {
	struct numtrace_index	*idx;
	unsigned char		*done;	/* done[n]: cell n is indexed */
	int			 ndone;	/* entries of done */
	int			 low;	/* cells below it are all indexed */
};

struct answer_tracer *
answer_tracer_new(void)
{
	struct answer_tracer *t = xcalloc(1, sizeof *t);

	t->idx = numtrace_index_new();
	return t;
}

void
answer_tracer_free(struct answer_tracer *t)
{
	if (t == NULL)
		return;
	numtrace_index_free(t->idx);
	free(t->done);
	free(t);
}

static void
add_text(struct answer_tracer *t, int cell, int stream, const char *s,
    size_t len)
{
	struct numtrace_source src = { .cell = cell, .stream = stream,
	    .text = s, .len = len };

	if (s != NULL && len > 0)
		numtrace_index_add(t->idx, &src);
}

void
answer_tracer_sync(struct answer_tracer *t, const struct notebook *nb,
    int upto)
{
	int n = notebook_ncells(nb);

	if (upto > 0 && upto < n)
		n = upto;
	if (n >= t->ndone) {
		t->done = xrealloc(t->done, (size_t)n + 1);
		memset(t->done + t->ndone, 0, (size_t)(n + 1 - t->ndone));
		t->ndone = n + 1;
	}
	/* from the first cell not indexed yet: a sync per answer walked
	 * every cell of the session */
	if (t->low < 1)
		t->low = 1;
	for (int i = t->low; i <= n; i++) {
		const struct cell *c = notebook_cell(nb, i);
		char *s;
		size_t len;

		if (c == NULL || t->done[i] || c->status == CELL_PENDING ||
		    c->status == CELL_RUNNING)
			continue;
		t->done[i] = 1;
		for (int st = 0; st < 2; st++) {
			s = cell_output(c, st, &len);
			add_text(t, c->n, st == 0 ? NUMTRACE_STDOUT : NUMTRACE_STDERR,
			    s, len);
			free(s);
		}
		if (c->value)
			add_text(t, c->n, NUMTRACE_VALUE, c->value, strlen(c->value));
	}
	while (t->low < t->ndone && t->done[t->low])
		t->low++;
}

void
answer_tracer_trace(const struct answer_tracer *t, const char *answer,
    const char *question, struct answer_trace *out)
{
	memset(out, 0, sizeof *out);
	if (answer == NULL)
		answer = "";
	out->len = strlen(answer);
	out->answer = xstrdup(answer);
	out->n = numtrace_index_match(t->idx, out->answer, out->len, question,
	    question ? strlen(question) : 0, &out->hits, &out->traced);
}

void
answer_trace_free(struct answer_trace *tr)
{
	if (tr == NULL)
		return;
	free(tr->answer);
	free(tr->hits);
	memset(tr, 0, sizeof *tr);
}

/* The number as written in the answer, control bytes made visible and
 * bounded: a new string. */
static char *
hit_text(const struct answer_trace *tr, const struct numtrace_hit *h)
{
	size_t len = h->len > HIT_TEXT_MAX ? HIT_TEXT_MAX : h->len;

	return sanitize_str(tr->answer + h->off, len, 0);
}

char *
answer_trace_summary(const struct answer_trace *tr)
{
	struct buf b;
	size_t listed = 0;

	if (tr->n == 0)
		return NULL;
	buf_init(&b, 4096);
	buf_printf(&b, "%zu of %zu number%s traced", tr->traced, tr->n,
	    tr->n == 1 ? "" : "s");
	for (size_t i = 0; i < tr->n; i++) {
		char *s;

		if (tr->hits[i].line > 0)
			continue;
		if (listed == SUMMARY_LIST) {
			buf_printf(&b, " and %zu more", tr->n - tr->traced - listed);
			break;
		}
		s = hit_text(tr, &tr->hits[i]);
		if (listed == 0)
			buf_printf(&b, "; %zu not in any output: ", tr->n - tr->traced);
		buf_printf(&b, "%s%s", listed ? ", " : "", s);
		free(s);
		listed++;
	}
	return buf_take(&b);
}

static const char *
stream_name(int stream)
{
	switch (stream) {
	case NUMTRACE_STDERR: return "stderr";
	case NUMTRACE_VALUE: return "value";
	default: return "stdout";
	}
}

cJSON *
answer_trace_json(const struct answer_trace *tr)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; i < tr->n; i++) {
		const struct numtrace_hit *h = &tr->hits[i];
		cJSON *o = cJSON_CreateObject();
		char *s = hit_text(tr, h);

		cJSON_AddStringToObject(o, "text", s);
		free(s);
		cJSON_AddNumberToObject(o, "value", h->value);
		if (h->line > 0) {
			cJSON_AddNumberToObject(o, "cell", h->cell);
			cJSON_AddStringToObject(o, "stream", stream_name(h->stream));
			cJSON_AddNumberToObject(o, "line", h->line);
		} else {
			cJSON_AddTrueToObject(o, "untraced");
		}
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

const char *
answer_trace_where(const struct numtrace_hit *h, char *buf, size_t size)
{
	if (h->line <= 0)
		snprintf(buf, size, "not in any output");
	else if (h->stream == NUMTRACE_VALUE && h->line == 1)
		snprintf(buf, size, "cell [%d], value", h->cell);
	else if (h->stream == NUMTRACE_VALUE)
		snprintf(buf, size, "cell [%d], value line %d", h->cell, h->line);
	else if (h->stream == NUMTRACE_STDERR)
		snprintf(buf, size, "cell [%d], stderr line %d", h->cell, h->line);
	else
		snprintf(buf, size, "cell [%d], line %d", h->cell, h->line);
	return buf;
}

void
answer_trace_footnotes(const struct answer_trace *tr, struct buf *b)
{
	char where[64];

	if (tr->n == 0)
		return;
	buf_printf(b, "\nNumbers: %zu of %zu traced\n", tr->traced, tr->n);
	for (size_t i = 0; i < tr->n; i++) {
		char *s = hit_text(tr, &tr->hits[i]);

		buf_printf(b, "- %s: %s\n", s,
		    answer_trace_where(&tr->hits[i], where, sizeof where));
		free(s);
	}
}
